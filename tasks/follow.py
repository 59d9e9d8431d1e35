"""A Celery worker follows the dataset store (``DATASET_STORE``) from its main process.

The pool processes need no thread of their own: a task carries the dataset versions the web
process keyed its cache with, and ``tasks.base.datasets`` reloads the registry when they differ
from what the process has loaded, i.e. once the follower has pulled and moved ``current``.
"""

from __future__ import annotations

from typing import Any

from celery import signals

from engine.store_follower import StoreFollower, follow_store
from tasks.base import settings

_follower: dict[str, StoreFollower | None] = {}


@signals.worker_ready.connect
def _start_following(**_kwargs: Any) -> None:
    _follower["store"] = follow_store(settings())


@signals.worker_shutdown.connect
def _stop_following(**_kwargs: Any) -> None:
    follower = _follower.pop("store", None)
    if follower is not None:
        follower.stop()
