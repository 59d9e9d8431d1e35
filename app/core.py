"""The core API: ``GET /services/json?cmd=<operation>&...`` (also ``/services/v2/json``) and the
suggest servlet path ``GET /suggest/json?q=...``; ``Authorization: Bearer <key>``.

Order of checks: key (401) -> command (400) -> plan/scopes (403) -> quota (429) -> parameters
(400) -> engine.
"""

from __future__ import annotations

from functools import cache

from flask import Blueprint, Response, request
from marshmallow import Schema

from app.access import admit, core_key
from app.calls import core_answer
from app.registry import REGISTRY, Function
from app.runtime import runtime
from app.validation import CORE_PARSER
from engine.errors import InvalidParameter

bp = Blueprint("core", __name__)


@cache
def _schema(schema_class: type[Schema]) -> Schema:
    """One instance per schema, like the gateway's views (building one copies its fields)."""
    return schema_class()


def _serve(function: Function, key: str) -> Response:
    admit(function.service, key)
    params = CORE_PARSER.parse(_schema(function.core_schema), request, location="query")
    return core_answer(function, params)


@bp.get("/services/json")
@bp.get("/services/v2/json")
def services() -> Response:
    key = core_key()
    cmd = (request.args.get("cmd") or "").strip()
    function = REGISTRY.get(cmd)
    if function is None:
        # The key is checked before the command (401 before 400), so that a gateway's readiness
        # probe, which sends no command, learns whether its key is accepted.
        runtime().access.authenticate(key)
        if not cmd:
            raise InvalidParameter("cmd: required parameter is missing", parameter="cmd")
        raise InvalidParameter(
            f"cmd: unknown command {cmd!r}; expected one of {', '.join(sorted(REGISTRY))}", parameter="cmd"
        )
    return _serve(function, key)


@bp.get("/suggest/json")
def suggest_servlet() -> Response:
    key = core_key()
    function = REGISTRY.get("suggest")
    if function is None:
        raise InvalidParameter("suggest is not available on this deployment", parameter="q")
    return _serve(function, key)
