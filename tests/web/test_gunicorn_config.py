"""config/gunicorn.py on the real gunicorn: the standard gthread worker; kept-alive connections
are served whether their next request comes at once, after a pause (back through the worker's
poller) or pipelined, and more connections than pool threads are all served."""

from __future__ import annotations

import http.client
import importlib
import socket
import time
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.integration


def _conn(base: str) -> http.client.HTTPConnection:
    u = urlparse(base)
    return http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=10)


def _get(conn: http.client.HTTPConnection, path: str = "/v1/health/live") -> int:
    conn.request("GET", path, headers={"Connection": "keep-alive"})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def test_the_standard_threaded_worker_is_configured(monkeypatch):
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    config = importlib.import_module("config.gunicorn")
    config = importlib.reload(config)  # settings are read when the module is loaded
    assert (config.worker_class, config.workers, config.threads) == ("gthread", 3, 4)
    assert config.limit_request_line == 0 and config.accesslog is None


def test_back_to_back_and_paused_requests_share_one_connection(live_server):
    conn = _conn(live_server)
    assert _get(conn) == 200
    sock = conn.sock
    for _ in range(50):
        assert _get(conn) == 200
    time.sleep(0.5)  # idle: the connection waits in the worker's poller, then comes back
    assert _get(conn) == 200
    assert conn.sock is sock, "the connection was not kept alive"
    conn.close()


def test_pipelined_requests_are_all_answered(live_server):
    u = urlparse(live_server)
    one = f"GET /v1/health/live HTTP/1.1\r\nHost: {u.hostname}\r\n\r\n".encode()
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(one * 3)
        data = b""
        deadline = time.monotonic() + 10
        while data.count(b"HTTP/1.1 200") < 3 and time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.count(b"HTTP/1.1 200") == 3


def test_more_connections_than_threads_are_served_in_turn(live_server):
    conns = [_conn(live_server) for _ in range(10)]  # 2 workers x 4 threads
    t0 = time.monotonic()
    for _ in range(5):
        for conn in conns:
            assert _get(conn) == 200
    assert time.monotonic() - t0 < 10
    for conn in conns:
        conn.close()
