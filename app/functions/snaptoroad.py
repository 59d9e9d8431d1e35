"""Snap to road: GPS points -> matched road positions (core ``cmd=snaptoroad``, ``GET /v1/snaptoroad``)."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, post_load, validate, validates_schema

from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import LatLngSchema, ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import snaptoroad

LIMITS = DEFAULT_LIMITS


class SnapArgs(ParamsSchema):
    points = f.PointList(
        required=True,
        min_points=1,
        max_points=LIMITS.snaptoroad_points,
        metadata={
            "description": f"GPS points `lat,lng|lat,lng|...` (1-{LIMITS.snaptoroad_points}) or an encoded polyline "
            "after `polyline:` / `polyline6:`.",
            "example": "43.7384,7.4246|43.7390,7.4252|43.7396,7.4260",
        },
    )
    timestamps = f.NumberList(
        lo=-1,
        hi=1e11,
        max_items=LIMITS.snaptoroad_points,
        keep_order=True,
        metadata={
            "description": "Unix times (s) of the points, comma-separated, one per point.",
            "example": "1700000000,1700000010,1700000020",
        },
    )
    interpolate = f.Flag(
        load_default=False,
        metadata={
            "description": "Add the road points between the inputs (entries without original_index).",
            "example": False,
        },
    )
    radius = fields.Float(
        validate=validate.Range(1, 200),
        metadata={"description": "GPS accuracy in metres (1-200, default 10).", "example": 10},
    )
    profile = f.TravelProfile()

    @validates_schema
    def _one_time_per_point(self, data: dict[str, Any], **_kwargs: Any) -> None:
        times = data.get("timestamps")
        if times is not None and data.get("points") is not None and len(times) != len(data["points"]):
            raise ValidationError(
                f"expected {len(data['points'])} timestamps (one per point), got {len(times)}", field_name="timestamps"
            )

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> snaptoroad.SnapParams:
        return snaptoroad.SnapParams(**data)


class SnappedSchema(ResponseSchema):
    original_index = fields.Integer(allow_none=True, metadata={"example": 0})
    coord = fields.Nested(LatLngSchema, required=True)
    name = fields.String(allow_none=True, metadata={"example": "Boulevard Albert 1er"})
    way_id = fields.Integer(allow_none=True)
    distance = fields.Float(allow_none=True, metadata={"description": "Metres from the input point."})


class SnapResult(ResponseSchema):
    snapped = fields.List(fields.Nested(SnappedSchema), required=True)
    geometry = fields.Dict(metadata={"description": "GeoJSON LineString or MultiLineString of the matched path."})


FUNCTION = register(
    Function(
        service="snaptoroad",
        cmd="snaptoroad",
        core_schema=SnapArgs,
        run=lambda rt, params: snaptoroad.run(rt.datasets, params),
    )
)

blp = GatewayBlueprint("Snap to road", __name__, url_prefix="/v1", description="GPS traces matched to roads.")
blp.function_route(
    "/snaptoroad",
    FUNCTION,
    SnapArgs,
    response_schema=SnapResult,
    summary="Snap GPS points to roads",
    description="Hidden-Markov map matching (Newson & Krumm): each input point snapped with road name, way id and "
    "offset distance, plus the matched geometry; `interpolate=true` adds the path between inputs. A single point "
    "gives the nearest road.",
)
