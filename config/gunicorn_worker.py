"""gunicorn's threaded worker (gthread), serving a kept-alive connection's next request in the
thread that answered the previous one when it comes at once.

Plain gthread hands every request of a kept-alive connection from its main thread (which polls
the idle connections) to a pool thread, and the connection back again when the answer is sent:
two thread wake-ups, a pipe write and a poller registration per request, about 0.06-0.1 ms on
these machines, as much as the whole Python work of a light request. Here a pool thread that
has answered a request waits at most ``LINGER_S`` for the next one on the same connection and
serves it directly; when nothing comes, the connection goes back to the main thread as before.

A thread lingers only when no other connection is waiting for a pool thread, and for at most
``LINGER_S``, so a request that arrives meanwhile on another connection waits at most that long
for a thread (the other pool threads take it at once when one is free). Everything else (parsing,
keep-alive limits, timeouts, graceful shutdown, HTTP/2) is gthread's own code.
"""

from __future__ import annotations

import select

from gunicorn.workers.gthread import ThreadWorker

LINGER_S = 0.002


class LingeringThreadWorker(ThreadWorker):
    def handle(self, conn):
        keepalive = super().handle(conn)
        while keepalive is True and self.alive and self._no_one_waiting() and self._next_request_soon(conn):
            keepalive = super().handle(conn)
        return keepalive

    def _no_one_waiting(self) -> bool:
        return self.tpool._work_queue.empty()

    @staticmethod
    def _next_request_soon(conn) -> bool:
        if conn.parser.unreader.buf.getvalue():  # pipelined: already read
            return True
        poller = select.poll()
        poller.register(conn.sock, select.POLLIN)
        return bool(poller.poll(LINGER_S * 1000))
