"""The pattern every /v1 function follows.

    blp = GatewayBlueprint("Geocoding", __name__, url_prefix="/v1", description="...")
    blp.function_route("/geocoding", FUNCTION, GeocodingArgs, response_schema=GeocodingResult,
                       errors=(404,), summary="...", description="...")

registers one view function that admits the request (key 401, plan 403, quota 429), parses its
parameters through flask-smorest's ``@blp.arguments`` (400 naming the parameter) and answers
(``app/calls.py``); 400/401/403/429/500/503 are documented for every view. Views that do more
(jobs, batches, fences) are ``MethodView`` classes decorated by hand with the same pieces:
:func:`gateway_call`, ``@blp.arguments``, ``@blp.response`` and :meth:`GatewayBlueprint.error_responses`.

Validation runs before the engine or the remote backend is touched. Unknown query parameters
are rejected with 400. Every error uses the spec's body (:class:`ErrorBodySchema`).
"""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from functools import wraps
from typing import TYPE_CHECKING, Any

import flask_smorest
from apispec.ext.marshmallow import MarshmallowPlugin
from flask.typing import ResponseReturnValue
from marshmallow import Schema, fields

from app import jobs
from app.access import admit, gateway_key
from app.calls import gateway_answer
from app.registry import Function
from app.validation import MeridianParser

View = Callable[..., ResponseReturnValue]
Decorator = Callable[[View], View]

COMMON_ERRORS = (400, 401, 403, 429, 500, 503)
ERROR_DESCRIPTIONS = {
    400: "Invalid parameters: the message names the parameter and what was expected.",
    401: "Missing, malformed, unknown, revoked or expired API key.",
    403: "The API key's plan or scopes do not include this service.",
    404: "No results found.",
    413: "Request body too large.",
    429: "Plan quota exceeded (counted for the key's account: all its keys together); retry after "
    "`Retry-After` seconds with exponential backoff.",
    500: "Internal server error.",
    503: "Backend, queue or quota store unavailable (or the wait for a worker ran out); retry after `Retry-After`.",
}


class ErrorBodySchema(Schema):
    statusCode = fields.Integer(required=True, metadata={"example": 400})
    message = fields.String(required=True, metadata={"example": "query: required parameter is missing"})
    error = fields.String(required=True, metadata={"example": "Bad Request"})
    timestamp = fields.String(required=True, metadata={"format": "date-time", "example": "2026-11-22T10:00:00.000Z"})
    path = fields.String(required=True, metadata={"example": "/v1/geocoding"})
    requestId = fields.String(required=True, metadata={"example": "5f2b8c1e9a7d4e0f"})
    parameter = fields.String(metadata={"description": "The parameter at fault (400 only)."})


