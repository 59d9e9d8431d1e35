"""What each request leaves to do once its answer has been sent: its log line and its metrics.

A WSGI server calls the response's ``close()`` after the last byte, but in the thread that served
the request, before that thread reads the connection's next request. On a kept-alive connection,
whatever ``close()`` does is therefore still part of the client's wait for its next answer, and
formatting a line through ``logging`` costs about as much as a tenth of a routing request. So
``close()`` only appends the request's :class:`FinishedRequest` to a deque; one background thread
per process (:class:`common.ticker.ProcessTicker`) hands them, in order, to the consumers (the
request log, the metrics buffer) every ``interval_s`` — the design of nginx's buffered access log
(``buffer=``, ``flush=``).

What that costs: a request's line reaches the log up to ``interval_s`` after its answer (its
``ts`` is still the time of the answer); lines left in the deque are written at interpreter exit,
and lost only when the process is killed outright (SIGKILL), with at most ``interval_s`` of them.
The deque is unbounded but drained every tick: it holds at most one interval of requests.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from common.ticker import ProcessTicker

log = logging.getLogger("meridian")

INTERVAL_S = 0.1


@dataclass(frozen=True, slots=True)
class FinishedRequest:
    created: float  # time.time() when the answer was sent
    duration_s: float  # from the first hook to the last byte
    method: str
    path: str  # without the query string
    status: int
    request_id: str
    key_prefix: str | None
    labels: tuple[str, str]  # (function, face): the metrics' bounded labels (app/metrics.py)


Consumer = Callable[[FinishedRequest], None]


class AfterResponse:
    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self._pending: deque[FinishedRequest] = deque()
        self._consumers: list[Consumer] = []
        self._ticker = ProcessTicker("meridian-after-response", interval_s, self.drain, self.drain)

    def subscribe(self, consumer: Consumer) -> None:
        self._consumers.append(consumer)

    def add(self, finished: FinishedRequest) -> None:
        """Called by the request's thread: an append, nothing else (thread-safe)."""
        self._pending.append(finished)
        self._ticker.ensure_started()

    def drain(self) -> None:
        """Hand every pending request to each consumer, oldest first; a consumer's error is
        logged and does not keep the others from the request."""
        pending = self._pending
        while pending:
            try:
                finished = pending.popleft()
            except IndexError:  # another thread (a /metrics scrape) drained it meanwhile
                return
            for consume in self._consumers:
                try:
                    consume(finished)
                except Exception:
                    log.exception("after-response consumer %r failed", consume)
