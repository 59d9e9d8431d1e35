"""Request bodies read whole, bounded in size and time, before the app sees them (WSGI middleware).

A hostile or slow client must not hold a web thread nor get a reset connection instead of an
error body:

- **Time.** The body is read within ``body_read_timeout_s`` in all (the server's socket, when it
  exposes one as ``gunicorn.socket``, gets the remaining time before every read): a client that
  sends its headers and then trickles the body gets 408 and the connection is closed, so it holds
  a thread at most that long.
- **Size.** Past ``Limits.request_body_bytes`` the answer is 413 with the spec's error body. The
  excess is read and discarded up to ``DRAIN_FACTOR`` times the limit (same deadline) so that a
  client still sending its upload is done before the answer comes and reads it instead of a
  reset; beyond that the connection is closed after the answer. Chunked bodies are bounded the
  same way.
- **Nesting.** A JSON body nested deeper than ``body_json_max_depth`` is 400 ``body`` (deep
  nesting makes Python's parsers and encoders raise ``RecursionError``).

The app then reads the buffered body from memory (``wsgi.input`` is replaced), so Flask, webargs
and the CSV/multipart parsers never block on the network. The verdict travels in the WSGI
environ; :func:`raise_body_error`, called by the app's ``before_request`` hook once the request
has its id, turns it into the error answer.
"""

from __future__ import annotations

import contextlib
import io
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from werkzeug.exceptions import RequestEntityTooLarge, RequestTimeout

from app.json_depth import nesting_depth
from engine.errors import InvalidParameter

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

ENV_ERROR = "meridian.body_error"  # (status, message, connection closed) decided while reading
CHUNK = 64 * 1024
DRAIN_FACTOR = 4
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class BodyTimeout(Exception):
    pass


class BodyGuard:
    def __init__(self, app: WSGIApp, max_bytes: int, timeout_s: float, max_depth: int) -> None:
        self.app, self.max_bytes, self.timeout_s, self.max_depth = app, max_bytes, timeout_s, max_depth

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") in BODY_METHODS:
            self._buffer(environ)
        return self.app(environ, start_response)

    def _buffer(self, environ: dict[str, Any]) -> None:
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            environ[ENV_ERROR] = (400, "body: Content-Length is not a number", True)
            return
        if not chunked and length <= 0:
            return
        stream = environ["wsgi.input"]
        sock = environ.get("gunicorn.socket")
        deadline = time.monotonic() + self.timeout_s
        expected = None if chunked else length
        try:
            body = self._read(stream, sock, deadline, min(expected or self.max_bytes + 1, self.max_bytes + 1))
            if len(body) > self.max_bytes:
                drained = self._drain(stream, sock, deadline, expected, len(body))
                environ[ENV_ERROR] = (413, self._too_large(expected), not drained)
                body = b""
        except BodyTimeout:
            environ[ENV_ERROR] = (
                408,
                f"body: not received within {self.timeout_s:g} s; send the body at once after the headers",
                True,
            )
            body = b""
        finally:
            if sock is not None:
                _set_timeout(sock, None)
        if sock is not None and environ.get(ENV_ERROR, (0, "", False))[2]:
            _stop_reading(sock)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        environ["wsgi.input_terminated"] = True
        is_json = "json" in environ.get("CONTENT_TYPE", "").lower()
        if ENV_ERROR not in environ and body and is_json and not self._depth_ok(body):
            environ[ENV_ERROR] = (400, f"body: JSON nested deeper than {self.max_depth} levels", False)

    def _too_large(self, expected: int | None) -> str:
        size = f"{expected} bytes" if expected is not None else "a chunked body"
        return f"request body too large: {size}, at most {self.max_bytes} bytes"

    @staticmethod
    def _read(stream: Any, sock: socket.socket | None, deadline: float, want: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < want:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BodyTimeout
            if sock is not None:
                _set_timeout(sock, remaining)
            try:
                data = stream.read(min(CHUNK, want - got))
            except TimeoutError:
                raise BodyTimeout from None
            if not data:
                break
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    def _drain(self, stream: Any, sock: socket.socket | None, deadline: float, expected: int | None, got: int) -> bool:
        """Read and discard the rest of an oversized body; True when all of it was read."""
        bound = self.max_bytes * DRAIN_FACTOR
        if expected is not None and expected > bound:
            return False
        while got < bound:
            data = self._read(stream, sock, deadline, min(CHUNK, bound - got))
            if not data:
                return True
            got += len(data)
            if expected is not None and got >= expected:
                return True
        return False

    def _depth_ok(self, body: bytes) -> bool:
        return nesting_depth(body) <= self.max_depth


def _set_timeout(sock: socket.socket, timeout: float | None) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.settimeout(timeout)


def _stop_reading(sock: socket.socket) -> None:
    """The rest of the body will not be read: shut the socket's reading side, so the server sees
    the end of the stream after this answer and closes the connection instead of waiting for (or
    parsing) what the client still sends."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RD)


def raise_body_error(environ: dict[str, Any]) -> None:
    """The error answer for the body's verdict, if the guard gave one (``environ``: the request's)."""
    verdict = environ.get(ENV_ERROR)
    if verdict is None:
        return
    status, message, _close = verdict
    if status == 413:
        raise RequestEntityTooLarge(message)
    if status == 408:
        raise RequestTimeout(message)
    raise InvalidParameter(message, parameter="body")  # 400: a Content-Length not a number, JSON too deep


def init_app(app: Flask, max_bytes: int, timeout_s: float, max_depth: int) -> None:
    """Install the guard; the app's ``before_request`` hook calls :func:`raise_body_error`."""
    app.wsgi_app = BodyGuard(app.wsgi_app, max_bytes, timeout_s, max_depth)  # type: ignore[method-assign]