class GatewayBlueprint(flask_smorest.Blueprint):  # type: ignore[misc]  # flask-smorest ships no type hints: Any to mypy
    """flask-smorest's Blueprint with Meridian's parser (400 in the spec's body, unknown parameters
    rejected) and the standard view of a function (:meth:`function_route`)."""

    ARGUMENTS_PARSER = MeridianParser()

    if TYPE_CHECKING:
        # flask-smorest's view decorators with their documented parameters: as inherited from an
        # untyped library they are Any, which would make every view they decorate untyped.

        def arguments(
            self,
            schema: type[Schema] | Schema,
            *,
            location: str = "json",
            content_type: str | None = None,
            required: bool = True,
            description: str | None = None,
            example: Any = None,
            examples: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> Decorator: ...

        def response(
            self,
            status_code: int | str,
            schema: type[Schema] | Schema | str | dict[str, Any] | None = None,
            *,
            content_type: str | None = None,
            description: str | None = None,
            example: Any = None,
            examples: dict[str, Any] | None = None,
            headers: dict[str, Any] | None = None,
        ) -> Decorator: ...

        def alt_response(
            self,
            status_code: int | str,
            response: str | None = None,
            *,
            schema: type[Schema] | Schema | str | dict[str, Any] | None = None,
            content_type: str | None = None,
            description: str | None = None,
            example: Any = None,
            examples: dict[str, Any] | None = None,
            headers: dict[str, Any] | None = None,
            success: bool = False,
        ) -> Decorator: ...

        @staticmethod
        def doc(**kwargs: Any) -> Decorator: ...

    def function_route(
        self,
        path: str,
        function: Function,
        args_schema: type[Schema] | Schema,
        *,
        summary: str,
        description: str,
        response_schema: type[Schema] | Schema | None = None,
        example: dict[str, Any] | None = None,
        errors: tuple[int, ...] = (),
        responses: dict[str, Any] | None = None,
        location: str = "query",
        method: str = "get",
        endpoint: str | None = None,
        cost: Callable[[], int] | None = None,
    ) -> View:
        """Register the standard view of a function: admit, validate, answer (see module doc).

        A view function rather than a ``MethodView``: one method per path, and no class-level
        dispatch on every request."""
        handler: View
        answer_docs = error_response_docs(*errors)
        # An instance, not the class: webargs would build a new schema for every request.
        schema = args_schema() if isinstance(args_schema, type) else args_schema
        if function.queued:
            schema = jobs.gateway_schema(type(schema))()  # the params and ``async``, parsed once

            def handler(args: jobs.QueuedArgs) -> ResponseReturnValue:
                return jobs.answer(function, args)

            answer_docs[202] = {
                "description": "`async=true`: the job, to poll at `/v1/jobs/{id}`.",
                "content": {"application/json": {"schema": jobs.JobAcceptedSchema}},
            }
        else:

            def handler(params: Any) -> ResponseReturnValue:
                return gateway_answer(function, params)

        if response_schema is not None:
            # the handlers answer with a Response (ETag, caching headers): the schema documents the body
            ok: dict[str, Any] = {"schema": response_schema}
            if example is not None:
                ok["example"] = example
            answer_docs[200] = {"description": "OK", "content": {"application/json": ok}}
        answer_docs.update(responses or {})
        # summary and description from the docstring, answers through GatewayDocsPlugin: no
        # documentation layer (flask-smorest's ``doc``/``response``) runs with every request
        handler.__doc__ = f"{summary}\n\n{description}"
        endpoint = endpoint or function.cmd
        FUNCTION_ANSWERS[f"{self.name}.{endpoint}"] = answer_docs
        handler = self.arguments(schema, location=location, as_kwargs=False)(handler)
        handler = gateway_call(function, cost)(handler)
        self.route(path, endpoint=endpoint, methods=[method.upper()])(handler)
        return handler

    def error_responses(self, *extra: int) -> Decorator:
        """Document the error answers of a view (the spec's body): the common ones and ``extra``."""
        return self.doc(responses=error_response_docs(*extra))


# The answers of the views made by GatewayBlueprint.function_route, by endpoint ("Routing.routing").
FUNCTION_ANSWERS: dict[str, dict[int | str, dict[str, Any]]] = {}


class GatewayDocsPlugin(MarshmallowPlugin):
    """apispec's marshmallow plugin, passed to flask-smorest as its ``marshmallow_plugin``, that
    also writes the answers of the views made by :meth:`GatewayBlueprint.function_route` into
    their operations (before their schemas are resolved to references like any others).

    flask-smorest's ``@blp.response`` and ``@blp.doc`` would document them too, but each also wraps
    the view in a call layer that runs on every request; these views return a finished
    ``Response`` and need neither at run time."""

    def operation_helper(
        self, path: str | None = None, operations: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        rule = kwargs.get("rule")
        answers = FUNCTION_ANSWERS.get(rule.endpoint) if rule is not None else None
        if answers and operations:
            for operation in operations.values():
                operation.setdefault("responses", {}).update(deepcopy(answers))
        super().operation_helper(path=path, operations=operations, **kwargs)


def error_response_docs(*extra: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI documentation of a view's error answers: the common ones and ``extra``.

    Written by :class:`GatewayDocsPlugin` for the views of ``function_route``, and passed to
    ``Blueprint.doc`` by :meth:`GatewayBlueprint.error_responses` for the others; rather than one
    ``alt_response`` per status, which would wrap the view in a call layer run on every request."""
    return {
        status: {
            "description": ERROR_DESCRIPTIONS.get(status, ""),
            "content": {"application/json": {"schema": ErrorBodySchema}},
        }
        for status in sorted(set(COMMON_ERRORS) | set(extra))
    }


def gateway_call(function: Function, cost: Callable[[], int] | None = None) -> Decorator:
    """Admit the request (key, plan/scopes, quota) before its parameters are parsed.

    ``cost`` may be a callable returning how many quota units the request spends (batch jobs).
    """

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> ResponseReturnValue:
            admit(function.service, gateway_key(), cost() if callable(cost) else 1)
            return view(*args, **kwargs)

        return wrapper

    return decorator
