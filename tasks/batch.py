"""Tasks behind asynchronous jobs (``app/jobs.py`` reads what they write; the keys are
``queueing/protocol.py``'s).

- ``meridian.geocode_chunk``: one chunk (<= 50 addresses) of a batch geocoding job, on queue
  ``batch``. Writes the chunk's results and its progress entry; idempotent (a redelivered chunk
  rewrites the same keys, progress is a hash entry per chunk, not a counter).
- ``meridian.heavy_job``: a heavy function submitted with ``async=true``, on the function's own
  queue. Runs the same code as ``meridian.heavy`` (so the cache is filled too) and copies the
  result record (or the error) to the job's result key, which lives as long as the job.

A job whose record has expired is skipped.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import shared_task

from queueing.protocol import (
    GEOCODE_CHUNK_TASK,
    HEAVY_JOB_TASK,
    JOB_EXPIRED,
    job_chunk_key,
    job_failed_key,
    job_progress_key,
    job_result_key,
    start_job,
)
from tasks.base import redis_client
from tasks.geocoding import geocode_many
from tasks.heavy import run_heavy

log = logging.getLogger("meridian.tasks")


@shared_task(name=GEOCODE_CHUNK_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def geocode_chunk(job_key: str, index: int, queries: list[str], limit: int, ttl_s: int) -> dict[str, Any]:
    client = redis_client()
    if not start_job(client, job_key):
        return JOB_EXPIRED
    try:
        results = geocode_many(queries, limit)
        pipe = client.pipeline(transaction=True)
        pipe.set(
            job_chunk_key(job_key, index), json.dumps(results, separators=(",", ":"), ensure_ascii=False), ex=ttl_s
        )
        pipe.hset(job_progress_key(job_key), str(index), len(results))
        pipe.expire(job_progress_key(job_key), ttl_s)
        pipe.execute()
    except Exception as exc:
        log.exception("batch chunk %s of %s failed", index, job_key)
        client.hset(job_failed_key(job_key), str(index), "internal error in a worker")
        client.expire(job_failed_key(job_key), ttl_s)
        raise exc
    return {"ok": True, "done": len(results)}


@shared_task(name=HEAVY_JOB_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def heavy_job(
    service_ref: str,
    encoded_params: dict[str, Any],
    cache_key: str,
    job_key: str,
    ttl_s: int,
    dataset_versions: str | None = None,
) -> dict[str, Any]:
    client = redis_client()
    if not start_job(client, job_key):
        return JOB_EXPIRED
    try:
        return run_heavy(service_ref, encoded_params, cache_key, dataset_versions)
    finally:
        raw = client.get(cache_key)
        if raw is not None:
            client.set(job_result_key(job_key), raw, ex=ttl_s)
