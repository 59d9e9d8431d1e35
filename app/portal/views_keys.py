"""Dashboard and self-service keys: plan and quotas (counted for the account, all keys together),
usage chart and CSV, create (the API Secret shown once; at most the plan's ``max_keys`` live keys),
revoke, rotate. Keys are issued by the same ``AccountStore.create_key`` as ``meridian keys create``,
which enforces the key cap."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, time, timedelta

import redis
from flask import Response, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as Redirect

from accounts.quota import bucket_of
from accounts.store import AccountError, IssuedKey, KeyRecord, PlanRecord
from accounts.users import User
from app.portal import usage
from app.portal.blueprint import bp, current_user, login_required
from app.portal.forms import KeyForm, RotateForm, form_errors
from app.portal.reveal import Reveal
from app.portal.services import portal
from app.runtime import runtime
from config.plans import SERVICES

log = logging.getLogger("meridian.portal")


def _user() -> User:
    user = current_user()
    assert user is not None  # login_required
    return user


def plan_of(user: User) -> PlanRecord | None:
    return next((p for p in portal().store.list_plans() if p.name == user.plan), None)


def plan_services(plan: PlanRecord | None) -> list[str]:
    if plan is None:
        return []
    return [s for s in SERVICES if plan.includes(s)]


def keys_of(user: User) -> list[KeyRecord]:
    return portal().store.list_keys(user.name)


def own_key(user: User, prefix: str) -> KeyRecord | None:
    return next((k for k in keys_of(user) if k.prefix == prefix), None)


def _last_used(stamp: datetime | None, daily: dict[str, dict[str, int]]) -> str | None:
    """The time of the key's last counted request; only its day for a key last used before the
    time was recorded."""
    if stamp is not None:
        return f"{stamp:%Y-%m-%d %H:%M} UTC"
    used = [day for day, services in daily.items() if services]
    return max(used) if used else None


def live_keys(keys: list[KeyRecord]) -> int:
    """Keys that count against the plan's ``max_keys`` (neither revoked nor expired)."""
    return sum(1 for k in keys if k.state() == "active")


@bp.route("/dashboard")
@login_required
def dashboard() -> str:
    user = _user()
    plan = plan_of(user)
    keys = keys_of(user)
    counter = portal().quota
    rows, account_counts, redis_ok = [], None, True
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    try:
        if keys:  # the quota windows are the account's: all its keys together
            account_counts = counter.current(bucket_of(keys[0]))
    except Exception:  # Redis down: the page still shows keys and plan
        redis_ok = False
    try:
        stamps = counter.last_used([k.prefix for k in keys])
    except Exception:
        stamps, redis_ok = {}, False
    for key in keys:
        last, requests_today = None, None
        try:
            daily = counter.usage(key.prefix, usage.DAYS)
            last, requests_today = _last_used(stamps.get(key.prefix), daily), sum(daily.get(today, {}).values())
        except Exception:
            redis_ok = False
        rows.append({"key": key, "state": key.state(), "last_used": last, "today": requests_today})
    return render_template(
        "portal/dashboard.html",
        user=user,
        plan=plan,
        services=plan_services(plan),
        rows=rows,
        counts=account_counts,
        live=live_keys(keys),
        redis_ok=redis_ok,
        rotate_form=RotateForm(),
        development=portal().settings.development,
    )


@bp.route("/usage.svg")
@login_required
def usage_svg() -> Response:
    daily = usage.daily_usage(portal().quota, keys_of(_user()))
    return Response(usage.to_svg(daily), mimetype="image/svg+xml")


@bp.route("/usage.csv")
@login_required
def usage_csv() -> Response:
    daily = usage.daily_usage(portal().quota, keys_of(_user()))
    resp = Response(usage.to_csv(daily), mimetype="text/csv")
    resp.headers["Content-Disposition"] = f'attachment; filename="meridian-usage-{datetime.now(UTC):%Y%m%d}.csv"'
    return resp


def _reveal() -> Reveal:
    rt = runtime()
    return Reveal(rt.redis, rt.settings.service_name)


def _issued_page(user: User, issued: IssuedKey, title: str, note: str | None = None) -> Redirect | str:
    """Redirect to the page that shows the new key once (post/redirect/get: a reload cannot issue
    another); when Redis cannot hold it for that page, show it in this answer instead."""
    shown = {"key": issued.key, "secret": issued.secret, "title": title, "note": note}
    try:
        token = _reveal().put(user.id, shown)
    except redis.RedisError as exc:
        log.warning("new key shown without a redirect: %s", type(exc).__name__)
        return render_template("portal/key_created.html", **shown)
    return redirect(url_for("portal.key_issued", token=token), 303)


