"""The client portal at ``/portal``: sign-up with e-mail verification, sign-in, self-service keys,
plan and usage, a live console, and an admin view. Server-rendered (Jinja2), a vendored
stylesheet, JavaScript only for the copy buttons."""

from __future__ import annotations

from datetime import timedelta

from flask import Flask

from accounts.quota import QuotaCounter
from accounts.tokens import TokenSigner
from accounts.users import UserDirectory
from app.portal.ratelimit import RateLimiter
from app.portal.services import Portal
from app.portal.sessions import PortalSessionInterface
from config.portal import PortalSettings, portal_enabled


def init_portal(app: Flask) -> None:
    """Register the blueprint and its services on an app whose runtime is built (unless
    ``PORTAL_ENABLED=false``: an API-only deployment)."""
    if not portal_enabled():
        return
    from app.portal import (  # noqa: F401  (routes)
        views_admin,
        views_auth,
        views_console,
        views_dev,
        views_keys,
        views_pages,
        views_plan,
    )
    from app.portal.blueprint import bp

    rt = app.extensions["meridian"]
    settings = PortalSettings.from_env()
    users = UserDirectory(rt.store, default_plan=settings.default_plan)
    app.extensions["portal"] = Portal(
        settings=settings,
        store=rt.store,
        users=users,
        signer=TokenSigner(settings.secret_key, rt.store),
        limiter=RateLimiter(rt.redis, rt.settings.service_name),
        quota=QuotaCounter(rt.redis, namespace=rt.settings.service_name),
        celery=rt.celery,
    )
    app.config.update(
        SECRET_KEY=settings.secret_key,
        SESSION_COOKIE_NAME="meridian_portal",
        SESSION_COOKIE_PATH="/portal",  # the API faces never see it
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.secure_cookies,
        PERMANENT_SESSION_LIFETIME=timedelta(hours=12),
        WTF_CSRF_TIME_LIMIT=4 * 3600,
    )
    app.session_interface = PortalSessionInterface()
    app.register_blueprint(bp)
