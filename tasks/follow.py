"""A Celery worker follows the dataset store (``DATASET_STORE``) from its main process.

The pool processes need no thread of their own: a task carries the dataset versions the web
process keyed its cache with, and ``tasks.base.datasets`` reloads the registry when they differ
from what the process has loaded, i.e. once the follower has pulled and moved ``current``.
"""

from __future__ import annotations

from typing import Any

from celery import signals

from engine.store_follower import StoreFollower, follow
from tasks.base import settings

_follower: dict[str, StoreFollower | None] = {}


@signals.worker_ready.connect
def _start_following(**_kwargs: Any) -> None:
    config = settings()
    _follower["store"] = follow(
        config.dataset_store, config.data_dir, config.dataset_poll_interval_s, None, config.dataset_store_options
    )


@signals.worker_shutdown.connect
def _stop_following(**_kwargs: Any) -> None:
    follower = _follower.pop("store", None)
    if follower is not None:
        follower.stop()
