"""Back-pressure for the heavy queues: a bounded depth per queue, checked before queueing.

Past ``QUEUE_MAX_DEPTH`` tasks waiting in a queue (``QUEUE_MAX_DEPTH_<QUEUE>`` per queue, e.g.
``QUEUE_MAX_DEPTH_STATICMAP=50``), a request that would add a task is answered 503 with
``Retry-After`` at once instead of waiting ``TASK_WAIT_TIMEOUT`` behind work the workers cannot
finish in time: synchronous heavy calls on a cache miss, ``async=true`` jobs and batch jobs
alike (an accepted job is a promise to finish it, so none is accepted past the bound).
Cached answers are still served. The depth is Celery's Redis list for the queue and its
priority sub-queues (what ``/metrics`` reports as ``meridian_queue_depth``).
"""

from __future__ import annotations

from collections.abc import Callable

import redis

from engine.errors import Unavailable
from queueing.depth import queue_depths

RETRY_AFTER_S = 2


def queue_depth(client: redis.Redis, queue: str) -> int:
    return queue_depths(client, (queue,))[queue]


def admit(client: redis.Redis, queue: str, max_depth: Callable[[str], int]) -> None:
    """Raise 503 ``Unavailable`` when ``queue`` already holds its maximum of waiting tasks."""
    limit = max_depth(queue)
    if limit <= 0:
        return
    depth = queue_depth(client, queue)
    if depth >= limit:
        raise refusal(queue, depth, limit)


def refusal(queue: str, depth: int, limit: int) -> Unavailable:
    """The 503 of a full queue (a synchronous heavy call learns its depth in
    ``queueing.protocol.claim``, in the same round trip as its cache look-up)."""
    return Unavailable(
        f"the {queue} queue is full ({depth} tasks waiting, at most {limit}); retry shortly",
        retry_after=RETRY_AFTER_S,
    )
