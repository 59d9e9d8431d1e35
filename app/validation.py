"""One validation path per face, both through webargs' public parser API: marshmallow errors
become ``InvalidParameter`` naming the parameter and what was expected (400), before any backend
or engine call.

- Gateway (``/v1``): flask-smorest's ``@blp.arguments`` with :class:`MeridianParser`
  (``GatewayBlueprint.ARGUMENTS_PARSER``).
- Core (``/services/json``): :data:`CORE_PARSER`, the same rules without the command selector ``cmd``.

Repeated parameters follow webargs' rule: every value of a list field, the first value of any
other. Unknown query parameters are rejected (400 ``unknown parameter 'x'``): a misspelt optional
parameter (``limt=3``) would otherwise be ignored silently and the client would never know.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, ClassVar, NoReturn

import marshmallow as ma
from flask import Request
from marshmallow import Schema, ValidationError, post_load
from webargs.flaskparser import FlaskParser
from webargs.multidictproxy import MultiDictProxy
from werkzeug.datastructures import MultiDict

from engine.errors import InvalidParameter

# Parameters the core face accepts besides a function's own (its command selector).
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
    """The 400 for a marshmallow error; ``location`` unwraps webargs' ``{location: messages}``."""
    messages = error.messages
    if location and isinstance(messages, Mapping) and set(messages) == {location}:
        messages = messages[location]
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
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> Any:
        return self.params_class(**data) if self.params_class is not None else data


# The repeatable parameters of each schema instance, by webargs' rule (``MultiDictProxy.multiple_keys``):
# worked out once per instance rather than on every request.
_MULTIPLE_KEYS: weakref.WeakKeyDictionary[Schema, frozenset[str]] = weakref.WeakKeyDictionary()


def multiple_keys(schema: Schema) -> frozenset[str]:
    keys = _MULTIPLE_KEYS.get(schema)
    if keys is None:
        keys = _MULTIPLE_KEYS[schema] = frozenset(MultiDictProxy(MultiDict(), schema).multiple_keys)
    return keys


def query_values(args: MultiDict[str, str], schema: Schema, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The query string as ``schema`` loads it, by webargs' rule for repeated parameters (every
    value of a list field, the first of any other), in a plain dict (marshmallow then looks each
    field up at C speed, not through a proxy's Python ``__getitem__``); ``skip`` left out."""
    multiple = multiple_keys(schema)
    return {key: (values if key in multiple else values[0]) for key, values in args.lists() if key not in skip}


class MeridianParser(FlaskParser):
    """webargs parser of the gateway: 400 (not 422) in the spec's body, unknown parameters
    rejected in the query string and in JSON bodies."""

    DEFAULT_VALIDATION_STATUS = 400
    DEFAULT_UNKNOWN_BY_LOCATION = {
        **FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION,
        "query": ma.RAISE,
        "querystring": ma.RAISE,
        "json": ma.RAISE,
    }

    def load_querystring(self, req: Request, schema: Schema) -> dict[str, Any]:
        return query_values(req.args, schema)

    def handle_error(
        self,
        error: ValidationError,
        req: Request,
        schema: Schema,
        *,
        error_status_code: int | None,
        error_headers: Mapping[str, str] | None,
    ) -> NoReturn:
        # webargs reports the messages under the location that produced them: {"query": {...}}
        messages = error.messages
        location = next(iter(messages)) if isinstance(messages, Mapping) and len(messages) == 1 else None
        raise invalid_from(error, location)


class CoreParser(MeridianParser):
    """The core face's query string: the function's parameters plus the command selector, which
    the function's schema does not know."""

    def load_querystring(self, req: Request, schema: Schema) -> dict[str, Any]:
        return query_values(req.args, schema, skip=TRANSPORT_PARAMETERS)


CORE_PARSER = CoreParser()
