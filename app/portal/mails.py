"""The portal's mails, each rendered from a plain-text and an HTML template
(``templates/portal/mail/``): no images, no tracking, the link written out in full."""

from __future__ import annotations

from flask import render_template

SUBJECTS = {
    "verify": "Confirm your e-mail address for Meridian",
    "already": "Someone tried to sign up to Meridian with your address",
    "reset": "Reset your Meridian password",
    "reset_unknown": "Meridian password reset: no account uses this address",
    "change": "Confirm your new e-mail address for Meridian",
    "upgrade": "Meridian: a request for another plan",
    "verify_unknown": "Meridian confirmation link: no account waits for confirmation at this address",
}


def compose(kind: str, to: str, **context: str) -> dict[str, str]:
    return {
        "to": to,
        "subject": SUBJECTS[kind],
        "text": render_template(f"portal/mail/{kind}.txt", **context),
        "html": render_template(f"portal/mail/{kind}.html", **context),
    }
