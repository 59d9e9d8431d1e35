"""JSON encoding of service parameter dataclasses, so they can cross the queue (Celery's JSON
serializer) and form stable cache keys. Only classes from ``engine.`` modules are revived."""

from __future__ import annotations

import dataclasses
import importlib
import json
from typing import Any

import orjson

_ALLOWED_PREFIX = "engine."


def encode(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        return {
            "__dc__": f"{cls.__module__}:{cls.__qualname__}",
            "f": {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)},
        }
    if isinstance(obj, tuple):
        return {"__t__": [encode(v) for v in obj]}
    if isinstance(obj, frozenset | set):
        return {"__fs__": sorted(encode(v) for v in obj)}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot encode {type(obj).__name__}")


def decode(obj: Any) -> Any:
    if isinstance(obj, dict):
        if "__dc__" in obj:
            module, _, qualname = obj["__dc__"].partition(":")
            if not module.startswith(_ALLOWED_PREFIX):
                raise ValueError(f"refusing to revive {obj['__dc__']}")
            cls: Any = importlib.import_module(module)
            for part in qualname.split("."):
                cls = getattr(cls, part)
            return cls(**{k: decode(v) for k, v in obj["f"].items()})
        if "__t__" in obj:
            return tuple(decode(v) for v in obj["__t__"])
        if "__fs__" in obj:
            return frozenset(decode(v) for v in obj["__fs__"])
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def canonical(obj: Any) -> str:
    """A stable text for cache keys: equal parameters give equal text."""
    return json.dumps(encode(obj), sort_keys=True, separators=(",", ":"))


def json_bytes(document: Any) -> bytes:
    """A result document as compact UTF-8 JSON (numpy scalars as numbers, NaN as null): what the
    web answers and what the workers store."""
    return orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
