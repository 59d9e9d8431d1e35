"""Isochrones: areas reachable within times or distances (core ``cmd=isochrone``, ``GET /v1/isochrone``),
computed by Celery workers (queue ``isochrone``) and cached in Redis."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, post_load, validates_schema

from app import jobs
from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import isochrone

LIMITS = DEFAULT_LIMITS


class IsochroneArgs(ParamsSchema):
    lat = f.Latitude(required=True, metadata={"example": 43.7384})
    lng = f.Longitude(required=True, metadata={"example": 7.4246})
    time = f.NumberList(
        lo=0,
        hi=LIMITS.isochrone_max_minutes,
        max_items=LIMITS.isochrone_contours,
        metadata={
            "description": f"Contours in minutes of travel (the `profile`'s), comma-separated (at most {LIMITS.isochrone_contours}, "
            f"each <= {LIMITS.isochrone_max_minutes:g}).",
            "example": "5,10,15",
        },
    )
    distance = f.NumberList(
        lo=0,
        hi=LIMITS.isochrone_max_distance_m,
        max_items=LIMITS.isochrone_contours,
        metadata={
            "description": f"Contours in metres of travel distance (each <= {LIMITS.isochrone_max_distance_m:g}); "
            "instead of `time`.",
            "example": "1000,2000",
        },
    )
    profile = f.TravelProfile()
    async_ = jobs.async_field()

    @validates_schema
    def _one_metric(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if bool(data.get("time")) == bool(data.get("distance")):
            raise ValidationError("give exactly one of time (minutes) or distance (metres)", field_name="time")

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> isochrone.IsochroneParams:
        return isochrone.IsochroneParams(
            lat=data["lat"],
            lng=data["lng"],
            times=data.get("time") or (),
            distances=data.get("distance") or (),
            profile=data["profile"],
        )


class FeatureCollectionSchema(ResponseSchema):
    type = fields.String(required=True, metadata={"example": "FeatureCollection"})
    features = fields.List(
        fields.Dict(),
        required=True,
        metadata={
            "description": "One (Multi)Polygon feature per contour, largest first; properties: contour, metric, area_m2."
        },
    )


FUNCTION = register(
    Function(
        service="isochrone",
        cmd="isochrone",
        queue="isochrone",
        service_ref="engine.services.isochrone:run",
        core_schema=IsochroneArgs,
    )
)

blp = GatewayBlueprint("Isochrone", __name__, url_prefix="/v1", description="Areas reachable by car.")
blp.function_route(
    "/isochrone",
    FUNCTION,
    IsochroneArgs,
    response_schema=FeatureCollectionSchema,
    errors=(404,),
    summary="Reachable areas (isochrones)",
    description="Polygons that follow the road network (reached roads buffered and merged, with holes where "
    "nothing is reachable), one per contour of `time` (minutes) or `distance` (metres), largest first. Computed "
    "by a worker and cached.",
)
