"""The one task behind every heavy function (isochrones, static maps, geometry downloads).

The web process (``app/dispatch.py``) sends the service function's name, its encoded parameters
and the cache key (``queueing.protocol.send_heavy``); the task computes, stores the result record
under the cache key (so identical requests are answered from Redis without the queue) and returns
a small status. Idempotent: a redelivered task recomputes the same value into the same key.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from engine.codec import decode
from engine.errors import ErrorKind, MeridianError
from queueing.protocol import ERROR_TTL_S, HEAVY_TASK, INTERNAL_ERROR_TTL_S, ErrorRecord, store_result
from tasks.base import datasets, redis_client, settings

log = logging.getLogger("meridian.tasks")
ALLOWED_SERVICES = ("engine.services.",)


def _resolve(ref: str) -> Callable[..., Any]:
    module, _, name = ref.partition(":")
    if not module.startswith(ALLOWED_SERVICES):
        raise ValueError(f"not a service function: {ref}")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


VERSION_SKEW_TTL_S = 30  # cache life of an answer computed from other dataset versions than its key's


@shared_task(name=HEAVY_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_heavy(
    service_ref: str, encoded_params: dict[str, Any], cache_key: str, dataset_versions: str | None = None
) -> dict[str, Any]:
    """``dataset_versions``: what the web process keyed the cache with (None from older senders)."""
    client = redis_client()
    try:
        registry = datasets(dataset_versions)
        ttl_s = settings().cache_ttl_s
        if dataset_versions is not None and registry.versions() != dataset_versions:
            # this worker has not (yet) pulled the versions the web keyed the cache with (a
            # roll-out in progress): the waiting client gets the answer of the data it has, and the
            # cache keeps that answer only until the worker has caught up
            ttl_s = min(ttl_s, VERSION_SKEW_TTL_S)
        result = _resolve(service_ref)(registry, decode(encoded_params))
        store_result(client, cache_key, result, ttl_s)
        return {"ok": True}
    except MeridianError as exc:
        store_result(client, cache_key, ErrorRecord.of(exc), ERROR_TTL_S)
        return {"ok": False, "kind": exc.kind.name}
    except SoftTimeLimitExceeded:
        timeout = ErrorRecord(ErrorKind.UNAVAILABLE, "the computation ran over its time limit")
        store_result(client, cache_key, timeout, ERROR_TTL_S)
        return {"ok": False, "kind": ErrorKind.UNAVAILABLE.name}
    except Exception:
        log.exception("heavy task %s failed", service_ref)
        store_result(
            client, cache_key, ErrorRecord(ErrorKind.INTERNAL, "internal error in a worker"), INTERNAL_ERROR_TTL_S
        )
        raise
