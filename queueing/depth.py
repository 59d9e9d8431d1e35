"""How many tasks wait in each Celery queue: the broker's Redis list of the queue and its
priority sub-queues. Read by the web's back-pressure (a full queue answers 503 before queueing
more; for a synchronous heavy call inside ``queueing.protocol.claim``'s script) and by ``/metrics``
(``meridian_queue_depth``)."""

from __future__ import annotations

from collections.abc import Sequence

import redis

from queueing.protocol import QUEUES

# Celery's Redis transport keeps priority sub-queues as "<queue>\x06\x16<priority>".
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


def queue_lists(queue: str) -> tuple[str, ...]:
    """The Redis lists that hold ``queue``'s waiting tasks: its own and its priority sub-queues."""
    return tuple(queue + suffix for suffix in PRIORITY_SUFFIXES)


def queue_depths(client: redis.Redis, queues: Sequence[str] = QUEUES) -> dict[str, int]:
    """Tasks waiting in each of ``queues``: Celery's Redis list and its priority sub-queues."""
    pipe = client.pipeline(transaction=False)
    for queue in queues:
        for name in queue_lists(queue):
            pipe.llen(name)
    counts = pipe.execute()
    n = len(PRIORITY_SUFFIXES)
    return {queue: sum(counts[i * n : (i + 1) * n]) for i, queue in enumerate(queues)}
