"""The live console: the 13 functions, their ``/v1`` parameters (read from the served OpenAPI
document, so the forms follow the API; the matrix and optimisation take a JSON body built by
their own forms, :mod:`app.portal.console_many`), a call through the app with the user's own key,
and a map of the answer drawn by Meridian's static map function.

Map overlays are found by walking the JSON answer: an object with numeric ``lat`` and ``lng`` is
a marker (the request's own point too, for isochrones and nearest), a GeoJSON LineString a path,
a (Multi)Polygon ring a closed path. The map is a static map call of the user's key like
``/v1/staticmaps`` (same worker queue and cache): refused when the key's plan or scopes exclude
static maps (the answer is then shown without it) and counted against the account's quota.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup, escape

from app.registry import REGISTRY
from app.runtime import Runtime
from engine import polyline
from engine.errors import ErrorKind, MeridianError
from engine.render.overlays import Marker, Path
from engine.render.staticmap import PIN_HEAD_PX
from engine.results import BinaryResult
from engine.services.staticmap import StaticMapParams, validate, viewport_for


@dataclass(frozen=True)
class ConsoleFunction:
    service: str
    title: str
    path: str
    defaults: dict[str, str]  # a POST function's: every field of its form
    # the request's own points drawn first (the red marker "A"), e.g. ("lat,lng",) or ("origin", "destination")
    request_points: tuple[str, ...] = ()
    answer_points: bool = True  # False: the answer's points are many (route steps), its lines say it all
    method: str = "GET"  # POST: a JSON body from the function's own form (app.portal.console_many)


# The defaults are answered by the bundled Monaco and Helsinki samples.
FUNCTIONS: tuple[ConsoleFunction, ...] = (
    ConsoleFunction("geocoding", "Geocoding", "/v1/geocoding", {"query": "Mannerheimintie 5, Helsinki"}),
    ConsoleFunction(
        "reverse_geocoding",
        "Reverse geocoding",
        "/v1/reverse-geocoding",
        {"lat": "60.1675", "lng": "24.9427"},
        ("lat,lng",),
    ),
    ConsoleFunction("suggest", "Suggest", "/v1/suggest", {"q": "Mannerh"}),
    ConsoleFunction(
        "poi", "POI search", "/v1/poi", {"category": "cafe", "near": "43.7384,7.4246", "radius": "1000"}, ("near",)
    ),
    ConsoleFunction(
        "proximity",
        "Nearest",
        "/v1/proximity/nearest",
        {"lat": "43.7384", "lng": "7.4246", "categories": "fuel,parking"},
        ("lat,lng",),
    ),
    ConsoleFunction(
        "routing",
        "Routing",
        "/v1/routing",
        {"origin": "43.7312,7.4197", "destination": "43.7406,7.4270", "geometry": "geojson"},
        ("origin", "waypoints", "destination"),
        answer_points=False,
    ),
    ConsoleFunction(
        "snaptoroad", "Snap to road", "/v1/snaptoroad", {"points": "43.7384,7.4246|43.7390,7.4252|43.7396,7.4260"}
    ),
    ConsoleFunction(
        "isochrone", "Isochrone", "/v1/isochrone", {"lat": "43.7384", "lng": "7.4246", "time": "2,5"}, ("lat,lng",)
    ),
    ConsoleFunction(
        "staticmap", "Static map", "/v1/staticmaps", {"center": "43.7384,7.4246", "zoom": "15", "size": "600x400"}
    ),
    ConsoleFunction("geometry", "Geometry download", "/v1/geoment", {"name": "Monaco"}),
    ConsoleFunction(
        "geofencing", "Geofencing check", "/v1/geofencing", {"lat": "60.1699", "lng": "24.9384"}, ("lat,lng",)
    ),
    ConsoleFunction(
        "matrix",
        "Matrix",
        "/v1/matrix",
        {"sources": "43.7312,7.4197\n43.7384,7.4246\n43.7406,7.4270", "destinations": "", "profile": "car"},
        method="POST",
    ),
    ConsoleFunction(
        "optimization",
        "Optimisation",
        "/v1/optimization",
        {
            "jobs": "43.7384,7.4246 amount=1\n43.7406,7.4270 amount=1\n43.7350,7.4210 amount=1",
            "vehicles": "43.7312,7.4197 capacity=3",
            "profile": "car",
        },
        method="POST",
    ),
)
BY_SERVICE = {f.service: f for f in FUNCTIONS}
MAX_SHOWN_BYTES = 200_000
MAX_MARKERS = 50
MAX_PATH_POINTS = 900
PALETTE = ("0x2563ebcc", "0xdc2626cc", "0x16a34acc", "0x9333eacc")
_LABELS = string.ascii_uppercase
_CODE_SPAN = re.compile(r"`([^`]+)`")


def placeholder(example: Any) -> str:
    """An OpenAPI example as the text a user types in the parameter's one field: a repeatable
    parameter's first value (``markers``, ``path``), a number or flag as written in a URL."""
    if isinstance(example, list):
        return placeholder(example[0]) if example else ""
    if example is None:
        return ""
    if isinstance(example, bool):
        return "true" if example else "false"
    return str(example)


