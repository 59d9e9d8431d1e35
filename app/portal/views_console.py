"""The live console page: pick a function, fill its parameters, paste one of your keys; the
portal calls ``/v1`` through the app (the request is counted like any other) and shows the
status, the JSON and a map of it (itself a static map call of the key: counted, and only for
plans that include static maps)."""

from __future__ import annotations

import base64
import logging
from typing import Any

from flask import current_app, render_template, request

from accounts.store import split_key
from app.portal import console
from app.portal.blueprint import bp, current_user, login_required
from app.portal.views_keys import keys_of, plan_of
from app.runtime import runtime
from engine.errors import MeridianError

log = logging.getLogger("meridian.portal")


@bp.route("/console", methods=["GET", "POST"])
@login_required
def console_page() -> str | tuple[str, int]:
    user = current_user()
    assert user is not None
    service = request.values.get("fn", "geocoding")
    function = console.BY_SERVICE.get(service)
    if function is None:
        return render_template("portal/error.html", title="Unknown function", message="fn: unknown function"), 400
    spec = current_app.extensions["openapi"].spec.to_dict()
    params = console.parameters(spec, function)
    values = dict(function.defaults)
    result: dict[str, Any] | None = None
    errors: list[str] = []
    keys = keys_of(user)
    active = [k for k in keys if k.state() == "active"]
    plan = plan_of(user)
    excluded = {f.service for f in console.FUNCTIONS if plan is None or not plan.includes(f.service)}
    if request.method == "POST" and function.service in excluded:
        errors.append(f"{function.title} is not in your plan: see the plan page to ask for another plan")
    elif request.method == "POST":
        values = {p["name"]: request.form.get(p["name"], "") for p in params}
        key = (request.form.get("key") or "").strip()
        prefix = split_key(key) if key else None
        if prefix is None:
            errors.append("key: paste one of your API keys (mrd_...)")
        elif prefix not in {k.prefix for k in keys}:
            errors.append("key: this is not one of your keys")
        else:
            result = _call(function, params, values, key)
    return render_template(
        "portal/console.html",
        functions=console.FUNCTIONS,
        function=function,
        params=params,
        values=values,
        result=result,
        errors=errors,
        active_keys=active,
        excluded=excluded,
    ), (400 if errors else 200)


def _call(
    function: console.ConsoleFunction, params: list[dict[str, Any]], values: dict[str, str], key: str
) -> dict[str, Any]:
    query = console.query_string(params, values)
    url = f"{function.path}?{query}" if query else function.path
    with current_app.test_client() as client:  # through the whole app: auth, quota, validation
        resp = client.get(url, headers={"X-API-Key": key})
    out: dict[str, Any] = {
        "url": url,
        "status": resp.status_code,
        "json": None,
        "image": None,
        "map": None,
        "map_error": None,
    }
    if (resp.mimetype or "").startswith("image/"):
        out["image"] = f"data:{resp.mimetype};base64,{base64.b64encode(resp.data).decode()}"
        return out
    out["json"] = console.pretty(resp.data)
    if resp.status_code != 200:
        return out
    try:
        params_map = console.map_params(
            resp.get_json(silent=True), console.request_points(function, values), function.answer_points
        )
        if params_map is not None:
            image = console.render_map(runtime(), key, params_map)
            out["map"] = f"data:{image.content_type};base64,{base64.b64encode(image.body).decode()}"
    except MeridianError as exc:
        out["map_error"] = console.map_refusal(exc)
    except Exception as exc:  # the answer is shown even when its map cannot be drawn
        log.warning("console map failed: %s", type(exc).__name__)
        out["map_error"] = "no map: the map could not be drawn right now"
    return out
