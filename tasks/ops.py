"""Operational tasks: a worker's view of itself (used by tests and ops to prove the wiring)."""

from __future__ import annotations

import os
from typing import Any

from celery import shared_task

from tasks.base import datasets


@shared_task(name="meridian.ping")
def ping() -> dict[str, Any]:
    """The worker's pid and the regions it has loaded."""
    return {"pid": os.getpid(), "regions": sorted(datasets().regions())}
