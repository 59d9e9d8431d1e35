"""Each worker process opens the datasets and their indexes right after it starts (in a
background thread, so Celery's process start-up timeout is not at risk): the first isochrone or
map of a process does not pay ~1 s of index building and kernel loading."""

from __future__ import annotations

import threading
from typing import Any

from celery import signals

from tasks.base import datasets


@signals.worker_process_init.connect
def _warm_in_background(**_kwargs: Any) -> None:
    threading.Thread(target=lambda: datasets().warm(), name="meridian-warmup", daemon=True).start()
