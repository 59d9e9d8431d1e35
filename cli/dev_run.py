"""``meridian dev run -- COMMAND``: run ``make run``'s processes (``honcho start``) and say when
they answer.

The command's output passes through line by line. Beside it a thread asks
``GET /v1/health/ready`` once a second: when it answers 200 the banner is printed (URLs, the demo
key, curl lines that work at once); while it does not, a line every 20 s says what is still warming
(the readiness answer's reason). Once the output has then been quiet for a few seconds, a
three-line reminder follows, so the key is on screen when the start-up logs have stopped.

The command runs in a session of its own: Ctrl-C reaches this process only, which passes it on
once, and then relays the command's shutdown until it exits."""

from __future__ import annotations

import errno
import json
import os
import pty
import signal
import subprocess
import termios
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from types import FrameType
from typing import BinaryIO

READY_PATH = "/v1/health/ready"
POLL_S = 1.0
NOTICE_EVERY_S = 20.0
# While gunicorn boots its workers the listening socket queues connections: one patient probe
# rather than a new one each second, each of which would be answered (and logged) later.
PROBE_TIMEOUT_S = NOTICE_EVERY_S
SETTLE_S = 3.0
# No proxy for a request to this machine, whatever http_proxy says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Console:
    """The shared output: the command's lines and the announcements, one writer at a time, so an
    announcement never lands inside a line."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = threading.Lock()
        self.lines = 0  # lines of the command so far
        self.last_line_at = time.monotonic()

    def relay(self, data: bytes) -> None:
        with self._lock:
            self._out.write(data)
            self._out.flush()
            self.lines += data.count(b"\n")
            self.last_line_at = time.monotonic()

    def announce(self, text: str) -> None:
        with self._lock:
            self._out.write(text.encode())
            self._out.flush()


def probe_host() -> str:
    """Where the web process answers: ``BIND_HOST`` unless it is a wildcard, else loopback."""
    host = os.environ.get("BIND_HOST", "").strip()
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


def probe(url: str) -> tuple[bool, str]:
    """(ready, why not): the readiness answer, or why there is none yet."""
    try:
        with _OPENER.open(url, timeout=PROBE_TIMEOUT_S) as resp:
            return resp.status == 200, "ready"
    except urllib.error.HTTPError as exc:
        try:
            message = str(json.loads(exc.read()).get("message", ""))
        except (ValueError, AttributeError):
            message = ""
        return False, message.removeprefix("not ready: ") or f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError):
        return False, "the web process does not answer yet"


def watch(console: Console, url: str, banner: str, reminder: str, stop: threading.Event) -> None:
    """Wait for readiness, print the banner, then the reminder once the output settles."""
    started = time.monotonic()
    next_notice = started + NOTICE_EVERY_S
    while True:
        ready, reason = probe(url)
        if ready:
            break
        if time.monotonic() >= next_notice:
            console.announce(f"--- not ready after {time.monotonic() - started:.0f} s: {reason}\n")
            next_notice += NOTICE_EVERY_S
        if stop.wait(POLL_S):
            return
    if stop.is_set():
        return
    console.announce(banner)
    seen = console.lines
    while not stop.wait(0.5):
        if console.lines > seen and time.monotonic() - console.last_line_at >= SETTLE_S:
            console.announce(reminder)
            return


def _relay(fd: int, console: Console) -> None:
    """Pass the command's output on in whole lines until it closes its side."""
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError as exc:
            if exc.errno == errno.EIO:  # a pseudo-terminal whose other side is closed
                break
            raise
        if not chunk:
            break
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        if cut:
            console.relay(pending[:cut])
            pending = pending[cut:]
    if pending:
        console.relay(pending)


def _on_signals(handler: Callable[[int, FrameType | None], None]) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, handler)


def _output_channel(out: BinaryIO) -> tuple[int, int]:
    """(read end, write end) for the command's output. On a terminal, a pseudo-terminal, so that
    honcho keeps its colours; its newline translation is turned off, ``out`` does that once."""
    if not out.isatty():
        return os.pipe()
    reader, writer = pty.openpty()
    attrs = termios.tcgetattr(writer)
    attrs[1] &= ~termios.ONLCR  # the output flags
    termios.tcsetattr(writer, termios.TCSANOW, attrs)
    return reader, writer


def run(command: list[str], port: int, banner: str, reminder: str, out: BinaryIO) -> int:
    """Run ``command`` with its output relayed to ``out`` and the announcements beside it; the
    command's exit status."""
    console = Console(out)
    reader, writer = _output_channel(out)
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=writer, stderr=writer, start_new_session=True)
    os.close(writer)
    stop = threading.Event()

    def forward(signum: int, _frame: FrameType | None) -> None:
        stop.set()
        proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    _on_signals(forward)
    host = probe_host()
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}{READY_PATH}"
    watcher = threading.Thread(target=watch, args=(console, url, banner, reminder, stop), daemon=True)
    watcher.start()
    try:
        _relay(reader, console)
    finally:
        stop.set()
        os.close(reader)
    return proc.wait()
