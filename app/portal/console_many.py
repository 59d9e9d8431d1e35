"""The console's many-to-many views: the matrix (``POST /v1/matrix``) and the optimisation
(``POST /v1/optimization``).

Their forms are lines of text, one point, job or vehicle per line, turned here into the JSON body
the API takes (the API validates it; only what cannot be put in JSON at all, a point that is not
two numbers, is refused here). Their answers are turned into what the page draws: the matrix as a
table whose rows and columns are the numbered points, the plan as one coloured route per vehicle
with numbered stops, each vehicle's steps and the unassigned jobs. Both draw their map with
Meridian's static map function (:func:`app.portal.console.render_map`, counted like every console
map) and number their points in an SVG drawn over it (:func:`app.portal.console.badges`).

Form syntax::

    matrix      sources / destinations: one ``lat,lng`` per line (or separated by ``|``)
    jobs        ``lat,lng [HH:MM-HH:MM ...] [amount=N] [service=S]``  (a window may repeat)
    vehicles    ``lat,lng [lat,lng] [capacity=N] [HH:MM-HH:MM]``     (the second point: the end;
                default: back to the start)

Job and vehicle ids are their line numbers (from 1); times are seconds on the problem's clock,
written as a time of day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.portal.console import MAX_MARKERS, MAX_PATH_POINTS, Badge, thin
from engine.render.overlays import Marker, Path
from engine.services.staticmap import StaticMapParams, validate

LatLng = tuple[float, float]

# One colour per vehicle (by its line), for its route, its stops and its heading: dark enough
# for white numbers, and none of them in the base map (no pixel of the sample regions' maps at
# zooms 14-16 within 45 of one in any channel, so a route's colour is told apart from the roads').
VEHICLE_COLOURS = ("#e6194b", "#3cb44b", "#7c3aed", "#0891b2", "#f032e6", "#808000", "#000075", "#800000")
SOURCE_COLOUR, DESTINATION_COLOUR = "#dc2626", "#2563eb"
DEPOT_COLOUR, UNASSIGNED_COLOUR = "#111827", "#6b7280"
COLOURS = {"source": SOURCE_COLOUR, "destination": DESTINATION_COLOUR, "unassigned": UNASSIGNED_COLOUR}
MAX_TABLE_SIDE = 50  # rows and columns the page draws (the JSON below it has all of them)

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_POINT = re.compile(rf"^({_NUMBER}),({_NUMBER})$")
_CLOCK = r"(\d{1,2}):(\d{2})(?::(\d{2}))?"
_WINDOW = re.compile(rf"^{_CLOCK}-{_CLOCK}$")
_SETTING = re.compile(r"^(amount|service|capacity)=(\d+)$")
_EXAMPLE_JOBS = (
    "43.7396,7.4276 08:00-09:00 amount=2",
    "43.7362,7.4218 amount=1 service=300",
    "43.7335,7.4190 08:30-10:00 amount=2",
    "43.7318,7.4230 amount=1",
    "43.7406,7.4270 09:00-10:00 amount=1",
    "43.7372,7.4200 amount=2",
    "43.7410,7.4215 amount=1 service=300",
    "43.7345,7.4170 08:00-08:45 amount=1",
    "43.7395,7.4230 amount=9",
)
_EXAMPLE_VEHICLES = (
    "43.7384,7.4246 capacity=5 08:00-12:00",
    "43.7384,7.4246 capacity=5 08:00-12:00",
    "43.7312,7.4197 43.7384,7.4246 capacity=5 08:00-12:00",
)
# A delivery round on the Monaco sample: three vans, nine jobs, one too heavy for every van.
EXAMPLE = {"jobs": "\n".join(_EXAMPLE_JOBS), "vehicles": "\n".join(_EXAMPLE_VEHICLES), "profile": "car"}


class FormError(ValueError):
    """A line of a form that cannot be put in the API's body: shown beside the form, nothing is sent."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")


