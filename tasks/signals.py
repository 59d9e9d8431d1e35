"""Worker metrics, kept in Redis so the web's ``/metrics`` (``app/metrics.py``) can read them:
Celery workers are separate processes (often on other hosts) that Prometheus does not scrape.

- ``<ns>:metrics:tasks``    hash: task run time histogram and counts per task, queue and state
                            (from ``task_prerun``/``task_postrun`` in the pool process), failures per
                            task and exception type (``task_failure``).
- ``<ns>:metrics:workers``  sorted set: worker hostname -> last heartbeat (unix s), written every
                            ``HEARTBEAT_S`` by each worker's main process; a worker counts as active
                            while its heartbeat is younger than ``ACTIVE_WINDOW_S``.

The histogram layout is shared with the web's request metrics (:func:`observe`): fields
``n|<labels>`` (count), ``s|<labels>`` (sum of seconds), ``b|<labels>|<i>`` (observations in
bucket ``i`` of the bounds, not cumulative; ``inf`` past the last bound). Recording never fails a
task: a Redis error is logged at debug level and dropped.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from celery import signals

log = logging.getLogger("meridian.metrics")

TASK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
HEARTBEAT_S = 5.0
ACTIVE_WINDOW_S = 15.0
SEP = "|"


def tasks_key(ns: str) -> str:
    return f"{ns}:metrics:tasks"


def workers_key(ns: str) -> str:
    return f"{ns}:metrics:workers"


def bucket_index(seconds: float, bounds: tuple[float, ...]) -> str:
    for i, bound in enumerate(bounds):
        if seconds <= bound:
            return str(i)
    return "inf"


def histogram_fields(labels: tuple[str, ...], seconds: float, bounds: tuple[float, ...]) -> tuple[str, str, str]:
    """Hash fields of one observation: (count field, sum field, bucket field)."""
    lab = SEP.join(labels)
    return f"n{SEP}{lab}", f"s{SEP}{lab}", f"b{SEP}{lab}{SEP}{bucket_index(seconds, bounds)}"


def observe(pipe, key: str, labels: tuple[str, ...], seconds: float, bounds: tuple[float, ...]) -> None:
    """Queue one histogram observation on a Redis pipeline (three commands)."""
    count, total, bucket = histogram_fields(labels, seconds, bounds)
    pipe.hincrby(key, count, 1)
    pipe.hincrbyfloat(key, total, round(seconds, 6))
    pipe.hincrby(key, bucket, 1)


# ---------------------------------------------------------------------------- task signals
_started: dict[str, float] = {}


def _ns() -> str:
    from tasks.base import settings

    return settings().service_name


def _queue(task) -> str:
    info = getattr(task.request, "delivery_info", None) or {}
    return str(info.get("routing_key") or "unknown")


@signals.task_prerun.connect
def _on_prerun(task_id=None, task=None, **_kw):
    _started[task_id] = time.perf_counter()


@signals.task_postrun.connect
def _on_postrun(task_id=None, task=None, state=None, **_kw):
    t0 = _started.pop(task_id, None)
    if t0 is None or task is None:
        return
    seconds = time.perf_counter() - t0
    try:
        from tasks.base import redis_client

        pipe = redis_client().pipeline(transaction=False)
        observe(pipe, tasks_key(_ns()), (task.name, _queue(task), str(state or "UNKNOWN")), seconds, TASK_BUCKETS)
        pipe.execute()
    except Exception as exc:  # metrics never fail a task
        log.debug("task metrics not recorded: %s", exc)


@signals.task_failure.connect
def _on_failure(sender=None, exception=None, **_kw):
    try:
        from tasks.base import redis_client

        name = getattr(sender, "name", "unknown")
        redis_client().hincrby(tasks_key(_ns()), f"f{SEP}{name}{SEP}{type(exception).__name__}", 1)
    except Exception as exc:
        log.debug("task failure not recorded: %s", exc)


# ---------------------------------------------------------------------------- heartbeat
_heartbeat: dict = {}


def _beat(hostname: str, stop: threading.Event) -> None:
    import redis

    from tasks.base import settings

    client = redis.Redis.from_url(settings().redis_url, socket_timeout=2, socket_connect_timeout=2)
    key = workers_key(settings().service_name)
    while not stop.is_set():
        try:
            now = time.time()
            pipe = client.pipeline(transaction=False)
            pipe.zadd(key, {hostname: now})
            pipe.zremrangebyscore(key, "-inf", now - 3600)
            pipe.execute()
        except Exception as exc:
            log.debug("worker heartbeat not written: %s", exc)
        stop.wait(HEARTBEAT_S)
    with contextlib.suppress(Exception):
        client.zrem(key, hostname)


@signals.worker_ready.connect
def _on_worker_ready(sender=None, **_kw):
    hostname = getattr(sender, "hostname", None) or "worker"
    stop = threading.Event()
    thread = threading.Thread(target=_beat, args=(hostname, stop), name="meridian-heartbeat", daemon=True)
    _heartbeat.update(stop=stop, thread=thread)
    thread.start()


@signals.worker_shutdown.connect
def _on_worker_shutdown(**_kw):
    stop, thread = _heartbeat.get("stop"), _heartbeat.get("thread")
    if stop is not None:
        stop.set()
        thread.join(3)
