"""Suggest / autocomplete (core ``cmd=suggest`` and ``/suggest/json``, ``GET /v1/suggest``)."""

from __future__ import annotations

from marshmallow import fields, validate

from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import AddressSchema, LatLngSchema, ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import suggest

LIMITS = DEFAULT_LIMITS


class SuggestArgs(ParamsSchema):
    params_class = suggest.SuggestParams

    q = f.Text(
        required=True,
        max_length=200,
        metadata={
            "description": "What the user typed so far (results from the 2nd character, typo-tolerant from ~4).",
            "example": "Mannerh",
        },
    )
    limit = fields.Integer(
        load_default=10,
        validate=validate.Range(1, LIMITS.suggest_limit),
        metadata={"description": f"Maximum suggestions (1-{LIMITS.suggest_limit}).", "example": 10},
    )
    near = f.Point(metadata={"description": "Rank suggestions near this point first, `<lat>,<lng>`."})
    country = f.Country(metadata={"description": "Restrict to a country (alpha-2 or alpha-3)."})


class SuggestionSchema(ResponseSchema):
    text = fields.String(required=True, metadata={"example": "Mannerheimintie, Helsinki"})
    type = fields.String(required=True, metadata={"enum": ["address", "street", "place", "poi"]})
    coord = fields.Nested(LatLngSchema, required=True)
    address = fields.Nested(AddressSchema)


class SuggestResult(ResponseSchema):
    suggestions = fields.List(fields.Nested(SuggestionSchema), required=True)


FUNCTION = register(
    Function(
        service="suggest",
        cmd="suggest",
        core_schema=SuggestArgs,
        run=lambda rt, params: suggest.run(rt.datasets, params),
        remote="suggest",
    )
)

blp = GatewayBlueprint("Suggest", __name__, url_prefix="/v1", description="Search: autocomplete as the user types.")
blp.function_route(
    "/suggest",
    FUNCTION,
    SuggestArgs,
    response_schema=SuggestResult,
    summary="Autocomplete an address or place",
    description="Streets, addresses, places and POIs matching what the user typed, ranked by match quality, "
    "importance and distance to `near`. An empty list (200) when nothing matches yet: autocomplete clients "
    "call this on every keystroke.",
)
