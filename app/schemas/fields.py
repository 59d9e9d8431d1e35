"""Parameter fields shared by every function: points, bounding boxes, lists, countries.

Each field's error message names what was expected, and the parser (``app/validation.py``)
prefixes it with the parameter's name, so a client reads e.g.
``origin: expected "<lat>,<lng>" in decimal degrees, lat in -90..90``.

Most of them are strings on the wire (and in the OpenAPI document) that load as something else: a
point, a tuple of points or numbers. marshmallow types every ``fields.String`` as loading a
``str``, hence the ``type: ignore[override]`` on those ``_deserialize`` methods.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from marshmallow import ValidationError, fields

from engine.categories import resolve
from engine.countries import to_alpha3
from engine.errors import InvalidParameter
from engine.routing.profiles import ACCEPTED, DEFAULT, canonical

LatLng = tuple[float, float]  # (lat, lng), decimal degrees

# Typed bases for custom fields: marshmallow 4 declares its fields generic, marshmallow 3 (still
# supported, see pyproject.toml) cannot subscript them at run time.
if TYPE_CHECKING:
    IntField = fields.Field[int]
    PairField = fields.Field[tuple[float, float]]
    StrList = fields.List[str]
else:
    IntField = fields.Field
    PairField = fields.Field
    StrList = fields.List


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValidationError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValidationError(f"{what} must be a finite number")
    return value


def check_lat(value: float) -> float:
    if not -90.0 <= value <= 90.0:
        raise ValidationError(f"latitude must be within -90..90, got {value:g}")
    return value


def check_lng(value: float) -> float:
    if not -180.0 <= value <= 180.0:
        raise ValidationError(f"longitude must be within -180..180, got {value:g}")
    return value


class Latitude(fields.Float):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).setdefault("description", "Latitude, decimal degrees (-90..90)")
        super().__init__(allow_nan=False, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> float:
        return check_lat(_number(value, "latitude"))


class Longitude(fields.Float):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).setdefault("description", "Longitude, decimal degrees (-180..180)")
        super().__init__(allow_nan=False, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> float:
        return check_lng(_number(value, "longitude"))


def parse_point(text: str) -> LatLng:
    parts = str(text).split(",")
    if len(parts) != 2:
        raise ValidationError(f'expected "<lat>,<lng>" in decimal degrees, got {text!r}')
    lat = check_lat(_number(parts[0].strip(), "lat"))
    lng = check_lng(_number(parts[1].strip(), "lng"))
    return lat, lng


class Point(fields.String):
    """``<lat>,<lng>`` in decimal degrees -> (lat, lng)."""

    def __init__(self, **kwargs: Any) -> None:
        meta = kwargs.setdefault("metadata", {})
        meta.setdefault("pattern", r"^-?\d+(\.\d+)?,\s*-?\d+(\.\d+)?$")
        meta.setdefault("example", "43.7384,7.4246")
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> LatLng:  # type: ignore[override]
        return parse_point(super()._deserialize(value, attr, data, **kwargs))


class PointList(fields.String):
    """``lat,lng|lat,lng|...`` -> tuple of (lat, lng), with a configured maximum count; also an
    encoded polyline behind ``polyline:`` (precision 5) or ``polyline6:`` (precision 6)."""

    def __init__(self, *, min_points: int = 1, max_points: int = 1000, **kwargs: Any) -> None:
        self.min_points, self.max_points = min_points, max_points
        kwargs.setdefault("metadata", {}).setdefault("example", "43.7384,7.4246|43.7402,7.4271")
        super().__init__(**kwargs)

    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> tuple[LatLng, ...]:
        text = super()._deserialize(value, attr, data, **kwargs).strip()
        for prefix, precision in (("polyline6:", 6), ("polyline:", 5)):
            if text.startswith(prefix):
                return self._check_count(self._decode(text[len(prefix) :], precision))
        items = [p for p in text.split("|") if p.strip()] if text else []
        if len(items) < self.min_points:
            raise ValidationError(f"expected at least {self.min_points} point(s) as lat,lng|lat,lng")
        if len(items) > self.max_points:
            raise ValidationError(f"at most {self.max_points} points, got {len(items)}")
        out = []
        for i, item in enumerate(items):
            try:
                out.append(parse_point(item))
            except ValidationError as exc:
                raise ValidationError(f"point {i}: {exc.messages[0]}") from None
        return tuple(out)

    def _check_count(self, points: tuple[LatLng, ...]) -> tuple[LatLng, ...]:
        if len(points) < self.min_points:
            raise ValidationError(f"expected at least {self.min_points} point(s)")
        if len(points) > self.max_points:
            raise ValidationError(f"at most {self.max_points} points, got {len(points)}")
        return points

    @staticmethod
    def _decode(encoded: str, precision: int) -> tuple[LatLng, ...]:
        from engine.polyline import decode

        try:
            points = decode(encoded, precision)
        except (ValueError, IndexError):
            raise ValidationError("not a valid encoded polyline") from None
        for lat, lng in points:
            check_lat(lat)
            check_lng(lng)
        return tuple((float(lat), float(lng)) for lat, lng in points)


class BBox(fields.String):
    """``<minlng>,<minlat>,<maxlng>,<maxlat>`` -> tuple of 4 floats."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).setdefault("example", "7.40,43.72,7.44,43.75")
        super().__init__(**kwargs)

    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> tuple[float, float, float, float]:
        text = super()._deserialize(value, attr, data, **kwargs)
        parts = text.split(",")
        if len(parts) != 4:
            raise ValidationError(f'expected "<minlng>,<minlat>,<maxlng>,<maxlat>", got {text!r}')
        min_lng, min_lat, max_lng, max_lat = (_number(p.strip(), "bbox value") for p in parts)
        for lng in (min_lng, max_lng):
            check_lng(lng)
        for lat in (min_lat, max_lat):
            check_lat(lat)
        if min_lng >= max_lng or min_lat >= max_lat:
            raise ValidationError("bbox must have minlng < maxlng and minlat < maxlat")
        return (min_lng, min_lat, max_lng, max_lat)


