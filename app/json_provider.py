"""Flask's JSON through orjson (``app.json``): what ``jsonify``, flask-smorest's ``@blp.response``
and ``request.get_json`` use. The function answers are encoded by ``engine.codec.json_bytes``
already (``app/calls.py``); this covers the rest (job records, geofences, request bodies).

The output is Flask's own (``DefaultJSONProvider``) in every byte for ASCII text: keys sorted,
compact separators, a newline after a response body, dates as RFC 822 strings, ``Decimal`` and
``UUID`` as strings, dataclasses as dicts, ``__html__`` objects as their HTML. Two documented
differences: text outside ASCII is written as UTF-8 rather than ``\\uXXXX`` escapes (the same JSON
value), and numpy scalars and arrays are numbers and lists rather than a ``TypeError``.

Integers beyond 64 bits, which orjson refuses to write and reads as floats (a client's id of
2**64 + 5 would lose its digits), take the standard library's path: parsing stays exact, so the
schema can name the field that is out of range.
"""

from __future__ import annotations

import dataclasses
import decimal
import json
import uuid
from datetime import date
from typing import Any

import orjson
from flask import Flask, Response
from flask.json.provider import JSONProvider
from werkzeug.http import http_date

# keys sorted like Flask's default; dates and dataclasses handed to ``_default`` like Flask's
OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_SERIALIZE_NUMPY
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


def _default(o: Any) -> Any:
    """What Flask's default provider writes for the types JSON lacks."""
    if isinstance(o, date):
        return http_date(o)
    if isinstance(o, decimal.Decimal | uuid.UUID):
        return str(o)
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if hasattr(o, "__html__"):
        return str(o.__html__())
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


class OrjsonProvider(JSONProvider):
    def __init__(self, app: Flask) -> None:
        super().__init__(app)
        self.response_class = app.response_class
        self.indent_responses = app.debug  # Flask's default indents in debug mode

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        return self.dump_bytes(obj).decode()

    def dump_bytes(self, obj: Any, indent: bool = False) -> bytes:
        try:
            return orjson.dumps(obj, default=_default, option=OPTIONS | (orjson.OPT_INDENT_2 if indent else 0))
        except orjson.JSONEncodeError:
            # an integer beyond 64 bits: the standard library writes it exactly
            text = json.dumps(
                obj,
                default=_default,
                sort_keys=True,
                ensure_ascii=False,
                indent=2 if indent else None,
                separators=(",", ": ") if indent else (",", ":"),
            )
            return text.encode()

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return json.loads(s)

    def response(self, *args: Any, **kwargs: Any) -> Response:
        """``jsonify``: one value, several as a list, or keyword arguments as a dict."""
        if args and kwargs:
            raise TypeError("app.json.response() takes either args or kwargs, not both")
        obj = args[0] if len(args) == 1 else (args or kwargs or None)
        body = self.dump_bytes(obj, indent=self.indent_responses) + b"\n"
        return self.response_class(body, mimetype="application/json")
