"""The plan page: the account's plan (quotas, key cap, services), every plan of the deployment,
and a request for another plan that reaches the operator (stored for the admin view, mailed to
``PORTAL_OPERATOR_EMAIL``). Payment is out of scope: the operator changes the plan."""

from __future__ import annotations

import logging

import redis
from flask import redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from accounts.store import PlanRecord
from accounts.users import User
from app.portal.blueprint import bp, current_user, login_required
from app.portal.mails import compose
from app.portal.services import portal
from app.portal.upgrades import MAX_MESSAGE, UpgradeRequest, UpgradeRequests
from app.portal.views_keys import keys_of, live_keys, plan_of, plan_services
from app.runtime import runtime

log = logging.getLogger("meridian.portal")


def upgrade_requests() -> UpgradeRequests:
    rt = runtime()
    return UpgradeRequests(rt.redis, rt.settings.service_name)


def _tell_operator(upgrade: UpgradeRequest) -> bool:
    """Mail the request to the operator; False when no address is set or the queue is away
    (the request is stored either way: the admin view lists it)."""
    settings = portal().settings
    if not settings.operator_email:
        return False
    return portal().queue_mail(
        compose(
            "upgrade",
            settings.operator_email,
            email=upgrade.email,
            account_id=str(upgrade.account_id),
            current_plan=upgrade.current_plan,
            wanted_plan=upgrade.wanted_plan,
            message=upgrade.message,
            link=f"{settings.base_url}{url_for('portal.admin')}",
        )
    )


def _page(user: User, plans: list[PlanRecord], errors: list[str], pending: UpgradeRequest | None) -> str:
    plan = plan_of(user)
    return render_template(
        "portal/plan.html",
        user=user,
        plan=plan,
        services=plan_services(plan),
        live=live_keys(keys_of(user)),
        plans=plans,
        errors=errors,
        pending=pending,
        sent=request.args.get("sent"),
        max_message=MAX_MESSAGE,
    )


@bp.route("/plan", methods=["GET", "POST"])
@login_required
def plan_page() -> Response | str | tuple[str, int]:
    user = current_user()
    assert user is not None  # login_required
    plans = portal().store.list_plans()
    store = upgrade_requests()
    errors: list[str] = []
    if request.method == "POST":
        wanted = request.form.get("plan", "")
        message = request.form.get("message", "")
        if not user.verified:
            errors.append("Confirm your e-mail address first: the operator answers you there.")
        elif wanted == user.plan or wanted not in {p.name for p in plans}:
            errors.append("plan: choose one of the other plans")
        elif len(message) > MAX_MESSAGE:
            errors.append(f"message: at most {MAX_MESSAGE} characters")
        else:
            upgrade = UpgradeRequest.now(user.id, user.email or user.name, user.plan, wanted, message)
            try:
                first = store.add(upgrade)
            except redis.RedisError as exc:
                log.warning("upgrade request not stored: %s", type(exc).__name__)
                errors.append("Your request could not be recorded right now; please try again in a minute.")
            else:
                mailed = _tell_operator(upgrade) if first else False
                return redirect(url_for("portal.plan_page", sent="mailed" if mailed else "stored"), 303)
    try:
        pending = store.pending_for(user.id)
    except redis.RedisError:
        pending = None
    return _page(user, plans, errors, pending), (400 if errors else 200)
