"""Every error answer, rendered from the engine's error table (``engine/errors.py``).

Gateway (and docs/health) paths get the spec's body: ``statusCode, message, error, timestamp,
path, requestId``. Core paths (``/services/...``, ``/suggest/...``) get the contract's envelope:
``{"meridian": {"cmd", "version", "error": {"status", "code", "message", "parameter"}}}``.
Unexpected exceptions are logged with the request id and answered 500 without their text (a
trace is added only with ``DEBUG=true``).
"""

from __future__ import annotations

import json
import logging
import traceback
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import redis
from flask import Flask, Response, current_app, g, request
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException

from accounts.quota_headers import rate_limit_headers
from engine.errors import DatasetError, ErrorKind, MeridianError

log = logging.getLogger("meridian.errors")
CORE_PREFIXES = ("/services/", "/suggest/")


def is_core_path(path: str) -> bool:
    return path.startswith(CORE_PREFIXES)


def status_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def error_response(
    status: int,
    message: str,
    *,
    code: str | None = None,
    parameter: str | None = None,
    retry_after: int | None = None,
    trace: str | None = None,
) -> Response:
    request_id = getattr(g, "request_id", None)
    if is_core_path(request.path):
        name = current_app.config["SERVICE_NAME"]
        error = {
            "status": status,
            "code": code or ErrorKind.for_status(status).code,
            "message": message,
            "parameter": parameter,
        }
        if trace:
            error["trace"] = trace
        body: dict[str, Any] = {
            name: {"cmd": request.args.get("cmd") or _core_cmd_from_path(), "version": "1", "error": error}
        }
    else:
        body = {
            "statusCode": status,
            "message": message,
            "error": status_phrase(status),
            "timestamp": now_iso(),
            "path": request.path,
            "requestId": request_id,
        }
        if parameter:
            body["parameter"] = parameter
        if trace:
            body["trace"] = trace
    resp = Response(json.dumps(body, ensure_ascii=False), status=status, mimetype="application/json")
    resp.headers["Cache-Control"] = "no-store"
    if retry_after is not None:
        resp.headers["Retry-After"] = str(retry_after)
    return resp


def _core_cmd_from_path() -> str | None:
    return "suggest" if request.path.startswith("/suggest/") else None


def render_meridian_error(exc: MeridianError) -> Response:
    resp = error_response(
        exc.status, exc.message, code=exc.kind.code, parameter=exc.parameter, retry_after=exc.retry_after
    )
    decision = getattr(exc, "decision", None)
    if decision is not None:
        resp.headers.update(rate_limit_headers(decision))
    return resp


def render_http_exception(exc: HTTPException) -> Response:
    status = exc.code or 500
    messages = {
        404: f"no such endpoint: {request.method} {request.path}",
        405: f"method {request.method} not allowed on {request.path}",
        413: "request body too large",
        414: "request URI too long",
    }
    specific = exc.description and exc.description != type(exc).description  # raised with its own words
    message = (
        (exc.description if specific else None) or messages.get(status) or exc.description or status_phrase(status)
    )
    resp = error_response(status, message)
    valid_methods = getattr(exc, "valid_methods", None)  # set by werkzeug's MethodNotAllowed
    if status == 405 and valid_methods:
        resp.headers["Allow"] = ", ".join(valid_methods)
    return resp


def render_dataset_error(exc: DatasetError) -> Response:
    log.error("dataset unusable on %s %s: %s", request.method, request.path, exc)
    return error_response(
        503,
        "the dataset for this area cannot be read; an operator must re-import it",
        code=ErrorKind.UNAVAILABLE.code,
        retry_after=60,
    )


def render_database_unavailable(exc: SQLAlchemyError) -> Response:
    """The accounts database is down or unreachable: a dependency outage, not a bug."""
    log.error("database unavailable on %s %s: %s", request.method, request.path, type(exc).__name__)
    return error_response(
        503, "the accounts database is unavailable; retry shortly", code=ErrorKind.UNAVAILABLE.code, retry_after=5
    )


def render_redis_unavailable(exc: redis.RedisError) -> Response:
    """Redis down, restarting or still loading its data (device states, caches, job records): a
    dependency outage a client retries after, not a bug."""
    log.error("redis unavailable on %s %s: %s", request.method, request.path, type(exc).__name__)
    return error_response(
        503, "a backing service is unavailable; retry shortly", code=ErrorKind.UNAVAILABLE.code, retry_after=2
    )


def render_broker_unavailable(exc: BrokerError) -> Response:
    """Celery could not hand a task to the broker (after its own publish retries): the queue is
    down, not the request wrong."""
    log.error("task broker unavailable on %s %s: %s", request.method, request.path, exc)
    return error_response(
        503, "the task queue is unavailable; retry shortly", code=ErrorKind.UNAVAILABLE.code, retry_after=5
    )


def render_unexpected(exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path)
    trace = traceback.format_exc() if current_app.config.get("ERROR_TRACES") else None
    return error_response(500, "internal server error", code=ErrorKind.INTERNAL.code, trace=trace)


def register(app: Flask) -> None:
    app.register_error_handler(MeridianError, render_meridian_error)
    app.register_error_handler(DatasetError, render_dataset_error)
    app.register_error_handler(HTTPException, render_http_exception)
    for outage in (OperationalError, InterfaceError, DisconnectionError, PoolTimeout):
        app.register_error_handler(outage, render_database_unavailable)
    for redis_outage in (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
        app.register_error_handler(redis_outage, render_redis_unavailable)
    app.register_error_handler(BrokerError, render_broker_unavailable)
    app.register_error_handler(Exception, render_unexpected)
