"""Pages of the portal that need no account: the terms of use, and the portal's own HTML page
for a URL under ``/portal`` that matches no route (the API faces keep their JSON 404)."""

from __future__ import annotations

from flask import render_template, request
from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.wrappers import Response

from app.errors import render_http_exception
from app.portal.blueprint import bp
from app.portal.services import portal

GENERIC_OPERATOR = "the operator of this deployment"


@bp.route("/terms")
def terms() -> str:
    settings = portal().settings
    return render_template(
        "portal/terms.html",
        operator=settings.operator_name or GENERIC_OPERATOR,
        named=bool(settings.operator_name),
        contact=settings.operator_email,
    )


def _in_portal() -> bool:
    return request.path == bp.url_prefix or request.path.startswith(f"{bp.url_prefix}/")


@bp.app_errorhandler(NotFound)
@bp.app_errorhandler(MethodNotAllowed)
def _unrouted(exc: NotFound | MethodNotAllowed) -> Response | tuple[str, int]:
    """A URL that matched no route reaches the app's handlers, not the blueprint's: under
    ``/portal`` it gets the portal's page, elsewhere the API's JSON error body as before."""
    if not _in_portal():
        return render_http_exception(exc)
    return render_template("portal/error.html", title=exc.name, message=exc.description), exc.code or 404
