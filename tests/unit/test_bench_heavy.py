"""bench/heavy.py's wait for a settled stack: the CPU of a process tree, and ``settle`` holding the
measurement back while a process of the stack is still busy (as a warming web or pool process is)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.heavy import _tree_cpu_s, settle, stop

# a parent shell whose child burns CPU for ``seconds``, then both exit
SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {seconds}: pass\n"


def _spinning_tree(seconds: float) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "{SPIN.format(seconds=seconds)}"; sleep 30'])


def _children_cmdlines(pid: int) -> list[bytes]:
    children = open(f"/proc/{pid}/task/{pid}/children").read().split()
    return [open(f"/proc/{c}/cmdline", "rb").read() for c in children]


class _Ready(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/v1/health/ready" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ready_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ready)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_tree_cpu_counts_the_descendants():
    proc = _spinning_tree(0.6)
    try:
        deadline = time.monotonic() + 30
        while _tree_cpu_s(proc.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        # the shell itself uses next to nothing: the time is its child's
        assert _tree_cpu_s(proc.pid) >= 0.5
    finally:
        proc.kill()
        proc.wait()


def test_settle_waits_until_the_stack_is_idle(ready_server):
    busy = _spinning_tree(2.0)
    try:
        t0 = time.monotonic()
        waited = settle(ready_server, [busy], timeout_s=60)
        assert time.monotonic() - t0 >= 2.0 and waited >= 2.0
        # it returned after the spinning, not during it: the shell has gone on to its sleep
        assert all(b"sleep" in cmd for cmd in _children_cmdlines(busy.pid))
    finally:
        busy.kill()
        busy.wait()


def test_settle_returns_soon_for_an_idle_stack(ready_server):
    idle = subprocess.Popen(["sleep", "30"])
    try:
        assert settle(ready_server, [idle], timeout_s=60) < 5
    finally:
        idle.kill()
        idle.wait()


def test_stop_kills_a_server_that_ignores_sigterm():
    """A server that does not exit on SIGTERM within the grace time is killed, with its children."""
    code = "import signal, subprocess, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)\n"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(1.0)
    children = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
    assert children
    stop(proc, grace_s=1.0)
    assert proc.returncode == -9
    time.sleep(0.5)
    for child in children:  # killed with the group (or reaped: gone either way)
        try:
            state = open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        assert state == "Z"
