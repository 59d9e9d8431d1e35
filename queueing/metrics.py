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

Every label value comes from a bounded set (``app/metrics.py`` says which), so the hashes hold a
bounded number of fields; each write also sets the hash to expire :data:`HASH_TTL_S` after the
last one, so fields nobody writes any more (a renamed route, a label an older version wrote) go
away with a hash that has gone quiet. Prometheus reads the restart from zero as a counter reset.

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
HASH_TTL_S = 7 * 24 * 3600


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
    """Queue one histogram observation on a Redis pipeline (three increments and the expiry)."""
    count, total, bucket = histogram_fields(labels, seconds, bounds)
    pipe.hincrby(key, count, 1)
    pipe.hincrbyfloat(key, total, round(seconds, 6))
    pipe.hincrby(key, bucket, 1)
    pipe.expire(key, HASH_TTL_S)
