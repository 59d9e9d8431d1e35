"""Outgoing mail of the portal (verification, password reset, e-mail change), sent by a Celery
worker so that a slow or unreachable mail server never holds up a page.

The mails carry single-use links, and a Celery message is visible to whoever reads the broker or
Flower. So the web process stores the finished message (recipient, subject, plain-text and HTML
bodies) in Redis under a random id (``<ns>:mail:<id>``, expiring with the links after
:data:`MAIL_TTL_S`) and queues ``meridian.send_mail`` on queue ``default`` with the id only. The
task reads the message, adds ``From`` (``MAIL_FROM``), sends it through ``SMTP_URL`` (plain,
STARTTLS or implicit TLS, optional login) and deletes it once it is delivered or refused for good.
Temporary failures (connection refused or dropped, timeouts, 4xx answers, Redis unreachable) are
retried with exponential backoff and jitter up to ``MERIDIAN_MAIL_MAX_RETRIES`` times (first delay
``MERIDIAN_MAIL_BACKOFF_S``, read when the task runs); a permanent 5xx refusal is logged and
dropped. Logs and task results name the recipient's domain only, never the body.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

import redis
from celery import shared_task

from accounts.tokens import MAX_AGE_S
from config.portal import SmtpTarget, mail_settings
from config.settings import _float, _int
from queueing.protocol import DEFAULT_QUEUE, TaskSender
from tasks import base

log = logging.getLogger("meridian.mail")

TASK_NAME = "meridian.send_mail"
QUEUE = DEFAULT_QUEUE
MAIL_TTL_S = MAX_AGE_S  # a mail that waits longer carries dead links
BACKOFF_CAP_S = 1800.0


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 8
    backoff_base_s: float = 5.0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> RetryPolicy:
        env = dict(os.environ if env is None else env)
        return cls(
            max_retries=_int(env, "MERIDIAN_MAIL_MAX_RETRIES", cls.max_retries, lo=0, hi=100),
            backoff_base_s=_float(env, "MERIDIAN_MAIL_BACKOFF_S", cls.backoff_base_s, lo=0.0),
        )

    def backoff_s(self, retries: int) -> float:
        return base.backoff_s(retries, self.backoff_base_s, BACKOFF_CAP_S)


def mail_key(ns: str, mail_id: str) -> str:
    return f"{ns}:mail:{mail_id}"


def _domain(address: str) -> str:
    return address.rpartition("@")[2]


class TemporaryMailError(RuntimeError):
    """The server could not take the message now; try again later."""


def enqueue(sender: TaskSender, client: redis.Redis, ns: str, mail: dict[str, str]) -> bool:
    """Store a finished message (``{to, subject, text, html}``) and queue its id, from the web
    process; False when Redis or the broker cannot be reached (logged with the recipient's domain
    only)."""
    mail_id = secrets.token_urlsafe(18)
    key = mail_key(ns, mail_id)
    try:
        client.set(key, json.dumps(mail), ex=MAIL_TTL_S)
        sender.send_task(TASK_NAME, args=[mail_id], queue=QUEUE, retry=False, ignore_result=True)
    except Exception as exc:  # noqa: BLE001 - whatever the Redis or broker client raises
        log.warning("mail to @%s could not be queued: %s", _domain(mail["to"]), type(exc).__name__)
        _forget(client, key)
        return False
    return True


def build_message(mail: dict[str, str], sender: str) -> EmailMessage:
    """A multipart/alternative message: the plain text first, the HTML part second."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = mail["to"]
    msg["Subject"] = mail["subject"]
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2].strip(">") or "localhost")
    msg.set_content(mail["text"])
    if mail.get("html"):
        msg.add_alternative(mail["html"], subtype="html")
    return msg


def deliver(msg: EmailMessage, target: SmtpTarget) -> None:
    """Send one message; TemporaryMailError for what a retry may fix."""
    context = ssl.create_default_context()
    try:
        if target.ssl:
            client: smtplib.SMTP = smtplib.SMTP_SSL(target.host, target.port, timeout=target.timeout_s, context=context)
        else:
            client = smtplib.SMTP(target.host, target.port, timeout=target.timeout_s)
        with client:
            if target.starttls:
                client.starttls(context=context)
            if target.username:
                client.login(target.username, target.password or "")
            client.send_message(msg)
    except smtplib.SMTPResponseException as exc:
        if 400 <= exc.smtp_code < 500:
            raise TemporaryMailError(f"server answered {exc.smtp_code}") from None
        raise
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        if codes and all(400 <= c < 500 for c in codes):
            raise TemporaryMailError(f"recipient deferred ({codes})") from None
        raise
    except (smtplib.SMTPServerDisconnected, smtplib.SMTPConnectError, OSError) as exc:
        raise TemporaryMailError(f"{type(exc).__name__}: {exc}") from None


@shared_task(name=TASK_NAME, bind=True, acks_late=True, ignore_result=True)
def send_mail(self: Any, mail_id: str) -> dict[str, Any]:
    """``mail_id``: the id :func:`enqueue` stored the message under."""
    policy = RetryPolicy.from_env()
    client = base.redis_client()
    key = mail_key(base.settings().service_name, mail_id)
    try:
        raw = client.get(key)
    except redis.RedisError as exc:
        raise _retry(self, policy, f"mail not read from Redis ({type(exc).__name__})") from None
    if raw is None:
        log.warning("mail %s... is gone (expired, or sent before a redelivery)", mail_id[:6])
        return {"sent": False, "error": "expired"}
    mail: dict[str, str] = json.loads(raw)
    target, sender = mail_settings()
    domain = _domain(mail["to"])
    try:
        deliver(build_message(mail, sender), target)
    except TemporaryMailError as exc:
        if self.request.retries >= policy.max_retries:
            log.error("mail to @%s not sent after %d retries: %s", domain, policy.max_retries, exc)
            _forget(client, key)
            return {"sent": False, "error": "retries exhausted"}
        raise _retry(self, policy, f"mail to @{domain} not sent ({exc})") from None
    except (smtplib.SMTPException, ValueError) as exc:
        reason = _refusal(exc)
        log.error("mail to @%s refused permanently: %s", domain, reason)
        _forget(client, key)
        return {"sent": False, "error": reason}
    _forget(client, key)
    log.info("mail to @%s sent (%s)", domain, mail["subject"])
    return {"sent": True}


def _retry(task: Any, policy: RetryPolicy, problem: str) -> BaseException:
    """The task's retry with backoff (Celery's ``Retry``, which ``task.retry`` raises)."""
    delay = policy.backoff_s(task.request.retries)
    log.warning("%s; retry %d/%d in %.0f s", problem, task.request.retries + 1, policy.max_retries, delay)
    retry: BaseException = task.retry(countdown=delay, max_retries=policy.max_retries)
    return retry


def _refusal(exc: Exception) -> str:
    """Why a server refused, without the addresses (``SMTPRecipientsRefused`` holds them)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return f"recipient refused ({sorted({code for code, _ in exc.recipients.values()})})"
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"server answered {exc.smtp_code}"
    return type(exc).__name__


def _forget(client: redis.Redis, key: str) -> None:
    try:
        client.delete(key)
    except redis.RedisError as exc:
        log.debug("mail %s left to expire: %s", key.rpartition(":")[2][:6], type(exc).__name__)