# ---------------------------------------------------------------- forms -> bodies
def _lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of the non-blank lines, a comma's spaces closed up (``43.7, 7.4``)."""
    out = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        line = re.sub(r"\s*,\s*", ",", line.strip())
        if line:
            out.append((number, line))
    return out


def _point(text: str, name: str, number: int) -> LatLng:
    match = _POINT.match(text)
    if match is None:
        raise FormError(name, f"line {number}: {text!r} is not a lat,lng point")
    return float(match.group(1)), float(match.group(2))


def _seconds(hours: str, minutes: str, seconds: str | None) -> int:
    return int(hours) * 3600 + int(minutes) * 60 + int(seconds or 0)


def _window(match: re.Match[str]) -> list[int]:
    return [_seconds(*match.group(1, 2, 3)), _seconds(*match.group(4, 5, 6))]


def points(text: str, name: str) -> list[LatLng]:
    """The points of a list field, one per line or separated by ``|``."""
    out: list[LatLng] = []
    for number, line in _lines(text):
        out.extend(_point(item.strip(), name, number) for item in line.split("|") if item.strip())
    return out


def _latlng(point: LatLng) -> dict[str, float]:
    return {"lat": point[0], "lng": point[1]}


def _lnglat(point: LatLng) -> list[float]:
    return [point[1], point[0]]


def matrix_body(form: dict[str, str]) -> dict[str, Any]:
    """``POST /v1/matrix``'s body; destinations only when given (the API's default: the sources)."""
    body: dict[str, Any] = {"sources": [_latlng(p) for p in points(form.get("sources", ""), "sources")]}
    destinations = points(form.get("destinations", ""), "destinations")
    if destinations:
        body["destinations"] = [_latlng(p) for p in destinations]
    body["profile"] = (form.get("profile") or "car").strip()
    return body


def _items(line: str, name: str, number: int) -> tuple[list[LatLng], list[list[int]], dict[str, int]]:
    """A job or vehicle line: its points, time windows and ``name=N`` settings."""
    found_points: list[LatLng] = []
    windows: list[list[int]] = []
    settings: dict[str, int] = {}
    for item in line.split():
        window, setting = _WINDOW.match(item), _SETTING.match(item)
        if window is not None:
            windows.append(_window(window))
        elif setting is not None:
            settings[setting.group(1)] = int(setting.group(2))
        elif _POINT.match(item):
            found_points.append(_point(item, name, number))
        else:
            raise FormError(
                name, f"line {number}: {item!r} is neither a lat,lng point, a HH:MM-HH:MM window nor a name=N setting"
            )
    return found_points, windows, settings


def _job(line: str, number: int) -> dict[str, Any]:
    found, windows, settings = _items(line, "jobs", number)
    if len(found) != 1 or set(settings) - {"amount", "service"}:
        raise FormError("jobs", f"line {number}: one lat,lng point, then HH:MM-HH:MM windows, amount=N, service=S")
    job: dict[str, Any] = {"id": number, "location": _lnglat(found[0])}
    if windows:
        job["time_windows"] = windows
    if "amount" in settings:
        job["delivery"] = [settings["amount"]]
    if "service" in settings:
        job["service"] = settings["service"]
    return job


def _vehicle(line: str, number: int, profile: str) -> dict[str, Any]:
    found, windows, settings = _items(line, "vehicles", number)
    if not 1 <= len(found) <= 2 or len(windows) > 1 or set(settings) - {"capacity"}:
        raise FormError(
            "vehicles",
            f"line {number}: a start lat,lng, an end lat,lng if not back to the start, capacity=N, HH:MM-HH:MM",
        )
    vehicle: dict[str, Any] = {
        "id": number,
        "start": _lnglat(found[0]),
        "end": _lnglat(found[-1]),
        "profile": profile,
    }
    if "capacity" in settings:
        vehicle["capacity"] = [settings["capacity"]]
    if windows:
        vehicle["time_window"] = windows[0]
    return vehicle


