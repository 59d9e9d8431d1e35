"""Proximity: the nearest POIs of some categories (core ``cmd=proximity``, ``GET /v1/proximity/nearest``,
also at the spec's ``GET /v1/proximity``)."""

from __future__ import annotations

from typing import Any

from marshmallow import fields, post_load, validate

from app.functions.poi import PoiSchema
from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import proximity

LIMITS = DEFAULT_LIMITS


class NearestArgs(ParamsSchema):
    lat = f.Latitude(required=True, metadata={"example": 43.7384})
    lng = f.Longitude(required=True, metadata={"example": 7.4246})
    categories = f.CommaList(
        required=True,
        max_items=20,
        validate=f.known_categories,
        metadata={
            "description": "Category ids (see /v1/poi/categories) or raw `key=value` tags, comma-separated: any of them.",
            "example": "fuel,parking",
        },
    )
    limit = fields.Integer(
        load_default=10,
        validate=validate.Range(1, LIMITS.poi_limit),
        metadata={"description": f"Maximum results (1-{LIMITS.poi_limit}).", "example": 10},
    )
    radius = fields.Float(
        load_default=5000.0,
        validate=validate.Range(1, LIMITS.search_radius_m),
        metadata={"description": f"Search radius in metres (1-{LIMITS.search_radius_m:g}).", "example": 5000},
    )

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> proximity.NearestParams:
        data.pop("operation", None)
        return proximity.NearestParams(**data)


class NearestCoreArgs(NearestArgs):
    operation = fields.String(
        load_default="nearest",
        validate=validate.OneOf(["nearest"]),
        metadata={"description": "Proximity operation (only `nearest`)."},
    )


class NearestItemSchema(PoiSchema):
    tag = fields.String(
        allow_none=True,
        metadata={
            "description": "The POI's own OSM `key=value` that the query asked for: the precise class "
            "(`shop=optician` for `categories=shop=*` or `shop`).",
            "example": "amenity=parking",
        },
    )
    distance_to = fields.String(
        validate=validate.OneOf(["point", "outline"]),
        metadata={
            "description": "What `distance` (and the ranking) measures to: the POI's point, or the outline of a "
            "POI mapped as an area (park, parking lot), 0 inside it; never an area's centroid.",
            "example": "outline",
        },
    )


class NearestResult(ResponseSchema):
    results = fields.List(fields.Nested(NearestItemSchema), required=True)


FUNCTION = register(
    Function(
        service="proximity",
        cmd="proximity",
        core_schema=NearestCoreArgs,
        run=lambda rt, params: proximity.run(rt.datasets, params),
        empty_key="results",
        empty_message="no POI of these categories within the radius",
    )
)

blp = GatewayBlueprint("Proximity", __name__, url_prefix="/v1", description="Search: nearest POIs by category.")
NEAREST_DESCRIPTION = (
    "POIs of any of `categories` (e.g. the nearest fuel station), sorted by straight-line distance, "
    "each with `distance` in metres: to the POI's point, or for a POI mapped as an area (park, parking lot) to "
    "its outline, 0 inside (`distance_to` says which), and with `tag`, its precise OSM class. An unknown "
    "category is a 400 naming it."
)
for path, endpoint, summary, description in (
    ("/proximity/nearest", None, "Nearest POIs of some categories", NEAREST_DESCRIPTION),
    (
        "/proximity",
        "proximity_alias",
        "Nearest POIs of some categories (the spec's path)",
        "The same function and answers as `/v1/proximity/nearest`, at the path the service specification "
        "names for proximity. " + NEAREST_DESCRIPTION,
    ),
):
    blp.function_route(
        path,
        FUNCTION,
        NearestArgs,
        response_schema=NearestResult,
        errors=(404,),
        summary=summary,
        description=description,
        endpoint=endpoint,
    )
