"""Heavy functions: answered from the Redis cache, else computed by a Celery worker while the
client waits (synchronously, with a bound). The keys, records and task messages are the queue
protocol's (``queueing/protocol.py``); this is its web side.

1. Cache key = kind + service + normalised parameters + the dataset versions: an identical
   request is answered from Redis without touching the queue.
2. An identical request already in flight is joined (a Redis ``SET NX`` marker), not queued twice.
   The marker lives seconds until its task is sent, so a request that died between its claim and
   its send is taken over by the requests that joined it.
3. Otherwise the task goes to the kind's own queue (a flood of static maps cannot starve
   isochrones); the worker writes the result (or the error) under the cache key.
4. The web process waits on a wake-up list of its own (registered in ``<key>:waiters`` in the
   same script that looks at the cache; the worker stores, then pushes the record to every
   registered waiter, or a bare wake-up when the record is large, which the waiter follows with a
   read of the cache key), until ``TASK_WAIT_TIMEOUT``; past it the client gets 503 with
   ``Retry-After``, and the task itself is bounded by Celery's soft/hard time limits.
5. A cache miss that would queue into a full queue is refused at once (503, ``app/backpressure.py``).

Steps 1, 2 and 5 and the registration are one script (``queueing.protocol.claim``): a queued call
costs three round trips to Redis (the claim, the task's message, the wait that returns the record;
a fourth, the read, for a record too large to push), a cached one one. Each round trip is a wake-up of this process by the scheduler, which on a busy
machine costs more than the command (docs/engineering-history.md, "app/dispatch.py").
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import cast

import redis
from kombu.exceptions import OperationalError as BrokerError

from app import backpressure
from app.registry import Function
from engine.errors import Unavailable
from engine.results import BinaryResult
from queueing.depth import queue_lists
from queueing.protocol import (
    INFLIGHT_TTL_S,
    Claim,
    HeavyCall,
    JsonText,
    TaskSender,
    cache_key,
    claim,
    inflight_key,
    is_record,
    job_result_key,
    kind_of,
    new_wake_key,
    read_result,
    send_heavy,
    send_heavy_job,
    waiters_key,
)

BLOCK_S = 0.5  # one BLPOP; below the Redis client's socket timeout, repeated until the deadline


def _queue_unavailable(exc: Exception) -> Unavailable:
    return Unavailable(f"queue unavailable ({type(exc).__name__}); retry shortly", retry_after=5)


def _unbounded(queue: str) -> int:
    return 0


def queued_call(function: Function, params: object) -> HeavyCall:
    """The queue's record of one call of a queued function: its queue is the call's kind."""
    if function.queue is None or function.service_ref is None:
        raise ValueError(f"function {function.cmd!r} is not computed by the queue")
    return HeavyCall(function.queue, function.service_ref, params)


class Dispatcher:
    def __init__(
        self,
        client: redis.Redis,
        celery: TaskSender,
        namespace: str,
        wait_timeout_s: float,
        max_depth: Callable[[str], int] = _unbounded,
    ) -> None:
        self.redis = client
        self.celery = celery
        self.ns = namespace
        self.wait_timeout_s = wait_timeout_s
        self.max_depth = max_depth  # tasks waiting per queue before 503, 0 = unbounded (app/backpressure.py)

    def run(self, function: Function, params: object, dataset_versions: str) -> JsonText | BinaryResult:
        call = queued_call(function, params)
        key = cache_key(self.ns, call, dataset_versions)
        wake = new_wake_key(key)
        limit = max(0, self.max_depth(call.kind))
        try:
            found = self._claim(key, wake, call.kind, limit)
            if found.outcome == "hit":
                assert found.record is not None
                return read_result(found.record)
            if found.outcome == "full":
                raise backpressure.refusal(call.kind, found.depth, limit)
            sent = found.outcome == "queue"
            if sent:
                self._send(call, key, dataset_versions)
            return self._wait(call, key, wake, dataset_versions, sent)
        except (redis.RedisError, BrokerError) as exc:
            raise _queue_unavailable(exc) from exc

    def submit_job(self, function: Function, params: object, dataset_versions: str, job: str, ttl_s: int) -> bool:
        """``async=true`` (app/jobs.py): the result goes to the job's result key (kept ``ttl_s``)
        instead of being waited for. A cached result is copied there at once (True); otherwise
        ``meridian.heavy_job`` is queued on the kind's queue (False) and also fills the cache."""
        call = queued_call(function, params)
        key = cache_key(self.ns, call, dataset_versions)
        try:
            raw = self.redis.get(key)
            if raw is not None:
                self.redis.set(job_result_key(job), raw, ex=ttl_s)
                return True
            backpressure.admit(self.redis, call.kind, self.max_depth)
            send_heavy_job(self.celery, call, key, dataset_versions, job, ttl_s)
            return False
        except (redis.RedisError, BrokerError) as exc:
            raise _queue_unavailable(exc) from exc

    def _claim(self, key: str, wake: str, kind: str, limit: int) -> Claim:
        """:func:`~queueing.protocol.claim`, with a large stored record read: ``hit``, ``full``,
        ``queue`` or ``join``."""
        found = claim(self.redis, key, wake, queue_lists(kind), limit)
        if found.outcome == "stored":  # a large record: read as it is stored
            raw = self.redis.get(key)
            # expired since the claim: claim again (a miss this time)
            found = (
                Claim("hit", cast(bytes, raw))
                if raw is not None
                else claim(self.redis, key, wake, queue_lists(kind), limit)
            )
        return found

    def _send(self, call: HeavyCall, key: str, dataset_versions: str) -> None:
        """Send the task this request claimed. A send that fails releases the claim, so the
        requests that joined it take it over at once rather than when it expires."""
        try:
            send_heavy(self.celery, call, key, dataset_versions)
        except BaseException:
            with contextlib.suppress(redis.RedisError):
                self.redis.delete(inflight_key(key))
            raise

    def _wait(self, call: HeavyCall, key: str, wake: str, dataset_versions: str, sent: bool) -> JsonText | BinaryResult:
        """The record the worker pushed to ``wake``; the cache is read after a wake-up without one
        (a record too large to push: ``queueing.protocol.PUSH_RECORD_MAX_BYTES``). After a BLPOP
        that timed out the call is claimed again: that finds a record stored meanwhile, or takes
        over the claim of a request that died before it sent its task (the claim expired,
        ``CLAIM_TTL_S``) and sends the task from here. Never refused: this request was admitted."""
        deadline = time.monotonic() + self.wait_timeout_s
        delivered = False
        hold = sent  # the first wait after a send extends the task's in-flight marker
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Unavailable(
                        f"no worker finished the {kind_of(key)} computation within "
                        f"{self.wait_timeout_s:g} s; retry shortly",
                        retry_after=5,
                    )
                popped = self._pop(key, wake, max(0.01, min(BLOCK_S, left)), hold)
                hold = False
                if popped is not None:
                    raw = popped if is_record(popped) else self.redis.get(key)
                    if raw is not None:
                        # woken: the store removed the waiters and the pop emptied the wake-up list
                        delivered = True
                        return read_result(raw)
                    continue
                found = self._claim(key, wake, call.kind, 0)
                if found.outcome == "hit":
                    assert found.record is not None
                    return read_result(found.record)
                if found.outcome == "queue":
                    self._send(call, key, dataset_versions)
                    hold = True
        finally:
            if not delivered:  # else the store script removed the waiters and the list is empty
                pipe = self.redis.pipeline(transaction=False)
                pipe.srem(waiters_key(key), wake)
                pipe.delete(wake)
                pipe.execute()

    def _pop(self, key: str, wake: str, timeout_s: float, hold: bool) -> bytes | None:
        """One BLPOP on ``wake``; with ``hold``, behind the extension of the sent task's in-flight
        marker to ``INFLIGHT_TTL_S`` in the same round trip."""
        if not hold:
            popped = self.redis.blpop([wake], timeout=timeout_s)
        else:
            pipe = self.redis.pipeline(transaction=False)
            pipe.expire(inflight_key(key), INFLIGHT_TTL_S)
            pipe.blpop([wake], timeout=timeout_s)
            popped = pipe.execute()[1]
        return None if popped is None else cast(bytes, popped[1])