class CommaList(fields.String):
    """``a,b,c`` -> tuple of non-empty stripped strings, optionally from a fixed choice."""

    def __init__(self, *, choices: tuple[str, ...] | None = None, max_items: int = 50, **kwargs: Any) -> None:
        self.choices, self.max_items = choices, max_items
        if choices:
            kwargs.setdefault("metadata", {}).setdefault(
                "description", "Comma-separated, any of: " + ", ".join(choices)
            )
        super().__init__(**kwargs)

    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> tuple[str, ...]:
        text = super()._deserialize(value, attr, data, **kwargs)
        items = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
        if not items:
            raise ValidationError("expected a comma-separated list with at least one item")
        if len(items) > self.max_items:
            raise ValidationError(f"at most {self.max_items} items, got {len(items)}")
        if self.choices:
            bad = [i for i in items if i not in self.choices]
            if bad:
                raise ValidationError(f"unknown value(s) {', '.join(bad)}; expected any of {', '.join(self.choices)}")
        return items


class Country(fields.String):
    """ISO 3166-1 alpha-2 or alpha-3 code of a known country, returned upper-case as given (the
    engine normalises); an unknown code is refused here, before any backend sees it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).setdefault("example", "MCO")
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs).strip().upper()
        if not (text.isalpha() and len(text) in (2, 3)):
            raise ValidationError(f"expected an ISO 3166-1 alpha-2 or alpha-3 code, got {value!r}")
        if to_alpha3(text) is None:
            raise ValidationError(f"unknown country code {text!r}: use ISO 3166-1 alpha-2 or alpha-3 (e.g. FI, FIN)")
        return text


def known_categories(value: str | tuple[str, ...]) -> None:
    """Validator: every item (a comma list or a tuple) is a category id of /v1/poi/categories or a
    raw ``key=value`` OSM tag; checked at the gateway, before any backend sees it."""
    items = value.split(",") if isinstance(value, str) else value
    try:
        resolve(items, parameter=None)
    except InvalidParameter as exc:
        raise ValidationError(exc.message) from None


class Text(fields.String):
    """Free text, stripped, non-empty, bounded length."""

    def __init__(self, *, max_length: int = 500, **kwargs: Any) -> None:
        self.max_length = max_length
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs).strip()
        if not text:
            raise ValidationError("must not be empty")
        if len(text) > self.max_length:
            raise ValidationError(f"at most {self.max_length} characters, got {len(text)}")
        if "\x00" in text:
            raise ValidationError("must not contain NUL characters")
        return text


class Parsed(fields.String):
    """A string parsed by an engine parser (which raises ``InvalidParameter``), e.g. the static
    map's ``markers`` and ``path`` mini-languages; loads as whatever the parser returns."""

    def __init__(self, parser: Callable[[str], Any], **kwargs: Any) -> None:
        self.parser = parser
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> Any:
        try:
            return self.parser(super()._deserialize(value, attr, data, **kwargs))
        except InvalidParameter as exc:
            raise ValidationError(exc.message) from None


class NumberList(fields.String):
    """``a,b,c`` -> tuple of floats within (lo, hi], at most ``max_items``; ascending and unique
    unless ``keep_order`` (e.g. timestamps, one per point)."""

    def __init__(self, *, lo: float, hi: float, max_items: int, keep_order: bool = False, **kwargs: Any) -> None:
        self.lo, self.hi, self.max_items, self.keep_order = lo, hi, max_items, keep_order
        super().__init__(**kwargs)

    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> tuple[float, ...]:
        text = super()._deserialize(value, attr, data, **kwargs)
        items = [p.strip() for p in text.split(",") if p.strip()]
        if not items:
            raise ValidationError("expected a comma-separated list of numbers")
        if len(items) > self.max_items:
            raise ValidationError(f"at most {self.max_items} values, got {len(items)}")
        values = [_number(p, "value") for p in items]
        bad = [v for v in values if not self.lo < v <= self.hi]
        if bad:
            raise ValidationError(f"each value must be > {self.lo:g} and <= {self.hi:g}, got {bad[0]:g}")
        return tuple(values) if self.keep_order else tuple(sorted(set(values)))


class Flag(fields.Boolean):
    """true/false, 1/0, yes/no."""

    truthy = {"true", "1", "yes", "on", "True", "TRUE"}
    falsy = {"false", "0", "no", "off", "False", "FALSE"}


class TravelProfile(fields.String):
    """A travel profile (``car``, ``foot``, ``bicycle``) or its Mapbox alias (``driving``,
    ``walking``, ``cycling``), loaded as the profile name (:mod:`engine.routing.profiles`)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("load_default", DEFAULT)
        metadata = kwargs.setdefault("metadata", {})
        metadata.setdefault(
            "description",
            "Travel profile: car, foot or bicycle (aliases driving, walking, cycling). The region must "
            "have been imported with it (`meridian import --profiles`); durations are the profile's.",
        )
        metadata.setdefault("enum", list(ACCEPTED))
        metadata.setdefault("example", DEFAULT)
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return canonical(text)
        except InvalidParameter:
            raise ValidationError(f"expected one of {', '.join(ACCEPTED)}; got {text!r}") from None
