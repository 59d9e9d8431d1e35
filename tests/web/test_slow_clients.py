"""Slow clients against the real gunicorn (issue 26, finding 3): 16 connections (twice the
threads of 2 workers x 4) that send nothing, trickle their request head a few bytes at a time, or
send the head and trickle the body, must not stall the server. A health probe on a connection of
its own answers promptly all the while, and the server answers each slow connection 408 (or
closes a silent one) within its deadline instead of waiting for it."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import requests

from config.request_gate import Head, chunked_body_complete, find_head
from tests.fixtures_live import free_port, start_gunicorn, stop

pytestmark = pytest.mark.integration

DEADLINE_S = 2.0  # HEADER_READ_TIMEOUT and BODY_READ_TIMEOUT of the server under test
SLOW_CONNECTIONS = 16
TRICKLE_FOR_S = 5.0  # the attack lasts longer than the deadline
STEP_S = 0.25  # a few bytes every STEP_S
PROBE_TIMEOUT_S = 2.0  # an idle server answers in ms; a stalled one not until the attack ends

HEAD = (
    b"GET /v1/health/live HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\nAccept: */*\r\n"
    + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 20) for i in range(20))
    + b"\r\n"
)
BODY_HEAD = b"POST /v1/geofences HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n"


@pytest.fixture(scope="module")
def guarded_server(settings, store, tmp_path_factory):
    """gunicorn (2 workers x 4 threads) whose request heads and bodies must arrive within 2 s."""
    port = free_port()
    proc = start_gunicorn(
        settings,
        port,
        tmp_path_factory.mktemp("logs") / "gunicorn.log",
        HEADER_READ_TIMEOUT=str(DEADLINE_S),
        BODY_READ_TIMEOUT=str(DEADLINE_S),
    )
    try:
        yield port
    finally:
        stop(proc)


class SlowClient(threading.Thread):
    """One connection sending ``first`` at once, then ``trickle`` a few bytes every STEP_S, until
    the server answers or closes (``closed_after``: seconds from the connect) or time is up."""

    def __init__(self, port: int, first: bytes, trickle: bytes) -> None:
        super().__init__(daemon=True)
        self.port, self.first, self.trickle = port, first, trickle
        self.answer = b""
        self.closed_after: float | None = None

    def run(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            t0 = time.monotonic()
            s.sendall(self.first)
            pos = 0
            while time.monotonic() - t0 < TRICKLE_FOR_S + 2:
                if pos < len(self.trickle):
                    try:
                        s.sendall(self.trickle[pos : pos + 3])
                    except OSError:  # reset after the server closed
                        self.closed_after = time.monotonic() - t0
                        return
                    pos += 3
                s.settimeout(STEP_S)
                try:
                    chunk = s.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    self.closed_after = time.monotonic() - t0
                    return
                if not chunk:
                    self.closed_after = time.monotonic() - t0
                    return
                self.answer += chunk


def probe_while(port: int, clients: list[SlowClient]) -> list[float]:
    """Health probes, each on a new connection, until the attack is over: their durations."""
    durations = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < TRICKLE_FOR_S:
        start = time.monotonic()
        try:
            resp = requests.get(f"http://127.0.0.1:{port}/v1/health/live", timeout=PROBE_TIMEOUT_S * 2)
            assert resp.status_code == 200
        except requests.Timeout:
            pass
        durations.append(time.monotonic() - start)
        time.sleep(0.2)
    return durations


@pytest.mark.parametrize(
    "kind, first, trickle",
    [
        ("silent", b"", b""),
        ("head", b"", HEAD),
        ("body", BODY_HEAD, b'{"type":"circle"' + b" " * 3984),
    ],
)
def test_slow_clients_do_not_stall_the_server(guarded_server, kind, first, trickle):
    clients = [SlowClient(guarded_server, first, trickle) for _ in range(SLOW_CONNECTIONS)]
    for client in clients:
        client.start()
    time.sleep(0.5)  # every slow connection is open and has started sending
    durations = probe_while(guarded_server, clients)
    for client in clients:
        client.join(10)
    assert max(durations) < PROBE_TIMEOUT_S, f"slowest probe {max(durations):.2f} s of {len(durations)}"
    closed = [c.closed_after for c in clients]
    assert all(t is not None and t < DEADLINE_S + 1.5 for t in closed), closed
    if kind == "silent":
        assert all(c.answer == b"" for c in clients)
    else:
        assert all(c.answer.startswith(b"HTTP/1.1 408") for c in clients), [c.answer[:40] for c in clients]


def test_expect_continue_is_answered_before_the_body(guarded_server):
    """A client that waits for 100 Continue before its body gets it while its request waits."""
    with socket.create_connection(("127.0.0.1", guarded_server), timeout=5) as s:
        s.sendall(BODY_HEAD.replace(b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n"))
        assert s.recv(65536).startswith(b"HTTP/1.1 100 Continue")
        s.sendall(b'{"type": "circle"}' + b" " * 3982)
        answer = b""
        while b"HTTP/1.1 401" not in answer and len(answer) < 65536:
            answer += s.recv(65536)
        # the server's own 100 Continue may follow the gate's (several 1xx are allowed, RFC 9110)
        assert answer.replace(b"HTTP/1.1 100 Continue\r\n\r\n", b"").startswith(b"HTTP/1.1 401"), answer[:80]


def test_a_head_past_the_bound_is_refused(guarded_server):
    with socket.create_connection(("127.0.0.1", guarded_server), timeout=5) as s:
        s.sendall(b"GET /v1/health/live HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * 70_000)
        answer = s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:80]


def test_the_head_and_chunked_body_are_found():
    head = find_head(b"\r\nPOST /a?b=1 HTTP/1.1\r\nContent-Length: 12\r\nEXPECT: 100-Continue\r\n\r\nrest")
    assert head == Head(end=68, path="/a", content_length=12, chunked=False, expects_continue=True)
    assert find_head(b"GET / HTTP/1.1\r\nHost: x\r\n") is None
    assert chunked_body_complete(b"3\r\nabc\r\n0\r\n\r\n")
    assert chunked_body_complete(b"3;x=y\r\nabc\r\n0\r\nTrailer: t\r\n\r\n")
    assert not chunked_body_complete(b"3\r\nabc\r\n0\r\n")
    assert not chunked_body_complete(b"10\r\nabc")
