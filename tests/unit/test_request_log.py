"""common/logs.py: the request line through standard ``logging``, as JSON (python-json-logger) or text,
with the same fields either way; ``configure`` owns one handler of the root logger."""

from __future__ import annotations

import calendar
import io
import json
import logging
import re
import time

import pytest

from common import logs

FIELDS = {"duration_ms": 0.412, "request_id": "rid-1", "key_prefix": "abcDEF123"}


@pytest.fixture
def capture(monkeypatch):
    """A logger of its own writing to a buffer through a handler with the formatter under test."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("meridian.test.request")
    monkeypatch.setattr(logger, "handlers", [handler])
    monkeypatch.setattr(logger, "propagate", False)
    monkeypatch.setattr(logger, "level", logging.INFO)
    return logger, handler, stream


def test_json_line_fields(capture):
    logger, handler, stream = capture
    handler.setFormatter(logs.JsonFormatter())
    before = time.time()
    logs.request_line(logger, method="GET", path="/v1/routing", status=200, **FIELDS)
    after = time.time()
    line = stream.getvalue()
    assert line.endswith("\n") and line.count("\n") == 1
    out = json.loads(line)
    assert list(out)[:4] == ["ts", "level", "logger", "msg"]
    assert out == {
        "ts": out["ts"],
        "level": "info",
        "logger": "meridian.test.request",
        "msg": "GET /v1/routing 200",
        "method": "GET",
        "path": "/v1/routing",
        "status": 200,
        **FIELDS,
    }
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z", out["ts"])
    assert match, out["ts"]
    stamp = calendar.timegm(time.strptime(match[1], "%Y-%m-%dT%H:%M:%S")) + int(match[2]) / 1000
    assert int(before) - 0.001 <= stamp <= after  # UTC, the time of the request


def test_json_line_carries_the_exception(capture):
    logger, handler, stream = capture
    handler.setFormatter(logs.JsonFormatter())
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed", extra={"request_id": "rid-2"})
    out = json.loads(stream.getvalue())
    assert out["level"] == "error" and out["request_id"] == "rid-2"
    assert "ValueError: boom" in out["exc"]


def test_text_line_fields(capture):
    logger, handler, stream = capture
    handler.setFormatter(logs.TextFormatter())
    logs.request_line(logger, method="GET", path="/v1/routing", status=200, **FIELDS)
    line = stream.getvalue().rstrip("\n")
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO meridian\.test\.request: GET /v1/routing 200 "
        r"method=GET path=/v1/routing status=200 duration_ms=0\.412 request_id=rid-1 key_prefix=abcDEF123",
        line,
    ), line


def test_configure_replaces_only_its_own_handler(monkeypatch):
    root = logging.getLogger()
    other = logging.Handler()
    monkeypatch.setattr(root, "handlers", [other])
    monkeypatch.setattr(root, "level", root.level)
    logs.configure("json")
    logs.configure("text")
    ours = [h for h in root.handlers if h.get_name() == logs.HANDLER_NAME]
    assert len(ours) == 1 and isinstance(ours[0].formatter, logs.TextFormatter)
    assert other in root.handlers


def test_every_handler_gets_the_record(capture):
    logger, handler, stream = capture
    handler.setFormatter(logs.JsonFormatter())
    seen: list[logging.LogRecord] = []
    other = logging.Handler()
    other.emit = seen.append
    logger.addHandler(other)
    logs.request_line(logger, method="GET", path="/v1/routing", status=200, **FIELDS)
    assert [(r.method, r.status, r.request_id) for r in seen] == [("GET", 200, "rid-1")]
    assert '"request_id":"rid-1"' in stream.getvalue()


def test_line_written_later_carries_the_time_of_the_answer(capture):
    logger, handler, stream = capture
    handler.setFormatter(logs.JsonFormatter())
    answered = calendar.timegm((2026, 11, 25, 10, 30, 15, 0, 0, 0)) + 0.25
    logs.request_line(logger, method="GET", path="/v1/routing", status=200, created=answered, **FIELDS)
    assert json.loads(stream.getvalue())["ts"] == "2026-11-25T10:30:15.250Z"


FORGED = "2026-01-01 00:00:00,000 INFO meridian.request: GET /v1/admin 200 status=200"


def test_text_line_escapes_control_characters_of_every_field(capture):
    """Log injection: a path with ``%0a`` (decoded to a line feed), a carriage return, an ANSI
    escape and a Unicode line separator stays on its one line; fields cannot be forged."""
    logger, handler, stream = capture
    handler.setFormatter(logs.TextFormatter())
    path = f"/v1/x\n{FORGED}\r\x1b[2J\u2028end"
    logs.request_line(logger, method="GET", path=path, status=404, request_id="rid-1", key_prefix="a b=c")
    text = stream.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1 and "\r" not in text and "\x1b" not in text
    assert "\u2028" not in text
    line = text.rstrip("\n")
    assert f"GET /v1/x\\n{FORGED}\\r\\x1b[2J\\u2028end 404 " in line
    assert 'key_prefix="a b=c"' in line  # a value with a space or '=' is quoted
    assert f'path="/v1/x\\n{FORGED}\\r\\x1b[2J\\u2028end"' in line


def test_text_traceback_lines_are_indented(capture):
    logger, handler, stream = capture
    handler.setFormatter(logs.TextFormatter())
    try:
        raise ValueError(f"bad\n{FORGED}")
    except ValueError:
        logger.exception("failed")
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith("failed") and len(lines) > 2
    assert all(line.startswith("  ") for line in lines[1:]), lines
