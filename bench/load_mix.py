"""The traffic mix of ``bench.load`` as locust users, and the recorder of every request.

``MixUser`` follows how such a service is used (weights in ``MIX``): geocoding and suggest about
60 %, then reverse geocoding, routing, POI search and nearest, snap to road, geofencing checks
with devices, isochrones and static maps at random places (cache misses, computed by the
workers), batch geocoding jobs and async isochrone jobs polled to completion. ``OverUser`` and
``UnderUser`` send on two keys of the ``free`` plan (60 requests a minute) at twice and at 40 %
of the plan: the quota probes.

``Recorder`` keeps one row per request (time, function, latency, status, Retry-After) and every
accepted job, for the table, the time series and the job audit.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from locust import FastHttpUser, constant_throughput, task

DATA = Path(__file__).resolve().parent / "data"
MIX = {
    "geocoding": 34,
    "suggest": 26,
    "reverse": 8,
    "routing": 8,
    "poi": 3,
    "nearest": 3,
    "snaptoroad": 4,
    "geofencing": 6,
    "isochrone": 3,
    "staticmap": 3,
    "batch_job": 1,
    "async_job": 1,
}
JOB_POLL_S = 0.5
JOB_POLL_MAX_S = 60.0


def _load(name: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for region in ("helsinki", "monaco"):
        path = DATA / f"{region}-{name}.json"
        if path.exists():
            out.extend(json.loads(path.read_text()))
    return out


@dataclass
class Recorder:
    """Shared by every user (gevent greenlets in one thread; the lock covers the flood thread)."""

    t0: float = field(default_factory=time.time)
    rows: list[tuple[float, str, float, int, bool]] = field(default_factory=list)  # sent t, name, ms, status, RA
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # job id -> {function, accepted_at, status}
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_request(
        self, name: str, response_time: float, response: Any, exception: Any, start_time: float | None = None, **_: Any
    ) -> None:
        """locust's request event. The row's time is when the request was sent (what the server's
        quota window sees), not when its answer came."""
        status = 0 if exception is not None and response is None else int(getattr(response, "status_code", 0) or 0)
        headers = getattr(response, "headers", None) or {}
        retry_after = bool(headers.get("Retry-After")) if hasattr(headers, "get") else False
        sent = start_time if start_time is not None else time.time() - response_time / 1000.0
        with self.lock:
            self.rows.append((sent - self.t0, name, float(response_time), status, retry_after))

    def accepted(self, job_id: str, function: str) -> None:
        with self.lock:
            self.jobs[job_id] = {"function": function, "accepted_at": time.time() - self.t0, "status": "queued"}

    def settled(self, job_id: str, body: dict[str, Any]) -> None:
        with self.lock:
            job = self.jobs.get(job_id)
            if job is not None:
                job["status"] = body.get("status")
                progress = body.get("progress") or {}
                job["done"], job["total"] = progress.get("done"), progress.get("total")
                if "results" in body:
                    job["results"] = len(body["results"])
                if body.get("error"):
                    job["error"] = str(body["error"].get("message"))[:200]


def _places() -> dict[str, list[tuple[float, float]]]:
    """Points known to lie inside each region's data (the quality sets' addresses and POIs)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for region in ("helsinki", "monaco"):
        for name in ("reverse", "nearest"):
            path = DATA / f"{region}-{name}.json"
            if path.exists():
                out.setdefault(region, []).extend((q["lat"], q["lng"]) for q in json.loads(path.read_text()))
    return out


PLACES = _places()
RECORDER = Recorder()
KEYS: dict[str, str] = {}  # set by bench.load before the users start