@bp.route("/keys/issued/<token>")
@login_required
def key_issued(token: str) -> str | tuple[str, int]:
    shown = _reveal().take(_user().id, token)
    if shown is None:
        return render_template(
            "portal/notice.html",
            title="Shown once",
            message="The key and its API Secret were shown once, on the page you were sent to after creating or "
            "rotating it; Meridian keeps only their hashes. If you did not copy them, revoke that key on the "
            "dashboard and create a new one.",
        ), 410
    return render_template("portal/key_created.html", **shown)


@bp.route("/keys/new", methods=["GET", "POST"])
@login_required
def key_new() -> Redirect | str | tuple[str, int]:
    user = _user()
    plan = plan_of(user)
    form = KeyForm()
    form.scopes.choices = [(s, s) for s in plan_services(plan)]
    errors: list[str] = []
    if not user.verified:
        return render_template(
            "portal/error.html",
            title="Confirm your e-mail address first",
            message="Keys can be created once your e-mail address is confirmed: open the link we sent you, or ask "
            "for a new one on the dashboard.",
        ), 403
    # a field's problem stays on the field (forms.py), shown next to it
    if request.method == "POST" and form.validate():
        expires = None
        if form.expires.data is not None:  # in the future: KeyForm.validate_expires
            expires = datetime.combine(form.expires.data, time(0), tzinfo=UTC)
        try:
            issued = portal().store.create_key(
                user.name,
                user.plan,
                scopes=list(form.scopes.data) or None,
                expires_at=expires,
                label=(form.label.data or "").strip(),
            )
        except AccountError as exc:
            errors.append(str(exc))
        else:
            return _issued_page(user, issued, "Your new key")
    return render_template("portal/key_new.html", form=form, errors=errors, plan=plan, live=live_keys(keys_of(user))), (
        400 if errors or form.errors else 200
    )


def _no_such_key() -> tuple[str, int]:
    return render_template("portal/error.html", title="No such key", message="No key of yours has that prefix."), 404


def _confirmed() -> bool:
    """Revoke and rotate act only on the confirmation page's POST (a GET, or a POST without
    ``confirm=yes``, shows that page): one click on the dashboard never changes a key."""
    return request.method == "POST" and request.form.get("confirm") == "yes"


def _confirm_page(action: str, key: KeyRecord, form: RotateForm | None = None, errors: list[str] | None = None) -> str:
    return render_template("portal/key_confirm.html", action=action, key=key, form=form, errors=errors or [])


@bp.route("/keys/<prefix>/revoke", methods=["GET", "POST"])
@login_required
def key_revoke(prefix: str) -> str | tuple[str, int]:
    user = _user()
    key = own_key(user, prefix)
    if key is None:
        return _no_such_key()
    if not _confirmed():
        return _confirm_page("revoke", key)
    portal().store.revoke(key.prefix)
    runtime().access.invalidate(key.prefix)  # this process at once; the others within AUTH_CACHE_TTL
    return render_template(
        "portal/notice.html",
        title="Key revoked",
        message=f"The key {key.prefix} is revoked: it is refused everywhere within a few seconds.",
    )


@bp.route("/keys/<prefix>/rotate", methods=["GET", "POST"])
@login_required
def key_rotate(prefix: str) -> Redirect | str | tuple[str, int]:
    user = _user()
    key = own_key(user, prefix)
    form = RotateForm()
    if key is None:
        return _no_such_key()
    if not _confirmed():
        return _confirm_page("rotate", key, form)
    if not form.validate():
        return _confirm_page("rotate", key, form, form_errors(form)), 400
    try:
        issued = portal().store.rotate(key.prefix, timedelta(hours=form.grace_hours.data or 0))
    except AccountError as exc:
        return _confirm_page("rotate", key, form, [str(exc)]), 400
    runtime().access.invalidate(key.prefix)
    until = datetime.now(UTC) + timedelta(hours=form.grace_hours.data or 0)
    return _issued_page(
        user,
        issued,
        "Rotated: your replacement key",
        note=f"The old key {key.prefix} works until {until:%Y-%m-%d %H:%M} UTC.",
    )
