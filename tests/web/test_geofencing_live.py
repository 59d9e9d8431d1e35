"""Geofencing against real processes: gunicorn with 2 workers (``live_server``), a Celery worker,
real Redis and a real local HTTP receiver for webhooks.

The webhook test runs its own redis-server and Celery worker (queue ``default``): the session's
Redis database is shared with other test sessions, whose workers would otherwise consume (and,
not knowing the fence, drop) this test's deliveries.

- concurrent checks of one device over HTTP: exactly one ``enter``;
- a fence created (and deleted) through one worker is seen by every answer after 1 s;
- webhooks: delivered once per transition with a valid signature, retried after a 500, the
  attempts listed by ``GET /v1/geofences/{id}/events``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis
import requests

from config.settings import PROJECT_ROOT
from engine.netguard import parse_networks
from tests.fixtures_live import free_port, start_worker, stop, wait_worker
from tests.web.test_geofencing import MONACO, YARD, offset

pytestmark = [pytest.mark.integration]

ARTIFACTS = PROJECT_ROOT / "tests" / "artifacts"


@pytest.fixture(scope="module")
def issued(store):
    return store.create_key(f"geofence-live-{uuid.uuid4().hex[:8]}", "pro")


def hdr(issued):
    return {"X-API-Key": issued.key}


def create(live_server, issued, body):
    resp = requests.post(f"{live_server}/v1/geofences", json=body, headers=hdr(issued), timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


def check(live_server, issued, lat, lng, **extra):
    resp = requests.get(
        f"{live_server}/v1/geofencing", params={"lat": lat, "lng": lng, **extra}, headers=hdr(issued), timeout=10
    )
    assert resp.status_code == 200, resp.text
    return {f["id"]: f for f in resp.json()["fences"]}


def test_concurrent_checks_of_one_device_enter_once(live_server, issued):
    fid = create(live_server, issued, YARD)["id"]
    lat, lng = offset(MONACO, 10, 40)
    check(live_server, issued, lat, lng)  # both workers may build the index first; not required
    for round_ in range(3):
        device = f"racer-{round_}-{uuid.uuid4().hex[:6]}"
        barrier = threading.Barrier(16)

        def one(_, barrier=barrier, device=device):
            barrier.wait()
            return check(live_server, issued, lat, lng, fences=fid, device=device)[fid]["transition"]

        with ThreadPoolExecutor(16) as pool:
            got = list(pool.map(one, range(16)))
        assert got.count("enter") == 1, got
        assert got.count("inside") == 15, got


def test_change_visible_to_every_worker_within_a_second(live_server, issued):
    lat, lng = offset(MONACO, 5000, 5000)
    for _ in range(20):  # every worker builds and caches the account's index
        check(live_server, issued, lat, lng)
    circle = {"type": "circle", "center": {"lat": lat, "lng": lng}, "radius": 50, "name": "fresh"}
    t0 = time.monotonic()
    fid = create(live_server, issued, circle)["id"]
    time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    seen = [fid in check(live_server, issued, lat, lng) for _ in range(40)]  # new connection each time
    assert all(seen), seen
    t0 = time.monotonic()
    resp = requests.delete(f"{live_server}/v1/geofences/{fid}", headers=hdr(issued), timeout=10)
    assert resp.status_code == 200
    time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    assert not any(fid in check(live_server, issued, lat, lng) for _ in range(40))


class Receiver:
    """A local webhook receiver: answers 500 to the first attempt of every delivery, then 200."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    delivery = self.headers.get("X-Meridian-Delivery")
                    first = not any(r["delivery"] == delivery for r in receiver.requests)
                    status = 500 if first else 200
                    receiver.requests.append(
                        {
                            "delivery": delivery,
                            "headers": dict(self.headers),
                            "body": body,
                            "status": status,
                            "at": time.time(),
                        }
                    )
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/fences"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def own(settings, store, tmp_path_factory):
    """A redis-server, a Celery worker on queue ``default`` and an in-process app of their own."""
    workdir = tmp_path_factory.mktemp("webhooks")
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.RedisError:
            time.sleep(0.05)
    # the receiver listens on loopback, which webhooks may reach only when an operator allows it
    own_settings = settings.with_overrides(redis_url=url, webhook_allowed_networks=parse_networks("127.0.0.0/8"))
    worker = start_worker(own_settings, workdir / "worker.log", queues="default", name="webhooks")
    try:
        wait_worker(own_settings, worker)
        from app import create_app

        yield create_app(own_settings).test_client()
    finally:
        stop(worker)
        server.terminate()
        server.wait(5)


