"""Prometheus ``/metrics`` (text format, no key needed: expose it only to the monitoring network).

Why Redis and not prometheus_client's multiprocess mode: the numbers come from several kinds of
processes — gunicorn workers (forked, recycled), Celery pool processes, possibly on several hosts.
``PROMETHEUS_MULTIPROC_DIR`` only aggregates processes that share one directory on one host and
needs gunicorn hooks to clean up after dead workers; Redis is already shared by every process
(broker, quotas, caches). A request adds to in-process sums that each web process writes to
Redis twice a second in one pipeline (``app/metrics_buffer.py``); every scrape flushes its own
process, reads the hashes once and renders them with a custom collector, so any web process
answers the same totals for the whole deployment, at most half a second behind the others.

Series:
- ``meridian_http_requests_total{function,face,method,status}`` and
  ``meridian_http_request_duration_seconds{function,face,method,status}`` (histogram).
  ``face`` is core | gateway | other; ``function`` is the ``cmd`` on the core face, the route
  under /v1 on the gateway (``geocoding``, ``geocoding/batch``, ``jobs/<job_id>``...) and the
  path otherwise (``/metrics``, ``/v1/health/ready``...); unmatched paths are ``unmatched``.
  ``method`` is one of :data:`METHODS` or ``OTHER``; ``status`` is the answer's code.
- ``meridian_queue_depth{queue}``: messages waiting in each Celery queue (Redis LLEN).
- ``meridian_workers_active``: workers whose heartbeat is younger than 15 s (``tasks/signals.py``).
- ``meridian_task_duration_seconds{task,queue,state}`` (histogram), ``meridian_task_runs_total``,
  ``meridian_task_failures_total{task,exception}``.

The layout of the hashes is ``queueing/metrics.py``. Every label comes from a bounded set — a
route of the app, a known ``cmd``, a method of :data:`METHODS`, a status the app answers, a
registered task, a queue of ``queueing.protocol.QUEUES`` — never from what a client writes: a
label per random method or path would grow ``/metrics`` and the hashes without end (each new
value is a new series). A field written by an older version with another label is not rendered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from functools import cache
from typing import Any

import redis
from flask import Blueprint, Flask, Request, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from app.after_response import AfterResponse, FinishedRequest
from app.errors import error_response
from app.metrics_buffer import MetricsBuffer
from app.registry import REGISTRY
from queueing.depth import queue_depths
from queueing.metrics import ACTIVE_WINDOW_S, SEP, TASK_BUCKETS, http_key, tasks_key, workers_key

log = logging.getLogger("meridian.metrics")

HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CORE_PATHS = ("/services/json", "/services/v2/json")
HTTP_LABELS = ["function", "face", "method", "status"]
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "OTHER"

bp = Blueprint("metrics", __name__)

Series = dict[tuple[str, ...], float]  # label values -> value


def request_labels(req: Request) -> tuple[str, str]:
    """(function, face) of a request; bounded cardinality (route templates, known cmds)."""
    rule = req.url_rule
    if rule is None:
        return "unmatched", "other"
    if rule.rule in CORE_PATHS:
        cmd = (req.args.get("cmd") or "").strip()
        return (cmd if cmd in REGISTRY else "unknown"), "core"
    return _route_labels(rule.rule)


def method_label(method: str) -> str:
    """The request's method when it is a known one, else ``OTHER`` (a client may send any token)."""
    return method if method in METHODS else OTHER_METHOD


@cache
def _route_labels(rule: str) -> tuple[str, str]:
    """(function, face) of a route other than the core's (one entry per route of the app)."""
    if rule == "/suggest/json":
        return "suggest", "core"
    if rule.startswith("/v1/") and not rule.startswith("/v1/health"):
        return rule.removeprefix("/v1/"), "gateway"
    return rule, "other"


def active_workers(client: redis.Redis, ns: str) -> int:
    return int(client.zcount(workers_key(ns), time.time() - ACTIVE_WINDOW_S, "+inf"))


def queue_check() -> dict[str, Any]:
    """For ``/v1/health/ready``: queue depths and active workers (informative, never failing)."""
    rt = current_app.extensions["meridian"]
    try:
        return {
            "ok": True,
            "depth": queue_depths(rt.redis),
            "workers_active": active_workers(rt.redis, rt.settings.service_name),
        }
    except redis.RedisError as exc:
        return {"ok": True, "detail": f"queue depths unavailable: {type(exc).__name__}"}


