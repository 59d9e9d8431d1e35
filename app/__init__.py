"""The Flask application factory: core API, /v1 gateway, health and docs as separate blueprints."""

from __future__ import annotations

import importlib
import logging
import time
from typing import Any

import flask_smorest
from flask import Flask, Response, g, request
from werkzeug.exceptions import RequestURITooLarge
from werkzeug.middleware.proxy_fix import ProxyFix

from accounts.quota_headers import rate_limit_headers
from app import bodies, core, docs, errors, health, metrics
from app.after_response import AfterResponse, FinishedRequest
from app.gateway.base import GatewayDocsPlugin
from app.json_provider import OrjsonProvider
from app.portal import init_portal
from app.runtime import Runtime
from common import logs
from config.settings import Settings

log = logging.getLogger("meridian.request")

# One module per function; each registers its Function and defines its gateway blueprint `blp`.
FUNCTION_MODULES = (
    "app.functions.geocoding",
    "app.functions.reverse_geocoding",
    "app.functions.suggest",
    "app.functions.poi",
    "app.functions.proximity",
    "app.functions.routing",
    "app.functions.snaptoroad",
    "app.functions.isochrone",
    "app.functions.staticmap",
    "app.functions.geometry",
    "app.functions.matrix",
    "app.functions.optimization",
    "app.functions.geofencing",
    "app.functions.batch",
    "app.functions.jobs",
)

API_DESCRIPTION = """Meridian: geocoding, reverse geocoding, suggest, routing, isochrones, POI search,
proximity, static maps, geometry download, snap to road and geofencing over OpenStreetMap data.

Every `/v1` operation needs the `X-API-Key` header, except the health endpoints
(`/v1/health`, `/v1/health/live`, `/v1/health/ready`), which load balancers and orchestrators
probe without a key (docs/decisions.md). Errors share one body:
`statusCode, message, error, timestamp, path, requestId`. Invalid or **unknown** query parameters
answer 400 naming the parameter. Quotas are the account's (all its keys together). Over quota: 429
with `Retry-After`; every response carries `RateLimit-Limit/Remaining/Reset` (and `X-RateLimit-*`)
for the account. Clients should cache (ETag,
`Cache-Control`) and retry 429/503 with exponential backoff and jitter.

Address fields (`country`, `city`, `district`, `street`, `number`, `postcode`) are `null` here
when unknown; on the core API (`/services/json`) they are strings, `""` when unknown.

Map data © OpenStreetMap contributors, ODbL 1.0."""


