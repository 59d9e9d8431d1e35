"""Response pieces shared by several functions (documentation of the typed gateway bodies)."""

from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields


class ResponseSchema(Schema):
    """Base of response documentation: fields may be added in later versions, so clients must
    ignore properties they do not know (``additionalProperties`` is allowed)."""

    class Meta:
        unknown = INCLUDE


class LatLngSchema(ResponseSchema):
    lat = fields.Float(required=True, metadata={"example": 43.7384})
    lng = fields.Float(required=True, metadata={"example": 7.4246})


class AddressSchema(ResponseSchema):
    country = fields.String(allow_none=True, metadata={"description": "ISO 3166-1 alpha-3", "example": "MCO"})
    city = fields.String(allow_none=True, metadata={"example": "Monaco"})
    district = fields.String(allow_none=True, metadata={"example": "Monte-Carlo"})
    street = fields.String(allow_none=True, metadata={"example": "Quai Antoine 1er"})
    number = fields.String(allow_none=True, metadata={"example": "6"})
    postcode = fields.String(allow_none=True, metadata={"example": "98000"})


class OsmRefSchema(ResponseSchema):
    type = fields.String(metadata={"enum": ["node", "way", "relation"], "example": "way"})
    id = fields.Integer(metadata={"example": 123456})
