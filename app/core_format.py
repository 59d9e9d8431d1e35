"""Typed results <-> the core API's transport form.

The engine and the gateway speak typed JSON (a point is ``{"lat": 43.7, "lng": 7.4}``); the core
API transports coordinates as strings (``{"x": "7.4", "y": "43.7"}``, the spec's geocoding
table). One generic rule in each direction keeps every function consistent: GeoJSON stays
GeoJSON (number arrays) on both faces.

Address fields are strings on the core face (the spec types ``address.country``, ``city``,
``street``, ``number`` as strings): one that is unknown is the empty string there, ``null`` on
the gateway (docs/decisions.md, "Unknown address fields"). The key is always present.
"""

from __future__ import annotations

from typing import Any

# the string fields of an ``address`` object (app/schemas/common.py AddressSchema)
ADDRESS_STRINGS = frozenset({"country", "city", "district", "street", "number", "postcode"})


def coord_text(value: float) -> str:
    text = f"{float(value):.7f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _is_point(obj: dict[str, Any]) -> bool:
    return len(obj) == 2 and "lat" in obj and "lng" in obj


def _address(obj: dict[str, Any], unknown: Any, known_as: Any) -> dict[str, Any]:
    """An address object with its unknown string fields (``known_as``) written as ``unknown``."""
    return {k: unknown if k in ADDRESS_STRINGS and v == known_as else v for k, v in obj.items()}


def to_core(obj: Any) -> Any:
    if isinstance(obj, dict):
        if _is_point(obj) and all(isinstance(obj[k], int | float) for k in ("lat", "lng")):
            return {"x": coord_text(obj["lng"]), "y": coord_text(obj["lat"])}
        return {
            k: _address(v, "", None) if k == "address" and isinstance(v, dict) else to_core(v) for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [to_core(v) for v in obj]
    return obj


def from_core(obj: Any) -> Any:
    if isinstance(obj, dict):
        if len(obj) == 2 and isinstance(obj.get("x"), str) and isinstance(obj.get("y"), str):
            return {"lat": float(obj["y"]), "lng": float(obj["x"])}
        return {
            k: _address(v, None, "") if k == "address" and isinstance(v, dict) else from_core(v) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [from_core(v) for v in obj]
    return obj
