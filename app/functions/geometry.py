"""Geometry download of admin areas (core ``cmd=geometry``, ``GET /v1/geoment``), computed by
Celery workers (queue ``geometry``) and cached in Redis."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, validate, validates_schema

from app import jobs
from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import ResponseSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import geometry

LIMITS = DEFAULT_LIMITS


class GeometryArgs(jobs.AsyncParamsSchema):
    params_class = geometry.GeometryParams

    name = f.Text(
        max_length=200, metadata={"description": "Admin area name (any language variant).", "example": "Monaco"}
    )
    level = fields.Integer(
        validate=validate.Range(1, 12),
        metadata={"description": "OSM admin_level to narrow a `name` search (2 = country, 8 = city).", "example": 8},
    )
    osm_id = fields.Integer(
        validate=validate.Range(1, 2**53),
        metadata={"description": "OSM relation id of the boundary.", "example": 1124039},
    )
    lat = f.Latitude(metadata={"description": "With `lng`: all areas containing the point.", "example": 43.7384})
    lng = f.Longitude(metadata={"description": "With `lat`: all areas containing the point.", "example": 7.4246})
    format = fields.String(
        load_default="geojson",
        validate=validate.OneOf(["geojson", "wkt"]),
        metadata={"description": "GeoJSON FeatureCollection or WKT strings.", "example": "geojson"},
    )
    simplify = fields.Float(
        validate=validate.Range(0, LIMITS.geometry_simplify_max_m),
        metadata={"description": "Simplification tolerance in metres (topology kept valid).", "example": 10},
    )

    @validates_schema
    def _one_selector(self, data: dict[str, Any], **_kwargs: Any) -> None:
        point = data.get("lat") is not None or data.get("lng") is not None
        if point and (data.get("lat") is None or data.get("lng") is None):
            raise ValidationError("lat and lng go together", field_name="lat" if data.get("lat") is None else "lng")
        chosen = [k for k, v in (("name", data.get("name")), ("osm_id", data.get("osm_id")), ("lat", point)) if v]
        if len(chosen) != 1:
            raise ValidationError("give exactly one of name (+level), osm_id, or lat+lng", field_name="name")
        if data.get("level") is not None and not data.get("name"):
            raise ValidationError("level narrows a name search", field_name="level")


class GeometryResult(ResponseSchema):
    type = fields.String(metadata={"example": "FeatureCollection"})
    features = fields.List(fields.Dict(), metadata={"description": "GeoJSON features (format=geojson)."})
    wkt = fields.List(fields.Dict(), metadata={"description": "Properties plus `wkt` (format=wkt)."})


FUNCTION = register(
    Function(
        service="geometry",
        cmd="geometry",
        queue="geometry",
        service_ref="engine.services.geometry:run",
        core_schema=GeometryArgs,
    )
)

blp = GatewayBlueprint("Geometry", __name__, url_prefix="/v1", description="Admin boundaries as geometry.")
blp.function_route(
    "/geoment",
    FUNCTION,
    GeometryArgs,
    response_schema=GeometryResult,
    errors=(404,),
    summary="Download admin area geometry",
    description="Admin boundaries by `name` (+`level`), by `osm_id`, or all areas containing `lat`,`lng`; GeoJSON "
    "or WKT; optional `simplify` in metres keeping valid topology; properties: name, names, admin level, ISO codes. "
    "Computed by a worker and cached.",
)