def _split(raw: dict[bytes, bytes], labels: int) -> dict[str, Series]:
    """{kind: {labels: value}} from a metrics hash (kind n|s|b|f); fields with another number of
    labels (written by an older version) are skipped."""
    out: dict[str, Series] = {"n": {}, "s": {}, "b": {}, "f": {}}
    sizes = {"n": labels, "s": labels, "b": labels + 1, "f": 2}
    for field, value in raw.items():
        parts = field.decode().split(SEP)
        kind = parts[0]
        if kind in out and len(parts) - 1 == sizes[kind]:
            out[kind][tuple(parts[1:])] = float(value)
    return out


def _known_methods(data: dict[str, Series]) -> dict[str, Series]:
    """Only the series whose method label is bounded (fields an older version wrote per method
    sent stay unrendered until the hash expires, see ``queueing/metrics.py``)."""
    index = HTTP_LABELS.index("method")
    allowed = METHODS | {OTHER_METHOD}
    return {kind: {k: v for k, v in series.items() if k[index] in allowed} for kind, series in data.items()}


def _histogram(
    name: str, doc: str, labelnames: list[str], data: dict[str, Series], bounds: tuple[float, ...]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labelnames)
    per_series: dict[tuple[str, ...], dict[str, float]] = {}
    for labels_idx, value in data["b"].items():
        labels, idx = labels_idx[:-1], labels_idx[-1]
        per_series.setdefault(labels, {})[idx] = value
    for labels, count in sorted(data["n"].items()):
        counts = per_series.get(labels, {})
        cumulative, buckets = 0.0, []
        for i, bound in enumerate(bounds):
            cumulative += counts.get(str(i), 0.0)
            buckets.append((repr(float(bound)), cumulative))
        buckets.append(("+Inf", count))
        family.add_metric(list(labels), buckets, data["s"].get(labels, 0.0))
    return family


class RedisCollector:
    """Reads the deployment-wide numbers from Redis at scrape time."""

    def __init__(self, client: redis.Redis, ns: str) -> None:
        self.client = client
        self.ns = ns

    def collect(self) -> Iterator[Metric]:
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(http_key(self.ns))
        pipe.hgetall(tasks_key(self.ns))
        http_raw, task_raw = pipe.execute()
        http = _known_methods(_split(http_raw, len(HTTP_LABELS)))
        requests = CounterMetricFamily(
            "meridian_http_requests", "HTTP requests by function, face, method and status", labels=HTTP_LABELS
        )
        for labels, count in sorted(http["n"].items()):
            requests.add_metric(list(labels), count)
        yield requests
        yield _histogram(
            "meridian_http_request_duration_seconds", "HTTP request latency", HTTP_LABELS, http, HTTP_BUCKETS
        )

        depth = GaugeMetricFamily("meridian_queue_depth", "Messages waiting in each Celery queue", labels=["queue"])
        for queue, n in queue_depths(self.client).items():
            depth.add_metric([queue], n)
        yield depth
        yield GaugeMetricFamily(
            "meridian_workers_active",
            f"Celery workers with a heartbeat in the last {ACTIVE_WINDOW_S:g} s",
            value=active_workers(self.client, self.ns),
        )

        tasks = _split(task_raw, 3)
        runs = CounterMetricFamily(
            "meridian_task_runs", "Celery task runs by task, queue and final state", labels=["task", "queue", "state"]
        )
        for labels, count in sorted(tasks["n"].items()):
            runs.add_metric(list(labels), count)
        yield runs
        yield _histogram(
            "meridian_task_duration_seconds", "Celery task run time", ["task", "queue", "state"], tasks, TASK_BUCKETS
        )
        failures = CounterMetricFamily(
            "meridian_task_failures", "Celery tasks that raised, by exception type", labels=["task", "exception"]
        )
        for labels, count in sorted(tasks["f"].items()):
            failures.add_metric(list(labels), count)
        yield failures


@bp.get("/metrics")
def metrics() -> Response:
    rt = current_app.extensions["meridian"]
    current_app.extensions["after_response"].drain()  # this process's requests so far, then to Redis
    current_app.extensions["metrics_buffer"].flush()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RedisCollector(rt.redis, rt.settings.service_name))
    try:
        body = generate_latest(registry)
    except redis.RedisError as exc:
        return error_response(503, f"metrics store unavailable: {type(exc).__name__}", retry_after=5)
    return Response(body, content_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})


def init_app(app: Flask, after: AfterResponse) -> None:
    """Register ``/metrics`` and count every answered request (``after``: app/after_response.py)."""
    buffer = app.extensions["metrics_buffer"] = MetricsBuffer(lambda: app.extensions["meridian"].redis)
    key = http_key(app.extensions["meridian"].settings.service_name)
    app.register_blueprint(bp)

    def observe(finished: FinishedRequest) -> None:
        labels = (*finished.labels, method_label(finished.method), str(finished.status))
        buffer.observe(key, labels, finished.duration_s, HTTP_BUCKETS)

    after.subscribe(observe)