def hint(description: str, limit: int = 160) -> Markup:
    """A parameter's description (Markdown in the OpenAPI document) as safe HTML: escaped, cut
    to ``limit`` characters, its `code spans` as ``<code>`` (an unpaired backtick stays as it is)."""
    text = description if len(description) <= limit else description[: limit - 3].rstrip() + "..."
    return Markup(_CODE_SPAN.sub(lambda m: f"<code>{m.group(1)}</code>", str(escape(text))))


def parameters(spec: dict[str, Any], function: ConsoleFunction) -> list[dict[str, Any]]:
    """The GET query parameters of the function's path in the OpenAPI document (``async`` left
    out: the console waits for the answer)."""
    op = spec.get("paths", {}).get(function.path, {}).get("get", {})
    out = []
    for p in op.get("parameters", []):
        if p.get("in") != "query" or p["name"] == "async":
            continue
        out.append(
            {
                "name": p["name"],
                "description": p.get("description", ""),
                "hint": hint(p.get("description", "")),
                "example": placeholder(p.get("example", p.get("schema", {}).get("example"))),
                "required": bool(p.get("required")),
                # a fixed choice (e.g. the travel profile): the form offers a selector
                "choices": list(p.get("schema", {}).get("enum") or ()),
            }
        )
    return out


def query_string(allowed: list[dict[str, Any]], form: dict[str, str]) -> str:
    """Only the function's own parameters, only those filled in."""
    names = [p["name"] for p in allowed]
    return urlencode([(n, form[n].strip()) for n in names if (form.get(n) or "").strip()])


# ---------------------------------------------------------------- overlays
def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _ring_points(coords: list[Any]) -> list[tuple[float, float]]:
    return [(float(c[1]), float(c[0])) for c in coords if isinstance(c, list | tuple) and len(c) >= 2]


def _geometry_lines(geometry: dict[str, Any]) -> list[list[tuple[float, float]]]:
    kind, coords = geometry.get("type"), geometry.get("coordinates")
    if not isinstance(coords, list):
        return []
    if kind == "LineString":
        return [_ring_points(coords)]
    if kind in ("MultiLineString", "Polygon"):
        return [_ring_points(part) for part in coords if isinstance(part, list)]
    if kind == "MultiPolygon":
        return [
            _ring_points(ring) for poly in coords if isinstance(poly, list) for ring in poly if isinstance(ring, list)
        ]
    return []


