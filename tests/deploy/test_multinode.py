"""Three nodes on one machine behind a real HAProxy, sharing one published dataset.

Two web nodes (gunicorn) and one Celery worker node, each a process group with a DATA_DIR of its
own that starts empty and follows a dataset store (a directory standing in for a shared volume);
a PostgreSQL cluster and a Redis of the test's own. The test publishes the Helsinki sample with
``meridian dataset publish``, the nodes pull it and HAProxy starts routing to them once their
readiness says so; clients send traffic through the balancer; a second version is published and
rolled out under that traffic; one web node is killed; a key on a small plan is spent across both
nodes. The transcript (events, request and error counts) is printed and written to
``tests/artifacts/multinode-transcript.txt``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from accounts.store import AccountStore
from config.settings import PROJECT_ROOT, Settings
from engine.store import local_version
from tests.deploy.cluster import Backend, haproxy, haproxy_binary, postgres_cluster
from tests.deploy.versions import copy_region, derive_version
from tests.fixtures_live import free_port, start_gunicorn, start_redis, start_worker, stop, wait_worker

# the first test of a session to use ``data_dir`` pays for the sample imports (minutes on a busy machine)
pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(900)]

REGION = "helsinki"
POLL_S = 1.0
TINY_PER_MINUTE = 25
CLIENT_THREADS = 3
ROUTE = {"origin": "60.1680,24.9400", "destination": "60.1750,24.9500"}
ARTIFACT = PROJECT_ROOT / "tests" / "artifacts" / "multinode-transcript.txt"


@dataclass
class Transcript:
    t0: float = field(default_factory=time.monotonic)
    lines: list[str] = field(default_factory=list)

    def say(self, message: str) -> None:
        line = f"[{time.monotonic() - self.t0:7.2f} s] {message}"
        self.lines.append(line)
        print(line, flush=True)


@dataclass
class Traffic:
    """Client threads sending requests through the balancer until stopped, results by phase."""

    base: str
    key: str
    phase: str = "start"
    results: list[tuple[str, int, str]] = field(default_factory=list)  # (phase, status, detail)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def _client(self, n: int) -> None:
        session = requests.Session()
        session.headers["X-API-Key"] = self.key
        i = 0
        deadline = time.monotonic() + 150  # bounded even if the test forgets to stop it
        while not self._stop.is_set() and time.monotonic() < deadline:
            i += 1
            params: dict[str, Any]
            if n == 0 and i % 8 == 0:  # heavy: goes through the worker node (a new contour each time)
                url, params = f"{self.base}/v1/isochrone", {"lat": 60.17, "lng": 24.944, "time": 1 + (i // 8) % 50}
            else:
                url, params = f"{self.base}/v1/routing", ROUTE
            sent = time.monotonic()
            try:
                resp = session.get(url, params=params, timeout=90)
                status, detail = resp.status_code, ("" if resp.ok else resp.text[:200])
            except requests.RequestException as exc:
                status, detail = 0, f"{type(exc).__name__} after {time.monotonic() - sent:.1f} s: {url}"
            with self._lock:  # counted in the phase it ended in: a request cut by the kill counts there
                self.results.append((self.phase, status, detail))
            time.sleep(0.005 if status == 200 else 0.05)  # paced: a shared machine, and no hot loop on errors

    def start(self) -> None:
        for n in range(CLIENT_THREADS):
            thread = threading.Thread(target=self._client, args=(n,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(40)

    def counts(self, phase: str) -> Counter:
        with self._lock:
            return Counter(status for p, status, _ in self.results if p == phase)

    def failures(self, phase: str) -> list[tuple[int, str]]:
        with self._lock:
            return [(s, d) for p, s, d in self.results if p == phase and s != 200]


def node_version(base: str) -> str | None:
    with contextlib.suppress(requests.RequestException, ValueError, KeyError):
        regions = requests.get(f"{base}/v1/health", timeout=5).json()["regions"]
        return next((r["version"] for r in regions if r["region"] == REGION), None)
    return None


def wait_for(what: str, condition, timeout: float, describe=None) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if condition():
            return time.monotonic() - t0
        time.sleep(0.1)
    raise AssertionError(
        f"timed out after {timeout} s waiting for {what}" + (f" (seen: {describe()})" if describe else "")
    )


def publish(data_dir: Path, store: Path, log: Path) -> str:
    env = dict(os.environ, DATA_DIR=str(data_dir), PYTHONPATH=str(PROJECT_ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "dataset", "publish", REGION, "--to", str(store)],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(out.stdout + out.stderr)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[0]


# an ``option httplog`` request line: status, bytes, cookies, termination state, connection counts
# (the last of which counts retries, "+N" when redispatched), queues, request
HTTPLOG = re.compile(r' (\d{3}) \d+ \S+ \S+ (\S{4}) \d+/\d+/\d+/\d+/(\+?\d+) \d+/\d+ "')


def balancer_trouble(log: Path) -> tuple[list[str], int]:
    """HAProxy's log lines other than a request answered below 500 without an abort (termination
    state ``----``): servers going down or up, errors, timeouts; and how many requests were
    answered that way only after a retry."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    trouble, retried = [], 0
    for line in lines:
        m = HTTPLOG.search(line)
        if not (m and int(m[1]) < 500 and m[2] == "----"):
            trouble.append(line)
        elif m[3] != "0":
            retried += 1
    return trouble, retried


