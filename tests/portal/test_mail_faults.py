"""Mail and Redis faults, for real: a mail server that is down when the mail is queued (the page
does not wait; the worker retries with backoff and delivers once the server is up), permanent and
temporary SMTP refusals, SMTP_URL validation, and Redis down (sign-in works, sign-up fails closed)."""

from __future__ import annotations

import smtplib
import time

import pytest

from cli.mailcatcher import start
from config.portal import PortalSettings, parse_smtp_url
from config.settings import ConfigError
from tasks.mail import TemporaryMailError, build_message, deliver, enqueue, mail_key
from tests.fixtures_live import free_port, redis_url_db, stop, wait_worker
from tests.portal.conftest import SECRET, Mailbox, start_portal_worker
from tests.portal.test_pages import found

pytestmark = [pytest.mark.integration]


def test_smtp_url_forms_and_errors():
    t = parse_smtp_url("smtp://us%40er:p%3Ass@mail.example.com:587?starttls=true")
    assert (t.host, t.port, t.starttls, t.ssl, t.username, t.password) == (
        "mail.example.com",
        587,
        True,
        False,
        "us@er",
        "p:ss",
    )
    assert "p:ss" not in repr(t)
    assert parse_smtp_url("smtps://mail.example.com").port == 465
    for bad in ("http://x", "smtp://", "smtps://h?starttls=true", "smtp://h?tls=1", "smtp://h:abc"):
        with pytest.raises(ConfigError, match="SMTP_URL"):
            parse_smtp_url(bad)


def test_production_needs_secret_and_smtp():
    with pytest.raises(ConfigError, match="PORTAL_SECRET_KEY"):
        PortalSettings.from_env({"NODE_ENV": "production", "SMTP_URL": "smtp://h"})
    with pytest.raises(ConfigError, match="SMTP_URL"):
        PortalSettings.from_env({"NODE_ENV": "production", "PORTAL_SECRET_KEY": SECRET})
    with pytest.raises(ConfigError, match="PORTAL_BASE_URL"):
        PortalSettings.from_env({"PORTAL_SECRET_KEY": SECRET, "PORTAL_BASE_URL": "ftp://x"})
    with pytest.raises(ConfigError, match="PORTAL_LOGIN_LIMIT"):
        PortalSettings.from_env({"PORTAL_SECRET_KEY": SECRET, "PORTAL_LOGIN_LIMIT": "0/60"})
    ok = PortalSettings.from_env(
        {
            "NODE_ENV": "production",
            "PORTAL_SECRET_KEY": SECRET,
            "SMTP_URL": "smtp://h",
            "PORTAL_BASE_URL": "https://portal.example.com/",
        }
    )
    assert ok.secure_cookies and ok.base_url == "https://portal.example.com" and not ok.development


def _mail(to: str) -> dict[str, str]:
    return {"to": to, "subject": "Hello", "text": "plain body", "html": "<p>html body</p>"}


def test_deliver_plain_and_html_parts(tmp_path):
    port = free_port()
    controller = start(tmp_path, "127.0.0.1", port)
    try:
        deliver(
            build_message(_mail("a@example.com"), "Meridian <m@example.com>"),
            parse_smtp_url(f"smtp://127.0.0.1:{port}"),
        )
    finally:
        controller.stop()
    (message,) = Mailbox(tmp_path).messages("a@example.com")
    parts = [p.get_content_type() for p in message.iter_parts()]
    assert parts == ["text/plain", "text/html"] and message["Message-ID"]


def test_down_server_is_a_temporary_failure():
    with pytest.raises(TemporaryMailError):
        deliver(
            build_message(_mail("a@example.com"), "m@example.com"), parse_smtp_url(f"smtp://127.0.0.1:{free_port()}")
        )


class _Refusing:
    def __init__(self, code: int) -> None:
        self.code = code

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        return f"{self.code} not now" if self.code < 500 else f"{self.code} no such user"


@pytest.mark.parametrize(("code", "temporary"), [(451, True), (550, False)])
def test_refusals_are_temporary_or_permanent_by_code(code, temporary):
    from aiosmtpd.controller import Controller

    port = free_port()
    controller = Controller(_Refusing(code), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        msg = build_message(_mail("a@example.com"), "m@example.com")
        expected = TemporaryMailError if temporary else smtplib.SMTPRecipientsRefused
        with pytest.raises(expected):
            deliver(msg, parse_smtp_url(f"smtp://127.0.0.1:{port}"))
    finally:
        controller.stop()


def test_mail_queued_while_the_server_is_down_arrives_after_it_comes_up(settings, tmp_path):
    """The worker's SMTP server is down when the mail is queued; it is delivered by a retry."""
    from workers.celery_app import make_celery

    port = free_port()
    db = tmp_path / "accounts.db"
    local = settings.with_overrides(redis_url=redis_url_db(settings.redis_url, 11), database_url=f"sqlite:///{db}")
    import redis

    redis.Redis.from_url(local.redis_url).flushdb()
    env = {
        "SMTP_URL": f"smtp://127.0.0.1:{port}?timeout=2",
        "MERIDIAN_MAIL_BACKOFF_S": "0.5",
        "PORTAL_SECRET_KEY": SECRET,
    }
    proc = start_portal_worker(local, env, tmp_path / "worker.log", "default")
    controller = None
    try:
        wait_worker(local, proc)
        client = redis.Redis.from_url(local.redis_url)
        assert enqueue(make_celery(local), client, local.service_name, _mail("late@example.com"))
        log = tmp_path / "worker.log"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "retry 1/" not in log.read_text():
            time.sleep(0.1)
        assert "retry 1/" in log.read_text()
        assert "late@example.com" not in log.read_text()  # logs name the domain only
        controller = start(tmp_path / "mail", "127.0.0.1", port)
        Mailbox(tmp_path / "mail").wait("late@example.com", timeout=30)
        deadline = time.monotonic() + 10
        while client.keys(mail_key(local.service_name, "*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not client.keys(mail_key(local.service_name, "*"))  # delivered: forgotten
    finally:
        if controller is not None:
            controller.stop()
        stop(proc)


def test_redis_down_sign_in_works_sign_up_fails_closed(portal_settings, portal_env, monkeypatch):
    from app import create_app
    from app.portal.services import portal

    down = portal_settings.with_overrides(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    for name, value in portal_env.items():
        monkeypatch.setenv(name, value)
    app = create_app(down)
    with app.app_context():
        user = portal().users.sign_up(f"redisdown-{time.time_ns()}@example.com", "good password 1")
    client = app.test_client()

    def token(path: str) -> str:
        return found(rb'name="csrf_token" value="([^"]+)"', client.get(path).data)

    signup = client.post(
        "/portal/signup",
        data={
            "csrf_token": token("/portal/signup"),
            "email": "new@example.com",
            "password": "good password 1",
            "terms": "y",
        },
    )
    assert signup.status_code == 503 and b"try again in a minute" in signup.data
    login = client.post(
        "/portal/login", data={"csrf_token": token("/portal/login"), "email": user.email, "password": "good password 1"}
    )
    assert login.status_code == 302
    dash = client.get("/portal/dashboard")
    assert dash.status_code == 200 and b"Confirm your e-mail address" in dash.data


def test_portal_can_be_switched_off(portal_settings, monkeypatch):
    from app import create_app

    monkeypatch.setenv("PORTAL_ENABLED", "false")
    monkeypatch.setenv("NODE_ENV", "production")  # no portal: no PORTAL_SECRET_KEY or SMTP_URL needed
    app = create_app(portal_settings)
    assert "portal" not in app.extensions
    assert app.test_client().get("/portal/login").status_code == 404
