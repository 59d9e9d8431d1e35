"""app.logs.request_line: written straight by our handler when it is the only one, through logging
otherwise, the same text either way."""

from __future__ import annotations

import io
import logging

import pytest

from app import logs

FIELDS = {"duration_ms": 0.412, "request_id": "rid-1", "key_prefix": "abcDEF123"}
WHEN = 1_795_000_000.0471


@pytest.fixture
def only_our_handler(monkeypatch):
    """The root logger with just a handler like the one ``logs.configure`` installs, on a buffer."""
    root = logging.getLogger()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler._meridian = True
    monkeypatch.setattr(root, "handlers", [handler])
    monkeypatch.setattr(root, "level", logging.INFO)
    monkeypatch.setattr(logs.time, "time", lambda: WHEN)
    return handler, stream


def _through_logging(formatter: logging.Formatter, logger: logging.Logger) -> str:
    record = logger.makeRecord(
        logger.name,
        logging.INFO,
        "",
        0,
        "%s %s %s",
        ("GET", "/v1/routing", 200),
        None,
        extra={"method": "GET", "path": "/v1/routing", "status": 200, **FIELDS},
    )
    record.created, record.msecs = WHEN, logs._msecs(WHEN)
    return formatter.format(record)


@pytest.mark.parametrize("formatter_class", [logs.JsonFormatter, logs.TextFormatter])
def test_the_direct_line_is_what_logging_would_write(only_our_handler, formatter_class):
    handler, stream = only_our_handler
    handler.setFormatter(formatter_class())
    logger = logging.getLogger("meridian.request")
    logs.request_line(logger, method="GET", path="/v1/routing", status=200, **FIELDS)
    assert stream.getvalue() == _through_logging(handler.formatter, logger) + "\n"
    assert "2026-11-18" in stream.getvalue().replace("T", " ")  # the time of the request, not a default


def test_another_handler_gets_the_record(only_our_handler):
    handler, stream = only_our_handler
    handler.setFormatter(logs.JsonFormatter())
    seen: list[logging.LogRecord] = []
    other = logging.Handler()
    other.emit = seen.append
    logging.getLogger().handlers.append(other)
    logs.request_line(logging.getLogger("meridian.request"), method="GET", path="/v1/routing", status=200, **FIELDS)
    assert [(r.method, r.status, r.request_id) for r in seen] == [("GET", 200, "rid-1")]
    assert '"request_id":"rid-1"' in stream.getvalue()  # and our handler still writes its line
