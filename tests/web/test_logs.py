"""One structured line per request; JSON lines with LOG_FORMAT=json; keys never logged."""

from __future__ import annotations

import json
import logging

from app.logs import JsonFormatter


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
