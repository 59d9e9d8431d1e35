"""Heavy functions through the queue, with real faults: a Redis server and Celery workers of this
module's own (so they can be stopped, killed and restarted), never mocks.

- a cached request does not reach a worker (the worker is stopped);
- with no worker, an uncached request gets a clean 503 within TASK_WAIT_TIMEOUT;
- a worker process SIGKILLed in the middle of a task: the task is redelivered, the client gets
  its answer;
- Redis restarted under the service: web and worker recover without a restart;
- a web process that stops between claiming a task and sending it: an identical request that
  joined its claim takes it over; a send refused by the broker: a clean 503, the claim released.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import redis
from kombu.exceptions import OperationalError
from PIL import Image

from queueing.protocol import CLAIM_TTL_S
from tests.fixtures_live import free_port, start_redis, start_worker, stop, wait_worker

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WAIT_S = 4.0


@pytest.fixture(scope="module")
def env(settings, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("heavy")
    port = free_port()
    state = {"redis": start_redis(port, workdir), "port": port, "dir": workdir}
    own = settings.with_overrides(redis_url=f"redis://127.0.0.1:{port}/0", task_wait_timeout_s=WAIT_S)
    state["settings"] = own
    state["log"] = workdir / "worker.log"
    yield state
    if state.get("worker"):
        stop(state["worker"])
    state["redis"].terminate()
    state["redis"].wait(5)


@pytest.fixture(scope="module")
def web(env, store):
    from app import create_app

    return create_app(env["settings"]).test_client()


def ensure_worker(env):
    if env.get("worker") is None or env["worker"].poll() is not None:
        env["worker"] = start_worker(
            env["settings"], env["log"], queues="staticmap,isochrone,geometry,default", name="heavy"
        )
        wait_worker(env["settings"], env["worker"])
    return env["worker"]


def waiting_app(env, wait_s: float):
    """A web app of its own on the module's Redis, whose requests wait ``wait_s`` on a task."""
    from app import create_app

    return create_app(env["settings"].with_overrides(task_wait_timeout_s=wait_s))


def get_map(web, key, query):
    return web.get(f"/v1/staticmaps?{query}", headers={"X-API-Key": key})