class MixUser(FastHttpUser):
    """The traffic mix; ``wait_time`` is set by bench.load for each phase."""

    geocode = _load("geocode")
    suggest_q = _load("suggest")
    reverse_q = _load("reverse")
    nearest_q = _load("nearest")

    def on_start(self) -> None:
        self.headers = {"X-API-Key": KEYS["load"]}
        self.device = f"dev-{random.getrandbits(40):010x}"

    def _get(self, name: str, path: str, params: dict[str, Any]) -> Any:
        with self.client.get(
            f"{path}?{urlencode(params)}", headers=self.headers, name=name, catch_response=True
        ) as resp:
            if resp.status_code in (200, 202, 404) or 400 <= resp.status_code < 500:
                resp.success()  # answered; the table separates statuses
            return resp

    @staticmethod
    def _places(n: int, metres: float = 100.0) -> list[tuple[float, float]]:
        """``n`` random points of one region, each moved up to ``metres`` (so heavy answers are
        mostly cache misses)."""
        region = random.choice(list(PLACES))
        d = metres / 111_000.0
        return [
            (round(lat + random.uniform(-d, d), 6), round(lng + random.uniform(-d, d) * 2, 6))
            for lat, lng in random.sample(PLACES[region], n)
        ]

    @task(MIX["geocoding"])
    def geocoding(self) -> None:
        self._get("geocoding", "/v1/geocoding", {"query": random.choice(self.geocode)["query"]})

    @task(MIX["suggest"])
    def suggest(self) -> None:
        prefix = random.choice(self.suggest_q)["prefix"]
        self._get("suggest", "/v1/suggest", {"q": prefix[: random.randint(3, max(3, len(prefix)))]})

    @task(MIX["reverse"])
    def reverse(self) -> None:
        q = random.choice(self.reverse_q)
        self._get("reverse", "/v1/reverse-geocoding", {"lat": q["lat"], "lng": q["lng"]})

    @task(MIX["routing"])
    def routing(self) -> None:
        a, b = self._places(2)
        self._get("routing", "/v1/routing", {"origin": f"{a[0]},{a[1]}", "destination": f"{b[0]},{b[1]}"})

    @task(MIX["poi"])
    def poi(self) -> None:
        ((lat, lng),) = self._places(1)
        self._get("poi", "/v1/poi", {"category": "restaurant", "near": f"{lat},{lng}", "radius": 1000})

    @task(MIX["nearest"])
    def nearest(self) -> None:
        q = random.choice(self.nearest_q)
        self._get("nearest", "/v1/proximity/nearest", {"lat": q["lat"], "lng": q["lng"], "categories": q["category"]})

    @task(MIX["snaptoroad"])
    def snaptoroad(self) -> None:
        ((lat, lng),) = self._places(1, metres=20.0)
        points = "|".join(f"{lat + i * 0.0002:.6f},{lng + i * 0.0003:.6f}" for i in range(6))
        self._get("snaptoroad", "/v1/snaptoroad", {"points": points})

    @task(MIX["geofencing"])
    def geofencing(self) -> None:
        ((lat, lng),) = self._places(1)
        self._get("geofencing", "/v1/geofencing", {"lat": lat, "lng": lng, "device": self.device})

    @task(MIX["isochrone"])
    def isochrone(self) -> None:
        ((lat, lng),) = self._places(1, metres=30.0)
        self._get("isochrone", "/v1/isochrone", {"lat": lat, "lng": lng, "time": random.choice([2, 3, 4])})

    @task(MIX["staticmap"])
    def staticmap(self) -> None:
        ((lat, lng),) = self._places(1)
        self._get("staticmap", "/v1/staticmaps", {"center": f"{lat},{lng}", "zoom": 15, "size": "256x256"})

    @task(MIX["batch_job"])
    def batch_job(self) -> None:
        addresses = [q["query"] for q in random.sample(self.geocode, 20)]
        with self.client.post(
            "/v1/geocoding/batch",
            json={"addresses": addresses},
            headers=self.headers,
            name="batch_job",
            catch_response=True,
        ) as resp:
            resp.success()
            if resp.status_code == 202:
                self._follow(resp.json()["job_id"], "batch_job")

    @task(MIX["async_job"])
    def async_job(self) -> None:
        ((lat, lng),) = self._places(1, metres=30.0)
        resp = self._get("async_job", "/v1/isochrone", {"lat": lat, "lng": lng, "time": 3, "async": "true"})
        if resp.status_code == 202:
            self._follow(resp.json()["job_id"], "async_job")

    def _follow(self, job_id: str, function: str) -> None:
        """Poll the job as a client would, until it settles or the polling budget is spent (the
        final audit in bench.load polls every job that is still open)."""
        RECORDER.accepted(job_id, function)
        deadline = time.monotonic() + JOB_POLL_MAX_S
        while time.monotonic() < deadline:
            time.sleep(JOB_POLL_S)
            with self.client.get(
                f"/v1/jobs/{job_id}", headers=self.headers, name="job_poll", catch_response=True
            ) as resp:
                resp.success()
                if resp.status_code == 200:
                    body = resp.json()
                    if body.get("status") in ("done", "failed"):
                        RECORDER.settled(job_id, body)
                        return


class QuotaUser(FastHttpUser):
    abstract = True
    key_name = ""

    @task
    def geocode(self) -> None:
        with self.client.get(
            "/v1/geocoding?query=Aleksanterinkatu%2052",
            headers={"X-API-Key": KEYS[self.key_name]},
            name=f"quota_{self.key_name}",
            catch_response=True,
        ) as resp:
            resp.success()


class OverUser(QuotaUser):
    """Two of them at 1 request/s: 120 a minute on a 60-a-minute plan."""

    fixed_count = 2
    key_name = "over"
    wait_time = constant_throughput(1.0)


class UnderUser(QuotaUser):
    """One at 0.4 request/s: 24 a minute on a 60-a-minute plan, never to be refused."""

    fixed_count = 1
    key_name = "under"
    wait_time = constant_throughput(0.4)