def served_by(log: Path, needle: str) -> int:
    return sum(1 for line in log.read_text(errors="replace").splitlines() if needle in line)


def test_three_nodes_behind_haproxy_publish_roll_out_kill_and_quota(data_dir, tmp_path, monkeypatch):
    if haproxy_binary() is None:
        pytest.skip("haproxy is not installed and scripts/ensure-haproxy.sh could not install it")
    tr = Transcript()
    publisher, store = tmp_path / "publisher", tmp_path / "store"
    copy_region(data_dir, REGION, publisher)
    logs = tmp_path / "logs"
    logs.mkdir()
    redis_port, pg_port, lb_port, port_a, port_b = (free_port() for _ in range(5))
    redis_proc = start_redis(redis_port, tmp_path)
    procs: dict[str, subprocess.Popen] = {}
    try:
        with postgres_cluster(pg_port) as pg_url:
            tr.say(f"infrastructure: PostgreSQL (own cluster) on :{pg_port}, Redis on :{redis_port}")
            accounts = AccountStore(pg_url)
            accounts.create_schema()
            accounts.set_plan("bulk", per_minute=0, per_day=0, per_month=0, services=["*"])
            accounts.set_plan("tiny", per_minute=TINY_PER_MINUTE, per_day=0, per_month=0, services=["*"])
            bulk_key = accounts.create_key("load", "bulk").key
            tiny = accounts.create_key("small", "tiny")

            v1_line = publish(publisher, store, logs / "publish.log")
            v1 = local_version(publisher, REGION)
            tr.say(f"publish v1: {v1_line}")

            monkeypatch.setenv("DATASET_STORE", str(store))
            monkeypatch.setenv("DATASET_POLL_INTERVAL", str(POLL_S))

            def node_settings(name: str) -> Settings:
                return Settings.from_env(
                    {
                        "DATA_DIR": str(tmp_path / name / "data"),
                        "DATABASE_URL": pg_url,
                        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
                        "SERVICE_NAME": "meridiandeploy",
                        "NODE_ENV": "test",
                        "AUTH_CACHE_TTL": "1",
                        "TASK_WAIT_TIMEOUT": "60",  # a busy shared machine: the first isochrone compiles
                    }
                )

            worker_settings = node_settings("worker")
            procs["worker"] = start_worker(worker_settings, logs / "worker.log", concurrency=1, name="node-worker")
            wait_worker(worker_settings, procs["worker"])
            procs["web-a"] = start_gunicorn(node_settings("web-a"), port_a, logs / "web-a.log", workers=1)
            procs["web-b"] = start_gunicorn(node_settings("web-b"), port_b, logs / "web-b.log", workers=1)
            tr.say(f"nodes started: web-a :{port_a}, web-b :{port_b} (gunicorn), worker (Celery), DATA_DIRs empty")

            web = {"web-a": f"http://127.0.0.1:{port_a}", "web-b": f"http://127.0.0.1:{port_b}"}
            took = wait_for(
                "every node to pull v1",
                lambda: (
                    all(node_version(b) == v1 for b in web.values())
                    and local_version(worker_settings.data_dir, REGION) == v1
                ),
                60,
            )
            tr.say(f"pull: all three nodes serve {v1} (within {took:.1f} s of the web nodes answering)")

            warm = requests.get(
                f"{web['web-a']}/v1/isochrone",
                params={"lat": 60.17, "lng": 24.944, "time": 1},
                headers={"X-API-Key": bulk_key},
                timeout=90,
            )
            assert warm.status_code == 200, warm.text
            tr.say(f"worker node warmed: first isochrone answered in {warm.elapsed.total_seconds():.1f} s")

            lb = f"http://127.0.0.1:{lb_port}"
            with haproxy(lb_port, [Backend("web-a", port_a), Backend("web-b", port_b)], tmp_path):
                wait_for("the balancer to route", lambda: requests.get(f"{lb}/v1/health/ready").status_code == 200, 30)
                tr.say(f"HAProxy on :{lb_port} routes to web-a and web-b (health check /v1/health/ready)")

                traffic = Traffic(lb, bulk_key)
                traffic.phase = "v1"
                traffic.start()
                time.sleep(3)

                # quotas: a small plan spent through the balancer, i.e. on both nodes
                def tiny_call(_: int) -> int:
                    return requests.get(
                        f"{lb}/v1/routing", params=ROUTE, headers={"X-API-Key": tiny.key}, timeout=30
                    ).status_code

                with ThreadPoolExecutor(4) as pool:
                    statuses = Counter(pool.map(tiny_call, range(2 * TINY_PER_MINUTE)))

                def tiny_per_node() -> dict[str, int]:
                    return {n: served_by(logs / f"{n}.log", tiny.record.prefix) for n in web}

                # a node writes its request log lines a little after the answers (app/after_response.py)
                wait_for(
                    "every small-plan request in a node's request log",
                    lambda: sum(tiny_per_node().values()) >= 2 * TINY_PER_MINUTE,
                    10,
                    tiny_per_node,
                )
                per_node = tiny_per_node()
                tr.say(
                    f"quota: {2 * TINY_PER_MINUTE} requests on a {TINY_PER_MINUTE}/min plan -> "
                    f"{statuses[200]} x 200, {statuses[429]} x 429; served by {per_node}"
                )

                # roll-out of a second version under traffic
                derive_version(publisher, REGION, "2")
                v2 = local_version(publisher, REGION)
                traffic.phase = "rollout"
                tr.say(f"publish v2: {publish(publisher, store, logs / 'publish.log')}")
                published_at = time.monotonic()  # latest.json names v2 from here on

                def seen() -> str:
                    versions = {n: node_version(b) for n, b in web.items()}
                    return f"{versions}, worker {local_version(worker_settings.data_dir, REGION)}"

                wait_for(
                    "every node to serve v2",
                    lambda: (
                        all(node_version(b) == v2 for b in web.values())
                        and local_version(worker_settings.data_dir, REGION) == v2
                    ),
                    60,
                    seen,
                )
                converged = time.monotonic() - published_at
                tr.say(f"roll-out: all three nodes serve {v2}, {converged:.1f} s after publish (poll {POLL_S} s)")
                time.sleep(2)

                # one web node dies (SIGKILL to its whole process group)
                traffic.phase = "kill"
                os.killpg(procs["web-a"].pid, signal.SIGKILL)
                procs["web-a"].wait(10)
                tr.say("node kill: web-a SIGKILLed (master and workers)")
                time.sleep(3)
                traffic.phase = "after-kill"
                time.sleep(3)
                traffic.stop()

            for phase in ("v1", "rollout", "kill", "after-kill"):
                counts = traffic.counts(phase)
                tr.say(
                    f"requests in phase {phase:<10}: {sum(counts.values()):5d} total, "
                    f"{counts[200]:5d} x 200, errors {sum(v for s, v in counts.items() if s != 200)}"
                    + (f" {dict(counts)}" if set(counts) - {200} else "")
                )
            trouble, retried = balancer_trouble(tmp_path / "haproxy.log")
            tr.say(f"haproxy: {retried} requests answered after a retry, {len(trouble)} other lines")
            for line in trouble[:30]:
                tr.say(f"haproxy: {line}")
            heavy = served_by(logs / "worker.log", "meridian.heavy")
            tr.say(
                f"routing requests served by web-a: {served_by(logs / 'web-a.log', 'GET /v1/routing')}, "
                f"web-b: {served_by(logs / 'web-b.log', 'GET /v1/routing')}; worker log lines for heavy tasks: {heavy}"
            )
    finally:
        for proc in procs.values():
            stop(proc)
        redis_proc.terminate()
        redis_proc.wait(10)
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        ARTIFACT.write_text("\n".join(tr.lines) + "\n", encoding="utf-8")

    assert statuses[200] == TINY_PER_MINUTE and statuses[429] == TINY_PER_MINUTE, statuses
    assert all(per_node.values()), f"the small-plan key was not served by both nodes: {per_node}"
    for phase in ("v1", "rollout", "after-kill"):
        assert traffic.counts(phase)[200] > 0, f"no traffic in phase {phase}"
        assert traffic.failures(phase) == [], f"failed requests in phase {phase}: {traffic.failures(phase)[:5]}"
    # at most the requests in flight on the killed node when it died (HAProxy retries the others)
    assert len(traffic.failures("kill")) <= CLIENT_THREADS, traffic.failures("kill")
    assert heavy > 0, "no heavy request reached the worker node"