def test_rendered_through_worker_then_cached_without_worker(env, web, api_key):
    ensure_worker(env)
    query = "center=43.7384,7.4246&zoom=15&size=320x200"
    first = get_map(web, api_key, query)
    assert first.status_code == 200, first.get_data(as_text=True)[:300]
    assert first.mimetype == "image/png"
    assert Image.open(io.BytesIO(first.data)).size == (320, 200)
    stop(env["worker"])
    env["worker"] = None
    t0 = time.monotonic()
    again = get_map(web, api_key, query)
    assert again.status_code == 200 and again.data == first.data
    assert time.monotonic() - t0 < 1.0
    core = web.get(
        "/services/json?cmd=staticmap&center=43.7384,7.4246&zoom=15&size=320x200",
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert core.status_code == 200 and core.data == first.data


def test_no_worker_clean_503_within_bound(env, web, api_key):
    if env.get("worker") is not None:
        stop(env["worker"])
        env["worker"] = None
    t0 = time.monotonic()
    resp = get_map(web, api_key, "center=43.7400,7.4200&zoom=14&size=300x200")
    elapsed = time.monotonic() - t0
    assert resp.status_code == 503
    body = resp.get_json()
    assert body["statusCode"] == 503 and "worker" in body["message"] and resp.headers["Retry-After"]
    assert WAIT_S - 0.5 <= elapsed <= WAIT_S + 2.0
    # the task was sent: its claim was extended past CLAIM_TTL_S, so identical requests join it
    markers = inflight_markers(env)
    assert len(markers) == 1 and redis.Redis.from_url(env["settings"].redis_url).ttl(markers[0]) > CLAIM_TTL_S
    # The queued task is not lost: a worker started later computes it, and the answer is cached.
    ensure_worker(env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        resp = get_map(web, api_key, "center=43.7400,7.4200&zoom=14&size=300x200")
        if resp.status_code == 200:
            break
    assert resp.status_code == 200


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/PID/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_busy(pids: list[int], busy_s: float, timeout_s: float) -> None:
    """Until the processes together have used ``busy_s`` more CPU time than now."""
    start = sum(cpu_seconds(p) for p in pids)
    deadline = time.monotonic() + timeout_s
    while sum(cpu_seconds(p) for p in pids) - start < busy_s:
        assert time.monotonic() < deadline, "the pool process never started the task"
        time.sleep(0.005)


def test_worker_killed_mid_task_is_redelivered(env, web, api_key):
    worker = ensure_worker(env)
    result = {}
    query = "center=60.1699,24.9384&zoom=16&size=1280x1280&scale=2"

    def client():
        result["resp"] = get_map(web, api_key, query)

    web_thread = threading.Thread(target=client)
    web_thread.start()
    # Once the task is queued (its in-flight marker exists) and the pool process (concurrency 1: the
    # worker's only child) has spent some CPU time on it, SIGKILL that process mid-render.
    client_redis = redis.Redis.from_url(env["settings"].redis_url)
    deadline = time.monotonic() + 20
    markers = []
    while time.monotonic() < deadline and not markers:
        markers = client_redis.keys("*:cache:staticmap:*:inflight")
        time.sleep(0.005)
    assert markers, "the task was never queued"
    children = [
        int(p) for p in subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True).stdout.split()
    ]
    assert children, "no pool process found"
    wait_until_busy(children, busy_s=0.05, timeout_s=20)
    assert not client_redis.exists(markers[0].removesuffix(b":inflight")), "the render finished before the kill"
    for child in children:
        os.kill(child, signal.SIGKILL)
    web_thread.join(WAIT_S + 60)
    resp = result["resp"]
    # Redelivered and answered, or a clean 503 within the bound: never a hang.
    assert resp.status_code in (200, 503), resp.get_data(as_text=True)[:300]
    if resp.status_code == 503:
        deadline = time.monotonic() + 60
        while resp.status_code != 200 and time.monotonic() < deadline:
            resp = get_map(web, api_key, query)
    assert resp.status_code == 200
    assert Image.open(io.BytesIO(resp.data)).size == (2560, 2560)
    assert worker.poll() is None  # the worker itself survived the loss of a pool process


def test_redis_restart_web_and_worker_recover(env, web, api_key):
    ensure_worker(env)
    env["redis"].terminate()
    env["redis"].wait(5)
    down = get_map(web, api_key, "center=43.7300,7.4200&zoom=15&size=200x200")
    assert down.status_code == 503
    env["redis"] = start_redis(env["port"], env["dir"])
    deadline = time.monotonic() + 60
    resp = None
    while time.monotonic() < deadline:
        resp = get_map(web, api_key, "center=43.7300,7.4200&zoom=15&size=200x200")
        if resp.status_code == 200:
            break
        time.sleep(0.5)
    assert resp is not None and resp.status_code == 200, resp.get_data(as_text=True)[:300]
    assert env["worker"].poll() is None  # the same worker process, reconnected


class FrozenSender:
    """The Celery sender of a web process stopped (or killed) between its claim and its send:
    ``send_task`` does not return until released, and then sends nothing."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def send_task(self, *args, **options) -> None:
        self.reached.set()
        self.release.wait(60)


class RefusingBroker:
    """A broker that refuses the message, as Celery reports it after its publish retries."""

    def send_task(self, *args, **options) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


def inflight_markers(env) -> list[bytes | str]:
    return redis.Redis.from_url(env["settings"].redis_url).keys("*:cache:staticmap:*:inflight")


def test_a_request_that_stopped_between_claim_and_send_is_taken_over(env, web, store, api_key):
    ensure_worker(env)
    wait_s = 20.0
    stopped, live = waiting_app(env, wait_s), waiting_app(env, wait_s)
    sender = FrozenSender()
    stopped.extensions["meridian"].dispatcher.celery = sender
    query = "center=43.7350,7.4210&zoom=15&size=240x160"
    before = set(inflight_markers(env))
    first = threading.Thread(target=lambda: get_map(stopped.test_client(), api_key, query))
    first.start()
    try:
        assert sender.reached.wait(30), "the first request never claimed its task"
        assert len(set(inflight_markers(env)) - before) == 1, "the first request's claim is not in Redis"
        t0 = time.monotonic()
        resp = get_map(live.test_client(), api_key, query)  # joins the claim, then takes it over
        took = time.monotonic() - t0
    finally:
        sender.release.set()
        first.join(wait_s + 10)
    assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
    assert Image.open(io.BytesIO(resp.data)).size == (240, 160)
    assert took < CLAIM_TTL_S + wait_s / 2, f"answered {took:.1f} s after the claim it joined"


def test_a_send_the_broker_refuses_is_a_503_and_releases_its_claim(env, web, store, api_key):
    ensure_worker(env)
    refused, live = waiting_app(env, 20.0), waiting_app(env, 20.0)
    refused.extensions["meridian"].dispatcher.celery = RefusingBroker()
    query = "center=43.7330,7.4190&zoom=15&size=240x160"
    before = set(inflight_markers(env))
    resp = get_map(refused.test_client(), api_key, query)
    assert resp.status_code == 503, resp.get_data(as_text=True)[:300]
    body = resp.get_json()
    assert body["statusCode"] == 503 and "queue unavailable" in body["message"] and resp.headers["Retry-After"]
    assert set(inflight_markers(env)) == before, "the refused send left its claim behind"
    again = get_map(live.test_client(), api_key, query)
    assert again.status_code == 200, again.get_data(as_text=True)[:300]
    # the same refusal on the job paths: a clean 503 too
    refused.extensions["meridian"].celery = RefusingBroker()
    client = refused.test_client()
    headers = {"X-API-Key": api_key}
    job = get_map(client, api_key, "center=43.7310,7.4170&zoom=15&size=240x160&async=true")
    batch = client.post("/v1/geocoding/batch", json={"addresses": ["Avenue de la Costa, Monaco"]}, headers=headers)
    for resp in (job, batch):
        assert resp.status_code == 503 and resp.headers["Retry-After"], resp.get_data(as_text=True)[:300]
        assert resp.get_json()["statusCode"] == 503
