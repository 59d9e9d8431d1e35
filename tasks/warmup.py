"""A Celery worker warms before it takes a task (engine/warmup.py).

- The main process, before it starts its pool and consumes (``worker_init``), runs each engine
  service once on every dataset: the numba kernels are loaded from the image's cache or, on a
  CPU the cache was not made for, compiled (and written to ``NUMBA_CACHE_DIR``). It then closes
  those datasets; the pool processes it forks inherit the compiled kernels. Until then the worker
  answers no ping, so the web's ``/v1/health/ready`` (check ``workers``) is not ready either.
- Each pool process opens its datasets right after it starts, in a background thread (Celery's
  process start-up timeout is not at risk): the first isochrone or map of a process does not pay
  ~1 s of index building.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import signals

from engine.dataset import DatasetRegistry
from engine.warmup import WarmState, warm_in_background, warm_registry
from tasks.base import datasets, settings

log = logging.getLogger("meridian.warmup")
process_state = WarmState()


@signals.worker_init.connect
def _warm_before_consuming(**_kwargs: Any) -> None:
    registry = DatasetRegistry(settings().data_dir)
    state = WarmState()
    warm_registry(registry, state)
    for ds in registry.all():
        ds.close()
    log.info("worker warm before consuming: %s", state.check())


@signals.worker_process_init.connect
def _warm_in_background(**_kwargs: Any) -> None:
    warm_in_background(datasets(), process_state)
