"""One validation path for both faces: marshmallow errors become ``InvalidParameter`` naming the
parameter and what was expected (400), before any backend or engine call.

Unknown query parameters are rejected (400 ``unknown parameter 'x'``): a misspelt optional
parameter (``limt=3``) would otherwise be ignored silently and the client would never know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import marshmallow as ma
from marshmallow import Schema, ValidationError, post_load
from webargs.flaskparser import FlaskParser
from webargs.multidictproxy import MultiDictProxy

from engine.errors import InvalidParameter

# Parameters every face accepts besides a function's own (the core's command selector).
TRANSPORT_PARAMETERS = frozenset({"cmd"})


def _first(messages: Any, path: str = "") -> tuple[str, str]:
    if isinstance(messages, Mapping):
        for key, value in messages.items():
            if isinstance(key, int):  # an item of a repeated parameter: name the parameter
                name, message = _first(value, path)
                return name, f"item {key}: {message}"
            name = path if key == "_schema" else (f"{path}.{key}" if path else str(key))
            return _first(value, name)
    if isinstance(messages, list | tuple) and messages:
        return _first(messages[0], path)
    return path, str(messages)


def invalid_from(error: ValidationError, location: str | None = None) -> InvalidParameter:
    messages = error.messages
    if location and isinstance(messages, Mapping) and set(messages) == {location}:
        messages = messages[location]  # webargs wraps the messages by location
    name, message = _first(messages)
    if message == "Unknown field.":
        return InvalidParameter(f"unknown parameter '{name}'", parameter=name)
    if message == "Missing data for required field.":
        return InvalidParameter(f"{name}: required parameter is missing", parameter=name)
    if message.startswith("Not a valid "):
        message = message.replace("Not a valid", "expected a valid").rstrip(".")
    return InvalidParameter(f"{name}: {message}" if name else message, parameter=name or None)


class ParamsSchema(Schema):
    """Base of every query schema: unknown parameters rejected, result built as the engine's
    params dataclass (``params_class``)."""

    params_class: ClassVar[type | None] = None

    class Meta:
        unknown = ma.RAISE

    @post_load
    def _build(self, data: dict, **_kwargs):
        return self.params_class(**data) if self.params_class is not None else data


class QueryArgs(MultiDictProxy):
    """webargs' view of a query string for one schema (repeated parameters for list fields, the
    first value otherwise), without two costs it pays on every request: which fields take lists is
    worked out once per schema instance, and an absent parameter is answered without the
    ``KeyError`` that ``MultiDict.get`` raises and catches (four of them for a routing request)."""

    def __init__(self, multidict, schema: Schema, known_multi_fields=(ma.fields.List, ma.fields.Tuple)) -> None:
        self.data = multidict
        self.known_multi_fields = known_multi_fields
        keys = schema.__dict__.get("_meridian_multiple_keys")
        if keys is None:
            keys = schema._meridian_multiple_keys = frozenset(self._collect_multiple_keys(schema))
        self.multiple_keys = keys

    def __getitem__(self, key: str) -> Any:
        if key not in self.data:
            return ma.missing
        return super().__getitem__(key)


def load_params(schema: Schema, args):
    """Validate query arguments (the core face); a MultiDict keeps repeated parameters for list
    fields, like the gateway's webargs parser."""
    if hasattr(args, "getlist"):
        data = QueryArgs(args.__class__((k, v) for k, v in args.items(multi=True)
                                        if k not in TRANSPORT_PARAMETERS), schema)
    else:
        data = {k: v for k, v in args.items() if k not in TRANSPORT_PARAMETERS}
    try:
        return schema.load(data)
    except ValidationError as exc:
        raise invalid_from(exc) from None


class MeridianParser(FlaskParser):
    """webargs parser for the gateway: 400 (not 422), unknown query parameters rejected."""

    DEFAULT_VALIDATION_STATUS = 400
    DEFAULT_UNKNOWN_BY_LOCATION = {
        **FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION,
        "query": ma.RAISE,
        "querystring": ma.RAISE,
        "json": ma.RAISE,
    }

    def _makeproxy(self, multidict, schema, *, cls=QueryArgs):
        return super()._makeproxy(multidict, schema, cls=cls)

    def handle_error(self, error, req, schema, *, error_status_code, error_headers):
        location = next(iter(error.messages), None) if isinstance(error.messages, Mapping) else None
        raise invalid_from(error, location if location in self.__location_map__ else None)
