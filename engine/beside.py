"""A step of a request run beside it, on another thread, while the request's own thread does the
next step: two independent lookups whose page reads then wait on the disk at the same time.

Reverse geocoding's address step and street step each read a few pages of the search index that
a node short of memory for its dataset finds on disk; SQLite and shapely let go of the GIL while
they read and measure, so the two overlap. The threads are a small pool per process, made at first
use in the process that uses them (a gunicorn or Celery child forked from a parent that made one
gets its own). A step no pool thread has started when the request needs its answer (every thread
busy with other requests' steps) is run by the request's own thread: a busy process serves as it
would without the pool, never waiting on a queue.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from common.per_process import PerProcess

T = TypeVar("T")

POOL_THREADS = 4  # as many as a gunicorn worker's request threads (config/gunicorn.py)

# this process's pool (a forked child does not inherit its parent's threads)
_pool = PerProcess(lambda: ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="beside"))


class Beside(Generic[T]):
    """``fn(*args)`` started on the pool; :meth:`result` gives its answer (or raises its error)."""

    def __init__(self, fn: Callable[..., T], *args: object) -> None:
        self._fn, self._args = fn, args
        self._future = _pool.get().submit(fn, *args)

    def result(self) -> T:
        """The step's answer; run here if no pool thread has taken it yet."""
        if self._future.cancel():
            return self._fn(*self._args)
        return self._future.result()
