"""Reverse geocoding: a point -> the nearest address (else street) and its admin hierarchy
(core ``cmd=reverse_geocoding``, ``GET /v1/reverse-geocoding``)."""

from __future__ import annotations

from marshmallow import fields, validate

from app.functions.geocoding import CandidateSchema
from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import reverse_geocoding

LIMITS = DEFAULT_LIMITS


class ReverseArgs(ParamsSchema):
    params_class = reverse_geocoding.ReverseParams

    lat = f.Latitude(required=True, metadata={"example": 60.1675})
    lng = f.Longitude(required=True, metadata={"example": 24.9427})
    radius = fields.Float(
        load_default=100.0,
        validate=validate.Range(1, 5000),
        metadata={
            "description": "Search radius for addresses in metres (1-5000); beyond it the nearest street is returned.",
            "example": 100,
        },
    )
    limit = fields.Integer(
        load_default=1,
        validate=validate.Range(1, 20),
        metadata={"description": "Maximum candidates (1-20).", "example": 1},
    )


class AdminLevelSchema(ResponseSchema):
    name = fields.String(metadata={"example": "Helsinki"})
    level = fields.Integer(metadata={"example": 8})


class ReverseResult(ResponseSchema):
    candidates = fields.List(fields.Nested(CandidateSchema), required=True)
    admin = fields.List(fields.Nested(AdminLevelSchema))


FUNCTION = register(
    Function(
        service="reverse_geocoding",
        cmd="reverse_geocoding",
        core_schema=ReverseArgs,
        run=lambda rt, params: reverse_geocoding.run(rt.datasets, params),
        empty_key="candidates",
        empty_message="no address or street near this point (at sea or outside every dataset)",
    )
)

blp = GatewayBlueprint(
    "Reverse geocoding", __name__, url_prefix="/v1", description="Search: coordinates to the nearest address."
)
blp.function_route(
    "/reverse-geocoding",
    FUNCTION,
    ReverseArgs,
    response_schema=ReverseResult,
    errors=(404,),
    summary="Reverse geocode a point",
    description="The nearest address within `radius`, else the nearest street (with its distance), plus the admin "
    "hierarchy (district, city, region, country). 404 at sea or outside every dataset.",
)
