"""Request metrics summed in process (app/metrics_buffer.py): the sums reach Redis in one flush,
the flusher thread sends them without being asked, and nothing is lost while Redis is down."""

from __future__ import annotations

import shutil
import time

import pytest
import redis

from app.metrics_buffer import MetricsBuffer
from tests.fixtures_live import free_port, start_redis

BOUNDS = (0.001, 0.01, 0.1)


def _hash(client: redis.Redis, key: str) -> dict[str, float]:
    return {k.decode() if isinstance(k, bytes) else k: float(v) for k, v in client.hgetall(key).items()}


def test_observations_are_summed_then_written_in_one_flush(redis_url):
    client = redis.Redis.from_url(redis_url)
    client.delete("mb:test")
    buffer = MetricsBuffer(lambda: client, interval_s=3600)  # the thread never flushes here
    for seconds in (0.0005, 0.0007, 0.05):
        buffer.observe("mb:test", ("routing", "GET", "200"), seconds, BOUNDS)
    buffer.observe("mb:test", ("routing", "GET", "404"), 2.0, BOUNDS)
    assert client.hgetall("mb:test") == {}  # nothing sent before the flush
    buffer.flush()
    assert _hash(client, "mb:test") == pytest.approx(
        {
            "n|routing|GET|200": 3,
            "b|routing|GET|200|0": 2,
            "b|routing|GET|200|2": 1,
            "s|routing|GET|200": 0.0512,
            "n|routing|GET|404": 1,
            "b|routing|GET|404|inf": 1,
            "s|routing|GET|404": 2.0,
        }
    )
    buffer.flush()  # an empty flush changes nothing
    assert _hash(client, "mb:test")["n|routing|GET|200"] == 3


def test_the_flusher_thread_sends_without_being_asked(redis_url):
    client = redis.Redis.from_url(redis_url)
    client.delete("mb:thread")
    buffer = MetricsBuffer(lambda: client, interval_s=0.05)
    buffer.observe("mb:thread", ("geocoding", "GET", "200"), 0.002, BOUNDS)
    deadline = time.monotonic() + 5
    while not client.hget("mb:thread", "n|geocoding|GET|200") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.hget("mb:thread", "n|geocoding|GET|200") == b"1"


def test_sums_survive_a_redis_outage(tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server binary not available")
    port = free_port()
    proc = start_redis(port, tmp_path)
    client = redis.Redis.from_url(f"redis://127.0.0.1:{port}/0", socket_timeout=1, socket_connect_timeout=1)
    buffer = MetricsBuffer(lambda: client, interval_s=3600)
    buffer.observe("mb:outage", ("poi", "GET", "200"), 0.002, BOUNDS)
    proc.terminate()
    proc.wait(5)
    buffer.flush()  # fails: the sums are kept
    buffer.observe("mb:outage", ("poi", "GET", "200"), 0.004, BOUNDS)
    back = start_redis(port, tmp_path)
    try:
        buffer.flush()
        assert _hash(client, "mb:outage") == pytest.approx(
            {"n|poi|GET|200": 2, "b|poi|GET|200|1": 2, "s|poi|GET|200": 0.006}
        )
    finally:
        back.terminate()
        back.wait(5)
