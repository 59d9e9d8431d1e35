"""Geocoding: free-text or structured address -> candidates (core ``cmd=geocoding``, ``GET /v1/geocoding``)."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, validate, validates_schema

from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import AddressSchema, LatLngSchema, OsmRefSchema, ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import geocoding

LIMITS = DEFAULT_LIMITS
STRUCTURED = ("street", "number", "city", "postcode")


class GeocodingArgs(ParamsSchema):
    params_class = geocoding.GeocodeParams

    query = f.Text(
        max_length=LIMITS.query_length,
        metadata={"description": "Free-text address or place, in any order.", "example": "Mannerheimintie 5, Helsinki"},
    )
    street = f.Text(
        max_length=200, metadata={"description": "Structured search: street name.", "example": "Rue Grimaldi"}
    )
    number = f.Text(max_length=20, metadata={"description": "Structured search: house number.", "example": "12"})
    city = f.Text(max_length=200, metadata={"description": "Structured search or filter: city.", "example": "Monaco"})
    postcode = f.Text(
        max_length=20, metadata={"description": "Structured search or filter: postcode.", "example": "98000"}
    )
    country = f.Country(
        metadata={"description": "Restrict to a country (ISO 3166-1 alpha-2 or alpha-3).", "example": "MCO"}
    )
    limit = fields.Integer(
        load_default=5,
        validate=validate.Range(1, LIMITS.geocode_limit),
        metadata={"description": f"Maximum candidates (1-{LIMITS.geocode_limit}).", "example": 5},
    )
    near = f.Point(metadata={"description": "Bias results toward this point, `<lat>,<lng>`."})
    bbox = f.BBox(metadata={"description": "Only results inside `<minlng>,<minlat>,<maxlng>,<maxlat>`."})
    lang = fields.String(
        validate=validate.Regexp(r"^[a-zA-Z]{2,3}$", error="expected a language code such as 'fr' or 'fi'"),
        metadata={"description": "Preferred language of names (OSM name:<lang>).", "example": "fr"},
    )

    @validates_schema
    def _one_form(self, data: dict[str, Any], **_kwargs: Any) -> None:
        structured = [k for k in STRUCTURED if data.get(k)]
        if data.get("query") and structured:
            raise ValidationError(
                f"use either the free-text query or structured parameters, not both ({', '.join(structured)})",
                field_name=self.query_name,
            )
        if not data.get("query") and not any(data.get(k) for k in ("street", "city", "postcode")):
            raise ValidationError(
                f"required parameter is missing: give {self.query_name} (free text) or street/city/postcode",
                field_name=self.query_name,
            )

    query_name = "query"


class GeocodingCoreArgs(GeocodingArgs):
    query = f.Text(max_length=LIMITS.query_length, data_key="addr")
    query_name = "addr"


class CandidateSchema(ResponseSchema):
    id = fields.String(required=True, metadata={"example": "1"})
    type = fields.String(required=True, metadata={"enum": ["address", "street", "place", "poi"], "example": "address"})
    score = fields.Float(required=True, metadata={"description": "Match quality 0..1", "example": 0.97})
    interpolated = fields.Boolean(metadata={"description": "House number interpolated along the street."})
    name = fields.String(allow_none=True, metadata={"description": "Name of a place or POI."})
    category = fields.String(allow_none=True, metadata={"description": "POI category (see /v1/poi/categories)."})
    address = fields.Nested(AddressSchema, required=True)
    coord = fields.Nested(LatLngSchema, required=True)
    osm = fields.Nested(OsmRefSchema, allow_none=True)
    region = fields.String(metadata={"description": "Dataset the candidate comes from.", "example": "monaco"})
    distance = fields.Float(metadata={"description": "Metres from the query point (reverse geocoding)."})


class GeocodingResult(ResponseSchema):
    candidates = fields.List(fields.Nested(CandidateSchema), required=True)


FUNCTION = register(
    Function(
        service="geocoding",
        cmd="geocoding",
        core_schema=GeocodingCoreArgs,
        run=lambda rt, params: geocoding.run(rt.datasets, params),
        gateway_to_core={"query": "addr"},
        empty_key="candidates",
        empty_message="no address or place matches the query",
    )
)

blp = GatewayBlueprint(
    "Geocoding", __name__, url_prefix="/v1", description="Search: addresses and places to coordinates."
)

EXAMPLE = {
    "candidates": [
        {
            "id": "1",
            "type": "address",
            "score": 0.98,
            "interpolated": False,
            "name": None,
            "address": {
                "country": "FIN",
                "city": "Helsinki",
                "district": "Kluuvi",
                "street": "Mannerheimintie",
                "number": "5",
                "postcode": "00100",
            },
            "coord": {"lat": 60.1686, "lng": 24.9412},
            "osm": {"type": "way", "id": 8042096},
            "region": "helsinki",
        }
    ]
}


blp.function_route(
    "/geocoding",
    FUNCTION,
    GeocodingArgs,
    response_schema=GeocodingResult,
    example=EXAMPLE,
    errors=(404,),
    summary="Geocode an address",
    description="Free text in any order (`query`) or structured parameters (`street`, `number`, `city`, "
    "`postcode`); optional `country`, `near` bias and `bbox` filter. Candidates carry a score 0-1 and are "
    "ranked exact house number > interpolated number > street > place/POI. 404 when nothing matches.",
)