def test_webhook_signed_retried_after_500_once_per_transition(own, issued, receiver):
    transcript = []
    body = {**YARD, "webhook_url": receiver.url}
    resp = own.post("/v1/geofences", json=body, headers=hdr(issued))
    assert resp.status_code == 200, resp.get_data(as_text=True)
    fence = resp.get_json()
    fid = fence["id"]
    transcript.append(f"POST /v1/geofences -> {json.dumps(fence)[:300]}")
    device = f"van-{uuid.uuid4().hex[:6]}"
    route = [
        ((-20, 40), "outside"),
        ((10, 40), "enter"),
        ((20, 40), "inside"),
        ((150, 40), "exit"),
        ((160, 40), "outside"),
    ]
    for (e, n), expected in route:
        lat, lng = offset(MONACO, e, n)
        resp = own.get(f"/v1/geofencing?lat={lat}&lng={lng}&fences={fid}&device={device}", headers=hdr(issued))
        assert resp.status_code == 200, resp.get_data(as_text=True)
        got = resp.get_json()["fences"][0]
        transcript.append(
            f"GET /v1/geofencing?lat={lat:.7f}&lng={lng:.7f}&fences={fid}&device={device} -> {json.dumps(got)}"
        )
        assert got["transition"] == expected

    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        with receiver.lock:
            delivered = {r["delivery"] for r in receiver.requests if r["status"] == 200}
        if len(delivered) >= 2:
            break
        time.sleep(0.2)
    time.sleep(1.0)  # anything extra (a duplicate) would arrive now
    with receiver.lock:
        reqs = list(receiver.requests)
    deliveries = {}
    for r in reqs:
        deliveries.setdefault(r["delivery"], []).append(r)
    assert len(deliveries) == 2, [(r["delivery"], r["status"]) for r in reqs]  # one per transition
    secret_hash = hashlib.sha256(issued.secret.encode()).hexdigest()
    transitions = []
    for delivery_id, attempts in deliveries.items():
        assert [a["status"] for a in attempts] == [500, 200]  # retried after the 500, then no more
        assert attempts[0]["body"] == attempts[1]["body"]  # same body on every attempt
        assert attempts[1]["at"] - attempts[0]["at"] >= 1.5  # exponential backoff (base 2 s +- 20 %)
        for a in attempts:
            expected = "sha256=" + hmac.new(secret_hash.encode(), a["body"], hashlib.sha256).hexdigest()
            assert hmac.compare_digest(a["headers"]["X-Meridian-Signature"], expected)
            assert a["headers"]["Content-Type"] == "application/json"
            assert abs(int(a["headers"]["X-Meridian-Timestamp"]) - a["at"]) < 5
        payload = json.loads(attempts[0]["body"])
        assert payload["id"] == delivery_id and payload["fence"]["id"] == fid and payload["device"] == device
        assert attempts[0]["headers"]["X-Meridian-Event"] == payload["event"] == f"geofence.{payload['transition']}"
        transitions.append(payload["transition"])
        transcript.append(
            f"webhook attempt 1: POST {receiver.url} X-Meridian-Delivery: {delivery_id} "
            f"X-Meridian-Signature: {attempts[0]['headers']['X-Meridian-Signature']} -> 500"
        )
        transcript.append(
            f"webhook attempt 2 (+{attempts[1]['at'] - attempts[0]['at']:.1f} s): same body "
            f"{attempts[1]['body'].decode()} -> 200"
        )
    assert sorted(transitions) == ["enter", "exit"]

    resp = own.get(f"/v1/geofences/{fid}/events", headers=hdr(issued))
    assert resp.status_code == 200
    events = resp.get_json()
    transcript.append(f"GET /v1/geofences/{fid}/events -> {json.dumps(events)}")
    assert events["total"] == 2
    assert {e["id"] for e in events["events"]} == set(deliveries)
    for e in events["events"]:
        assert e["status"] == "delivered" and e["device"] == device and e["delivered_at"]
        assert [a["status_code"] for a in e["attempts"]] == [500, 200]
        assert e["attempts"][0]["error"] == "HTTP 500"
    assert [e["transition"] for e in events["events"]] == ["exit", "enter"]  # newest first
    stranger = {"X-API-Key": "mrd_AAAAAAAAAA_" + "b" * 32}
    assert own.get(f"/v1/geofences/{fid}/events", headers=stranger).status_code == 401
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "geofence-webhook.txt").write_text("\n".join(transcript) + "\n")
