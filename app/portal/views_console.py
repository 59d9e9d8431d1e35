"""The live console page: pick a function, fill its parameters, paste one of your keys; the
portal calls ``/v1`` through the app (the request is counted like any other) and shows the
status, the JSON and a map of it (itself a static map call of the key: counted, and only for
plans that include static maps). The matrix and the optimisation send a JSON body built from
their forms and draw their answer as a table or as coloured routes (``console_many``)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

from flask import current_app, render_template, request

from accounts.store import split_key
from app.portal import console, console_many
from app.portal.blueprint import bp, current_user, login_required
from app.portal.views_keys import keys_of, plan_of
from app.runtime import runtime
from engine.errors import MeridianError
from engine.routing.profiles import NAMES as PROFILE_NAMES
from engine.services.staticmap import StaticMapParams

log = logging.getLogger("meridian.portal")


# the matrix and optimisation forms: their body from the form, their view from the answer
BODIES = {"matrix": console_many.matrix_body, "optimization": console_many.optimization_body}
VIEWS = {"matrix": console_many.matrix_view, "optimization": console_many.plan_view}
EXAMPLES = {"optimization": console_many.EXAMPLE}


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
    params = console.parameters(spec, function) if function.method == "GET" else []
    values = dict(function.defaults)
    if request.method == "GET" and request.args.get("example") and service in EXAMPLES:
        values = dict(EXAMPLES[service])
    result: dict[str, Any] | None = None
    errors: list[str] = []
    keys = keys_of(user)
    active = [k for k in keys if k.state() == "active"]
    plan = plan_of(user)
    excluded = {f.service for f in console.FUNCTIONS if plan is None or not plan.includes(f.service)}
    if request.method == "POST" and function.service in excluded:
        errors.append(f"{function.title} is not in your plan: see the plan page to ask for another plan")
    elif request.method == "POST":
        names = [p["name"] for p in params] if function.method == "GET" else list(function.defaults)
        values = {name: request.form.get(name, "") for name in names}
        key = (request.form.get("key") or "").strip()
        prefix = split_key(key) if key else None
        if prefix is None:
            errors.append("key: paste one of your API keys (mrd_...)")
        elif prefix not in {k.prefix for k in keys}:
            errors.append("key: this is not one of your keys")
        elif function.method == "GET":
            result = _call(function, params, values, key)
        else:
            try:
                body = BODIES[function.service](values)
            except console_many.FormError as exc:
                errors.append(str(exc))
            else:
                result = _post(function, body, key)
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
        profiles=PROFILE_NAMES,
        colours=console_many.COLOURS,
    ), (400 if errors else 200)


def _answer(method: str, url: str, status: int) -> dict[str, Any]:
    return {
        "method": method,
        "url": url,
        "status": status,
        "body": None,
        "json": None,
        "message": None,
        "image": None,
        "map": None,
        "map_error": None,
        "frame": None,
        "view": None,
    }


def _error_message(resp: Any) -> str | None:
    """The message of an error answer (the spec's gateway body), shown above its JSON."""
    if resp.status_code < 400:
        return None
    data = resp.get_json(silent=True)
    message = data.get("message") if isinstance(data, dict) else None
    return message if isinstance(message, str) else None


def _call(
    function: console.ConsoleFunction, params: list[dict[str, Any]], values: dict[str, str], key: str
) -> dict[str, Any]:
    query = console.query_string(params, values)
    url = f"{function.path}?{query}" if query else function.path
    with current_app.test_client() as client:  # through the whole app: auth, quota, validation
        resp = client.get(url, headers={"X-API-Key": key})
    out = _answer("GET", url, resp.status_code)
    if (resp.mimetype or "").startswith("image/"):
        out["image"] = f"data:{resp.mimetype};base64,{base64.b64encode(resp.data).decode()}"
        return out
    out["json"] = console.pretty(resp.data)
    out["message"] = _error_message(resp)
    if resp.status_code != 200:
        return out
    _draw(
        out,
        key,
        lambda: console.map_params(
            resp.get_json(silent=True), console.request_points(function, values), function.answer_points
        ),
    )
    return out


def _post(function: console.ConsoleFunction, body: dict[str, Any], key: str) -> dict[str, Any]:
    """A JSON body sent like any client's (same auth, quota and validation), and the view of its
    answer: the matrix's table or the plan's routes, their points numbered over the map."""
    with current_app.test_client() as client:
        resp = client.post(function.path, json=body, headers={"X-API-Key": key})
    out = _answer("POST", function.path, resp.status_code)
    out["body"] = json.dumps(body, indent=2)
    out["json"] = console.pretty(resp.data)
    out["message"] = _error_message(resp)
    answer = resp.get_json(silent=True)
    if resp.status_code != 200 or not isinstance(answer, dict):
        return out
    view = VIEWS[function.service](body, answer)
    out["view"] = view

    def params() -> StaticMapParams | None:
        found = view.map_params()
        if found is not None:
            out["frame"] = console.frame(found, view.badges)
        return found

    _draw(out, key, params)
    return out


def _draw(out: dict[str, Any], key: str, params: Callable[[], StaticMapParams | None]) -> None:
    """The answer's map, a static map call of the key (counted), or why there is none."""
    try:
        found = params()
        if found is not None:
            image = console.render_map(runtime(), key, found)
            out["map"] = f"data:{image.content_type};base64,{base64.b64encode(image.body).decode()}"
    except MeridianError as exc:
        out["map_error"] = console.map_refusal(exc)
    except Exception as exc:  # the answer is shown even when its map cannot be drawn
        log.warning("console map failed: %s", type(exc).__name__)
        out["map_error"] = "no map: the map could not be drawn right now"
