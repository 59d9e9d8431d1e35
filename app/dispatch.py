"""Heavy functions: answered from the Redis cache, else computed by a Celery worker while the
client waits (synchronously, with a bound).

1. Cache key = kind + service + normalised parameters + the dataset versions: an identical
   request is answered from Redis without touching the queue.
2. An identical request already in flight is joined (a Redis ``SET NX`` marker), not queued twice.
3. Otherwise the task goes to the kind's own queue (a flood of static maps cannot starve
   isochrones); the worker writes the result (or the error) under the cache key.
4. The web process waits on a wake-up list of its own (registered in ``<key>:waiters`` before it
   looks at the cache; the worker stores, then wakes every registered waiter), until
   ``TASK_WAIT_TIMEOUT``; past it the client gets 503 with ``Retry-After``, and the task itself is
   bounded by Celery's soft/hard time limits.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass

import redis
from celery import Celery

from app.results import BinaryResult, JsonText
from engine.codec import canonical, encode
from engine.errors import ErrorKind, MeridianError, Unavailable
from tasks.results import WAKE_TTL_S, inflight_key, unpack, waiters_key
from workers.celery_app import HARD_TIME_LIMIT_S

BLOCK_S = 0.5  # one BLPOP; below the Redis client's socket timeout, repeated until the deadline


@dataclass(frozen=True)
class HeavyCall:
    kind: str  # queue name: isochrone | staticmap | geometry
    service_ref: str  # "engine.services.<module>:run"
    params: object


def cache_key(namespace: str, call: HeavyCall, dataset_versions: str) -> str:
    digest = hashlib.sha256(f"{call.service_ref}|{canonical(call.params)}|{dataset_versions}".encode()).hexdigest()
    return f"{namespace}:cache:{call.kind}:{digest}"


ERROR_PREFIX = b'J{"__error__"'


def _as_result(raw: bytes):
    """A stored result for the web layer: errors re-raised, JSON passed on as text."""
    if raw.startswith(ERROR_PREFIX):
        err = unpack(raw)["__error__"]
        raise MeridianError(err["message"], kind=ErrorKind[err["kind"]], parameter=err.get("parameter"))
    if raw[:1] == b"J":
        return JsonText(raw[1:])
    value = unpack(raw)
    return BinaryResult(value.content_type, value.body)


class Dispatcher:
    def __init__(self, client: redis.Redis, celery: Celery, namespace: str, wait_timeout_s: float) -> None:
        self.redis = client
        self.celery = celery
        self.ns = namespace
        self.wait_timeout_s = wait_timeout_s

    def cached(self, key: str):
        raw = self.redis.get(key)
        return None if raw is None else _as_result(raw)

    def submit(self, call: HeavyCall, key: str, dataset_versions: str) -> bool:
        """Queue the task unless an identical one is in flight; True when this call queued it."""
        marker = inflight_key(key)
        if not self.redis.set(marker, "1", nx=True, ex=HARD_TIME_LIMIT_S + 10):
            return False
        self.celery.send_task(
            "meridian.heavy",
            args=[call.service_ref, encode(call.params), key, dataset_versions],
            queue=call.kind,
            ignore_result=True,  # the result travels under the cache key, not Celery's backend
        )
        return True

    def run(self, call: HeavyCall, dataset_versions: str):
        key = cache_key(self.ns, call, dataset_versions)
        try:
            hit = self.cached(key)
            if hit is not None:
                return hit
            wake = f"{key}:wake:{uuid.uuid4().hex}"
            pipe = self.redis.pipeline(transaction=False)
            pipe.sadd(waiters_key(key), wake)
            pipe.expire(waiters_key(key), WAKE_TTL_S)
            pipe.get(key)
            raw = pipe.execute()[2]
            if raw is not None:  # stored between the first look and the registration
                self.redis.srem(waiters_key(key), wake)
                return _as_result(raw)
            self.submit(call, key, dataset_versions)
            return self._wait(key, wake)
        except redis.RedisError as exc:
            raise Unavailable(f"queue unavailable ({type(exc).__name__}); retry shortly", retry_after=5) from exc

    def submit_job(self, call: HeavyCall, dataset_versions: str, job_key: str, ttl_s: int) -> bool:
        """``async=true`` (app/jobs.py): the result goes to ``<job_key>:result`` (kept ``ttl_s``)
        instead of being waited for. A cached result is copied there at once (True); otherwise
        ``meridian.heavy_job`` is queued on the kind's queue (False) and also fills the cache."""
        key = cache_key(self.ns, call, dataset_versions)
        try:
            raw = self.redis.get(key)
            if raw is not None:
                self.redis.set(f"{job_key}:result", raw, ex=ttl_s)
                return True
            self.celery.send_task(
                "meridian.heavy_job",
                args=[call.service_ref, encode(call.params), key, job_key, ttl_s, dataset_versions],
                queue=call.kind,
                ignore_result=True,
            )
            return False
        except redis.RedisError as exc:
            raise Unavailable(f"queue unavailable ({type(exc).__name__}); retry shortly", retry_after=5) from exc

    def _wait(self, key: str, wake: str):
        deadline = time.monotonic() + self.wait_timeout_s
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Unavailable(
                        f"no worker finished the {key.split(':')[2]} computation within "
                        f"{self.wait_timeout_s:g} s; retry shortly",
                        retry_after=5,
                    )
                self.redis.blpop([wake], timeout=max(0.01, min(BLOCK_S, left)))
                raw = self.redis.get(key)
                if raw is not None:
                    return _as_result(raw)
        finally:
            pipe = self.redis.pipeline(transaction=False)
            pipe.srem(waiters_key(key), wake)
            pipe.delete(wake)
            pipe.execute()
