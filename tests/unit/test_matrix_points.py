"""The points of ``POST /v1/matrix`` (app/functions/matrix.py, ``PointObjects``): a plain list of
numbers is read in one pass, and everything loads, or is refused with the message, exactly as
through the nested ``PointSchema``."""

from __future__ import annotations

import math
from typing import Any

import pytest
from marshmallow import Schema, ValidationError, fields

from app.functions.matrix import PointObjects, PointSchema


class Fast(Schema):
    sources = PointObjects()


class Nested(Schema):
    sources = fields.List(fields.Nested(PointSchema))


def outcome(schema: Schema, body: Any) -> Any:
    try:
        return schema.load({"sources": body})["sources"]
    except ValidationError as exc:
        return exc.messages


CASES = [
    [{"lat": 43.7384, "lng": 7.4246}, {"lat": -90, "lng": 180}, {"lng": 0.5, "lat": 0}],
    [],
    [{"lat": "43.7", "lng": 7.4}],  # a number as text: the schema's own reading
    [{"lat": True, "lng": 7.4}],
    [{"lat": 43.7, "lng": 7.4, "name": "x"}],
    [{"lat": 43.7}],
    [{"lat": 43.7, "lon": 7.4}],
    [{"lat": 91, "lng": 7.4}],
    [{"lat": 43.7, "lng": -180.5}],
    [{"lat": math.nan, "lng": 7.4}],
    [{"lat": math.inf, "lng": 7.4}],
    [{"lat": None, "lng": 7.4}],
    [[43.7, 7.4]],
    [{"lat": 1, "lng": 2}, "43.7,7.4"],
    "43.7,7.4",
    {"lat": 1, "lng": 2},
]


@pytest.mark.parametrize("body", CASES)
def test_points_load_or_fail_as_through_the_nested_schema(body):
    assert outcome(Fast(), body) == outcome(Nested(), body)


def test_plain_points_are_floats():
    loaded = Fast().load({"sources": [{"lat": 1, "lng": 2}]})["sources"]
    assert loaded == [(1.0, 2.0)] and all(type(v) is float for v in loaded[0])
