"""Fixtures of the portal tests: a real SMTP server (aiosmtpd, storing each message as a file),
a Celery worker that sends the portal's mails to it, and the app with the portal's settings.

The portal tests use Redis database 12 (the session uses 15, other suites 14): their mail tasks must reach their
own worker only, never the session's worker, which has no SMTP server configured.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest
import redis

from cli.mailcatcher import start
from common.mailbox import read_messages
from config.settings import Settings
from tests.fixtures_live import free_port, redis_url_db, start_worker, stop, wait_worker

PORTAL_REDIS_DB = 12  # 14 and 15 belong to other suites
SECRET = "portal-test-secret-" + "x" * 32


class Mailbox:
    """The messages a test's aiosmtpd server stored."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def messages(self, to: str | None = None) -> list[EmailMessage]:
        out = [m for _, m in read_messages(self.directory)]
        return [m for m in out if to is None or m["To"] == to]

    def wait(self, to: str, count: int = 1, timeout: float = 60.0) -> EmailMessage:
        """The newest message to ``to`` once ``count`` have arrived (a busy machine delays the first
        mail of a new worker by many seconds: its pool process is still warming the datasets)."""
        return self.wait_for(to, count, timeout)[0]

    def wait_for(
        self, to: str, count: int = 1, timeout: float = 60.0, subject: str | None = None
    ) -> list[EmailMessage]:
        """The messages to ``to`` (with this subject, if given), newest first, once ``count`` have arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [m for m in self.messages(to) if subject is None or m["Subject"] == subject]
            if len(found) >= count:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no mail #{count} to {to} within {timeout} s")


def link_in(message: EmailMessage) -> str:
    body = message.get_body(preferencelist=("plain",))
    assert body is not None, "the mail has no plain-text part"
    text = body.get_content()
    match = re.search(r"https?://\S+/portal/\S+", text)
    assert match, text
    return match.group(0)


@pytest.fixture(scope="session")
def smtp_server(tmp_path_factory) -> Iterator[tuple[int, Mailbox]]:
    directory = tmp_path_factory.mktemp("mail")
    port = free_port()
    controller = start(directory, "127.0.0.1", port)
    try:
        yield port, Mailbox(directory)
    finally:
        controller.stop()


@pytest.fixture(scope="session")
def portal_settings(settings: Settings, tmp_path_factory) -> Settings:
    url = redis_url_db(settings.redis_url, PORTAL_REDIS_DB)
    redis.Redis.from_url(url).flushdb()
    db = tmp_path_factory.mktemp("portal") / "accounts.db"
    return settings.with_overrides(redis_url=url, database_url=f"sqlite:///{db}")


@pytest.fixture(scope="session")
def portal_env(smtp_server, tmp_path_factory) -> dict[str, str]:
    port, mailbox = smtp_server
    return {
        "PORTAL_SECRET_KEY": SECRET,
        "SMTP_URL": f"smtp://127.0.0.1:{port}?timeout=5",
        "MAIL_FROM": "Meridian Test <portal@meridian.test>",
        "MAIL_DIR": str(mailbox.directory),
        "PORTAL_BASE_URL": "http://localhost",
        "PORTAL_LOGIN_LIMIT": "5/300,1000",
        "PORTAL_SIGNUP_LIMIT": "50/300,1000",
        "PORTAL_RESET_LIMIT": "50/300,1000",
        "MERIDIAN_MAIL_BACKOFF_S": "0.5",
    }


@pytest.fixture(scope="session")
def mailbox(smtp_server) -> Mailbox:
    return smtp_server[1]


def start_portal_worker(settings: Settings, env: dict[str, str], log_path: Path, queues: str) -> subprocess.Popen:
    return start_worker(settings, log_path, queues=queues, concurrency=1, name=f"portal-{free_port()}", **env)


@pytest.fixture(scope="session")
def portal_worker(portal_settings, portal_env, tmp_path_factory):
    proc = start_portal_worker(
        portal_settings,
        portal_env,
        tmp_path_factory.mktemp("logs") / "portal-worker.log",
        "default,staticmap,isochrone",  # isochrones: the console draws a walking one
    )
    try:
        wait_worker(portal_settings, proc)
        yield proc
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def portal_app(portal_settings, portal_env):
    from app import create_app

    mp = pytest.MonkeyPatch()
    for name, value in portal_env.items():
        mp.setenv(name, value)
    try:
        app = create_app(portal_settings)
    finally:
        mp.undo()
    return app
