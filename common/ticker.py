"""A background thread per process that calls a function at a fixed interval.

Used by the web processes' in-memory batches (answered requests' log lines and metrics, request
metrics to Redis, quota reservations): the thread is started on first use in each process — a
gunicorn worker forked from a master that already used it starts its own — never dies on an
exception (the next tick retries), and ``at_exit`` runs once when the interpreter exits.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable

from common.per_process import PerProcess

log = logging.getLogger("meridian")


class ProcessTicker:
    def __init__(self, name: str, interval_s: float, tick: Callable[[], None], at_exit: Callable[[], None]) -> None:
        self.name = name
        self.interval_s = interval_s
        self._tick = tick
        self._at_exit = at_exit
        self._started = PerProcess(self._start)

    def ensure_started(self) -> None:
        self._started.get()

    def _start(self) -> None:
        threading.Thread(target=self._run, name=self.name, daemon=True).start()
        atexit.register(self._at_exit)

    def _run(self) -> None:
        stop = threading.Event()
        while not stop.wait(self.interval_s):
            try:
                self._tick()
            except Exception:  # never let the thread die: the next tick retries
                log.exception("%s: tick failed", self.name)
