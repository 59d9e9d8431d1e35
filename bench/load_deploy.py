"""A full Meridian deployment on this machine for ``bench.load``, started and stopped by it.

- Redis of its own on a free port, with on-disk persistence (append-only file, ``appendfsync
  everysec``) as a deployment configures it, so a restart keeps queues, jobs and quota counters.
- PostgreSQL of its own: ``initdb`` into a temporary directory (as the ``postgres`` user when run
  as root) and ``pg_ctl`` on a free port; never the machine's server on 5432.
- The Procfile's processes (``web``, ``worker``, ``mapworker``, ``isoworker``; not the Flower
  monitor nor the development mail catcher), each as the Procfile says, with the deployment's
  environment (the portal on, as in production).
- Accounts: an unlimited plan for the traffic mix, the ``free`` plan for the quota probes.

Every fault of the schedule is a method here: SIGKILL a Celery pool process, SIGKILL a gunicorn
worker, restart Redis, stop PostgreSQL for a while.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import redis
import requests

from config.settings import PROJECT_ROOT

PROCFILE_SKIP = ("monitor", "mail")  # Flower; the development mail catcher


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def procfile(path: Path = PROJECT_ROOT / "Procfile") -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        name, sep, command = line.partition(":")
        if sep and name.strip() and not line.lstrip().startswith("#"):
            out[name.strip()] = command.strip()
    return out


def _as_postgres(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@dataclass
class Deployment:
    data_dir: Path
    web_workers: int = 2
    env_extra: dict[str, str] = field(default_factory=dict)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="meridian-load-")))
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    redis_proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.web_port = free_port()
        self.redis_port = free_port()
        self.pg_port = free_port()
        self.smtp_port = free_port()
        self.portal_secret = secrets.token_hex(32)
        self.pg_dir = self.root / "pg"
        self.redis_dir = self.root / "redis"
        self.logs = self.root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.redis_dir.mkdir()

    # ------------------------------------------------------------------ environment
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def database_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.pg_port}/meridian"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            PORT=str(self.web_port),
            WEB_CONCURRENCY=str(self.web_workers),
            REDIS_URL=self.redis_url,
            DATABASE_URL=self.database_url,
            DATA_DIR=str(self.data_dir),
            SERVICE_NAME="meridian",
            NODE_ENV="production",
            # the portal is served (production requires its secret and a mail server); the mix
            # sends no mail, so the SMTP server named here need not run
            PORTAL_SECRET_KEY=self.portal_secret,
            SMTP_URL=f"smtp://127.0.0.1:{self.smtp_port}",
            PYTHONPATH=str(PROJECT_ROOT),
            PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        )
        env.update(self.env_extra)
        return env

    # ------------------------------------------------------------------ redis
    def start_redis(self) -> None:
        self.redis_proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.redis_dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--save",
                "",
            ],
            stdout=open(self.logs / "redis.log", "ab"),
            stderr=subprocess.STDOUT,
        )
        client = redis.Redis.from_url(self.redis_url)
        for _ in range(200):
            with contextlib.suppress(redis.RedisError):
                if client.ping():
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def restart_redis(self) -> None:
        """``SHUTDOWN`` (the append-only file is flushed) and start again on the same port."""
        with contextlib.suppress(redis.RedisError):
            redis.Redis.from_url(self.redis_url).shutdown()
        if self.redis_proc is not None:
            self.redis_proc.wait(30)
        self.start_redis()

    # ------------------------------------------------------------------ postgres
    def start_postgres(self) -> None:
        if not self.pg_dir.exists():
            self.pg_dir.mkdir()
            if os.geteuid() == 0:
                shutil.chown(self.pg_dir, "postgres", "postgres")
                shutil.chown(self.root, "postgres", "postgres")
                os.chmod(self.root, 0o755)
            subprocess.run(
                _as_postgres(["initdb", "-D", str(self.pg_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
                check=True,
                stdout=subprocess.DEVNULL,
            )
        self._pg_ctl("start", "-w", "-o", f"-p {self.pg_port} -k {self.pg_dir} -c listen_addresses=127.0.0.1")

    def stop_postgres(self) -> None:
        self._pg_ctl("stop", "-m", "fast", "-w")

    def _pg_ctl(self, *args: str) -> None:
        log = self.pg_dir / "server.log"
        subprocess.run(
            _as_postgres(["pg_ctl", "-D", str(self.pg_dir), "-l", str(log), *args]),
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def create_database(self) -> None:
        import psycopg

        admin = f"postgresql://postgres@127.0.0.1:{self.pg_port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE meridian")

    # ------------------------------------------------------------------ processes
    def start_processes(self) -> None:
        env = self.env()
        for name, command in procfile().items():
            if name in PROCFILE_SKIP:
                continue
            self.procs[name] = subprocess.Popen(
                shlex.split(command),
                cwd=PROJECT_ROOT,
                env=env,
                stdout=open(self.logs / f"{name}.log", "ab"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.logs / (name + '.log')}")
            with contextlib.suppress(requests.RequestException):
                resp = requests.get(f"{self.base_url}/v1/health/ready", timeout=5)
                if resp.status_code == 200:
                    return
                last = resp.text[:300]
            time.sleep(1.0)
        raise RuntimeError(f"deployment not ready within {timeout} s: {last}")

    def children(self, name: str) -> list[psutil.Process]:
        """The worker processes under a Procfile process (gunicorn workers, Celery pool processes)."""
        # `meridian serve` and `meridian worker` exec gunicorn and celery: their workers and pool
        # processes are direct children of the Procfile's process
        return list(psutil.Process(self.procs[name].pid).children())

    def kill_child(self, name: str) -> int:
        victim = self.children(name)[0]
        victim.send_signal(signal.SIGKILL)
        return int(victim.pid)

    # ------------------------------------------------------------------ accounts
    def create_keys(self) -> dict[str, str]:
        """``load``: unlimited plan for the traffic mix; ``over`` and ``under``: the free plan (60/min)."""
        from accounts.store import AccountStore

        store = AccountStore(self.database_url)
        store.create_schema()
        store.seed_plans()
        store.set_plan("loadtest", per_minute=0, per_day=0, per_month=0, services=["*"], description="bench.load")
        return {
            "load": store.create_key("load", "loadtest", label="bench.load traffic").key,
            "over": store.create_key("quota-over", "free", label="sends twice its plan").key,
            "under": store.create_key("quota-under", "free", label="sends half its plan").key,
        }

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> dict[str, str]:
        """Start everything and return the accounts' keys; on a failure, stop what was started."""
        try:
            self.start_redis()
            self.start_postgres()
            self.create_database()
            keys = self.create_keys()
            self.start_processes()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return keys

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop_postgres()
        if self.redis_proc is not None and self.redis_proc.poll() is None:
            self.redis_proc.terminate()
            self.redis_proc.wait(10)
        for data in (self.pg_dir, self.redis_dir):  # the logs stay for a look after the run
            shutil.rmtree(data, ignore_errors=True)
