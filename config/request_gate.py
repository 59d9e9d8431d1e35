"""Requests read before a thread serves them: a slow client waits in a selector, not in a thread.

gunicorn's threaded worker hands a connection to a pool thread as soon as its socket is readable;
the thread then reads the request with blocking reads and no deadline, so a client that sends its
headers a byte at a time holds the thread as long as it likes, and a dozen such clients hold
every thread of every process. Here a connection reaches a thread only once its whole request
head and the first ``body_bytes`` of its body have arrived. Until then its bytes are read without
blocking, by the thread that hands it over or by one gate thread per process that watches every
waiting connection in a selector, and the request is bounded:

- the head must be complete within ``head_timeout_s`` of the moment the connection is handed over
  (accepted, or readable again after a kept-alive pause), else 408 and the connection is closed;
  a new connection that sends nothing at all is closed without an answer;
- the body (its first ``body_bytes``) must follow within ``body_timeout_s`` of the head, else 408;
  a request that expects ``100 Continue`` gets it from here, so its client sends the body;
- a head longer than ``head_bytes`` is 414 (the request line alone) or 431.

The bytes read are handed to the server's parser with the connection (config/gunicorn_worker.py).
A body longer than ``body_bytes`` is read on by the thread, within app/bodies.py's deadline.
"""

from __future__ import annotations

import contextlib
import enum
import json
import selectors
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from queue import Empty, SimpleQueue

READ_CHUNK = 64 * 1024
EXPIRY_CHECK_S = 0.1  # how often the gate thread looks for requests past their deadline
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


@dataclass(frozen=True)
class GateLimits:
    head_bytes: int  # request line and header fields together
    body_bytes: int  # a body is read up to this much before a thread takes the request
    head_timeout_s: float
    body_timeout_s: float


class Outcome(enum.Enum):
    READY = "ready"  # the head and the body (up to body_bytes) are here
    NEED = "need"  # more to come
    CLOSED = "closed"  # the client closed, or never sent anything: close without an answer
    TIMEOUT = "timeout"  # 408
    TOO_LARGE = "too large"  # 414 / 431


@dataclass(frozen=True)
class Head:
    end: int  # offset of the body in the bytes read
    path: str
    content_length: int
    chunked: bool
    expects_continue: bool


def find_head(data: bytes | bytearray) -> Head | None:
    """The request head in ``data`` once its blank line has arrived (empty lines before the
    request line are skipped, as the parser does). Values the parser will refuse (a Content-Length
    that is not a number) count as no body: the request goes to the parser at once, which answers."""
    start = len(data) - len(data.lstrip(b"\r\n")) if data[:1] in (b"\r", b"\n") else 0
    end = data.find(b"\r\n\r\n", start)
    if end < 0:
        return None
    lines = bytes(data[start:end]).split(b"\r\n")
    request_line = lines[0].split(b" ")
    length, chunked, expects = 0, False, False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"content-length":
            length = int(value) if value.isdigit() else 0
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value
        elif name == b"expect":
            expects = value == b"100-continue" and request_line[-1] == b"HTTP/1.1"
    path = request_line[1].decode("latin-1").split("?", 1)[0] if len(request_line) == 3 else "/"
    return Head(end + 4, path, length, chunked, expects)


def chunked_body_complete(body: bytes | bytearray) -> bool:
    """Whether a chunked body (from its first chunk-size line) has its last chunk and trailers.
    A malformed size line counts as complete: the parser answers it."""
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return False
        size_field = bytes(body[pos:eol]).split(b";", 1)[0].strip()
        try:
            size = int(size_field, 16)
        except ValueError:
            return True
        if size == 0:
            return body.find(b"\r\n\r\n", eol) >= 0
        pos = eol + 2 + size + 2
        if pos > len(body):
            return False