def optimization_body(form: dict[str, str]) -> dict[str, Any]:
    """``POST /v1/optimization``'s body in VROOM's format; every vehicle on the chosen profile; the
    routes' lines as GeoJSON (drawn on the map)."""
    profile = (form.get("profile") or "car").strip()
    return {
        "jobs": [_job(line, number) for number, line in _lines(form.get("jobs", ""))],
        "vehicles": [_vehicle(line, number, profile) for number, line in _lines(form.get("vehicles", ""))],
        "geometry": "geojson",
    }


# ---------------------------------------------------------------- answers -> views
def duration_text(seconds: float | None) -> str:
    """``m:ss`` (``h:mm:ss`` from an hour); ``—`` for no route."""
    if seconds is None:
        return "—"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def distance_text(metres: float | None) -> str:
    if metres is None:
        return "—"
    return f"{metres:.0f} m" if metres < 1000 else f"{metres / 1000:.2f} km"


def clock(seconds: int) -> str:
    """A time on the problem's clock as a time of day (past 24 h the hours go on)."""
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


@dataclass
class ManyView:
    """What a many-to-many answer draws: the map's overlays and the numbered points over it."""

    markers: list[Marker] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    badges: list[Badge] = field(default_factory=list)  # the badges' positions are set by console.badges
    table: dict[str, Any] | None = None  # the matrix
    plan: dict[str, Any] | None = None  # the optimisation

    def map_params(self) -> StaticMapParams | None:
        if not self.markers and not self.paths:
            return None
        budget = max(2, MAX_PATH_POINTS // max(1, len(self.paths)))
        paths = tuple(Path(tuple(thin(list(p.points), budget)), p.color, p.weight) for p in self.paths)
        params = StaticMapParams(width=640, height=400, markers=tuple(self.markers[:MAX_MARKERS]), paths=paths)
        validate(params)
        return params


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _cell_rows(answer: dict[str, Any], key: str, rows: int, columns: int) -> list[list[float | None]]:
    """A ``rows`` x ``columns`` corner of an annotation (``None`` where absent or null)."""
    given = answer.get(key)
    grid = given if isinstance(given, list) else []
    out = []
    for i in range(rows):
        row = grid[i] if i < len(grid) and isinstance(grid[i], list) else []
        out.append([_number(row[j]) if j < len(row) else None for j in range(columns)])
    return out


def matrix_view(body: dict[str, Any], answer: dict[str, Any]) -> ManyView:
    """The table (sources numbered from 1, destinations after them unless they are the sources)
    and the points on the map, each cell naming its two points for the highlight."""
    sources = [(p["lat"], p["lng"]) for p in body["sources"]]
    given = [(p["lat"], p["lng"]) for p in body.get("destinations", [])]
    shared = not given
    destinations = sources if shared else given
    rows, columns = min(len(sources), MAX_TABLE_SIDE), min(len(destinations), MAX_TABLE_SIDE)
    durations = _cell_rows(answer, "durations", rows, columns)
    distances = _cell_rows(answer, "distances", rows, columns)
    first = 1 if shared else len(sources) + 1
    view = ManyView()
    for i, point in enumerate(sources):
        ids = f"s{i} d{i}" if shared else f"s{i}"
        view.markers.append(Marker(point[0], point[1], SOURCE_COLOUR))
        view.badges.append(Badge(point, str(i + 1), SOURCE_COLOUR, ids, f"source {i + 1}"))
    for j, point in enumerate([] if shared else destinations):
        view.markers.append(Marker(point[0], point[1], DESTINATION_COLOUR))
        view.badges.append(Badge(point, str(first + j), DESTINATION_COLOUR, f"d{j}", f"destination {first + j}"))
    view.table = {
        "columns": [{"number": first + j, "ids": f"d{j}"} for j in range(columns)],
        "rows": [
            {
                "number": i + 1,
                "ids": f"s{i}",
                "cells": [
                    {
                        "ids": f"s{i} d{j}",
                        "duration": durations[i][j],
                        "distance": distances[i][j],
                        "duration_text": duration_text(durations[i][j]),
                        "distance_text": distance_text(distances[i][j]),
                    }
                    for j in range(columns)
                ],
            }
            for i in range(rows)
        ],
        "cut": len(sources) > rows or len(destinations) > columns,
        "shared": shared,
    }
    return view


def _location(value: Any) -> LatLng | None:
    """VROOM's ``[lng, lat]`` as ``(lat, lng)``."""
    if isinstance(value, list) and len(value) == 2 and all(_number(v) is not None for v in value):
        return float(value[1]), float(value[0])
    return None


def _line(geometry: Any) -> list[LatLng]:
    coords = geometry.get("coordinates") if isinstance(geometry, dict) else None
    return [loc for loc in map(_location, coords or []) if loc is not None]


def _colours(body: dict[str, Any]) -> dict[Any, str]:
    """Each vehicle's colour, by its line in the form."""
    return {v["id"]: VEHICLE_COLOURS[i % len(VEHICLE_COLOURS)] for i, v in enumerate(body["vehicles"])}


def plan_view(body: dict[str, Any], answer: dict[str, Any]) -> ManyView:
    """Each route in its vehicle's colour with its stops numbered in order, the depots, and the
    unassigned jobs (grey, with the API's reason when it gives one)."""
    colours = _colours(body)
    view = ManyView()
    depots: dict[LatLng, str] = {}  # location -> badge id

    def depot(point: LatLng) -> str:
        if point not in depots:
            depots[point] = f"depot{len(depots)}"
            view.markers.append(Marker(point[0], point[1], DEPOT_COLOUR))
            view.badges.append(Badge(point, "D", DEPOT_COLOUR, depots[point], "depot"))
        return depots[point]

    routes = []
    for r, route in enumerate(answer.get("routes") or []):
        colour = colours.get(route.get("vehicle"), VEHICLE_COLOURS[r % len(VEHICLE_COLOURS)])
        line = _line(route.get("geometry"))
        if len(line) >= 2:
            view.paths.append(Path(tuple(line), colour, 5))
        steps, stop = [], 0
        for k, step in enumerate(route.get("steps") or []):
            point = _location(step.get("location"))
            ids = ""
            if point is not None and step.get("type") in ("start", "end"):
                ids = depot(point)
            elif point is not None:
                stop += 1
                ids = f"r{r}s{k}"
                view.markers.append(Marker(point[0], point[1], "white"))
                title = f"vehicle {route.get('vehicle')}, stop {stop}: job {step.get('id')}"
                view.badges.append(Badge(point, str(stop), colour, ids, title))
            steps.append(
                {
                    "ids": ids,
                    "stop": stop if step.get("type") not in ("start", "end") else "",
                    "type": step.get("type", ""),
                    "id": step.get("id", ""),
                    "arrival": clock(step.get("arrival", 0)),
                    "waiting": duration_text(step.get("waiting_time", 0)),
                    "service": duration_text(step.get("service", 0)),
                    "load": ", ".join(str(n) for n in step.get("load") or []),
                }
            )
        routes.append(
            {
                "vehicle": route.get("vehicle"),
                "colour": colour,
                "steps": steps,
                "duration": duration_text(route.get("duration")),
                "distance": distance_text(route.get("distance")),
            }
        )
    unassigned = []
    for u, task in enumerate(answer.get("unassigned") or []):
        point = _location(task.get("location"))
        ids = f"u{u}"
        if point is not None:
            view.markers.append(Marker(point[0], point[1], UNASSIGNED_COLOUR))
            view.badges.append(Badge(point, "!", UNASSIGNED_COLOUR, ids, f"job {task.get('id')}: unassigned"))
        unassigned.append({"ids": ids, "id": task.get("id"), "type": task.get("type"), "reason": task.get("reason")})
    summary = answer.get("summary") or {}
    view.plan = {
        "routes": routes,
        "unassigned": unassigned,
        "unused": [v["id"] for v in body["vehicles"] if v["id"] not in {r["vehicle"] for r in routes}],
        "duration": duration_text(summary.get("duration")),
        "distance": distance_text(summary.get("distance")),
    }
    return view
