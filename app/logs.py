"""Structured logs: one line per request (method, path, status, duration, request id).

The request line is written once the answer has been sent (``app/__init__.py`` hands it to the
response's ``call_on_close``, which the WSGI server calls after the last byte), so formatting and
writing it is not part of the client's wait; its ``duration_ms`` runs until that moment.

``LOG_FORMAT=json`` writes JSON lines, ``text`` a readable line. Keys never appear: requests are
logged with the key's public prefix only, and query strings are dropped from the logged path
(they may carry personal data such as addresses).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time

import orjson

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class _SecondCache:
    """The formatted second of a timestamp, formatted once per second (``time.strftime`` is most
    of a log line's formatting cost); milliseconds are appended per record."""

    def __init__(self, fmt: str, convert) -> None:
        self.fmt = fmt
        self.convert = convert
        self.last: tuple[int, str] = (-1, "")

    def __call__(self, created: float) -> str:
        second = int(created)
        cached = self.last  # one tuple: a concurrent thread sees a consistent pair
        if cached[0] != second:
            cached = self.last = (second, time.strftime(self.fmt, self.convert(second)))
        return cached[1]


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._second = _SecondCache("%Y-%m-%dT%H:%M:%S", time.gmtime)

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": f"{self._second(record.created)}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._second = _SecondCache(self.default_time_format, self.converter)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (logging's name)
        if datefmt:
            return super().formatTime(record, datefmt)
        return f"{self._second(record.created)},{int(record.msecs):03d}"

    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        extras = {k: v for k, v in record.__dict__.items() if k not in _RESERVED and not k.startswith("_")}
        return base + ("" if not extras else " " + " ".join(f"{k}={v}" for k, v in extras.items()))


def request_line(logger: logging.Logger, *, method: str, path: str, status: int, **fields) -> None:
    """The one line per request: ``"<method> <path> <status>"`` with the fields as attributes of
    the record. Built directly, without ``Logger.info``'s walk up the stack for a caller's file and
    line that no formatter here prints."""
    if not logger.isEnabledFor(logging.INFO):
        return
    extra = {"method": method, "path": path, "status": status, **fields}
    logger.handle(logger.makeRecord(logger.name, logging.INFO, "", 0, "%s %s %s", (method, path, status), None,
                                    extra=extra))


def configure(log_format: str = "text", debug: bool = False) -> None:
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler._meridian = True  # replace our own handler only; keep others (pytest's, gunicorn's)
    root.handlers = [h for h in root.handlers if not getattr(h, "_meridian", False)] + [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("urllib3", "matplotlib", "numba", "fiona", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def request_id_from(header_value: str | None) -> str:
    """Honour a client's X-Request-Id when it is sane, else generate one."""
    if header_value and _REQUEST_ID.match(header_value):
        return header_value
    return os.urandom(16).hex()  # 32 hex digits, like a uuid4 without its version bits
