"""Worker metrics, kept in Redis so the web's ``/metrics`` (``app/metrics.py``) can read them (the
layout is ``queueing/metrics.py``): task run time and state from ``task_prerun``/``task_postrun`` in
the pool process, failures per task and exception type (``task_failure``), and a heartbeat per
worker written by its main process. Labels come from bounded sets: the registered task's name, a
queue of ``QUEUES`` (``other`` for any other routing key), Celery's states, exception class names.
Recording never fails a task: a Redis error is logged at debug level and dropped.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

import redis
from celery import signals

from queueing.metrics import (
    HASH_TTL_S,
    HEARTBEAT_S,
    TASK_BUCKETS,
    failure_field,
    observe,
    tasks_key,
    workers_key,
)
from queueing.protocol import QUEUES
from tasks.base import redis_client, settings

log = logging.getLogger("meridian.metrics")

# ---------------------------------------------------------------------------- task signals
_started: dict[str, float] = {}


def _ns() -> str:
    return settings().service_name


def _queue(task: Any) -> str:
    """The queue label: one of ``QUEUES`` or ``other`` (a producer chooses the routing key)."""
    info = getattr(task.request, "delivery_info", None) or {}
    queue = str(info.get("routing_key") or "")
    return queue if queue in QUEUES else "other"


@signals.task_prerun.connect
def _on_prerun(task_id: str | None = None, task: Any = None, **_kw: Any) -> None:
    if task_id is not None:
        _started[task_id] = time.perf_counter()


@signals.task_postrun.connect
def _on_postrun(task_id: str | None = None, task: Any = None, state: str | None = None, **_kw: Any) -> None:
    t0 = _started.pop(task_id, None) if task_id is not None else None
    if t0 is None or task is None:
        return
    seconds = time.perf_counter() - t0
    try:
        pipe = redis_client().pipeline(transaction=False)
        observe(pipe, tasks_key(_ns()), (task.name, _queue(task), str(state or "UNKNOWN")), seconds, TASK_BUCKETS)
        pipe.execute()
    except Exception as exc:  # metrics never fail a task
        log.debug("task metrics not recorded: %s", exc)


@signals.task_failure.connect
def _on_failure(sender: Any = None, exception: BaseException | None = None, **_kw: Any) -> None:
    try:
        name = getattr(sender, "name", "unknown")
        pipe = redis_client().pipeline(transaction=False)
        pipe.hincrby(tasks_key(_ns()), failure_field(name, type(exception).__name__), 1)
        pipe.expire(tasks_key(_ns()), HASH_TTL_S)
        pipe.execute()
    except Exception as exc:
        log.debug("task failure not recorded: %s", exc)


# ---------------------------------------------------------------------------- heartbeat
_heartbeat: dict[str, Any] = {}


def _beat(hostname: str, stop: threading.Event) -> None:
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
def _on_worker_ready(sender: Any = None, **_kw: Any) -> None:
    hostname = getattr(sender, "hostname", None) or "worker"
    stop = threading.Event()
    thread = threading.Thread(target=_beat, args=(hostname, stop), name="meridian-heartbeat", daemon=True)
    _heartbeat.update(stop=stop, thread=thread)
    thread.start()


@signals.worker_shutdown.connect
def _on_worker_shutdown(**_kw: Any) -> None:
    stop, thread = _heartbeat.get("stop"), _heartbeat.get("thread")
    if stop is not None and thread is not None:
        stop.set()
        thread.join(3)
