"""POI search and the category taxonomy (core ``cmd=poi`` / ``cmd=poi_categories``,
``GET /v1/poi``, ``GET /v1/poi/categories``)."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, validate, validates_schema

from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import AddressSchema, LatLngSchema, ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import poi

LIMITS = DEFAULT_LIMITS


class PoiArgs(ParamsSchema):
    params_class = poi.PoiParams

    q = f.Text(max_length=200, metadata={"description": "Name to search for.", "example": "cafe"})
    category = fields.String(
        validate=[validate.Length(1, 500), f.known_categories],
        metadata={
            "description": "Category id from /v1/poi/categories, a raw OSM `key=value` tag, or a comma list (any).",
            "example": "cafe",
        },
    )
    near = f.Point(metadata={"description": "Centre of a radius search, `<lat>,<lng>`; results carry `distance`."})
    radius = fields.Float(
        validate=validate.Range(1, LIMITS.search_radius_m),
        metadata={"description": f"Radius in metres around `near` (1-{LIMITS.search_radius_m:g}).", "example": 1000},
    )
    bbox = f.BBox(metadata={"description": "Only POIs inside `<minlng>,<minlat>,<maxlng>,<maxlat>`."})
    limit = fields.Integer(
        load_default=10,
        validate=validate.Range(1, LIMITS.poi_limit),
        metadata={"description": f"Page size (1-{LIMITS.poi_limit}).", "example": 10},
    )
    offset = fields.Integer(
        load_default=0,
        validate=validate.Range(0, 10_000),
        metadata={"description": "Results to skip (pagination).", "example": 0},
    )

    @validates_schema
    def _what(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if not data.get("q") and not data.get("category"):
            raise ValidationError("give q (a name) or category", field_name="q")
        if data.get("radius") is not None and data.get("near") is None:
            raise ValidationError("radius needs near=<lat>,<lng>", field_name="radius")


class PoiSchema(ResponseSchema):
    id = fields.String(required=True, metadata={"example": "node/123"})
    name = fields.String(allow_none=True, metadata={"example": "Café Esplanad"})
    category = fields.String(allow_none=True, metadata={"example": "cafe"})
    coord = fields.Nested(LatLngSchema, required=True)
    address = fields.Nested(AddressSchema)
    distance = fields.Float(allow_none=True, metadata={"description": "Metres from `near`."})


class PoiResult(ResponseSchema):
    pois = fields.List(fields.Nested(PoiSchema), required=True)
    total = fields.Integer(required=True, metadata={"example": 42})


class NoArgs(ParamsSchema):
    pass


class CategorySchema(ResponseSchema):
    id = fields.String(required=True, metadata={"example": "fuel"})
    label = fields.String(metadata={"example": "Fuel station"})
    tags = fields.List(fields.String(), metadata={"example": ["amenity=fuel"]})
    counts = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={"example": {"monaco": 5}})


class CategoriesResult(ResponseSchema):
    categories = fields.List(fields.Nested(CategorySchema), required=True)


FUNCTION = register(
    Function(
        service="poi",
        cmd="poi",
        core_schema=PoiArgs,
        run=lambda rt, params: poi.run(rt.datasets, params),
        empty_key="total",
        empty_message="no POI matches",
    )
)
CATEGORIES = register(
    Function(
        service="poi",
        cmd="poi_categories",
        core_schema=NoArgs,
        run=lambda rt, _params: poi.categories(rt.datasets),
    )
)

blp = GatewayBlueprint("POI", __name__, url_prefix="/v1", description="Search: points of interest.")
blp.function_route(
    "/poi",
    FUNCTION,
    PoiArgs,
    response_schema=PoiResult,
    errors=(404,),
    summary="Search points of interest",
    description="By name (`q`) and/or category (ids from /v1/poi/categories or raw `key=value` OSM tags, a comma "
    "list means any), within `near`+`radius` or `bbox`; paginated with `limit`/`offset`, `total` counts all "
    "matches. 404 when nothing matches at all.",
)
blp.function_route(
    "/poi/categories",
    CATEGORIES,
    NoArgs,
    response_schema=CategoriesResult,
    summary="List POI categories",
    description="The category taxonomy with the OSM tags each id maps to and the number of POIs per region.",
)
