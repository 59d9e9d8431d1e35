"""A Celery worker warms before it takes a task (engine/warmup.py).

- The main process, before it starts its pool and consumes (``worker_init``), runs each engine
  service its queues' tasks run (:data:`QUEUE_GROUPS`) once on every dataset: the numba kernels
  are loaded from the image's cache or, on a CPU the cache was not made for, compiled (and written
  to ``NUMBA_CACHE_DIR``). It then closes those datasets; the pool processes it forks inherit the
  compiled kernels. Until then the worker answers no ping, so the web's ``/v1/health/ready``
  (check ``workers``) is not ready either.
- Each pool process opens its datasets (the components those services read) right after it
  starts, in a background thread (Celery's process start-up timeout is not at risk): the first
  isochrone or map of a process does not pay ~1 s of index building.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery import signals

from engine.dataset import DatasetRegistry
from engine.warmup import EVERY_GROUP, WarmState, warm_in_background, warm_registry
from queueing.protocol import BATCH_QUEUE
from tasks.base import datasets, settings

log = logging.getLogger("meridian.warmup")
process_state = WarmState()

# The warm-up groups (engine.warmup.WARM_GROUPS) of what each queue's tasks run. A worker on any
# other queue warms every group: ``default`` runs the jobs of every function.
QUEUE_GROUPS: dict[str, frozenset[str]] = {
    "isochrone": frozenset({"isochrone"}),
    "staticmap": frozenset({"staticmap"}),
    "matrix": frozenset({"routing"}),
    "optimization": frozenset({"routing"}),
    "geometry": frozenset({"search"}),  # admin areas
    BATCH_QUEUE: frozenset({"search"}),  # batch geocoding's chunks
}
_worker_groups = {"groups": EVERY_GROUP}  # the main process's choice, inherited by its pool


def groups_for(queues: Iterable[str]) -> frozenset[str]:
    """What a worker consuming ``queues`` warms."""
    return frozenset().union(*(QUEUE_GROUPS.get(queue, EVERY_GROUP) for queue in queues))


@signals.worker_init.connect
def _warm_before_consuming(sender: Any = None, **_kwargs: Any) -> None:
    if sender is not None:
        _worker_groups["groups"] = groups_for(sender.app.amqp.queues.consume_from)
    registry = DatasetRegistry(settings().data_dir)
    state = WarmState()
    warm_registry(registry, state, groups=_worker_groups["groups"])
    for ds in registry.all():
        ds.close()
    log.info("worker warm before consuming (%s): %s", ",".join(sorted(_worker_groups["groups"])), state.check())


@signals.worker_process_init.connect
def _warm_in_background(**_kwargs: Any) -> None:
    warm_in_background(datasets(), process_state, groups=_worker_groups["groups"])
