"""How many connections each web worker of one server holds, so that a worker holding more than a
sibling leaves a new connection to that sibling (config/gunicorn_worker.py).

gunicorn's workers share one listening socket and every idle worker is woken for a new connection;
whichever runs first accepts it. A client opening its kept-alive connections in a burst (a proxy's
upstream pool, a load generator) hands them all to the worker that happened to be running: eight
connections on one of two workers, whose threads then share one interpreter lock while the other
worker's core idles. The kernel's own balancing (``SO_REUSEPORT``, gunicorn's ``reuse_port``)
spreads connections by a hash, unevenly for a handful, and lets a second server started on the same
port by mistake take a share of the connections instead of failing to bind.

The table lives in an anonymous shared mapping made when this module is imported, which happens in
gunicorn's master before it forks the workers: every worker of the server writes its own slot and
reads its siblings'. A slot is a worker's pid and its count of open connections; a worker that is
stopping writes ``LEAVING`` so that no sibling waits for it to accept.
"""

from __future__ import annotations

import mmap
import multiprocessing

from common.processes import process_alive

SLOTS = 64  # workers of one server at most; a worker finding no free slot accepts as plain gthread
LEAVING = 2**62  # the count of a worker that accepts no more connections


class ConnectionTable:
    def __init__(self, slots: int = SLOTS) -> None:
        self.slots = slots
        self.__mem = mmap.mmap(-1, slots * 16)  # anonymous and MAP_SHARED: inherited by forks
        self.__cells = memoryview(self.__mem).cast("q")  # [pid, count] per slot
        self.__lock = multiprocessing.Lock()

    def claim(self, pid: int) -> int | None:
        """A slot for the worker ``pid``: a free one, or one whose worker has died."""
        with self.__lock:
            for slot in range(self.slots):
                owner = self.__cells[2 * slot]
                if owner == 0 or owner == pid or not process_alive(owner):
                    self.__cells[2 * slot] = pid
                    self.__cells[2 * slot + 1] = 0
                    return slot
        return None

    def release(self, slot: int) -> None:
        with self.__lock:
            self.__cells[2 * slot] = 0
            self.__cells[2 * slot + 1] = 0

    def publish(self, slot: int, count: int) -> None:
        self.__cells[2 * slot + 1] = count

    def has_fewer(self, slot: int, count: int) -> bool:
        """Whether a live sibling of the worker in ``slot`` holds fewer connections than ``count``."""
        cells = self.__cells
        for other in range(self.slots):
            if other == slot:
                continue
            owner = cells[2 * other]
            if owner != 0 and cells[2 * other + 1] < count and process_alive(owner):
                return True
        return False