def overlays(answer: Any) -> tuple[list[tuple[float, float]], list[list[tuple[float, float]]]]:
    """(marker points, lines) found in a JSON answer."""
    points: list[tuple[float, float]] = []
    lines: list[list[tuple[float, float]]] = []

    def walk(node: Any, depth: int) -> None:
        if depth > 12:
            return
        if isinstance(node, dict):
            lat, lng = _number(node.get("lat")), _number(node.get("lng"))
            if lat is not None and lng is not None and -90 <= lat <= 90 and -180 <= lng <= 180:
                points.append((lat, lng))
            if isinstance(node.get("type"), str) and "coordinates" in node:
                if node["type"] == "Point" and isinstance(node["coordinates"], list) and len(node["coordinates"]) >= 2:
                    points.append((float(node["coordinates"][1]), float(node["coordinates"][0])))
                lines.extend(line for line in _geometry_lines(node) if len(line) >= 2)
                return
            encoded = node.get("geometry")
            if isinstance(encoded, str) and 0 < len(encoded) < 200_000:  # a route as an encoded polyline
                try:
                    line = [(float(lat), float(lng)) for lat, lng in polyline.decode(encoded, 5)]
                except (ValueError, IndexError):
                    line = []
                if len(line) >= 2:
                    lines.append(line)
            for value in node.values():
                walk(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                walk(value, depth + 1)

    walk(answer, 0)
    return points, lines


def thin(line: list[tuple[float, float]], budget: int) -> list[tuple[float, float]]:
    if len(line) <= budget:
        return line
    step = -(-len(line) // budget)
    thinned = line[::step]
    return thinned if thinned[-1] == line[-1] else [*thinned, line[-1]]


def map_params(answer: Any, given: list[tuple[float, float]], answer_points: bool = True) -> StaticMapParams | None:
    """The map of an answer: the request's points first (red), then the answer's (blue), and
    its lines and polygon rings as paths."""
    points, lines = overlays(answer)
    if not answer_points and lines:
        points = []
    # de-duplicate (a feature's point and its centroid may repeat), keep the order
    seen: set[tuple[float, float]] = set()
    unique: list[tuple[float, float]] = []
    for p in [*given, *points]:
        if p not in seen:
            seen.add(p)
            unique.append(p)
    unique = unique[:MAX_MARKERS]
    if not unique and not lines:
        return None
    budget = max(2, MAX_PATH_POINTS // max(1, len(lines)))
    paths = tuple(Path(tuple(thin(line, budget)), PALETTE[i % len(PALETTE)], 4) for i, line in enumerate(lines[:20]))
    markers = tuple(
        Marker(lat, lng, "red" if (lat, lng) in given else "blue", _LABELS[i] if i < len(_LABELS) else None)
        for i, (lat, lng) in enumerate(unique)
    )
    params = StaticMapParams(width=640, height=400, markers=markers, paths=paths)
    validate(params)
    return params


@dataclass(frozen=True)
class Badge:
    """A numbered point drawn over the map (an SVG over the image: any number, highlighted when a
    table cell or a step row naming one of its ``ids`` is hovered or selected)."""

    point: tuple[float, float]  # (lat, lng)
    text: str
    colour: str  # #RRGGBB
    ids: str  # space-separated names, e.g. "s0 d0" (source 0, also destination 0)
    title: str


def frame(params: StaticMapParams, badges: list[Badge]) -> dict[str, Any]:
    """Where the badges go over the map of ``params`` (image pixels, as the static map function
    places the point), and the map's window for turning a click back into a point: the Mercator
    x of its left edge, y of its top edge and metres per pixel."""
    vp = viewport_for(params)
    minx, _, _, maxy = vp.bounds
    placed = []
    for badge in badges:
        x, y = vp.to_pixel(badge.point[0], badge.point[1])
        placed.append({"badge": badge, "x": round(float(x) / vp.scale, 1), "y": round(float(y) / vp.scale, 1)})
    return {
        "width": vp.width,
        "height": vp.height,
        "minx": round(minx, 2),
        "maxy": round(maxy, 2),
        "mpp": vp.mpp,
        "head": PIN_HEAD_PX,
        "badges": placed,
    }


def render_map(rt: Runtime, key: str, params: StaticMapParams) -> BinaryResult:
    """The map as a ``staticmap`` call of ``key``: authorized by its plan and scopes (403) and
    counted against its account's quota (429, 503 when the quota store is away and the plan
    fails closed) before it is drawn."""
    record = rt.access.authenticate(key)
    rt.access.admit(record, "staticmap")
    result = rt.run(REGISTRY["staticmap"], params)
    if not isinstance(result, BinaryResult):
        raise TypeError("the static map function answered something other than an image")
    return result


def map_refusal(exc: MeridianError) -> str:
    """The note shown instead of a map that the key may not draw."""
    if exc.kind is ErrorKind.FORBIDDEN:
        return "no map: static maps are not in your plan (or in this key's scopes)"
    if exc.kind is ErrorKind.QUOTA_EXCEEDED:
        return f"no map: your plan's quota is used up for now ({exc.message})"
    return f"no map: {exc.message}"


def _point(text: str) -> tuple[float, float] | None:
    lat, sep, lng = text.partition(",")
    try:
        point = (float(lat), float(lng)) if sep else None
    except ValueError:
        return None
    if point is None or not (-90 <= point[0] <= 90 and -180 <= point[1] <= 180):
        return None
    return point


def request_points(function: ConsoleFunction, form: dict[str, str]) -> list[tuple[float, float]]:
    """The points the request itself names (``lat,lng`` = the two fields; ``waypoints`` may list
    several separated by ``|``); unreadable ones are skipped (the API names the error)."""
    out: list[tuple[float, float]] = []
    for name in function.request_points:
        if name == "lat,lng":
            raw = [f"{form.get('lat', '')},{form.get('lng', '')}"]
        else:
            raw = (form.get(name) or "").split("|")
        out.extend(p for p in (_point(item.strip()) for item in raw) if p is not None)
    return out


def pretty(body: bytes) -> str:
    try:
        text = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        text = body.decode("utf-8", "replace")
    if len(text) > MAX_SHOWN_BYTES:
        text = text[:MAX_SHOWN_BYTES] + f"\n... ({len(text) - MAX_SHOWN_BYTES} more characters not shown)"
    return text
