"""One structured line per request; JSON lines with LOG_FORMAT=json; keys never logged."""

from __future__ import annotations

import calendar
import json
import logging
import time

import pytest
import requests

from common.logs import JsonFormatter
from tests.fixtures_live import free_port, start_gunicorn, stop


def test_request_line_fields_and_no_key(client, api_key, caplog):
    with caplog.at_level(logging.INFO, logger="meridian.request"):
        resp = client.get(
            "/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": api_key, "X-Request-Id": "rid-1"}
        )
        # written once the answer is sent (a WSGI server closes the response after its last byte),
        # by the process's after-response thread (app/after_response.py)
        after = client.application.extensions["after_response"]
        after.drain()
        assert not [r for r in caplog.records if r.name == "meridian.request"]
        resp.close()
        after.drain()
    records = [r for r in caplog.records if r.name == "meridian.request"]
    assert records, "no request log line"
    rec = records[-1]
    assert (rec.method, rec.path, rec.status, rec.request_id) == ("GET", "/v1/geocoding", resp.status_code, "rid-1")
    assert rec.duration_ms >= 0
    line = JsonFormatter().format(rec)
    parsed = json.loads(line)
    assert parsed["status"] == resp.status_code and parsed["request_id"] == "rid-1"
    assert api_key not in line
    assert rec.key_prefix and rec.key_prefix in api_key


@pytest.mark.integration
def test_gunicorn_writes_the_line_after_the_answer_from_its_background_thread(settings, tmp_path):
    """Under gunicorn the line reaches the log from the process's after-response thread
    (app/after_response.py) within a fraction of a second, with the time of the answer."""
    log_path = tmp_path / "gunicorn.log"
    port = free_port()
    proc = start_gunicorn(settings, port, log_path, workers=1, LOG_FORMAT="json")
    try:
        before = time.time()
        resp = requests.get(
            f"http://127.0.0.1:{port}/v1/health/live", headers={"X-Request-Id": "after-answer-1"}, timeout=10
        )
        answered = time.time()
        assert resp.status_code == 200
        deadline = time.monotonic() + 5
        lines: list[dict] = []
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
            lines = [
                json.loads(line)
                for line in log_path.read_text().splitlines()
                if line.startswith("{") and '"after-answer-1"' in line
            ]
        assert len(lines) == 1, log_path.read_text()[-2000:]
        line = lines[0]
        assert (line["path"], line["status"], line["logger"]) == ("/v1/health/live", 200, "meridian.request")
        stamp = calendar.timegm(time.strptime(line["ts"][:19], "%Y-%m-%dT%H:%M:%S")) + int(line["ts"][20:23]) / 1000
        # the answer's time, not the write's (up to the ticker's 0.1 s later); the server stamps it as it
        # closes the response, which may be a moment after the client has read the answer
        assert int(before) - 0.001 <= stamp <= answered + 0.02
    finally:
        stop(proc)


@pytest.mark.integration
def test_text_log_line_cannot_be_forged_through_the_path(settings, tmp_path):
    """A ``%0a`` in the path decodes to a line feed: with LOG_FORMAT=text it is written escaped,
    so a client cannot add a line of its own to the log."""
    log_path = tmp_path / "gunicorn.log"
    port = free_port()
    proc = start_gunicorn(settings, port, log_path, workers=1, LOG_FORMAT="text")
    forged = "2026-01-01 00:00:00,000 INFO meridian.request: GET /v1/admin 200"
    try:
        resp = requests.get(
            f"http://127.0.0.1:{port}/nowhere%0a{forged.replace(' ', '%20')}%0d%1b[2J",
            headers={"X-Request-Id": "forged-1"},
            timeout=10,
        )
        assert resp.status_code == 404
        deadline = time.monotonic() + 5
        lines: list[str] = []
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
            lines = [line for line in log_path.read_text().splitlines() if "forged-1" in line]
        assert len(lines) == 1, log_path.read_text()[-2000:]
        assert f"GET /nowhere\\n{forged}\\r\\x1b[2J 404" in lines[0]
        assert not [line for line in log_path.read_text().splitlines() if line.startswith(forged)]
    finally:
        stop(proc)
