"""Snap to road: a GPS trace matched onto the road network (HMM map matching).

``points`` are ``(lat, lng)`` pairs in travel order (1..``Limits.snaptoroad_points``); one point
is the degenerate case (nearest road within ``Limits.snap_max_distance_m``). ``radius`` is the
GPS accuracy in metres (standard deviation of the noise, like OSRM's ``radiuses``; default 10);
candidate roads are searched within ``max(40, 4 * radius)`` of each point. ``timestamps``
(seconds, non-decreasing, one per point) bound the plausible speed between points.

Result::

    {"snapped": [{"original_index": 0, "coord": {"lat", "lng"}, "name": "Rue Grimaldi",
                  "way_id": 4097656, "distance": 6.2}, ...],
     "geometry": GeoJSON LineString (MultiLineString when the trace had to be split, Point for
                 a single point)}

Input points with no road within the search radius are left out of ``snapped`` (their index is
missing). With ``interpolate=True`` the vertices of the matched path between two input points
are added as entries without ``original_index`` and ``distance`` (as Google's snapToRoads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from config.settings import Limits
from engine.dataset import DatasetRegistry
from engine.errors import DatasetError, InvalidParameter
from engine.geo import round_coord
from engine.matching.hmm import MatchOptions, MatchedSegment, match, segment_polyline
from engine.matching.network import RoadNetwork

DEFAULT_SIGMA_M = 10.0


@dataclass(frozen=True)
class SnapParams:
    points: tuple[tuple[float, float], ...]  # (lat, lng)
    timestamps: tuple[float, ...] | None = None
    interpolate: bool = False
    radius: float | None = None  # GPS accuracy (m)


def _validate(params: SnapParams, limits: Limits) -> None:
    n = len(params.points)
    if n < 1 or n > limits.snaptoroad_points:
        raise InvalidParameter(
            f"points: between 1 and {limits.snaptoroad_points} points are required, got {n}",
            parameter="points",
        )
    for lat, lng in params.points:
        if not (math.isfinite(lat) and math.isfinite(lng) and -90 <= lat <= 90 and -180 <= lng <= 180):
            raise InvalidParameter(f"points: invalid coordinate {lat},{lng}", parameter="points")
    if params.timestamps is not None:
        ts = params.timestamps
        if len(ts) != n:
            raise InvalidParameter(
                f"timestamps: {len(ts)} timestamps for {n} points", parameter="timestamps"
            )
        if any(not math.isfinite(t) for t in ts) or any(b < a for a, b in zip(ts, ts[1:])):
            raise InvalidParameter(
                "timestamps must be finite and non-decreasing", parameter="timestamps"
            )
    if params.radius is not None and not (0 < params.radius <= limits.snaptoroad_max_radius_m):
        raise InvalidParameter(
            f"radius must be in (0, {limits.snaptoroad_max_radius_m:g}] metres",
            parameter="radius",
        )


def network_for(datasets: DatasetRegistry, lat: float, lng: float, parameter: str) -> RoadNetwork:
    """The road network of the smallest dataset covering the point that has a road graph."""
    for ds in datasets.covering(lat, lng, margin_deg=0.01):
        try:
            return ds.component("roadnet").network
        except DatasetError:
            continue
    raise InvalidParameter(f"{parameter}: no road data covers {lat},{lng}", parameter=parameter)


def _coord(net: RoadNetwork, x: float, y: float) -> dict:
    lat, lng = net.proj.to_latlng(x, y)
    return {"lat": round_coord(lat), "lng": round_coord(lng)}


def _line(net: RoadNetwork, xy: np.ndarray) -> list[list[float]]:
    lat, lng = net.proj.to_latlng(xy[:, 0], xy[:, 1])
    return [[round_coord(b), round_coord(a)] for a, b in zip(lat, lng)]


def _entry(net: RoadNetwork, edge: int, x: float, y: float) -> dict:
    return {"coord": _coord(net, x, y), "name": net.name(edge), "way_id": int(net.way_id[edge])}


def run(datasets: DatasetRegistry, params: SnapParams, limits: Limits | None = None) -> dict:
    limits = limits or Limits()
    _validate(params, limits)
    lat0, lng0 = params.points[0]
    net = network_for(datasets, lat0, lng0, "points")
    lat = np.array([p[0] for p in params.points])
    lng = np.array([p[1] for p in params.points])
    x, y = net.proj.to_xy(lat, lng)
    sigma = params.radius or DEFAULT_SIGMA_M

    if len(params.points) == 1:
        return _nearest(net, float(x[0]), float(y[0]), limits)

    ts = np.array(params.timestamps, dtype=np.float64) if params.timestamps is not None else None
    segments = match(net, x, y, ts, MatchOptions(sigma=sigma))
    if not segments:
        raise InvalidParameter(
            f"points: no road within {MatchOptions(sigma=sigma).radius:.0f} m of any point",
            parameter="points",
        )
    snapped: list[dict] = []
    lines: list[list[list[float]]] = []
    for seg in segments:
        snapped.extend(_segment_entries(net, seg, params.interpolate))
        poly = segment_polyline(seg)
        if len(poly) >= 2:
            lines.append(_line(net, poly))
    if not lines:
        p = segments[0].points[0]
        geometry: dict = {"type": "Point", "coordinates": _line(net, np.array([[p.x, p.y]]))[0]}
    elif len(lines) == 1:
        geometry = {"type": "LineString", "coordinates": lines[0]}
    else:
        geometry = {"type": "MultiLineString", "coordinates": lines}
    return {"snapped": snapped, "geometry": geometry}


def _segment_entries(net: RoadNetwork, seg: MatchedSegment, interpolate: bool) -> list[dict]:
    out: list[dict] = []
    for i, p in enumerate(seg.points):
        entry = {"original_index": p.index, **_entry(net, p.edge, p.x, p.y),
                 "distance": round(p.distance, 1)}
        out.append(entry)
        if not interpolate or i + 1 == len(seg.points):
            continue
        # path vertices strictly between this point and the next one
        stop = seg.piece_at_point[i + 1]
        last = (p.x, p.y)
        q = seg.points[i + 1]
        for k in range(seg.piece_at_point[i], stop):
            edge, pts = seg.pieces[k]
            for vx, vy in pts:
                if abs(vx - last[0]) < 0.01 and abs(vy - last[1]) < 0.01:
                    continue
                if abs(vx - q.x) < 0.01 and abs(vy - q.y) < 0.01:
                    continue
                out.append(_entry(net, edge, float(vx), float(vy)))
                last = (vx, vy)
    return out


def _nearest(net: RoadNetwork, x: float, y: float, limits: Limits) -> dict:
    radius = 50.0
    while True:
        cands = net.grid.candidates(x, y, radius, 1)
        if cands.edge.size or radius >= limits.snap_max_distance_m:
            break
        radius = min(radius * 4, limits.snap_max_distance_m)
    if not cands.edge.size:
        raise InvalidParameter(
            f"points: no road within {limits.snap_max_distance_m:.0f} m", parameter="points"
        )
    edge = int(cands.edge[0])
    px, py = float(cands.x[0]), float(cands.y[0])
    entry = {"original_index": 0, **_entry(net, edge, px, py),
             "distance": round(float(cands.distance[0]), 1)}
    return {
        "snapped": [entry],
        "geometry": {"type": "Point", "coordinates": [entry["coord"]["lng"], entry["coord"]["lat"]]},
    }
