"""Deployment-wide metrics in Redis: the layout that the writers (web processes,
``app/metrics_buffer.py``; Celery workers, ``tasks/signals.py``) and the reader (``/metrics``,
``app/metrics.py``) share. Celery workers are separate processes (often on other hosts) that
Prometheus does not scrape; Redis is shared by every process already.

- ``<ns>:metrics:http``     hash: request histograms (``app/metrics.py``);
- ``<ns>:metrics:tasks``    hash: task run time histogram and counts per task, queue and state,
                            failures per task and exception type (``f|<task>|<exception>``);
- ``<ns>:metrics:workers``  sorted set: worker hostname -> last heartbeat (unix s), written every
                            ``HEARTBEAT_S`` by each worker's main process; a worker counts as active
                            while its heartbeat is younger than ``ACTIVE_WINDOW_S``.

A histogram is a set of hash fields: ``n|<labels>`` (count), ``s|<labels>`` (sum of seconds),
``b|<labels>|<i>`` (observations in bucket ``i`` of the bounds, not cumulative; ``inf`` past the
last bound).
"""

from __future__ import annotations

from typing import Any

TASK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
HEARTBEAT_S = 5.0
ACTIVE_WINDOW_S = 15.0
SEP = "|"


def http_key(ns: str) -> str:
    return f"{ns}:metrics:http"


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


def failure_field(task: str, exception: str) -> str:
    return f"f{SEP}{task}{SEP}{exception}"


def observe(pipe: Any, key: str, labels: tuple[str, ...], seconds: float, bounds: tuple[float, ...]) -> None:
    """Queue one histogram observation on a Redis pipeline (three commands)."""
    count, total, bucket = histogram_fields(labels, seconds, bounds)
    pipe.hincrby(key, count, 1)
    pipe.hincrbyfloat(key, total, round(seconds, 6))
    pipe.hincrby(key, bucket, 1)
