"""Travel-time matrix: durations and distances from every source to every destination (core
``cmd=matrix``, ``GET /v1/matrix`` with point lists, ``POST /v1/matrix`` with a JSON body).

Small matrices (up to ``Limits.matrix_inline_cells`` cells) are computed in the web process; larger
ones by a worker on the ``matrix`` queue while the client waits, or as a job with ``async``
(the wait-or-202 of every queued function: ``Function.inline``). Up to ``matrix_locations`` x
``matrix_locations`` in the request; with ``async`` up to ``matrix_job_locations`` a side, as a
job computed and stored in chunks of rows (``app.jobs.submit_matrix``, ``tasks/matrix_job.py``),
downloaded as JSON or CSV. Quota: one unit per 100 cells, rounded up (:func:`matrix_cost`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from flask import request
from marshmallow import Schema, fields, post_load, validate

from app import jobs
from app.access import gateway_key
from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.runtime import runtime
from app.schemas import fields as f
from app.schemas.common import LatLngSchema, ResponseSchema
from app.validation import ParamsSchema
from config.plans import DEFAULT_PLANS
from engine.errors import InvalidParameter
from engine.limits import DEFAULT_LIMITS
from engine.services import matrix

LIMITS = DEFAULT_LIMITS
if TYPE_CHECKING:  # marshmallow 3 (still supported) cannot subscript its fields at run time
    AnyList = fields.List[Any]
else:
    AnyList = fields.List
CELLS_PER_UNIT = 100

_ASYNC_TEXT = jobs.ASYNC_DESCRIPTION


def _params(data: dict[str, Any], *, job: bool = True) -> matrix.MatrixParams:
    """The params, checked against a job's limits (the gateway, which may get ``async``: the
    request's own are checked in :func:`check_synchronous`) or the request's (the core face)."""
    data.pop("async_", None)
    params = matrix.MatrixParams(
        sources=tuple(data["sources"]),
        destinations=tuple(data.get("destinations") or ()),
        annotations=tuple(data.get("annotations") or matrix.ANNOTATIONS),
        profile=data["profile"],
    )
    matrix.check(params, LIMITS, job=job)  # the limits before anything is queued
    return params


def check_synchronous(params: matrix.MatrixParams) -> None:
    """A matrix answered in the request: the request's limits (a job's are wider)."""
    matrix.check(params, LIMITS)


class MatrixArgs(ParamsSchema):
    """The query of ``GET /v1/matrix`` (and, as :class:`MatrixCoreArgs`, of the core's ``cmd=matrix``)."""

    sources = f.PointList(
        required=True,
        max_points=LIMITS.matrix_job_locations,
        metadata={
            "description": f"`lat,lng|lat,lng|...` (1-{LIMITS.matrix_locations}; with `async`, up to "
            f"{LIMITS.matrix_job_locations}).",
            "example": "43.7384,7.4246|43.7402,7.4271",
        },
    )
    destinations = f.PointList(
        max_points=LIMITS.matrix_job_locations,
        metadata={"description": "`lat,lng|...`; default: the sources.", "example": "43.7312,7.4197"},
    )
    annotations = f.CommaList(choices=matrix.ANNOTATIONS, metadata={"example": "duration,distance"})
    profile = f.TravelProfile()
    async_ = jobs.async_field()

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> matrix.MatrixParams:
        return _params(data)


class MatrixCoreArgs(MatrixArgs):
    """The core's ``cmd=matrix``: answered in the request (no jobs on the core face)."""

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> matrix.MatrixParams:
        return _params(data, job=False)


class PointSchema(Schema):
    lat = f.Latitude(required=True)
    lng = f.Longitude(required=True)

    @post_load
    def _pair(self, data: dict[str, Any], **_kwargs: Any) -> tuple[float, float]:
        return (data["lat"], data["lng"])


class PointObjects(AnyList):
    """A list of ``{"lat", "lng"}`` objects -> (lat, lng) tuples, as ``PointSchema`` loads them. A
    list of such objects holding numbers in range is read in one pass; anything else goes through
    the nested schema, which names what is wrong (1,000 points through marshmallow cost 7 ms of
    the web's time per matrix request)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(fields.Nested(PointSchema), **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> list[Any]:
        plain = _plain_points(value)
        if plain is not None:
            return plain
        loaded: list[Any] = super()._deserialize(value, attr, data, **kwargs)
        return loaded


def _plain_points(value: Any) -> list[tuple[float, float]] | None:
    """``value`` as points when every item is ``{"lat": number, "lng": number}`` within range
    (no bools, no NaN), else None."""
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if type(item) is not dict or len(item) != 2 or "lat" not in item or "lng" not in item:
            return None
        lat, lng = item["lat"], item["lng"]
        if type(lat) not in (float, int) or type(lng) not in (float, int):
            return None
        if not (-90 <= lat <= 90 and -180 <= lng <= 180):  # also refuses NaN
            return None
        out.append((float(lat), float(lng)))
    return out


def _points(description: str, **kwargs: Any) -> fields.List[Any]:
    return PointObjects(
        validate=validate.Length(1, LIMITS.matrix_job_locations),
        metadata={"description": description},
        **kwargs,
    )


class MatrixBody(ParamsSchema):
    """The JSON body of ``POST /v1/matrix``."""

    sources = _points(
        f'1-{LIMITS.matrix_locations} points `{{"lat", "lng"}}` (with `async`, up to {LIMITS.matrix_job_locations}).',
        required=True,
    )
    destinations = _points("Default: the sources.")
    annotations = fields.List(
        fields.String(validate=validate.OneOf(matrix.ANNOTATIONS)),
        validate=validate.Length(1, len(matrix.ANNOTATIONS)),
        metadata={"description": "Any of: " + ", ".join(matrix.ANNOTATIONS) + " (default both)."},
    )
    profile = f.TravelProfile()
    async_ = fields.Boolean(data_key="async", load_default=False, metadata={"description": _ASYNC_TEXT})

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> matrix.MatrixParams:
        return _params(data)


class WaypointSchema(ResponseSchema):
    location = fields.Nested(LatLngSchema, required=True)
    snap_distance = fields.Float(required=True, metadata={"description": "Metres from the input point."})


class MatrixResult(ResponseSchema):
    durations = fields.List(
        fields.List(fields.Float(allow_none=True)),
        metadata={"description": "Seconds, a row per source, a column per destination; null: no route."},
    )
    distances = fields.List(
        fields.List(fields.Float(allow_none=True)),
        metadata={"description": "Metres, a row per source, a column per destination; null: no route."},
    )
    sources = fields.List(fields.Nested(WaypointSchema), required=True)
    destinations = fields.List(fields.Nested(WaypointSchema), required=True)


EXAMPLE = {
    "durations": [[0.0, 112.4], [98.1, 0.0]],
    "distances": [[0.0, 805.3], [760.9, 0.0]],
    "sources": [
        {"location": {"lat": 43.7384, "lng": 7.4246}, "snap_distance": 3.1},
        {"location": {"lat": 43.7402, "lng": 7.4271}, "snap_distance": 1.8},
    ],
    "destinations": [
        {"location": {"lat": 43.7384, "lng": 7.4246}, "snap_distance": 3.1},
        {"location": {"lat": 43.7402, "lng": 7.4271}, "snap_distance": 1.8},
    ],
}


def _count(value: object) -> int:
    if isinstance(value, str):
        return len([p for p in value.split("|") if p.strip()]) if value.strip() else 0
    return len(value) if isinstance(value, list) else 0


def _asks_async(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "t", "1", "yes", "y", "on"))


def plan_cap(cells: int, parameter: str) -> None:
    """The plan's cap on the cells of one request (``plans.max_matrix_cells``; 0: the deployment's
    limit): 400 naming ``parameter`` (``destinations``, or ``sources`` when they are the destinations too), before
    any quota is spent. The key is authenticated and authorised here first, so a key without the
    matrix service still gets its 401/403 rather than this."""
    access = runtime().access
    record = access.authenticate(gateway_key())
    access.authorize(record, FUNCTION.service)
    cap = record.plan.max_matrix_cells
    if cap and cells > cap:
        raise InvalidParameter(
            f"the {record.plan.name} plan allows at most {cap:,} cells (sources x destinations) in one matrix "
            f"request; got {cells:,}",
            parameter=parameter,
        )


def matrix_cost() -> int:
    """Admission of a matrix request: the plan's cap on its cells (:func:`plan_cap`), then its
    quota units: one per 100 cells, rounded up (1 for a request refused with 400)."""
    data = request.args if request.method == "GET" else request.get_json(silent=True)
    if data is None or not hasattr(data, "get"):
        return 1
    sources = _count(data.get("sources"))
    given = _count(data.get("destinations"))
    cells = sources * (given or sources)
    plan_cap(cells, "destinations" if given else "sources")
    if not 0 < cells <= (LIMITS.matrix_job_cells if _asks_async(data.get("async")) else LIMITS.matrix_cells):
        return 1
    return math.ceil(cells / CELLS_PER_UNIT)


FUNCTION = register(
    Function(
        service="matrix",
        cmd="matrix",
        core_schema=MatrixCoreArgs,
        # the rows as arrays: serialised as run's lists would be, without a Python float per cell
        run=lambda rt, params: matrix.run_arrays(rt.datasets, params),
        queue="matrix",
        service_ref="engine.services.matrix:run_arrays",
        inline=lambda params: params.cells <= LIMITS.matrix_inline_cells,
    )
)

jobs.OWN_JOBS[FUNCTION.cmd] = jobs.OwnJob(submit=jobs.submit_matrix, check_synchronous=check_synchronous)


def _cap(plan: str) -> str:
    cells = next((p.get("max_matrix_cells", 0) for p in DEFAULT_PLANS if p["name"] == plan), 0)
    return f"{cells:,}" if cells else "the deployment's limit"


DESCRIPTION = (
    "Durations (s) and distances (m) from every source to every destination by the `profile` (`car`, "
    "the default, `foot` or `bicycle`; aliases `driving`, `walking`, `cycling`), each cell what `/v1/routing` "
    "answers for the pair with the same `profile` (same snapping, same ways, turn restrictions and one-ways), "
    "`null` where no route exists; a profile the region was not imported with is a 400 naming the region's "
    f"profiles. Up to {LIMITS.matrix_locations} sources and destinations and "
    f"{LIMITS.matrix_cells:,} cells in the request; up to {LIMITS.matrix_inline_cells:,} cells answered at once, "
    "larger ones computed by a worker while the request waits. With `async`, a job of up to "
    f"{LIMITS.matrix_job_locations:,} sources and destinations ({LIMITS.matrix_job_cells:,} cells), computed and "
    "kept in chunks of rows for 24 h: `GET /v1/jobs/{id}` shows the rows done, `GET /v1/jobs/{id}/result` "
    "streams the matrix as JSON, `?format=csv` as CSV (one line per cell). Quota: one unit per "
    f"{CELLS_PER_UNIT} cells, rounded up. A plan may cap the cells of one request (`max_matrix_cells`: free "
    f"{_cap('free')}, standard {_cap('standard')}, pro {_cap('pro')} as seeded): beyond it, 400 naming "
    "`sources` (or `destinations` when given) and the plan's cap, before any quota is spent."
)

blp = GatewayBlueprint("Matrix", __name__, url_prefix="/v1", description="Travel-time and distance matrices.")
blp.function_route(
    "/matrix",
    FUNCTION,
    MatrixArgs,
    response_schema=MatrixResult,
    example=EXAMPLE,
    errors=(404,),
    summary="Travel-time matrix (point lists in the query)",
    description=DESCRIPTION,
    cost=matrix_cost,
)
blp.function_route(
    "/matrix",
    FUNCTION,
    MatrixBody,
    response_schema=MatrixResult,
    example=EXAMPLE,
    errors=(404,),
    location="json",
    method="post",
    endpoint="matrix_post",
    summary="Travel-time matrix (JSON body)",
    description=DESCRIPTION + ' Body: `{"sources": [{"lat", "lng"}, ...], "destinations": [...], '
    '"annotations": ["duration", "distance"], "profile": "car", "async": false}`.',
    cost=matrix_cost,
)
