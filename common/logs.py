"""Structured logs: one line per request (method, path, status, duration, request id).

Here, below every package of the project, because not only the web app configures its logs: the
command line's ``meridian import`` does too, and it should not load the web app for that.

The request line is written once the answer has been sent, by a background thread of the process
(``app/after_response.py``), so formatting and writing it is not part of any client's wait; its
``duration_ms`` runs until the last byte, its ``ts`` is the time of that byte.

``LOG_FORMAT=json`` writes JSON lines (python-json-logger), ``text`` a readable line; both are
plain ``logging`` formatters on one handler of the root logger. Keys never appear: requests are
logged with the key's public prefix only, and query strings are dropped from the logged path
(they may carry personal data such as addresses).

A client chooses the path (``%0a`` decodes to a line feed), so the text format escapes control
characters in the message and in every field (``\\n``, ``\\x1b``...), quotes a
field's value that holds a space, ``"`` or ``=``, and indents every line of a traceback: each line
that starts at column 0 is one record, and no client can forge one (JSON escapes by itself).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from typing import Any

from pythonjsonlogger.orjson import OrjsonFormatter

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# The attributes every LogRecord has: anything else on a record came in through ``extra``.
_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
HANDLER_NAME = "meridian"


class JsonFormatter(OrjsonFormatter):
    """``{"ts", "level", "logger", "msg", **extra}`` per line; ``ts`` in UTC with milliseconds,
    ``exc`` the formatted exception when there is one."""

    converter = staticmethod(time.gmtime)
    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={
                "asctime": "ts",
                "levelname": "level",
                "name": "logger",
                "message": "msg",
                "exc_info": "exc",
            },
        )

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        log_data["level"] = str(log_data["level"]).lower()
        return log_data


# C0 and C1 controls, DEL, the Unicode line and paragraph separators.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_QUOTES = re.compile(r'[\s"=]')


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    escaped = _ESCAPES.get(char)
    if escaped is not None:
        return escaped
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` on one line: control characters written as escapes (``\\n``, ``\\x1b``, ``\\u2028``)."""
    return _UNSAFE.sub(_escape_char, text) if _UNSAFE.search(text) else text


def field_value(value: Any) -> str:
    """A ``k=v`` value: escaped, and quoted when it holds a space, ``"`` or ``=`` (or is empty)."""
    text = escape_controls(str(value))
    if text and not _NEEDS_QUOTES.search(text):
        return text
    return '"' + text.replace('"', '\\"') + '"'


def _indent(text: str) -> str:
    return "\n".join("  " + escape_controls(line) for line in text.splitlines())


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger>: <message>`` followed by the record's extra fields as ``k=v``;
    control characters escaped (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = escape_controls(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return _indent(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
        return _indent(super().formatStack(stack_info))

    def format(self, record: logging.LogRecord) -> str:
        extras = extra_fields(record)
        line = super().format(record)
        return line if not extras else line + " " + " ".join(f"{k}={field_value(v)}" for k, v in extras.items())


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _RESERVED and not k.startswith("_")}


def request_line(
    logger: logging.Logger, *, method: str, path: str, status: int, created: float | None = None, **fields: Any
) -> None:
    """The one line per request: ``"<method> <path> <status>"`` with the fields as attributes of
    the record (``extra``), so every handler and formatter sees them. ``created`` (a
    ``time.time()``) dates the line when it is written later than the request was answered."""
    if not logger.isEnabledFor(logging.INFO):
        return
    extra = {"method": method, "path": path, "status": status, **fields}
    record = logger.makeRecord(
        logger.name, logging.INFO, __file__, 0, "%s %s %s", (method, path, status), None, extra=extra
    )
    if created is not None:
        record.created = created
        record.msecs = int((created - int(created)) * 1000) + 0.0
    logger.handle(record)


def configure(log_format: str = "text", debug: bool = False) -> None:
    """One handler of ours on the root logger (replaced on a second call); handlers others
    installed (pytest's, gunicorn's) are kept."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("urllib3", "matplotlib", "numba", "fiona", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def request_id_from(header_value: str | None) -> str:
    """Honour a client's X-Request-Id when it is sane, else generate one."""
    if header_value and _REQUEST_ID.match(header_value):
        return header_value
    return os.urandom(16).hex()  # 32 hex digits, like a uuid4 without its version bits