def _openapi_config(settings: Settings) -> dict[str, Any]:
    return {
        "API_TITLE": "Meridian",
        "API_VERSION": "1.0.0",
        "OPENAPI_VERSION": "3.0.3",
        "OPENAPI_URL_PREFIX": "/",
        "OPENAPI_JSON_PATH": "api-json",
        "API_SPEC_OPTIONS": {
            "info": {
                "description": API_DESCRIPTION,
                "license": {"name": "Data: ODbL 1.0", "url": "https://opendatacommons.org/licenses/odbl/"},
            },
            "servers": [
                {"url": "/", "description": "This server"},
                {"url": f"http://localhost:{settings.port}", "description": "Local development"},
            ],
            "components": {"securitySchemes": {"ApiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}},
            "security": [{"ApiKeyAuth": []}],
        },
    }


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> Flask:
    settings = settings or Settings.from_env()
    logs.configure(settings.log_format, settings.debug)
    app = Flask(__name__)
    app.config.update(
        SERVICE_NAME=settings.service_name,
        DEBUG=settings.debug,
        ERROR_TRACES=settings.error_traces,
        MAX_CONTENT_LENGTH=settings.limits.request_body_bytes,
        JSON_SORT_KEYS=False,
        **_openapi_config(settings),
    )
    app.json = OrjsonProvider(app)  # jsonify, flask-smorest's responses, request.get_json
    rt = runtime or Runtime.build(settings)
    app.extensions["meridian"] = rt
    app.extensions["celery"] = rt.celery

    # each request's log line and metrics, once its answer is sent (app/after_response.py)
    after = app.extensions["after_response"] = AfterResponse()
    after.subscribe(_log_request)
    _register_request_hooks(app, settings, after)
    bodies.init_app(app, settings.limits.request_body_bytes, settings.body_read_timeout_s, settings.body_json_max_depth)
    metrics.init_app(app, after)  # /metrics and the per-request counters

    app.register_blueprint(core.bp)
    app.register_blueprint(health.bp)
    app.register_blueprint(docs.bp)
    api = flask_smorest.Api(app, spec_kwargs={"marshmallow_plugin": GatewayDocsPlugin()})
    # after Api(app), which registers flask-smorest's own HTTPException handler: every error
    # answers with the spec's body (app/errors.py)
    errors.register(app)
    api.spec.options["tags"] = []
    for module_name in FUNCTION_MODULES:
        module = importlib.import_module(module_name)
        api.register_blueprint(module.blp)
    app.extensions["openapi"] = api
    _document_health(app, api)
    init_portal(app)  # /portal: sign-up, keys, usage, console (app/portal/)
    if settings.trusted_proxy_hops:
        # behind TRUSTED_PROXY_HOPS proxies that each append the address they saw to
        # X-Forwarded-For: the client's address is that many entries from the end (what a client
        # put there itself comes before and is ignored); request.remote_addr is then the client's
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.trusted_proxy_hops)  # type: ignore[method-assign]
    return app


def _register_request_hooks(app: Flask, settings: Settings, after: AfterResponse) -> None:
    max_uri = settings.limits.request_line_bytes
    rt = app.extensions["meridian"]

    @app.before_request
    def _start() -> None:
        """The request's entry checks in one hook: the clock and the id first (every answer,
        errors included, carries the id), then the URI's length and the body's verdict."""
        env = request.environ  # raw WSGI values: no decoding of the path, the query or the headers
        g.t0 = time.perf_counter()
        g.request_id = logs.request_id_from(env.get("HTTP_X_REQUEST_ID"))
        if len(env.get("PATH_INFO", "")) + len(env.get("QUERY_STRING", "")) + 1 > max_uri:
            raise RequestURITooLarge()
        bodies.raise_body_error(env)
        rt.refresh_datasets()

    @app.after_request
    def _finish(resp: Response) -> Response:
        request_id = g.get("request_id") or ""
        resp.headers["X-Request-Id"] = request_id
        quota = g.get("quota")
        if quota is not None:
            resp.headers.extend(rate_limit_headers(quota))
        t0 = g.get("t0") or time.perf_counter()  # not set when a hook before ours failed
        key = g.get("api_key")
        method, path, status = request.method, request.path, resp.status_code
        key_prefix = key.prefix if key is not None else None
        labels = metrics.request_labels(request)

        def finished() -> None:  # after the last byte (app/after_response.py)
            now = time.perf_counter()
            after.add(FinishedRequest(time.time(), now - t0, method, path, status, request_id, key_prefix, labels))

        resp.call_on_close(finished)
        return resp


def _log_request(finished: FinishedRequest) -> None:
    logs.request_line(
        log,
        created=finished.created,
        method=finished.method,
        path=finished.path,
        status=finished.status,
        duration_ms=round(finished.duration_s * 1000, 3),
        request_id=finished.request_id,
        key_prefix=finished.key_prefix,
    )


def _document_health(app: Flask, api: flask_smorest.Api) -> None:
    """Health and docs are plain Flask routes; describe them in the spec too."""
    ok = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
    not_ready = {
        "description": "Not ready: the message names the failing checks.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for path, summary, extra in (
        ("/health", "Service health (status, version, uptime, regions)", {}),
        ("/v1/health", "Service health (status, version, uptime, regions)", {}),
        ("/v1/health/live", "Liveness: the process answers", {}),
        ("/v1/health/ready", "Readiness: datasets, Redis, workers and backend", {"503": not_ready}),
    ):
        rule = next(r for r in app.url_map.iter_rules() if r.rule == path)
        api.spec.path(
            rule=rule,
            operations={
                "get": {
                    "tags": ["Health"],
                    "summary": summary,
                    "description": summary + ". No API key needed.",
                    "security": [],
                    "responses": {"200": ok, **extra},
                }
            },
        )
