"""Markers and paths drawn over the map, and the Google-Static-Maps-style string syntax for them.

Syntax (the web layer passes the raw strings; each ``markers``/``path`` parameter may repeat):

``markers=<style>|<style>|<point>|<point>...``
    styles are ``name:value`` items: ``color:red`` (a name: black, brown, green, purple, yellow,
    blue, gray, orange, red, white; or ``0xRRGGBB`` / ``0xRRGGBBAA`` / ``#RRGGBB``) and
    ``label:A`` (one letter or digit, upper-cased). Points are ``<lat>,<lng>``. All points of one
    ``markers`` string share its style, e.g. ``color:red|label:A|43.73,7.42|43.74,7.43``.

``path=<style>|<style>|<point>|<point>...``
    styles ``color:`` (as above, default blue) and ``weight:`` (line width in pixels, 1-20);
    points as ``<lat>,<lng>`` items, or one encoded polyline item ``enc:<polyline>`` /
    ``polyline:<polyline>`` (precision 5) or ``polyline6:<polyline>`` (precision 6). A path
    needs at least 2 points, e.g. ``color:0x0000ff|weight:5|43.73,7.42|43.74,7.43``.

Errors raise :class:`InvalidParameter` with ``parameter="markers"`` or ``"path"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine import polyline
from engine.errors import InvalidParameter
from engine.render.style import NAMED_COLOURS

MAX_WEIGHT = 20
_HEX = re.compile(r"^(?:0x|#)([0-9a-fA-F]{6})([0-9a-fA-F]{2})?$")


@dataclass(frozen=True)
class Marker:
    lat: float
    lng: float
    color: str = "red"
    label: str | None = None


@dataclass(frozen=True)
class Path:
    points: tuple[tuple[float, float], ...]  # (lat, lng)
    color: str = "blue"
    weight: int = 3


def parse_color(value: str, parameter: str = "color") -> tuple[float, float, float, float]:
    """A colour name or hex string -> RGBA floats in [0, 1]."""
    text = value.strip().lower()
    if text in NAMED_COLOURS:
        text = NAMED_COLOURS[text]
    m = _HEX.match(text)
    if not m:
        raise InvalidParameter(
            f"unknown color {value!r}: use a name ({', '.join(sorted(NAMED_COLOURS))}) or 0xRRGGBB[AA]",
            parameter=parameter,
        )
    rgb = m.group(1)
    alpha = int(m.group(2), 16) / 255.0 if m.group(2) else 1.0
    return (int(rgb[0:2], 16) / 255.0, int(rgb[2:4], 16) / 255.0, int(rgb[4:6], 16) / 255.0, alpha)


def parse_point(text: str, parameter: str) -> tuple[float, float]:
    parts = text.split(",")
    if len(parts) != 2:
        raise InvalidParameter(f"{text!r} is not a <lat>,<lng> point", parameter=parameter)
    try:
        lat, lng = float(parts[0]), float(parts[1])
    except ValueError:
        raise InvalidParameter(f"{text!r} is not a <lat>,<lng> point", parameter=parameter) from None
    if not (-90.0 <= lat <= 90.0 and -180.0 <= lng <= 180.0):
        raise InvalidParameter(f"point {text!r} is out of range", parameter=parameter)
    return lat, lng


def _split(value: str, parameter: str) -> list[str]:
    items = [item.strip() for item in value.split("|")]
    items = [item for item in items if item]
    if not items:
        raise InvalidParameter(f"{parameter} is empty", parameter=parameter)
    return items


def parse_markers(value: str) -> tuple[Marker, ...]:
    """One ``markers`` parameter value -> its markers (see the module docstring)."""
    color, label = "red", None
    markers: list[Marker] = []
    for item in _split(value, "markers"):
        key, sep, rest = item.partition(":")
        if sep and not _looks_numeric(key):
            key = key.lower()
            if key == "color":
                parse_color(rest, "markers")
                color = rest
            elif key == "label":
                if len(rest) != 1 or not rest.isalnum() or not rest.isascii():
                    raise InvalidParameter("a marker label is one letter or digit", parameter="markers")
                label = rest.upper()
            elif key == "size":
                continue  # accepted for compatibility, markers have one size
            else:
                raise InvalidParameter(f"unknown marker style {key!r}", parameter="markers")
            if markers:
                raise InvalidParameter("marker styles come before the points", parameter="markers")
        else:
            lat, lng = parse_point(item, "markers")
            markers.append(Marker(lat, lng, color, label))
    if not markers:
        raise InvalidParameter("markers needs at least one <lat>,<lng> point", parameter="markers")
    return tuple(markers)


def parse_path(value: str) -> Path:
    """One ``path`` parameter value -> a :class:`Path` (see the module docstring)."""
    color, weight = "blue", 3
    points: list[tuple[float, float]] = []
    items = _split(value, "path")
    for n, item in enumerate(items):
        key, sep, rest = item.partition(":")
        key_l = key.lower()
        if sep and key_l in ("enc", "polyline", "polyline6"):
            if n + 1 < len(items):  # '|' is a polyline character: the rest is all polyline
                rest = value[value.index(item) + len(key) + 1 :].strip()
            try:
                decoded = polyline.decode(rest, 6 if key_l == "polyline6" else 5)
            except ValueError as exc:
                raise InvalidParameter(f"bad encoded polyline: {exc}", parameter="path") from None
            for lat, lng in decoded:
                if not (-90.0 <= lat <= 90.0 and -180.0 <= lng <= 180.0):
                    raise InvalidParameter("encoded polyline point out of range", parameter="path")
            points.extend(decoded)
            break
        elif sep and not _looks_numeric(key):
            if points:
                raise InvalidParameter("path styles come before the points", parameter="path")
            if key_l == "color":
                parse_color(rest, "path")
                color = rest
            elif key_l == "weight":
                try:
                    weight = int(rest)
                except ValueError:
                    raise InvalidParameter("weight must be an integer", parameter="path") from None
                if not 1 <= weight <= MAX_WEIGHT:
                    raise InvalidParameter(f"weight must be between 1 and {MAX_WEIGHT}", parameter="path")
            else:
                raise InvalidParameter(f"unknown path style {key!r}", parameter="path")
        else:
            points.append(parse_point(item, "path"))
    if len(points) < 2:
        raise InvalidParameter("a path needs at least 2 points", parameter="path")
    return Path(tuple(points), color, weight)


def _looks_numeric(text: str) -> bool:
    t = text.strip().lstrip("+-")
    return bool(t) and (t[0].isdigit() or t[0] == ".")