class PendingRequest:
    """A connection's next request, read as it comes."""

    def __init__(self, sock: socket.socket, limits: GateLimits, buffered: bytes = b"") -> None:
        self.sock, self.limits = sock, limits
        self.data = bytearray(buffered)
        self.head: Head | None = None
        self.continue_due = False
        self.deadline = time.monotonic() + limits.head_timeout_s

    def pump(self) -> Outcome:
        """Read what the socket holds now (never blocks) and say where the request stands."""
        outcome = self.assess()
        while outcome is Outcome.NEED:
            if self.continue_due:
                self.continue_due = False
                with contextlib.suppress(OSError):
                    self.sock.send(CONTINUE, socket.MSG_DONTWAIT)
            try:
                chunk = self.sock.recv(READ_CHUNK, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return outcome
            except OSError:
                return Outcome.CLOSED
            if not chunk:
                return Outcome.CLOSED
            self.data += chunk
            outcome = self.assess()
        return outcome

    def assess(self) -> Outcome:
        if self.head is None:
            self.head = find_head(self.data)
            if self.head is None:
                if len(self.data) > self.limits.head_bytes:
                    return Outcome.TOO_LARGE
                return self._unless_late()
            # a client that expects 100 Continue waits for it before sending its body
            self.continue_due = self.head.expects_continue and len(self.data) == self.head.end
            self.deadline = time.monotonic() + self.limits.body_timeout_s
        body = self.data[self.head.end :]
        if len(body) >= self.limits.body_bytes:
            return Outcome.READY
        if self.head.chunked:
            return Outcome.READY if chunked_body_complete(body) else self._unless_late()
        return Outcome.READY if len(body) >= self.head.content_length else self._unless_late()

    def _unless_late(self) -> Outcome:
        if time.monotonic() < self.deadline:
            return Outcome.NEED
        return Outcome.TIMEOUT if self.data.strip(b"\r\n") else Outcome.CLOSED

    def refuse(self, outcome: Outcome) -> None:
        """Answer a request that will not be served (408, 414 or 431) and stop reading it: the
        server then closes the connection at once, without waiting for what the client still
        sends."""
        if outcome in (Outcome.TIMEOUT, Outcome.TOO_LARGE):
            with contextlib.suppress(OSError):
                self.sock.send(self._answer(outcome), socket.MSG_DONTWAIT)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RD)

    def _answer(self, outcome: Outcome) -> bytes:
        if outcome is Outcome.TIMEOUT and self.head is None:
            status, message = 408, f"headers: not received within {self.limits.head_timeout_s:g} s"
        elif outcome is Outcome.TIMEOUT:
            status = 408
            message = (
                f"body: not received within {self.limits.body_timeout_s:g} s; send the body at once after the headers"
            )
        elif b"\r\n" not in self.data.lstrip(b"\r\n"):
            status, message = 414, "request URI too long"
        else:
            status, message = 431, f"request headers longer than {self.limits.head_bytes} bytes"
        body = json.dumps(
            {
                "statusCode": status,
                "message": message,
                "error": HTTPStatus(status).phrase,
                "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "path": self.head.path if self.head else None,
                "requestId": str(uuid.uuid4()),
            }
        ).encode()
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + body


class RequestGate:
    """One thread that reads every waiting request in a selector and calls ``done(pending,
    outcome)`` once each is ready or refused (refused ones are answered first)."""

    def __init__(self) -> None:
        self.__selector = selectors.DefaultSelector()
        self.__wake_r, self.__wake_w = socket.socketpair()
        self.__wake_r.setblocking(False)
        self.__selector.register(self.__wake_r, selectors.EVENT_READ)
        self.__incoming: SimpleQueue[tuple[PendingRequest, Callable[[PendingRequest, Outcome], None]]] = SimpleQueue()
        self.__waiting: dict[PendingRequest, Callable[[PendingRequest, Outcome], None]] = {}
        self.__stopped = threading.Event()
        self.__thread = threading.Thread(target=self.__run, name="meridian-request-gate", daemon=True)
        self.__thread.start()

    def watch(self, pending: PendingRequest, done: Callable[[PendingRequest, Outcome], None]) -> None:
        self.__incoming.put((pending, done))
        with contextlib.suppress(OSError):
            self.__wake_w.send(b"\0", socket.MSG_DONTWAIT)

    def stop(self) -> None:
        self.__stopped.set()
        with contextlib.suppress(OSError):
            self.__wake_w.send(b"\0", socket.MSG_DONTWAIT)

    def __run(self) -> None:
        next_expiry = time.monotonic() + EXPIRY_CHECK_S
        while not self.__stopped.is_set():
            for key, _ in self.__selector.select(EXPIRY_CHECK_S):
                if key.fileobj is self.__wake_r:
                    self.__admit()
                else:
                    self.__advance(key.data, key.data.pump())
            if time.monotonic() >= next_expiry:
                next_expiry = time.monotonic() + EXPIRY_CHECK_S
                for pending in [p for p in self.__waiting if p.deadline <= time.monotonic()]:
                    self.__advance(pending, pending.assess())

    def __admit(self) -> None:
        with contextlib.suppress(OSError):
            self.__wake_r.recv(4096)
        while True:
            try:
                pending, done = self.__incoming.get_nowait()
            except Empty:
                return
            self.__waiting[pending] = done
            self.__selector.register(pending.sock, selectors.EVENT_READ, pending)

    def __advance(self, pending: PendingRequest, outcome: Outcome) -> None:
        if outcome is Outcome.NEED:
            return
        self.__selector.unregister(pending.sock)
        done = self.__waiting.pop(pending)
        if outcome is not Outcome.READY:
            pending.refuse(outcome)
        done(pending, outcome)
