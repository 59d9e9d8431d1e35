"""A value made once in each process, at its first use there.

A gunicorn worker or a Celery child is forked from a parent that may already have made the value
(a thread, a pool of threads): the parent's threads do not survive the fork, so the child makes
its own at its first use instead of using the parent's copy.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

T = TypeVar("T")


class PerProcess(Generic[T]):
    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._value: T | None = None

    def get(self) -> T:
        """This process's value, made by ``make`` on the first call in the process."""
        pid = os.getpid()
        if self._pid != pid:
            with self._lock:
                if self._pid != pid:
                    self._value = self._make()
                    self._pid = pid
        return cast(T, self._value)
