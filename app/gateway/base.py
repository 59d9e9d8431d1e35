"""The pattern every /v1 function follows.

    blp = GatewayBlueprint("Geocoding", __name__, url_prefix="/v1", description="...")

    @blp.route("/geocoding")
    class GeocodingView(MethodView):
        @gateway_call(FUNCTION)                                # key (401), plan (403), quota (429)
        @blp.arguments(GeocodingArgs, location="query", as_kwargs=False)   # 400 naming the parameter
        @blp.response(200, GeocodingResult, example=...)
        @blp.error_responses(404)                              # 400/401/403/429/500/503 are implied
        def get(self, params):
            return gateway_answer(FUNCTION, params)

Validation runs before the engine or the remote backend is touched. Unknown query parameters
are rejected with 400. Every error uses the spec's body (:class:`ErrorBodySchema`).
"""

from __future__ import annotations

from functools import wraps

import flask_smorest
from marshmallow import Schema, fields

from app.access import admit, gateway_key
from app.functions import Function
from app.validation import MeridianParser

COMMON_ERRORS = (400, 401, 403, 429, 500, 503)
ERROR_DESCRIPTIONS = {
    400: "Invalid parameters: the message names the parameter and what was expected.",
    401: "Missing, malformed, unknown, revoked or expired API key.",
    403: "The API key's plan or scopes do not include this service.",
    404: "No results found.",
    413: "Request body too large.",
    429: "Plan quota exceeded; retry after `Retry-After` seconds with exponential backoff.",
    500: "Internal server error.",
    503: "Backend or queue unavailable (or the wait for a worker ran out); retry after `Retry-After`.",
}


class ErrorBodySchema(Schema):
    statusCode = fields.Integer(required=True, metadata={"example": 400})
    message = fields.String(required=True, metadata={"example": "query: required parameter is missing"})
    error = fields.String(required=True, metadata={"example": "Bad Request"})
    timestamp = fields.String(required=True, metadata={"format": "date-time", "example": "2026-11-22T10:00:00.000Z"})
    path = fields.String(required=True, metadata={"example": "/v1/geocoding"})
    requestId = fields.String(required=True, metadata={"example": "5f2b8c1e9a7d4e0f"})
    parameter = fields.String(metadata={"description": "The parameter at fault (400 only)."})


class GatewayBlueprint(flask_smorest.Blueprint):
    """flask-smorest's Blueprint with Meridian's parser (400 in the spec's body, unknown parameters
    rejected) and the standard view of a function (:meth:`function_route`)."""

    ARGUMENTS_PARSER = MeridianParser()

    def function_route(
        self,
        path: str,
        function: Function,
        args_schema,
        *,
        summary: str,
        description: str,
        response_schema=None,
        example: dict | None = None,
        errors: tuple[int, ...] = (),
        responses: dict | None = None,
        location: str = "query",
        method: str = "get",
    ):
        """Register the standard view of a function: admit, validate, answer (see module doc)."""
        from flask.views import MethodView

        from app import jobs
        from app.calls import gateway_answer
        from app.dispatch import HeavyCall

        if function.queue:

            def handler(self_view, params):
                return jobs.answer(function, HeavyCall(function.queue, function.service_ref, params))

            handler = self.alt_response(
                202, schema=jobs.JobAcceptedSchema, description="`async=true`: the job, to poll at `/v1/jobs/{id}`."
            )(handler)
        else:

            def handler(self_view, params):
                return gateway_answer(function, params)

        handler = self.error_responses(*errors)(handler)
        if response_schema is not None:
            # the handlers answer with a Response (ETag, caching headers), which flask-smorest
            # returns as it is: the schema documents the body
            handler = self.response(200, response_schema, example=example)(handler)
        handler = self.doc(summary=summary, description=description, **({"responses": responses} if responses else {}))(
            handler
        )
        # An instance, not the class: webargs would build a new schema for every request.
        schema = args_schema() if isinstance(args_schema, type) else args_schema
        handler = self.arguments(schema, location=location, as_kwargs=False)(handler)
        handler = gateway_call(function)(handler)
        # one view instance for every request: the handlers keep no state on it
        view = type(
            f"{function.cmd.title().replace('_', '')}View",
            (MethodView,),
            {method: handler, "init_every_request": False},
        )
        self.route(path)(view)
        return view

    def error_responses(self, *extra: int):
        statuses = sorted(set(COMMON_ERRORS) | set(extra))

        def decorator(func):
            for status in reversed(statuses):
                func = self.alt_response(
                    status, schema=ErrorBodySchema, description=ERROR_DESCRIPTIONS.get(status, "")
                )(func)
            return func

        return decorator


def gateway_call(function: Function, cost=None):
    """Admit the request (key, plan/scopes, quota) before its parameters are parsed.

    ``cost`` may be a callable returning how many quota units the request spends (batch jobs).
    """

    def decorator(view):
        @wraps(view)
        def wrapper(*args, **kwargs):
            admit(function.service, gateway_key(), cost() if callable(cost) else 1)
            return view(*args, **kwargs)

        return wrapper

    return decorator
