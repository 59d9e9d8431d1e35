"""``meridian.matrix_job``: a travel-time matrix submitted as a job (``async=true`` on
``/v1/matrix``), on queue ``matrix``, stored in chunks of rows with the job's TTL.

The matrix is computed a block of rows at a time (:func:`engine.services.matrix.run_rows`), each
block stored under its own keys as it is finished (``queueing/protocol.py``: ``:waypoints``,
``:rows:<annotation>:<i>``, the progress hash), so neither the worker nor Redis ever holds the
whole answer in one piece: a 10,000 x 10,000 matrix is a hundred values of 100 rows, not one
of 800 MB. ``app/jobs.py`` streams them to the client as JSON or CSV.

The task has its own time limits (an hour, not the heavy functions' minute) and is acknowledged
when received: redelivery after the broker's visibility timeout would start a long job twice. A
worker lost mid-job leaves the job ``running`` until it expires; an error is stored as the
job's result record (``failed``).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from engine.codec import decode, json_bytes
from engine.errors import ErrorKind, MeridianError
from engine.services import matrix
from queueing.protocol import (
    JOB_EXPIRED,
    MATRIX_JOB_HARD_TIME_LIMIT_S,
    MATRIX_JOB_SOFT_TIME_LIMIT_S,
    MATRIX_JOB_TASK,
    ErrorRecord,
    job_progress_key,
    job_result_key,
    job_rows_key,
    job_waypoints_key,
    pack,
    start_job,
)
from tasks.base import datasets, redis_client, settings

log = logging.getLogger("meridian.tasks")


@shared_task(
    name=MATRIX_JOB_TASK,
    acks_late=False,
    ignore_result=True,
    soft_time_limit=MATRIX_JOB_SOFT_TIME_LIMIT_S,
    time_limit=MATRIX_JOB_HARD_TIME_LIMIT_S,
)
def matrix_job(
    encoded_params: dict[str, Any], job_key: str, rows: int, ttl_s: int, dataset_versions: str | None = None
) -> dict[str, Any]:
    client = redis_client()
    if not start_job(client, job_key):
        return JOB_EXPIRED
    try:
        params = decode(encoded_params)
        header, blocks = matrix.run_rows(datasets(dataset_versions), params, rows, settings().limits)
        client.set(job_waypoints_key(job_key), json_bytes(header), ex=ttl_s)
        for start, block in blocks:
            index = start // rows
            pipe = client.pipeline(transaction=True)
            for annotation, values in block.items():
                pipe.set(job_rows_key(job_key, annotation, index), json_bytes(values), ex=ttl_s)
            pipe.hset(job_progress_key(job_key), str(index), len(next(iter(block.values()))))
            pipe.expire(job_progress_key(job_key), ttl_s)
            pipe.execute()
        return {"ok": True}
    except MeridianError as exc:
        _fail(client, job_key, ErrorRecord.of(exc), ttl_s)
        return {"ok": False, "kind": exc.kind.name}
    except SoftTimeLimitExceeded:
        _fail(client, job_key, ErrorRecord(ErrorKind.UNAVAILABLE, "the matrix ran over its time limit"), ttl_s)
        return {"ok": False, "kind": ErrorKind.UNAVAILABLE.name}
    except Exception:
        log.exception("matrix job %s failed", job_key)
        _fail(client, job_key, ErrorRecord(ErrorKind.INTERNAL, "internal error in a worker"), ttl_s)
        raise


def _fail(client: Any, job_key: str, record: ErrorRecord, ttl_s: int) -> None:
    client.set(job_result_key(job_key), pack(record), ex=ttl_s)
