"""The ``/portal`` blueprint and what every portal page shares: the signed-cookie session of the
signed-in user, the CSRF check of every POST (Flask-WTF's token, only on this blueprint: the API
faces are unaffected), security headers, HTML error pages, and the attempt limits.

A session holds the account id and the account's ``session_generation`` when it was opened; the
database is asked on every request, and a session whose generation is no longer the account's
is signed out. Signing out and changing the password move the generation on, so a copy of the
cookie (kept before the sign-out, or stolen) opens nothing afterwards."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Blueprint, Response, g, redirect, render_template, request, session, url_for
from flask_wtf.csrf import CSRFError, generate_csrf, validate_csrf
from werkzeug.exceptions import HTTPException
from wtforms.validators import ValidationError

from accounts.users import User
from app.portal.services import portal
from config.portal import RateLimit

bp = Blueprint("portal", __name__, url_prefix="/portal", template_folder="templates", static_folder="static")

F = TypeVar("F", bound=Callable[..., Any])

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@bp.before_request
def _check_csrf() -> Response | tuple[str, int] | None:
    g.portal_user = None
    if request.method == "POST":
        try:
            validate_csrf(request.form.get("csrf_token"))
        except (ValidationError, CSRFError) as exc:
            message = exc.args[0] if exc.args else "The form has expired."
            return render_template(
                "portal/error.html",
                title="Form expired",
                message=(f"{message} Go back, reload the page and send the form again."),
            ), 400
    return None


@bp.after_request
def _security_headers(resp: Response) -> Response:
    resp.headers["Content-Security-Policy"] = CSP
    resp.headers["X-Frame-Options"] = "DENY"
    resp.headers["Referrer-Policy"] = "no-referrer"  # links with single-use tokens never leak
    resp.headers["X-Content-Type-Options"] = "nosniff"
    if not request.path.startswith("/portal/static/"):
        resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.errorhandler(HTTPException)
def _http_error(exc: HTTPException) -> tuple[str, int]:
    return render_template("portal/error.html", title=exc.name, message=exc.description), exc.code or 500


@bp.app_context_processor
def _template_globals() -> dict[str, Any]:
    return {
        "csrf_token": generate_csrf,
        "portal_user": lambda: g.get("portal_user"),
        "portal_development": lambda: portal().settings.development,
    }


# ---------------------------------------------------------------- session
def sign_in(user: User) -> None:
    session.clear()
    session.permanent = True
    session["uid"] = user.id
    session["gen"] = user.session_generation


def sign_out() -> None:
    """End this session and every copy of its cookie: every session of the account ends."""
    user = current_user()
    if user is not None:
        portal().users.end_sessions(user.id)
    session.clear()


def current_user() -> User | None:
    """The signed-in user, if the session is still valid (the account's session generation is the
    session's, the account not disabled)."""
    known: User | None = g.get("portal_user")
    if known is not None:
        return known
    uid = session.get("uid")
    if not isinstance(uid, int):
        return None
    user = portal().users.get(uid)
    if user is None or user.disabled or session.get("gen") != user.session_generation:
        session.clear()
        return None
    g.portal_user = user
    return user


def login_required(view: F) -> F:
    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if current_user() is None:
            return redirect(url_for("portal.login", next=request.path))
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def admin_required(view: F) -> F:
    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        user = current_user()
        if user is None:
            return redirect(url_for("portal.login", next=request.path))
        if not user.is_admin:
            return render_template("portal/error.html", title="Forbidden", message="Administrators only."), 403
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def safe_next(target: str | None) -> str:
    """Only a path inside the portal, in printable ASCII without spaces (no open redirect, and no
    CR/LF or other control character that would break the ``Location`` header)."""
    if target and target.startswith("/portal/") and "\\" not in target and all("!" <= c <= "~" for c in target):
        return target
    return url_for("portal.dashboard")


# ---------------------------------------------------------------- attempt limits
def limited(
    action: str, limit: RateLimit, address: str | None, *, fail_open: bool, per_source: bool = False
) -> tuple[str, int, dict[str, str]] | None:
    """The 429 (or 503) page when the attempt is over its limit, else None. ``per_source``: the
    address is counted per client IP (password checks), not for everyone (forms that send mail)."""
    verdict = portal().limiter.hit(
        action,
        limit,
        ip=request.remote_addr or "-",
        address=address,
        fail_open=fail_open,
        per_source=per_source,
    )
    if verdict.allowed:
        return None
    if verdict.unavailable:
        return (
            render_template(
                "portal/error.html",
                title="Try again shortly",
                message="This form is unavailable for a moment (our rate limiter cannot be reached). Nothing was "
                "sent or changed; please try again in a minute.",
            ),
            503,
            {"Retry-After": "30"},
        )
    minutes = max(1, -(-verdict.retry_after_s // 60))
    return (
        render_template(
            "portal/error.html",
            title="Too many attempts",
            message=f"Too many attempts from here or for this address. Please wait about {minutes} minute"
            f"{'s' if minutes > 1 else ''} and try again.",
        ),
        429,
        {"Retry-After": str(verdict.retry_after_s)},
    )
