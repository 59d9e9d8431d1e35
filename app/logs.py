"""Structured logs: one line per request (method, path, status, duration, request id).

``LOG_FORMAT=json`` writes JSON lines, ``text`` a readable line. Keys never appear: requests are
logged with the key's public prefix only, and query strings are dropped from the logged path
(they may carry personal data such as addresses).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from datetime import UTC, datetime

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

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
