"""Fixtures for tests that talk to real services: Redis, a Celery worker, gunicorn, the Flask app.

- Redis: the test session starts its own ``redis-server`` on a free loopback port, with its files
  in the session's temporary folder, and stops it at the end; nothing else on the machine (a
  development server's Redis, another checkout's test run) is read, written or flushed. Tests
  use database 15 of it, and other numbers of the same server where they need an empty one.
- The Celery worker and gunicorn run as real subprocesses with the test settings in their
  environment.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
import requests
from flask import Flask
from flask.testing import FlaskClient

from accounts.store import AccountStore
from config.settings import PROJECT_ROOT, Settings

TEST_SERVICE = "meridiantest"
TEST_REDIS_DB = 15


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        with contextlib.suppress(requests.RequestException):
            if requests.get(url, timeout=1).status_code < 500:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


def terminate(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGTERM ``proc`` (not its group), SIGKILL if it is still there after ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def redis_url_db(url: str, db: int) -> str:
    """``url`` with its database number replaced by ``db`` (same server)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", "", ""))


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``redis-server`` of the test session's own: ``redis://127.0.0.1:<free port>/0``."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server not found; run the tests with `make test`, which installs it")
    directory = tmp_path_factory.mktemp("redis")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
        + ["--dir", str(directory), "--logfile", str(directory / "redis.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=1).ping()
            break
        except redis.RedisError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the test session's redis-server did not answer on port {port}: {exc}")
            time.sleep(0.05)
    try:
        yield url
    finally:
        terminate(proc)


@pytest.fixture(scope="session")
def redis_url(redis_server: str) -> str:
    return redis_url_db(redis_server, TEST_REDIS_DB)


def make_settings(data_dir: Path, redis_url: str, accounts_db: Path) -> Settings:
    """The test settings over ``data_dir``, with a SQLite accounts database at ``accounts_db``."""
    return Settings.from_env(
        {
            "DATA_DIR": str(data_dir),
            "DATABASE_URL": f"sqlite:///{accounts_db}",
            "REDIS_URL": redis_url,
            "SERVICE_NAME": TEST_SERVICE,
            "NODE_ENV": "test",
            "TASK_WAIT_TIMEOUT": "20",
            "AUTH_CACHE_TTL": "1",
        }
    )


def open_store(settings: Settings) -> AccountStore:
    store = AccountStore(settings.database_url)
    store.create_schema()
    return store


@pytest.fixture(scope="session")
def settings(data_dir, redis_url, tmp_path_factory) -> Settings:
    return make_settings(data_dir, redis_url, tmp_path_factory.mktemp("accounts") / "meridian.db")


def settings_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATA_DIR=str(settings.data_dir),
        DATABASE_URL=settings.database_url,
        REDIS_URL=settings.redis_url,
        SERVICE_NAME=settings.service_name,
        NODE_ENV=settings.environment,
        AUTH_CACHE_TTL=str(settings.auth_cache_ttl_s),
        TASK_WAIT_TIMEOUT=str(settings.task_wait_timeout_s),
        PYTHONPATH=str(PROJECT_ROOT),
        WEBHOOK_ALLOWED_NETWORKS=",".join(str(n) for n in settings.webhook_allowed_networks),
    )
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def store(settings) -> AccountStore:
    return open_store(settings)


SESSION_PLAN = "test-session"


def session_key(store: AccountStore) -> str:
    """The key most tests share: on a plan of its own without quota windows, since quotas are
    counted per account and the whole session's calls (matrices of 10,000 units included) would
    use up any real plan's minute. Quota tests make their own accounts and plans."""
    store.set_plan(SESSION_PLAN, per_minute=0, per_day=0, per_month=0, services=["*"], max_keys=0)
    return store.create_key("tests", SESSION_PLAN, label="session key").key


@pytest.fixture(scope="session")
def app(settings, store):
    from app import create_app

    return create_app(settings)


@pytest.fixture()
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def api_key(store) -> str:
    return session_key(store)


@pytest.fixture(scope="session")
def bare_settings(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The test settings over an empty DATA_DIR: for web tests that answer before a dataset is read
    (validation, error bodies), which then run without the imported samples."""
    root = tmp_path_factory.mktemp("bare")
    (root / "data").mkdir()
    return make_settings(root / "data", redis_url, root / "meridian.db")


@pytest.fixture(scope="session")
def bare_store(bare_settings: Settings) -> AccountStore:
    return open_store(bare_settings)


@pytest.fixture(scope="session")
def bare_app(bare_settings: Settings, bare_store: AccountStore) -> Flask:
    from app import create_app

    return create_app(bare_settings)


@pytest.fixture()
def bare_client(bare_app: Flask) -> FlaskClient:
    return bare_app.test_client()


@pytest.fixture(scope="session")
def bare_api_key(bare_store: AccountStore) -> str:
    return session_key(bare_store)


def start_worker(
    settings: Settings,
    log_path: Path,
    queues: str = "default,isochrone,staticmap,geometry,matrix,optimization,batch",
    concurrency: int = 1,
    name: str = "test",
    **env: str,
) -> subprocess.Popen:
    """A Celery worker process (its own session: ``stop`` ends it with its pool) with the settings'
    environment and ``env`` on top."""
    log = open(log_path, "ab")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.main",
            "worker",
            "-Q",
            queues,
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "INFO",
            "-n",
            f"{name}-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=PROJECT_ROOT,
        env=settings_env(settings, **env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_worker(settings: Settings, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    """Until the worker answers a ping. A worker compiles its numba kernels before it answers (it
    warms before it takes tasks): a cold kernel cache on a loaded 2-core machine has taken ~70 s."""
    from workers.celery_app import make_celery

    celery = make_celery(settings)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}")
        if celery.control.ping(timeout=0.5):
            return
    raise RuntimeError("celery worker did not answer ping in time")


@pytest.fixture(scope="session")
def celery_worker(settings, tmp_path_factory):
    proc = start_worker(settings, tmp_path_factory.mktemp("logs") / "worker.log")
    try:
        wait_worker(settings, proc)
        yield proc
    finally:
        stop(proc)


def start_gunicorn(settings: Settings, port: int, log_path: Path, workers: int = 2, **env: str) -> subprocess.Popen:
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(PROJECT_ROOT / "config" / "gunicorn.py"), "app.wsgi:app"],
        cwd=PROJECT_ROOT,
        env=settings_env(settings, PORT=str(port), WEB_CONCURRENCY=str(workers), **env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_http(f"http://127.0.0.1:{port}/v1/health/live", proc=proc)
    return proc


@pytest.fixture(scope="session")
def live_server(settings, store, tmp_path_factory):
    """gunicorn with 2 workers on a free port, in-process engine; yields its base URL."""
    port = free_port()
    proc = start_gunicorn(settings, port, tmp_path_factory.mktemp("logs") / "gunicorn.log")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


PG_ADMIN_URL = os.environ.get("MERIDIAN_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(scope="session")
def postgres_url():
    """A fresh PostgreSQL database for the session (dropped at the end); skips with the reason
    when no PostgreSQL answers at MERIDIAN_TEST_PG (default 127.0.0.1:5432, user postgres)."""
    import uuid

    try:
        import psycopg

        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except Exception as exc:  # no server, auth refused, driver missing
        pytest.skip(f"PostgreSQL not available at {PG_ADMIN_URL}: {exc}")
    name = f"meridian_test_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(PG_ADMIN_URL)
    url = urlunsplit(("postgresql+psycopg", parts.netloc, f"/{name}", "", ""))
    try:
        yield url
    finally:
        from sqlalchemy import create_engine

        create_engine(url).dispose()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def start_redis(port: int, workdir: Path) -> subprocess.Popen:
    """A redis-server of a test's own on ``port`` (so it can be stopped and restarted for real)."""
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        try:
            redis.Redis.from_url(url).ping()
            return proc
        except redis.RedisError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"redis-server did not start on port {port}")
