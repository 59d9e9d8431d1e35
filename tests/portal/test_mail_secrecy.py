"""Flower shows live reset links (issue 26, finding 10): whoever reads the broker or Flower sees
every Celery message. After a portal sign-up the queued message holds an id only — no link, no
token, no address, no subject or body — and a real worker still delivers the mail, then forgets it."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import redis

from cli.mailcatcher import start
from tasks.mail import mail_key
from tests.fixtures_live import free_port, redis_url_db, stop, wait_worker
from tests.portal.conftest import SECRET, Mailbox, link_in, start_portal_worker
from tests.portal.test_pages import csrf

pytestmark = [pytest.mark.integration]

MAIL_REDIS_DB = 10  # this test's own database: its message must wait for its own worker


def _messages(client: redis.Redis, queue: str) -> list[tuple[str, list]]:
    """(the message as stored in the broker's list, its decoded task arguments)."""
    out = []
    for item in client.lrange(queue, 0, -1):
        raw = item.decode() if isinstance(item, bytes) else item
        body = base64.b64decode(json.loads(raw)["body"]).decode()
        out.append((raw + body, json.loads(body)[0]))
    return out


def test_signup_mail_is_queued_by_id_and_still_delivered(settings, tmp_path, monkeypatch):
    from app import create_app

    smtp_port = free_port()
    local = settings.with_overrides(
        redis_url=redis_url_db(settings.redis_url, MAIL_REDIS_DB),
        database_url=f"sqlite:///{tmp_path / 'accounts.db'}",
    )
    client = redis.Redis.from_url(local.redis_url)
    client.flushdb()
    env = {
        "PORTAL_SECRET_KEY": SECRET,
        "SMTP_URL": f"smtp://127.0.0.1:{smtp_port}?timeout=5",
        "MAIL_FROM": "Meridian Test <portal@meridian.test>",
        "PORTAL_BASE_URL": "http://portal.meridian.test",
        "MERIDIAN_MAIL_BACKOFF_S": "0.5",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    web = create_app(local).test_client()
    address = f"secret-{time.time_ns()}@mail-secrecy.test"
    resp = web.post(
        "/portal/signup",
        data={
            "csrf_token": csrf(web.get("/portal/signup").data),
            "email": address,
            "password": "good password 1",
            "terms": "y",
        },
    )
    assert resp.status_code == 200 and b"check" in resp.data.lower()

    (message,) = _messages(client, "default")  # no worker yet: the message waits in the broker
    raw, args = message
    for secret in ("portal.meridian.test", "/portal/", "token", address, "mail-secrecy", "Confirm your e-mail"):
        assert secret not in raw, f"{secret!r} is in the Celery message"
    (mail_id,) = args
    ns = local.service_name
    assert client.ttl(mail_key(ns, mail_id)) > 0

    controller = start(tmp_path / "mail", "127.0.0.1", smtp_port)
    proc = start_portal_worker(local, env, tmp_path / "worker.log", "default")
    try:
        wait_worker(local, proc)
        link = link_in(Mailbox(tmp_path / "mail").wait(address, timeout=60))
        assert link.startswith("http://portal.meridian.test/portal/verify?token=")
        (token,) = parse_qs(urlsplit(link).query)["token"]
        assert token not in raw
        deadline = time.monotonic() + 10
        while client.exists(mail_key(ns, mail_id)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not client.exists(mail_key(ns, mail_id)), "the delivered mail is still stored"
    finally:
        stop(proc)
        controller.stop()
