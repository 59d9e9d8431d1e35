"""config/gunicorn.py on the real gunicorn: gthread whose threads linger on a kept-alive
connection (config/gunicorn_worker.py); kept-alive connections are served whether their next
request comes at once, after a pause (back through the worker's poller) or pipelined, and more
connections than pool threads are all served."""

from __future__ import annotations

import http.client
import importlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlparse

import pytest
from gunicorn.workers.gthread import ThreadWorker

from config.connection_balance import LEAVING, ConnectionTable
from config.gunicorn_worker import CountingThreadPool, LingeringThreadWorker
from config.settings import PROJECT_ROOT as ROOT
from tests.fixtures_live import free_port, wait_http

pytestmark = pytest.mark.integration


def _conn(base: str) -> http.client.HTTPConnection:
    u = urlparse(base)
    return http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=10)


def _get(conn: http.client.HTTPConnection, path: str = "/v1/health/live") -> int:
    conn.request("GET", path, headers={"Connection": "keep-alive"})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def test_the_threaded_worker_is_configured(monkeypatch):
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    config = importlib.import_module("config.gunicorn")
    config = importlib.reload(config)  # settings are read when the module is loaded
    assert (config.worker_class, config.workers, config.threads) == (
        "config.gunicorn_worker.LingeringThreadWorker",
        3,
        4,
    )
    assert issubclass(LingeringThreadWorker, ThreadWorker)
    assert config.limit_request_line == 0 and config.accesslog is None


def test_the_pool_knows_when_a_call_waits_for_a_thread():
    pool = CountingThreadPool(1)
    release = threading.Event()
    try:
        busy = pool.submit(release.wait, 10)
        queued = pool.submit(lambda: "ran")
        assert pool.anyone_waiting()  # the one thread is busy: the second call waits
        release.set()
        assert queued.result(10) == "ran" and busy.result(10) is True
        assert not pool.anyone_waiting()
    finally:
        release.set()
        pool.shutdown()


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


HELLO_APP = """
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"""

# Worker classes that note every hand-over of a connection to the thread pool in a file.
COUNTING_WORKERS = """
import os
from gunicorn.workers.gthread import ThreadWorker
from config.gunicorn_worker import LingeringThreadWorker


def counting(pool):
    submit = pool.submit

    def counted(*args, **kwargs):
        with open(os.environ["HANDOVERS_FILE"], "a") as f:
            f.write("x")
        return submit(*args, **kwargs)

    pool.submit = counted
    return pool


class Lingering(LingeringThreadWorker):
    def get_thread_pool(self):
        return counting(super().get_thread_pool())


class Plain(ThreadWorker):
    def get_thread_pool(self):
        return counting(super().get_thread_pool())
"""


@pytest.mark.parametrize("worker_class", ["Lingering", "Plain"])
def test_back_to_back_requests_are_not_handed_back_to_the_main_thread(tmp_path, worker_class):
    """40 back-to-back requests on one connection: plain gthread hands the connection to the pool
    for each of them; the lingering worker's thread serves the next request itself when it comes
    within LINGER_S (a slow moment of a busy machine may let a few go back)."""
    (tmp_path / "hello_app.py").write_text(HELLO_APP)
    (tmp_path / "counting_workers.py").write_text(COUNTING_WORKERS)
    handovers = tmp_path / "handovers"
    handovers.write_text("")
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "-k", f"counting_workers.{worker_class}", "--threads", "4", "-w", "1"]
    cmd += ["-b", f"127.0.0.1:{port}", "hello_app:app"]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "HANDOVERS_FILE": str(handovers)}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc=proc)
        before = len(handovers.read_text())
        conn = _conn(f"http://127.0.0.1:{port}")
        for _ in range(40):
            conn.request("GET", "/")
            assert conn.getresponse().read() == b"ok"
        conn.close()
        count = len(handovers.read_text()) - before
        # Plain: one per request, and one more when a closed connection is noticed
        assert count >= 40 if worker_class == "Plain" else 1 <= count <= 20, count
    finally:
        proc.terminate()
        proc.wait(20)


PID_APP = """
import os


def app(environ, start_response):
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


def _body(sock: socket.socket) -> bytes:
    """The body of the one answer a socket receives (it has a Content-Length)."""
    answer = b""
    while True:
        head, sep, body = answer.partition(b"\r\n\r\n")
        if sep:
            length = int(
                next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")).split(b":")[1]
            )
            if len(body) >= length:
                return body[:length]
        chunk = sock.recv(4096)
        assert chunk, "the connection closed before the answer was whole"
        answer += chunk


def test_a_burst_of_connections_is_shared_by_the_workers(tmp_path):
    """Eight kept-alive connections opened at once (as wrk or a proxy's upstream pool opens them)
    against two workers: each worker serves about four. Without the shared connection table the
    worker running when the burst came accepted all eight, and the other worker's core stayed idle.
    A worker leaves a connection to its sibling for ``BALANCE_WAIT_S`` only, so on a loaded machine
    a sibling slow to wake may miss some of them: every burst must reach both workers, two at
    least each (one worker takes seven or eight without the table), and the three bursts together
    about four each (nine of the 24 at least: a burst of six and two beside two shared ones)."""
    (tmp_path / "pid_app.py").write_text(PID_APP)
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "-k", "config.gunicorn_worker.LingeringThreadWorker"]
    cmd += ["--threads", "4", "-w", "2", "-b", f"127.0.0.1:{port}", "pid_app:app"]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc=proc)
        time.sleep(1.5)  # the probe's connection closed and counted by its worker (next heartbeat turn)
        bursts: list[dict[str, int]] = []
        totals: Counter[str] = Counter()
        for _ in range(3):
            socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
            served: dict[str, int] = {}
            for s in socks:
                s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            for s in socks:
                pid = _body(s).decode()
                served[pid] = served.get(pid, 0) + 1
            for s in socks:
                s.close()
            assert len(served) == 2 and min(served.values()) >= 2, served
            bursts.append(served)
            totals.update(served)
            time.sleep(1.5)  # the closed connections leave the table
        assert len(totals) == 2 and min(totals.values()) >= 9, bursts
    finally:
        proc.terminate()
        proc.wait(20)


def test_the_connection_table_compares_live_siblings_only():
    table = ConnectionTable(slots=3)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    mine, dead = table.claim(os.getpid()), table.claim(gone.pid)
    assert (mine, dead) == (0, 1)
    table.publish(mine, 3)
    table.publish(dead, 0)
    assert not table.has_fewer(mine, 3)  # the only sibling with fewer connections has died
    sibling = table.claim(os.getppid())
    assert sibling == dead  # a dead worker's slot is taken again
    table.publish(sibling, 2)
    assert table.has_fewer(mine, 3) and not table.has_fewer(sibling, 2)
    table.publish(sibling, LEAVING)  # a stopping worker accepts no more: nobody leaves it a connection
    assert not table.has_fewer(mine, 3)
    table.release(sibling)
    assert table.claim(os.getppid()) == sibling  # and so is a released one
