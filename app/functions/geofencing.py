"""Geofencing on both faces: schemas, views and the adaptor from a request (its key's account) to
the engine's :class:`~engine.services.geofencing.FenceService`, which holds the logic (checks,
transitions, webhook deliveries, fence management).

Core commands (``GET /services/json?cmd=...``, ``Authorization: Bearer <key>``):

* ``geofencing`` -- ``lat``, ``lng``, optional ``fences=id,id`` and ``device``;
* ``geofence_create`` -- ``fence=<JSON>``: the same JSON object as the body of
  ``POST /v1/geofences`` (URL-encoded; the core face is GET only), webhook URL included;
* ``geofence_list`` (``limit``, ``offset``), ``geofence_get`` / ``geofence_delete`` /
  ``geofence_events`` (``id``; events also take ``limit``, ``offset``).

Gateway: ``GET /v1/geofencing``, ``POST /v1/geofencing/batch``, ``POST/GET /v1/geofences``,
``GET/DELETE /v1/geofences/{fence_id}``, ``GET /v1/geofences/{fence_id}/events``.

Fences belong to the account of the key (``g.api_key.account_id``) and are invisible to other
accounts: their ids answer 404 on get/delete/events and 400 (``fences``) in a check. Every answer
is ``Cache-Control: private, no-store``. Geofencing always runs in this process, also on a
gateway with a remote core (``SERVICE_BASE_URL``): fences live in the shared SQL database.
One ``FenceService`` per app (``app.extensions["geofencing"]``); its webhook deliveries go to
``tasks.webhooks.enqueue`` with this process's Celery app.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

from flask import Response, current_app, g, request
from flask.views import MethodView
from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validate

from accounts.fences import FenceStore
from app.calls import json_body
from app.gateway.base import GatewayBlueprint, gateway_call
from app.registry import Function, register
from app.runtime import Runtime, runtime
from app.schemas import fields as f
from app.schemas.common import LatLngSchema, ResponseSchema
from app.validation import ParamsSchema, invalid_from
from engine.errors import InvalidParameter
from engine.limits import DEFAULT_LIMITS
from engine.netguard import BlockedDestination, IPNetwork, check_url
from engine.services.geofencing import (
    DEVICE_MAX_CHARS,
    FenceService,
    GeofenceBatchParams,
    GeofenceCheckParams,
    GeofencePoint,
)
from tasks import webhooks

LIMITS = DEFAULT_LIMITS
PAGE_MAX = 100
BATCH_POINTS_PER_UNIT = 100  # quota: one unit per started 100 points of a batch

SIGNATURE_DOC = """**Webhooks.** A fence may carry `webhook_url` (http or https). On every `enter` or `exit`
of a device (a check with `device`), a worker POSTs a signed JSON body describing the transition, with
`X-Meridian-Delivery` (an idempotency key, the same on every retry), `X-Meridian-Event`, `X-Meridian-Timestamp`
and `X-Meridian-Signature: sha256=<hex HMAC-SHA256 of the raw body>` keyed with the SHA-256 hex digest of the
API Secret of the key that created the fence; failures are retried with exponential backoff, at least once.
The body's fields, how to verify the signature and the retry schedule: README, "Geofencing and webhooks".
The URL's host must resolve to public addresses only (loopback, private, link-local, metadata and other
internal addresses are refused with 400 at creation and again at each delivery, unless the operator allows
the network); redirects are not followed (a 3xx counts as a failed attempt).
Every delivery and attempt is listed by `GET /v1/geofences/{fence_id}/events`."""


# ------------------------------------------------------------------------------ adaptor
_LOCK = threading.Lock()


def _build_service(rt: Runtime) -> FenceService:
    return FenceService(
        FenceStore(rt.store.engine),
        rt.redis,
        rt.datasets,
        functools.partial(webhooks.enqueue, rt.celery),
        prefix=f"{rt.settings.service_name}:geofence:",
        limits=rt.settings.limits,
        cache_vertices=rt.settings.geofence_cache_vertices,
    )


def service() -> FenceService:
    state = current_app.extensions.get("geofencing")
    if state is None:
        with _LOCK:
            state = current_app.extensions.get("geofencing")
            if state is None:
                state = current_app.extensions["geofencing"] = _build_service(runtime())
    return state


def account() -> str:
    return str(g.api_key.account_id)


def check(rt: Runtime, params: GeofenceCheckParams) -> dict[str, Any]:
    return service().check(account(), params)


def check_batch(rt: Runtime, params: GeofenceBatchParams) -> dict[str, Any]:
    return service().check_batch(account(), params)


def check_webhook_url(url: str, allowed: tuple[IPNetwork, ...]) -> None:
    """400 ``webhook_url`` unless every address the URL's host resolves to may be called (the
    delivery checks again: the name may resolve differently by then)."""
    try:
        check_url(url, allowed)
    except BlockedDestination as exc:
        raise InvalidParameter(f"webhook_url: {exc}", parameter="webhook_url") from None


def create(rt: Runtime, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("webhook_url"):
        check_webhook_url(params["webhook_url"], rt.settings.webhook_allowed_networks)
    return service().create(account(), params, key_id=g.api_key.id)


def list_fences(rt: Runtime, params: dict[str, Any]) -> dict[str, Any]:
    return service().list_fences(account(), limit=params["limit"], offset=params["offset"])


def get_fence(rt: Runtime, params: dict[str, Any]) -> dict[str, Any]:
    return service().get_fence(account(), params["id"])


def delete_fence(rt: Runtime, params: dict[str, Any]) -> dict[str, Any]:
    return service().delete_fence(account(), params["id"])


def fence_events(rt: Runtime, params: dict[str, Any]) -> dict[str, Any]:
    return service().fence_events(account(), params["id"], limit=params["limit"], offset=params["offset"])


# ------------------------------------------------------------------------------ schemas


class GeofencingArgs(ParamsSchema):
    params_class = GeofenceCheckParams

    lat = f.Latitude(required=True, metadata={"description": "Latitude of the point (-90..90).", "example": 60.1699})
    lng = f.Longitude(
        required=True, metadata={"description": "Longitude of the point (-180..180).", "example": 24.9384}
    )
    fence_ids = f.CommaList(
        data_key="fences",
        max_items=LIMITS.geofence_max_per_account,
        metadata={
            "description": "Only these fence ids (comma-separated, the answer keeps their order); "
            "default: every fence of the key's account. Unknown ids (or another account's) are a 400.",
            "example": "gf_0123456789abcdef",
        },
    )
    device = fields.String(
        validate=validate.Length(1, DEVICE_MAX_CHARS),
        metadata={
            "description": "Device id: adds `transition` since this device's previous check "
            "(state kept in Redis for 7 days) and triggers enter/exit webhooks.",
            "example": "truck-17",
        },
    )


class PageArgs(ParamsSchema):
    limit = fields.Integer(
        load_default=20,
        validate=validate.Range(1, PAGE_MAX),
        metadata={"description": f"Page size (1-{PAGE_MAX}).", "example": 20},
    )
    offset = fields.Integer(
        load_default=0,
        validate=validate.Range(0, 10_000_000),
        metadata={"description": "Items to skip (pagination).", "example": 0},
    )


class NoArgs(ParamsSchema):
    pass


FENCE_ID_DOC = {"description": "Fence id, as returned on creation.", "example": "gf_0123456789abcdef"}


class IdArgs(ParamsSchema):
    id = fields.String(required=True, validate=validate.Length(1, 64), metadata=FENCE_ID_DOC)


class IdPageArgs(PageArgs):
    id = fields.String(required=True, validate=validate.Length(1, 64), metadata=FENCE_ID_DOC)


OBJECT: dict[str, str | list[Any] | dict[Any, Any]] = {"invalid": "expected a JSON object"}


class JsonNumber(fields.Float):
    """A JSON number (a numeric string or a boolean is refused, unlike ``fields.Float``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_nan=False, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError("expected a number")
        return super()._deserialize(value, attr, data, **kwargs)


class CenterSchema(Schema):
    lat = JsonNumber(required=True, metadata={"description": "Latitude (-90..90).", "example": 60.1699})
    lng = JsonNumber(required=True, metadata={"description": "Longitude (-180..180).", "example": 24.9384})


def _no_nul(value: str) -> None:
    if "\x00" in value:
        raise ValidationError("must not contain NUL characters")


class FenceBody(Schema):
    """A fence: GeoJSON Feature (or bare Polygon/MultiPolygon), circle or admin area."""

    type = fields.String(
        required=True,
        validate=validate.OneOf(["Feature", "Polygon", "MultiPolygon", "circle", "admin"]),
        metadata={
            "description": "`Feature` (GeoJSON Polygon or MultiPolygon geometry, holes allowed), a bare `Polygon` / "
            "`MultiPolygon` geometry, `circle` or `admin`.",
            "example": "circle",
        },
    )
    geometry = fields.Dict(
        error_messages=OBJECT,
        metadata={"description": "Feature: GeoJSON Polygon or MultiPolygon, `[lng, lat]` positions, rings closed."},
    )
    properties = fields.Dict(
        allow_none=True,
        error_messages=OBJECT,
        metadata={"description": "Feature: `name` and `metadata` may be given here; other properties are ignored."},
    )
    coordinates = fields.Raw(metadata={"description": "Bare Polygon/MultiPolygon: the GeoJSON coordinates."})
    center = fields.Nested(CenterSchema, metadata={"description": "Circle: the centre."})
    radius = JsonNumber(
        metadata={
            "description": f"Circle: radius in metres (> 0, at most {LIMITS.geofence_max_radius_m:g}).",
            "example": 250,
        }
    )
    osm_id = fields.Integer(
        strict=True,
        metadata={
            "description": "Admin: OSM id of an administrative boundary of the datasets (its geometry is stored).",
            "example": 1124039,
        },
    )
    name = fields.String(allow_none=True, validate=_no_nul, metadata={"description": "Fence name.", "example": "Depot"})
    metadata = fields.Dict(
        allow_none=True,
        error_messages=OBJECT,
        metadata={
            "description": f"Free JSON object, at most {LIMITS.geofence_metadata_bytes} bytes.",
            "example": {"team": "north"},
        },
    )
    webhook_url = fields.Url(
        schemes={"http", "https"},
        require_tld=False,
        validate=validate.Length(max=2048),
        allow_none=True,
        error_messages={"invalid": "expected an http or https URL"},
        metadata={
            "description": "Called on enter/exit (see Webhooks). Must resolve to public addresses only "
            "(or networks the operator allows with WEBHOOK_ALLOWED_NETWORKS); redirects are not followed.",
            "example": "https://example.com/hooks/fences",
        },
    )
    id = fields.Raw(metadata={"description": "Ignored: the server assigns fence ids."})
    bbox = fields.Raw(metadata={"description": "Ignored (GeoJSON bounding box)."})


class JsonObject(fields.String):
    """A JSON object passed as a query parameter (the core face's ``fence=``), loaded by :class:`FenceBody`."""

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> Any:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            obj = json.loads(text)
        except ValueError:
            raise ValidationError("expected a JSON object (URL-encoded)") from None
        if not isinstance(obj, dict):
            raise ValidationError("expected a JSON object")
        try:
            return FenceBody().load(obj, unknown="raise")
        except ValidationError as exc:
            raise ValidationError(invalid_from(exc).message) from None


class CoreCreateArgs(ParamsSchema):
    fence = JsonObject(required=True, metadata={"description": "The fence as JSON (the body of POST /v1/geofences)."})

    @post_load
    def _body(self, data: dict[str, Any], **_kwargs: Any) -> Any:
        return data["fence"]


class BatchPointSchema(Schema):
    lat = JsonNumber(required=True, validate=validate.Range(-90, 90), metadata={"example": 60.17})
    lng = JsonNumber(required=True, validate=validate.Range(-180, 180), metadata={"example": 24.94})
    device = fields.String(
        allow_none=True,
        validate=validate.Length(1, DEVICE_MAX_CHARS),
        metadata={"description": "Device id (transitions and webhooks).", "example": "truck-17"},
    )

    class Meta:
        unknown = RAISE


class BatchBody(Schema):
    points = fields.List(
        fields.Nested(BatchPointSchema),
        required=True,
        validate=validate.Length(1, LIMITS.geofence_batch_points),
        metadata={"description": f"1-{LIMITS.geofence_batch_points} points."},
    )
    fences = fields.List(
        fields.String(),
        validate=validate.Length(1, LIMITS.geofence_max_per_account),
        metadata={
            "description": "Only these fence ids (default: all of the account's).",
            "example": ["gf_0123456789abcdef"],
        },
    )

    @post_load
    def _params(self, data: dict[str, Any], **_kwargs: Any) -> GeofenceBatchParams:
        points = tuple(GeofencePoint(p["lat"], p["lng"], p.get("device")) for p in data["points"])
        fences = data.get("fences")
        return GeofenceBatchParams(points, tuple(fences) if fences is not None else None)


class FenceStatusSchema(ResponseSchema):
    id = fields.String(required=True, metadata={"example": "gf_0123456789abcdef"})
    name = fields.String(allow_none=True, metadata={"example": "Depot"})
    inside = fields.Boolean(required=True, metadata={"description": "The point is in the fence, boundary included."})
    distance = fields.Float(
        required=True,
        metadata={
            "description": "Metres (WGS84 geodesic, >= 0) from the point to the fence's boundary, on whichever "
            "side the point is; `inside` tells the side.",
            "example": 12.5,
        },
    )
    transition = fields.String(
        allow_none=True,
        metadata={
            "enum": ["enter", "exit", "inside", "outside", None],
            "description": "Since the device's previous check; null without `device`.",
            "example": "enter",
        },
    )


class CheckResultSchema(ResponseSchema):
    fences = fields.List(fields.Nested(FenceStatusSchema), required=True)


class FenceSchema(ResponseSchema):
    id = fields.String(required=True, metadata={"example": "gf_0123456789abcdef"})
    type = fields.String(required=True, metadata={"enum": ["polygon", "circle", "admin"], "example": "circle"})
    name = fields.String(allow_none=True, metadata={"example": "Depot"})
    metadata = fields.Dict(required=True, metadata={"example": {"team": "north"}})
    center = fields.Nested(LatLngSchema, metadata={"description": "Circle only."})
    radius = fields.Float(metadata={"description": "Circle only: metres.", "example": 250})
    osm_id = fields.Integer(allow_none=True, metadata={"description": "Admin only."})
    geometry = fields.Dict(
        metadata={"description": "Polygon and admin: GeoJSON (Multi)Polygon, `[lng, lat]`; left out of listings."}
    )
    webhook_url = fields.String(allow_none=True, metadata={"example": "https://example.com/hooks/fences"})
    created_at = fields.String(required=True, metadata={"format": "date-time", "example": "2026-11-22T10:00:00.000Z"})


class FenceListSchema(ResponseSchema):
    fences = fields.List(fields.Nested(FenceSchema), required=True)
    total = fields.Integer(required=True, metadata={"description": "Fences of the account in all.", "example": 3})
    limit = fields.Integer(required=True, metadata={"example": 20})
    offset = fields.Integer(required=True, metadata={"example": 0})


class DeletedSchema(ResponseSchema):
    id = fields.String(required=True, metadata={"example": "gf_0123456789abcdef"})
    deleted = fields.Boolean(required=True, metadata={"example": True})


class AttemptSchema(ResponseSchema):
    number = fields.Integer(required=True, metadata={"example": 1})
    at = fields.String(required=True, metadata={"format": "date-time"})
    status_code = fields.Integer(
        allow_none=True, metadata={"description": "HTTP status, null on a network error.", "example": 500}
    )
    error = fields.String(allow_none=True, metadata={"example": "HTTP 500"})
    duration_ms = fields.Float(metadata={"example": 3.2})


class EventSchema(ResponseSchema):
    id = fields.String(required=True, metadata={"description": "Delivery id (X-Meridian-Delivery)."})
    fence_id = fields.String(required=True)
    device = fields.String(required=True, metadata={"example": "truck-17"})
    transition = fields.String(required=True, metadata={"enum": ["enter", "exit"], "example": "enter"})
    point = fields.Nested(LatLngSchema, required=True)
    occurred_at = fields.String(required=True, metadata={"format": "date-time"})
    status = fields.String(required=True, metadata={"enum": ["pending", "delivered", "failed"], "example": "delivered"})
    delivered_at = fields.String(allow_none=True, metadata={"format": "date-time"})
    attempts = fields.List(fields.Nested(AttemptSchema), required=True)


class EventListSchema(ResponseSchema):
    events = fields.List(fields.Nested(EventSchema), required=True)
    total = fields.Integer(required=True, metadata={"example": 2})
    limit = fields.Integer(required=True, metadata={"example": 20})
    offset = fields.Integer(required=True, metadata={"example": 0})


class BatchTransitionSchema(ResponseSchema):
    id = fields.String(required=True)
    transition = fields.String(required=True, metadata={"enum": ["enter", "exit"]})


class BatchItemSchema(ResponseSchema):
    index = fields.Integer(required=True, metadata={"example": 0})
    device = fields.String(allow_none=True, metadata={"example": "truck-17"})
    inside = fields.List(
        fields.String(), required=True, metadata={"description": "Ids of the fences containing the point."}
    )
    transitions = fields.List(
        fields.Nested(BatchTransitionSchema),
        allow_none=True,
        metadata={"description": "Only the enter/exit changes since the device's previous check; null without device."},
    )


class BatchResultSchema(ResponseSchema):
    results = fields.List(fields.Nested(BatchItemSchema), required=True)


# ------------------------------------------------------------------------------ functions


def _fn(cmd: str, schema: type[ParamsSchema], run: Callable[[Runtime, Any], dict[str, Any]]) -> Function:
    return register(Function(service="geofencing", cmd=cmd, core_schema=schema, run=run, cacheable=False))


CHECK = _fn("geofencing", GeofencingArgs, check)
CREATE = _fn("geofence_create", CoreCreateArgs, create)
LIST = _fn("geofence_list", PageArgs, list_fences)
GET = _fn("geofence_get", IdArgs, get_fence)
DELETE = _fn("geofence_delete", IdArgs, delete_fence)
EVENTS = _fn("geofence_events", IdPageArgs, fence_events)
# Gateway only (POST body): not a core command.
BATCH = Function(service="geofencing", cmd="geofencing_batch", core_schema=NoArgs, run=check_batch, cacheable=False)


def private(body: dict[str, Any], status: int = 200) -> Response:
    resp = json_body(body, status)
    resp.headers["Cache-Control"] = "private, no-store"
    return resp


def _batch_cost() -> int:
    body = request.get_json(silent=True)
    points = body.get("points") if isinstance(body, dict) else None
    n = len(points) if isinstance(points, list) else 1
    return max(1, math.ceil(min(n, LIMITS.geofence_batch_points) / BATCH_POINTS_PER_UNIT))


# ------------------------------------------------------------------------------ gateway

blp = GatewayBlueprint(
    "Geofencing",
    __name__,
    url_prefix="/v1",
    description="Fences per account (polygons with holes, circles, admin areas), point checks with distances, "
    "enter/exit transitions per device and signed webhooks.\n\n" + SIGNATURE_DOC,
)

CHECK_EXAMPLE = {
    "fences": [
        {"id": "gf_0123456789abcdef", "name": "Depot", "inside": True, "distance": 12.5, "transition": "enter"},
        {"id": "gf_fedcba9876543210", "name": "Harbour", "inside": False, "distance": 830.21, "transition": "outside"},
    ]
}
FENCE_EXAMPLE = {
    "id": "gf_0123456789abcdef",
    "type": "circle",
    "name": "Depot",
    "metadata": {"team": "north"},
    "center": {"lat": 60.1699, "lng": 24.9384},
    "radius": 250.0,
    "webhook_url": "https://example.com/hooks/fences",
    "created_at": "2026-11-22T10:00:00.000Z",
}
PATH_PARAM = [{"in": "path", "name": "fence_id", **FENCE_ID_DOC}]


@blp.route("/geofencing")
class GeofencingView(MethodView):
    @gateway_call(CHECK)
    @blp.arguments(GeofencingArgs, location="query", as_kwargs=False)
    @blp.response(200, CheckResultSchema, example=CHECK_EXAMPLE)
    @blp.error_responses()
    @blp.doc(
        summary="Check a point against the account's fences",
        description=(
            "For each fence of the key's account (or those in `fences`): `inside` (boundary included) and "
            "`distance`, metres (WGS84 geodesic, always >= 0) from the point to the fence's boundary on whichever side "
            "the point is. Default order: fences containing the point first, then by increasing distance. With "
            "`device`, `transition` since that device's previous check (`enter`, `exit`, `inside`, `outside`; a device "
            "never seen before was outside everything); the state is updated atomically in Redis, so two concurrent "
            "checks of one device cannot both report `enter`, and enter/exit trigger the fences' webhooks. "
            "Account-specific: `Cache-Control: private, no-store`."
        ),
    )
    def get(self, params: GeofenceCheckParams) -> Response:
        return private(check(runtime(), params))


@blp.route("/geofencing/batch")
class GeofencingBatchView(MethodView):
    @gateway_call(BATCH, cost=_batch_cost)
    @blp.arguments(BatchBody, location="json", as_kwargs=False)
    @blp.response(
        200,
        BatchResultSchema,
        example={
            "results": [
                {
                    "index": 0,
                    "device": "truck-17",
                    "inside": ["gf_0123456789abcdef"],
                    "transitions": [{"id": "gf_0123456789abcdef", "transition": "enter"}],
                }
            ]
        },
    )
    @blp.error_responses(413)
    @blp.doc(
        summary="Check many points (a fleet) in one call",
        description=(
            f"Up to {LIMITS.geofence_batch_points} points `{{lat, lng, device?}}`; per point the ids of the fences "
            "containing it and, for points with a device, only the changes (enter/exit) since that device's previous "
            "check (a device listed twice is updated in list order). Webhooks fire as for single checks. Quota: one "
            f"request per started {BATCH_POINTS_PER_UNIT} points."
        ),
    )
    def post(self, params: GeofenceBatchParams) -> Response:
        return private(check_batch(runtime(), params))


@blp.route("/geofences")
class FencesView(MethodView):
    @gateway_call(CREATE)
    @blp.arguments(
        FenceBody,
        location="json",
        as_kwargs=False,
        example={
            "type": "circle",
            "center": {"lat": 60.1699, "lng": 24.9384},
            "radius": 250,
            "name": "Depot",
            "metadata": {"team": "north"},
            "webhook_url": "https://example.com/hooks/fences",
        },
    )
    @blp.response(200, FenceSchema, example=FENCE_EXAMPLE)
    @blp.error_responses(413)
    @blp.doc(
        summary="Create a fence",
        description=(
            "Body: a GeoJSON Feature with a Polygon or MultiPolygon geometry (holes allowed; `name` and `metadata` "
            "at the top level or in `properties`), a bare Polygon/MultiPolygon, a circle "
            '`{"type": "circle", "center": {"lat", "lng"}, "radius": metres}`, or an administrative area '
            'of the datasets `{"type": "admin", "osm_id": N}` (its geometry is stored). Optional `webhook_url`. '
            "400 names the reason: unclosed or self-intersecting ring, too few positions, coordinates out of range, "
            f"radius <= 0 or over {LIMITS.geofence_max_radius_m:g} m, more than {LIMITS.geofence_max_vertices} "
            f"vertices, more than {LIMITS.geofence_max_per_account} fences per account, more vertices in all the "
            "account's fences together than the plan allows (`max_fence_vertices`; a circle counts none). "
            "Visible to every check "
            "within a second.\n\n" + SIGNATURE_DOC
        ),
    )
    def post(self, params: dict[str, Any]) -> Response:
        return private(create(runtime(), params))

    @gateway_call(LIST)
    @blp.arguments(PageArgs, location="query", as_kwargs=False)
    @blp.response(200, FenceListSchema)
    @blp.error_responses()
    @blp.doc(
        summary="List the account's fences",
        description=(
            "Paginated with `limit`/`offset`, oldest first; `total` counts all the account's fences. Polygon "
            "geometries are left out: get one fence for its geometry."
        ),
    )
    def get(self, params: dict[str, Any]) -> Response:
        return private(list_fences(runtime(), params))


@blp.route("/geofences/<fence_id>", parameters=PATH_PARAM)
class FenceView(MethodView):
    @gateway_call(GET)
    @blp.arguments(NoArgs, location="query", as_kwargs=False)
    @blp.response(200, FenceSchema, example=FENCE_EXAMPLE)
    @blp.error_responses(404)
    @blp.doc(
        summary="Get a fence",
        description="The fence with its geometry. 404 when the account has no such "
        "fence (another account's fences are invisible).",
    )
    def get(self, _params: dict[str, Any], fence_id: str) -> Response:
        return private(get_fence(runtime(), {"id": fence_id}))

    @gateway_call(DELETE)
    @blp.arguments(NoArgs, location="query", as_kwargs=False)
    @blp.response(200, DeletedSchema)
    @blp.error_responses(404)
    @blp.doc(
        summary="Delete a fence",
        description="Deletes the fence and its webhook events; every check stops "
        "seeing it within a second. 404 when the account has no such fence.",
    )
    def delete(self, _params: dict[str, Any], fence_id: str) -> Response:
        return private(delete_fence(runtime(), {"id": fence_id}))


@blp.route("/geofences/<fence_id>/events", parameters=PATH_PARAM)
class FenceEventsView(MethodView):
    @gateway_call(EVENTS)
    @blp.arguments(PageArgs, location="query", as_kwargs=False)
    @blp.response(200, EventListSchema)
    @blp.error_responses(404)
    @blp.doc(
        summary="Webhook deliveries of a fence",
        description=(
            "Newest first: each enter/exit delivered (or being delivered) to the fence's webhook, with its status "
            "(`pending`, `delivered`, `failed`) and every HTTP attempt (time, status code or error, duration). "
            "404 when the account has no such fence.\n\n" + SIGNATURE_DOC
        ),
    )
    def get(self, params: dict[str, Any], fence_id: str) -> Response:
        return private(fence_events(runtime(), {"id": fence_id, **params}))
