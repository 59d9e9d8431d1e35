"""A minimal admin view (role ``admin``, see ``meridian accounts promote``): every account with
its plan and state; change the plan, disable or enable; the pending requests for another plan
(``upgrades.py``), dismissed once handled."""

from __future__ import annotations

from flask import redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from accounts.store import AccountError
from app.portal.blueprint import admin_required, bp, current_user
from app.portal.services import portal
from app.portal.views_plan import upgrade_requests


@bp.route("/admin")
@admin_required
def admin() -> str:
    p = portal()
    users = p.users.list()
    return render_template(
        "portal/admin.html",
        users=users,
        key_counts=p.users.key_counts(u.id for u in users),
        plans=[plan.name for plan in p.store.list_plans()],
        message=request.args.get("message"),
        upgrades=upgrade_requests().pending(),
    )


@bp.route("/admin/upgrades/<int:account_id>/dismiss", methods=["POST"])
@admin_required
def admin_dismiss_upgrade(account_id: int) -> Response:
    upgrade_requests().dismiss(account_id)
    return redirect(url_for("portal.admin", message="upgrade request dismissed"))


@bp.route("/admin/<int:account_id>", methods=["POST"])
@admin_required
def admin_update(account_id: int) -> Response | tuple[str, int]:
    p = portal()
    me = current_user()
    target = p.users.get(account_id)
    if target is None:
        return render_template("portal/error.html", title="No such account", message="No such account."), 404
    action = request.form.get("action")
    try:
        if action == "plan":
            moved = p.users.set_plan(account_id, request.form.get("plan", ""))
            message = f"{target.email or target.name}: plan {request.form.get('plan')} ({moved} keys)"
        elif action in ("disable", "enable"):
            if me is not None and me.id == account_id and action == "disable":
                raise AccountError("you cannot disable your own account")
            p.users.set_disabled(account_id, action == "disable")
            message = f"{target.email or target.name}: {action}d"
        else:
            raise AccountError("action: plan, disable or enable")
    except AccountError as exc:
        return render_template("portal/error.html", title="Not changed", message=str(exc)), 400
    return redirect(url_for("portal.admin", message=message))
