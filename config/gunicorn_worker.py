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
A new connection goes to the worker holding the fewest (config/connection_balance.py): a worker
that holds more than a sibling leaves a new connection on the listening socket for up to
``BALANCE_WAIT_S``, for the sibling, woken by the same connection, to accept. Everything else (parsing, keep-alive limits and timeouts, graceful shutdown, HTTP/2, requests a
client pipelined, which gthread finds in its parser's buffer when the connection comes back) is
gthread's own code.

A connection reaches a pool thread only once its request has arrived (config/request_gate.py):
gthread submits ``handle(conn)`` for every request of a connection, and the pool's ``submit``
first reads the request without blocking, there or in the gate's thread, and gives the bytes read
to the connection's parser (its unreader's public ``unread``) in the thread that serves it. A
thread lingers for a next request only when the whole of it is already there. (The gate is left
out for TLS connections, whose bytes only the thread's TLS layer can read: Meridian's TLS ends at
the proxy.)
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

from config.connection_balance import LEAVING, ConnectionTable
from config.request_gate import READ_CHUNK, GateLimits, Outcome, PendingRequest, RequestGate
from config.settings import Settings

LINGER_S = 0.002
HEAD_FIELDS_BYTES = 32 * 1024  # the header fields of a request, besides its request line
BODY_BUFFER_BYTES = 1024 * 1024  # a body is read this far before a thread takes the request
# socket's flags are enum.IntFlag members, whose ``|`` runs Python code: combined once, not per request
PEEK_NOW = int(socket.MSG_PEEK | socket.MSG_DONTWAIT)
BALANCE_WAIT_S = 0.005  # longest a new connection is left to a sibling holding fewer connections
BALANCE_STEP_S = 0.0002  # a worker leaving a connection to a sibling sleeps this long, then looks again
# the open connections of every worker of this server: made in gunicorn's master, which imports the
# worker class before it forks the workers
CONNECTIONS = ConnectionTable()


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


class GatedThreadPool(CountingThreadPool):
    """The worker's pool: ``submit(handle, conn)`` runs ``handle(conn)`` in a thread once the
    connection's request has arrived; a request refused by the gate (too slow, too large) or a
    connection its client closed completes with False (gthread then closes the connection)."""

    def __init__(self, max_workers: int, limits: GateLimits) -> None:
        super().__init__(max_workers)
        self.limits = limits
        self.__gate = RequestGate()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        (conn,) = args
        if conn.cfg.is_ssl:
            return super().submit(fn, conn)
        pending = PendingRequest(conn.sock, self.limits, _take_buffered(conn))
        outcome = pending.pump()
        if outcome is Outcome.READY:
            return super().submit(_serve, fn, conn, pending)
        if outcome is not Outcome.NEED:
            pending.refuse(outcome)
            return _completed(False)
        answer: Future[Any] = Future()

        def done(pending: PendingRequest, outcome: Outcome) -> None:
            if outcome is not Outcome.READY:
                answer.set_result(False)
                return
            served = super(GatedThreadPool, self).submit(_serve, fn, conn, pending)
            served.add_done_callback(lambda f: _copy_result(f, answer))

        self.__gate.watch(pending, done)
        return answer

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.__gate.stop()
        super().shutdown(wait, cancel_futures=cancel_futures)


class LingeringThreadWorker(ThreadWorker):
    pool: GatedThreadPool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.__slot: int | None = None
        self.__left_first = self.__left_last = 0.0  # when this worker left the waiting connection, first and last

    def init_process(self) -> None:
        self.__slot = CONNECTIONS.claim(os.getpid())
        try:
            super().init_process()
        finally:
            if self.__slot is not None:
                CONNECTIONS.release(self.__slot)

    def accept(self, listener: Any) -> None:
        """gthread's accept, unless a sibling holds fewer connections: then the connection stays on
        the listening socket for the sibling to take, for ``BALANCE_WAIT_S`` at most (a sibling
        whose threads hold its interpreter lock may be slow to come to it)."""
        slot = self.__slot
        if slot is not None and CONNECTIONS.has_fewer(slot, self.nr_conns):
            now = time.monotonic()
            if now - self.__left_last > 10 * BALANCE_STEP_S:  # not the connection left a moment ago
                self.__left_first = now
            self.__left_last = now
            if now - self.__left_first < BALANCE_WAIT_S:
                time.sleep(BALANCE_STEP_S)
                return
        super().accept(listener)
        if slot is not None:
            CONNECTIONS.publish(slot, self.nr_conns)

    def notify(self) -> None:
        """The heartbeat, once per turn of gthread's loop: also tells the siblings how many
        connections this worker holds now (closed ones included), or that it accepts no more."""
        super().notify()
        if self.__slot is not None:
            CONNECTIONS.publish(self.__slot, self.nr_conns if self.alive else LEAVING)

    def handle_exit(self, sig: Any, frame: Any) -> None:
        if self.__slot is not None:
            CONNECTIONS.publish(self.__slot, LEAVING)
        super().handle_exit(sig, frame)

    def get_thread_pool(self) -> GatedThreadPool:
        self.pool = GatedThreadPool(self.cfg.threads, gate_limits(Settings.from_env()))
        return self.pool

    def handle(self, conn: Any) -> Any:
        keepalive = super().handle(conn)
        while (
            keepalive is True
            and self.alive
            and not self.pool.anyone_waiting()
            and _readable_soon(conn.sock)
            and _next_request_arrived(conn, self.pool.limits)
        ):
            keepalive = super().handle(conn)
        return keepalive


def gate_limits(settings: Settings) -> GateLimits:
    return GateLimits(
        head_bytes=settings.limits.request_line_bytes + HEAD_FIELDS_BYTES,
        body_bytes=BODY_BUFFER_BYTES,
        head_timeout_s=settings.header_read_timeout_s,
        body_timeout_s=settings.body_read_timeout_s,
    )


def _serve(handle: Callable[[Any], Any], conn: Any, pending: PendingRequest) -> Any:
    """In a pool thread: give the bytes read to the connection's parser, then serve."""
    conn.init()
    conn.parser.unreader.unread(bytes(pending.data))
    return handle(conn)


def _take_buffered(conn: Any) -> bytes:
    """What the connection's parser read ahead of the last request (a pipelined request)."""
    return conn.parser.unreader.take_buffered() if conn.parser is not None else b""


def _next_request_arrived(conn: Any, limits: GateLimits) -> bool:
    """Whether the whole next request is already here, in the parser's read-ahead and the socket
    (looked at, not read): only then may the thread read it without waiting for the client."""
    buffered = _take_buffered(conn)
    conn.parser.unreader.unread(buffered)
    try:
        waiting = conn.sock.recv(READ_CHUNK, PEEK_NOW)
    except OSError:
        return False
    probe = PendingRequest(conn.sock, limits, buffered + waiting)
    return probe.assess() is Outcome.READY


def _completed(result: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(result)
    return future


def _copy_result(source: Future[Any], target: Future[Any]) -> None:
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())


def _readable_soon(sock: Any) -> bool:
    """Whether the client sends its next request within ``LINGER_S``."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(LINGER_S * 1000))
