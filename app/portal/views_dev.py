"""Development only: the mails caught by ``meridian mailcatcher`` (``MAIL_DIR``), so a developer
can open the verification link without a real mailbox. Absent in production.

The page lists every account's verification and reset links, so even in development it answers
only a request from this machine (loopback) or a signed-in administrator: a development server
reachable from the network must not hand out accounts."""

from __future__ import annotations

import ipaddress
from email.message import EmailMessage

from flask import abort, render_template, request

from app.portal.blueprint import bp, current_user
from app.portal.services import portal
from common.mailbox import read_messages

MAX_LISTED = 50


def _text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    return str(part.get_content()) if part is not None else ""


def _from_loopback() -> bool:
    try:
        return ipaddress.ip_address(request.remote_addr or "").is_loopback
    except ValueError:
        return False


@bp.route("/dev/mail")
def dev_mail() -> str:
    settings = portal().settings
    if not settings.development:
        abort(404)
    if not _from_loopback():
        user = current_user()
        if user is None or not user.is_admin:
            abort(404)
    mails = [
        {"name": name, "to": m["To"], "subject": m["Subject"], "date": m["Date"], "text": _text(m)}
        for name, m in read_messages(settings.mail_dir)[:MAX_LISTED]
    ]
    return render_template("portal/dev_mail.html", mails=mails, mail_dir=settings.mail_dir)
