"""Real infrastructure for the multi-node test, each piece a process of the test's own: a
PostgreSQL cluster (initdb into a temporary directory, never the machine's server), a Redis and
HAProxy in front of the web nodes."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.fixtures_live import terminate

PG_BIN = Path(os.environ.get("MERIDIAN_PG_BIN", "/usr/lib/postgresql/15/bin"))


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@contextlib.contextmanager
def postgres_cluster(port: int) -> Iterator[str]:
    """A throw-away PostgreSQL cluster on ``port``; yields its SQLAlchemy URL. As root, the
    server runs as the ``postgres`` user (initdb refuses root)."""
    if not (PG_BIN / "initdb").exists():
        raise RuntimeError(f"no initdb in {PG_BIN} (set MERIDIAN_PG_BIN)")
    root = Path(tempfile.mkdtemp(prefix="meridian-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data = root / "data"

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    try:
        run(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "server.log"), "-w", "start")
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class Backend:
    name: str
    port: int


HAPROXY_CONFIG = """\
global
    maxconn 512
    log stdout format raw local0 info

defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    # above the web nodes' TASK_WAIT_TIMEOUT (60 s in the multi-node test): the balancer never cuts,
    # or retries, a request that a node is still waiting on (deploy/haproxy/haproxy.cfg: 60 s over 20 s)
    timeout client 75s
    timeout server 75s
    # a request whose server died (connection refused or closed before any answer) is sent again,
    # to another server: a GET is safe to repeat
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout

frontend meridian
    bind 127.0.0.1:{port}
    default_backend web

backend web
    balance roundrobin
    # a node takes traffic once it is ready: its datasets pulled and loaded, Redis and a worker answering
    # (the readiness check pings the Celery workers: allow it a second or two on a busy machine)
    option httpchk GET /v1/health/ready
    option log-health-checks
    http-check expect status 200
    timeout check 3s
    default-server inter 1s fall 2 rise 1
{servers}
"""


@contextlib.contextmanager
def haproxy(port: int, backends: list[Backend], workdir: Path) -> Iterator[subprocess.Popen]:
    binary = haproxy_binary()
    if binary is None:
        raise RuntimeError("haproxy is not installed (scripts/ensure-haproxy.sh)")
    servers = "\n".join(f"    server {b.name} 127.0.0.1:{b.port} check" for b in backends)
    config = workdir / "haproxy.cfg"
    config.write_text(HAPROXY_CONFIG.format(port=port, servers=servers), encoding="utf-8")
    subprocess.run([binary, "-c", "-f", str(config)], check=True, capture_output=True)
    log = open(workdir / "haproxy.log", "wb")
    proc = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_port(port)
        yield proc
    finally:
        terminate(proc)
        log.close()
