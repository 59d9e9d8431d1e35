"""Hostile request bodies on every POST of the gateway, against real gunicorn (issue 21): not
JSON, deeply nested JSON, the wrong content type, a body past the size limit (sent whole by a
real client, which must read a 413 with the spec's error body instead of a reset connection).
Every answer is a clean 4xx with the spec's body naming the problem."""

from __future__ import annotations

import json
import socket
import time

import pytest
import requests

from engine.limits import DEFAULT_LIMITS
from tests.fixtures_live import free_port, start_gunicorn, stop

pytestmark = pytest.mark.integration

POSTS = ["/v1/geofences", "/v1/geofencing/batch", "/v1/geocoding/batch"]
SPEC_FIELDS = {"statusCode", "message", "error", "timestamp", "path", "requestId"}


def spec_error(resp: requests.Response, status: int) -> dict:
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    assert resp.headers["Content-Type"].startswith("application/json")
    body = resp.json()
    assert set(body) >= SPEC_FIELDS and body["statusCode"] == status, body
    return body


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("depth", [20_000, 5_000, 999])
def test_deeply_nested_json_is_400(live_server, api_key, path, depth):
    resp = requests.post(
        live_server + path,
        data=nested(depth),
        headers={"X-API-Key": api_key, "Content-Type": "application/json"},
        timeout=30,
    )
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:300])
    spec_error(resp, resp.status_code)


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize(
    "content_type, body",
    [
        ("application/json", b"{not json"),
        ("application/json", b"\xff\xfe\x00garbage"),
        ("application/json", b""),
        ("application/json", b"[1, 2, 3]"),
        ("application/json", b'"just a string"'),
        ("application/xml", b"<fence/>"),
        ("text/plain", b'{"type":"circle"}'),
        ("", b'{"type":"circle"}'),
    ],
)
def test_malformed_or_mistyped_body_is_clean_4xx(live_server, api_key, path, content_type, body):
    headers = {"X-API-Key": api_key}
    if content_type:
        headers["Content-Type"] = content_type
    resp = requests.post(live_server + path, data=body, headers=headers, timeout=30)
    assert resp.status_code in (400, 415), (resp.status_code, resp.text[:300])
    spec_error(resp, resp.status_code)


@pytest.mark.parametrize("path", POSTS)
def test_body_past_the_limit_is_a_readable_413(live_server, api_key, path):
    size = DEFAULT_LIMITS.request_body_bytes + 1024 * 1024
    content_type = "text/csv" if path.endswith("geocoding/batch") else "application/json"
    body = b"Aleksanterinkatu 52, Helsinki\n" * (size // 30)
    resp = requests.post(
        live_server + path, data=body, headers={"X-API-Key": api_key, "Content-Type": content_type}, timeout=60
    )
    err = spec_error(resp, 413)
    assert "too large" in err["message"] and str(DEFAULT_LIMITS.request_body_bytes) in err["message"]


def test_5mb_csv_upload_in_chunks_gets_413(live_server, api_key):
    """The issue's case: a 5 MB CSV with chunked transfer (no Content-Length) is read up to the
    limit and answered 413, not cut off mid-upload."""

    def chunks():
        line = b"Aleksanterinkatu 52, Helsinki\n" * 1000
        for _ in range(5 * 1024 * 1024 // len(line) + 1):
            yield line

    resp = requests.post(
        live_server + "/v1/geocoding/batch",
        data=chunks(),
        headers={"X-API-Key": api_key, "Content-Type": "text/csv"},
        timeout=60,
    )
    spec_error(resp, 413)


@pytest.fixture(scope="module")
def quick_server(settings, store, tmp_path_factory):
    """gunicorn (2 workers x 4 threads) whose request bodies must arrive within 1 s."""
    port = free_port()
    proc = start_gunicorn(settings, port, tmp_path_factory.mktemp("logs") / "gunicorn.log", BODY_READ_TIMEOUT="1")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def test_slow_body_does_not_hold_a_worker(quick_server, api_key):
    """Clients that send their headers and then trickle the body (more of them than the server
    has threads) are answered 408 with the spec's body once the body timeout passes and
    disconnected; a normal request meanwhile waits at most about that long."""
    host, port = quick_server.removeprefix("http://").split(":")
    socks = []
    t0 = time.monotonic()
    for _ in range(12):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(
            b"POST /v1/geofences HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"X-API-Key: {api_key}\r\nContent-Length: 100000\r\n\r\n".encode()
            + b'{"type":'
        )
        socks.append(s)
    try:
        resp = requests.get(f"{quick_server}/v1/health/live", timeout=10)
        assert resp.status_code == 200 and time.monotonic() - t0 < 4.0
        for s in socks:
            answer = b""
            while chunk := s.recv(65536):  # until the server closes the connection
                answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408"), head
            assert json.loads(body)["statusCode"] == 408
        assert time.monotonic() - t0 < 8.0
    finally:
        for s in socks:
            s.close()
