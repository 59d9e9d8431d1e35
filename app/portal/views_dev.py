"""Development only: the mails caught by ``meridian mailcatcher`` (``MAIL_DIR``), so a developer
can open the verification link without a real mailbox. Absent in production."""

from __future__ import annotations

from email.message import EmailMessage

from flask import abort, render_template

from app.portal.blueprint import bp
from app.portal.services import portal
from common.mailbox import read_messages

MAX_LISTED = 50


def _text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    return str(part.get_content()) if part is not None else ""


@bp.route("/dev/mail")
def dev_mail() -> str:
    settings = portal().settings
    if not settings.development:
        abort(404)
    mails = [
        {"name": name, "to": m["To"], "subject": m["Subject"], "date": m["Date"], "text": _text(m)}
        for name, m in read_messages(settings.mail_dir)[:MAX_LISTED]
    ]
    return render_template("portal/dev_mail.html", mails=mails, mail_dir=settings.mail_dir)
