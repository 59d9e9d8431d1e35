"""Outgoing mail of the portal (verification, password reset, e-mail change), sent by a Celery
worker so that a slow or unreachable mail server never holds up a page.

The web process queues ``meridian.send_mail`` on queue ``default`` with the finished message
(recipient, subject, plain-text and HTML bodies); the task adds ``From`` (``MAIL_FROM``) and sends
it through ``SMTP_URL`` (plain, STARTTLS or implicit TLS, optional login). Temporary failures
(connection refused or dropped, timeouts, 4xx answers) are retried with exponential backoff and
jitter up to :data:`MAX_RETRIES` times; a permanent 5xx refusal is logged and dropped. Logs name
the recipient's domain only, never the body (it holds single-use links).
"""

from __future__ import annotations

import logging
import os
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from celery import shared_task

from config.portal import SmtpTarget, mail_settings
from queueing.protocol import DEFAULT_QUEUE, TaskSender
from tasks import base

log = logging.getLogger("meridian.mail")

TASK_NAME = "meridian.send_mail"
QUEUE = DEFAULT_QUEUE
MAX_RETRIES = int(os.environ.get("MERIDIAN_MAIL_MAX_RETRIES", "8"))
BACKOFF_BASE_S = float(os.environ.get("MERIDIAN_MAIL_BACKOFF_S", "5.0"))
BACKOFF_CAP_S = 1800.0


class TemporaryMailError(RuntimeError):
    """The server could not take the message now; try again later."""


def enqueue(sender: TaskSender, mail: dict[str, str]) -> bool:
    """Queue a finished message (``{to, subject, text, html}``) from the web process; False when
    the broker cannot be reached (logged with the recipient's domain only)."""
    try:
        sender.send_task(TASK_NAME, args=[mail], queue=QUEUE, retry=False, ignore_result=True)
    except Exception as exc:  # noqa: BLE001 - whatever the broker client raises
        log.warning("mail to @%s could not be queued: %s", mail["to"].rpartition("@")[2], type(exc).__name__)
        return False
    return True


def backoff_s(retries: int) -> float:
    return base.backoff_s(retries, BACKOFF_BASE_S, BACKOFF_CAP_S)


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


@shared_task(name=TASK_NAME, bind=True, acks_late=True, max_retries=MAX_RETRIES, ignore_result=True)
def send_mail(self: Any, mail: dict[str, str]) -> dict[str, Any]:
    """``mail``: ``{to, subject, text, html}``."""
    target, sender = mail_settings()
    domain = mail["to"].rpartition("@")[2]
    try:
        deliver(build_message(mail, sender), target)
    except TemporaryMailError as exc:
        delay = backoff_s(self.request.retries)
        log.warning(
            "mail to @%s not sent (%s); retry %d/%d in %.0f s",
            domain,
            exc,
            self.request.retries + 1,
            MAX_RETRIES,
            delay,
        )
        raise self.retry(countdown=delay, exc=exc) from None
    except (smtplib.SMTPException, ValueError) as exc:
        log.error("mail to @%s refused permanently: %s", domain, exc)
        return {"sent": False, "error": str(exc)[:200]}
    log.info("mail to @%s sent (%s)", domain, mail["subject"])
    return {"sent": True}
