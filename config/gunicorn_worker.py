"""gunicorn's threaded worker (gthread), serving a kept-alive connection's next request in the
thread that answered the previous one when it comes at once.

Plain gthread hands every request of a kept-alive connection from its main thread (which polls
the idle connections) to a pool thread, and the connection back again when the answer is sent:
two thread wake-ups, a pipe write and a poller registration per request, about a quarter of a
light request's time over HTTP (measured in ``docs/engineering-history.md``). Here a pool thread
that has answered a request waits at most ``LINGER_S`` for the next one on the same connection
and serves it directly; when nothing comes, the connection goes back to the main thread as usual.

A thread lingers only while no connection is waiting for a pool thread, and for at most
``LINGER_S``, so a request that arrives meanwhile on another connection waits at most that long
(the other pool threads take it at once when one is free).

Built on gunicorn's documented extension point ``get_thread_pool`` ("override this method to
customize how the thread pool is created") and the worker's public ``handle(conn)``, which serves
one request of a connection in a pool thread and answers True when the connection stays open.
Everything else (parsing, keep-alive limits and timeouts, graceful shutdown, HTTP/2, requests a
client pipelined, which gthread finds in its parser's buffer when the connection comes back) is
gthread's own code.
"""

from __future__ import annotations

import select
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

LINGER_S = 0.002


class CountingThreadPool(ThreadPoolExecutor):
    """A thread pool that knows how many submitted calls no thread has started yet. Its own
    attributes are name-mangled (``__``): they cannot collide with the executor's internals."""

    def __init__(self, max_workers: int) -> None:
        super().__init__(max_workers=max_workers)
        self.__lock = threading.Lock()
        self.__waiting = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self.__lock:
            self.__waiting += 1
        return super().submit(self.__started, fn, *args, **kwargs)

    def __started(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.__lock:
            self.__waiting -= 1
        return fn(*args, **kwargs)

    def anyone_waiting(self) -> bool:
        return self.__waiting > 0


class LingeringThreadWorker(ThreadWorker):
    pool: CountingThreadPool

    def get_thread_pool(self) -> CountingThreadPool:
        self.pool = CountingThreadPool(self.cfg.threads)
        return self.pool

    def handle(self, conn: Any) -> Any:
        keepalive = super().handle(conn)
        while keepalive is True and self.alive and not self.pool.anyone_waiting() and _readable_soon(conn.sock):
            keepalive = super().handle(conn)
        return keepalive


def _readable_soon(sock: Any) -> bool:
    """Whether the client sends its next request within ``LINGER_S``."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(LINGER_S * 1000))
