"""Prometheus ``/metrics`` on gunicorn with 2 workers and a real Celery worker: request counters
and latency histograms per function and status (summed over both web processes through Redis),
queue depths, active workers, task run times; the same essentials in ``/v1/health/ready``."""

from __future__ import annotations

import time

import pytest
import redis
import requests
from prometheus_client.parser import text_string_to_metric_families

from app.metrics_buffer import FLUSH_INTERVAL_S
from queueing.depth import queue_depths
from tests.fixtures_live import redis_url_db

pytestmark = pytest.mark.integration


def scrape(base: str) -> dict[tuple, float]:
    resp = requests.get(f"{base}/metrics", timeout=10)
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(resp.text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape_settled(base: str, before: dict, expected: list[tuple[float, dict]], timeout_s: float = 5.0) -> dict:
    """Scrape until every ``meridian_http_requests_total{labels}`` grew by its expected count since
    ``before`` (or the time runs out): each web process sends its request counts to Redis twice a
    second (app/metrics_buffer.py), the scraped process at once."""
    deadline = time.monotonic() + timeout_s
    name = "meridian_http_requests_total"
    while True:
        samples = scrape(base)
        settled = all(value(samples, name, **labels) - value(before, name, **labels) >= n for n, labels in expected)
        if settled or time.monotonic() > deadline:
            return samples
        time.sleep(0.1)


def test_metrics_count_requests_tasks_queues_and_workers(live_server, api_key, settings, celery_worker):
    time.sleep(2 * FLUSH_INTERVAL_S)  # earlier tests' requests are all in Redis before the baseline
    before = scrape(live_server)
    headers = {"X-API-Key": api_key}
    with requests.Session() as s:
        for _ in range(6):
            assert (
                s.get(
                    f"{live_server}/v1/geocoding",
                    params={"query": "Mannerheimintie 5, Helsinki"},
                    headers=headers,
                    timeout=10,
                ).status_code
                == 200
            )
        for _ in range(2):
            assert (
                s.get(
                    f"{live_server}/v1/geocoding", params={"query": "Qwxzzy Nowhere"}, headers=headers, timeout=10
                ).status_code
                == 404
            )
        assert (
            s.get(
                f"{live_server}/v1/geocoding", params={"limit": "0", "query": "x"}, headers=headers, timeout=10
            ).status_code
            == 400
        )
        assert (
            s.get(
                f"{live_server}/services/json",
                params={"cmd": "geocoding", "addr": "Bulevardi 10"},
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=10,
            ).status_code
            == 200
        )
        job = s.post(
            f"{live_server}/v1/geocoding/batch", json=["Bulevardi 10, Helsinki"] * 60, headers=headers, timeout=10
        )
        assert job.status_code == 202
        deadline = time.monotonic() + 60
        while s.get(f"{live_server}{job.json()['status_url']}", headers=headers, timeout=10).json()["status"] != "done":
            assert time.monotonic() < deadline
            time.sleep(0.1)
    series = dict(function="geocoding", face="gateway", method="GET")
    after = scrape_settled(
        live_server,
        before,
        [
            (6, dict(status="200", **series)),
            (2, dict(status="404", **series)),
            (1, dict(status="400", **series)),
            (1, dict(function="geocoding/batch", face="gateway", method="POST", status="202")),
            (1, dict(function="geocoding", face="core", method="GET", status="200")),
        ],
    )

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    series = dict(function="geocoding", face="gateway", method="GET")
    assert delta("meridian_http_requests_total", status="200", **series) == 6
    assert delta("meridian_http_requests_total", status="404", **series) == 2
    assert delta("meridian_http_requests_total", status="400", **series) == 1
    assert (
        delta("meridian_http_requests_total", function="geocoding/batch", face="gateway", method="POST", status="202")
        == 1
    )
    # Histogram: count == the counter, cumulative buckets, +Inf == count, a positive sum.
    labels = dict(status="200", **series)
    count = value(after, "meridian_http_request_duration_seconds_count", **labels)
    assert count == value(after, "meridian_http_requests_total", **labels) >= 6
    buckets = sorted(
        (
            (float(dict(k[1])["le"]), v)
            for k, v in after.items()
            if k[0] == "meridian_http_request_duration_seconds_bucket"
            and {kk: vv for kk, vv in k[1] if kk != "le"} == labels
        ),
        key=lambda t: t[0],
    )
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    assert buckets[-1] == (float("inf"), count)
    assert 0 < value(after, "meridian_http_request_duration_seconds_sum", **labels) < count * 5
    # The core face is labelled by its cmd.
    assert delta("meridian_http_requests_total", function="geocoding", face="core", method="GET", status="200") == 1
    # Tasks (recorded by the worker's signals): the two chunks of the batch.
    task = dict(task="meridian.geocode_chunk", queue="batch", state="SUCCESS")
    assert delta("meridian_task_runs_total", **task) == 2
    assert delta("meridian_task_duration_seconds_count", **task) == 2
    # Queues and workers.
    for queue in ("default", "isochrone", "staticmap", "geometry", "batch"):
        assert ("meridian_queue_depth", (("queue", queue),)) in after
    assert value(after, "meridian_workers_active") >= 1

    # A task that raises is counted as a failure with its exception type.
    from workers.celery_app import make_celery

    failures = dict(task="meridian.heavy", exception="ModuleNotFoundError")
    make_celery(settings).send_task(
        "meridian.heavy",
        args=["engine.services.no_such_module:run", {}, "meridiantest:metrics-test:failing"],
        queue="default",
    )
    deadline = time.monotonic() + 30
    while True:
        latest = scrape(live_server)
        failed = value(latest, "meridian_task_failures_total", **failures) - value(
            before, "meridian_task_failures_total", **failures
        )
        # task_failure fires before task_postrun (which counts the run): wait for both
        runs = value(latest, "meridian_task_runs_total", task="meridian.heavy", queue="default", state="FAILURE")
        if (failed and runs) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert failed == 1
    assert value(latest, "meridian_task_runs_total", task="meridian.heavy", queue="default", state="FAILURE") >= 1

    ready = requests.get(f"{live_server}/v1/health/ready", timeout=10).json()
    assert ready["checks"]["queues"]["ok"] and set(ready["checks"]["queues"]["depth"]) >= {"batch", "staticmap"}
    assert ready["checks"]["queues"]["workers_active"] >= 1


def test_queue_depth_is_the_length_of_the_celery_lists(redis_server):
    client = redis.Redis.from_url(redis_url_db(redis_server, 14))
    client.delete("batch", "batch\x06\x163", "staticmap")
    try:
        client.rpush("batch", "a", "b", "c")
        client.rpush("batch\x06\x163", "d")
        client.rpush("staticmap", "e")
        depths = queue_depths(client)
        assert depths["batch"] == 4 and depths["staticmap"] == 1 and depths["isochrone"] == 0
    finally:
        client.delete("batch", "batch\x06\x163", "staticmap")
