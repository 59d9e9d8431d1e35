"""Flask's JSON provider (app/json_provider.py): orjson, with the bytes of Flask's default
provider for ASCII text."""

from __future__ import annotations

import dataclasses
import decimal
import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from flask import Flask, jsonify, request
from flask.json.provider import DefaultJSONProvider
from markupsafe import Markup

from app.json_provider import OrjsonProvider


@dataclasses.dataclass
class Point:
    lat: float
    lng: float


DOCUMENT = {
    "zeta": [1, 2.5, None, True, "text"],
    "alpha": {"b": 1, "a": Point(43.73, 7.42)},
    "when": datetime(2026, 11, 26, 12, 0, tzinfo=UTC),
    "price": decimal.Decimal("1.10"),
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "html": Markup("<b>x</b>"),
}


def _apps() -> tuple[Flask, Flask]:
    default, ours = Flask("default"), Flask("ours")
    ours.json = OrjsonProvider(ours)
    for app in (default, ours):

        @app.post("/echo")
        def echo():  # the body as parsed by the provider, sent back by jsonify
            return jsonify(request.get_json())

        @app.get("/doc")
        def doc():
            return jsonify(DOCUMENT)

        @app.get("/many")
        def many():
            return jsonify(1, "two")

        @app.get("/kwargs")
        def kwargs():
            return jsonify(b=1, a=2)

    return default, ours


@pytest.mark.parametrize("path", ["/doc", "/many", "/kwargs"])
def test_the_bytes_of_flasks_default_provider(path):
    default, ours = _apps()
    assert isinstance(default.json, DefaultJSONProvider)
    expected = default.test_client().get(path)
    got = ours.test_client().get(path)
    assert got.data == expected.data and got.mimetype == expected.mimetype == "application/json"


def test_request_bodies_are_parsed_and_answered():
    _, ours = _apps()
    body = {"name": "Zürich", "points": [[1, 2]], "nested": {"k": None}}
    resp = ours.test_client().post("/echo", json=body)
    assert resp.get_json() == body
    assert "Zürich".encode() in resp.data  # UTF-8, not \u escapes (documented)


def test_a_malformed_body_is_a_400():
    _, ours = _apps()
    resp = ours.test_client().post("/echo", data=b"{not json", content_type="application/json")
    assert resp.status_code == 400


def test_numpy_values_and_unknown_types():
    provider = OrjsonProvider(Flask("np"))
    assert provider.dumps({"n": np.int64(3), "a": np.arange(2)}) == '{"a":[0,1],"n":3}'
    with pytest.raises(TypeError, match="not JSON serializable"):
        provider.dumps({"x": object()})


def test_the_app_uses_it(app):
    assert isinstance(app.json, OrjsonProvider)


def test_integers_beyond_64_bits_are_written_and_read_exactly():
    provider = OrjsonProvider(Flask(__name__))
    big = 2**64 + 5
    assert provider.dumps({"id": big, "b": "é"}) == '{"b":"é","id":18446744073709551621}'
    assert provider.loads('{"id": 18446744073709551621}') == {"id": big}
