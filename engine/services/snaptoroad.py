"""Snap to road: a GPS trace matched onto the road network (HMM map matching).

``points`` are ``(lat, lng)`` pairs in travel order (1..``Limits.snaptoroad_points``); one point
is the degenerate case (nearest road within ``Limits.snap_max_distance_m``). ``radius`` is the
GPS accuracy in metres (standard deviation of the noise, like OSRM's ``radiuses``; default 10);
candidate roads are searched within ``max(40, 4 * radius)`` of each point. ``timestamps``
(seconds, non-decreasing, one per point) bound the plausible speed between points. ``profile``
matches onto that travel profile's network (a walk onto footways, a ride onto cycleways).

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

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.dataset import DatasetRegistry
from engine.errors import DatasetError, InvalidParameter
from engine.limits import DEFAULT_LIMITS, Limits
from engine.matching.hmm import MatchedSegment, MatchOptions, match
from engine.matching.network import MatchingComponent, RoadNetwork
from engine.routing.profiles import DEFAULT as DEFAULT_PROFILE
from engine.routing.profiles import canonical

DEFAULT_SIGMA_M = 10.0


@dataclass(frozen=True)
class SnapParams:
    points: tuple[tuple[float, float], ...]  # (lat, lng)
    timestamps: tuple[float, ...] | None = None
    interpolate: bool = False
    radius: float | None = None  # GPS accuracy (m)
    profile: str = DEFAULT_PROFILE  # engine.routing.profiles: car, foot, bicycle (aliases accepted)


def _validate(params: SnapParams, limits: Limits) -> np.ndarray:
    n = len(params.points)
    if n < 1 or n > limits.snaptoroad_points:
        raise InvalidParameter(
            f"points: between 1 and {limits.snaptoroad_points} points are required, got {n}",
            parameter="points",
        )
    pts = np.asarray(params.points, dtype=np.float64).reshape(n, 2)
    bad = ~(np.isfinite(pts).all(axis=1) & (np.abs(pts[:, 0]) <= 90) & (np.abs(pts[:, 1]) <= 180))
    if bad.any():
        lat, lng = params.points[int(np.argmax(bad))]
        raise InvalidParameter(f"points: invalid coordinate {lat},{lng}", parameter="points")
    if params.timestamps is not None:
        ts = np.asarray(params.timestamps, dtype=np.float64)
        if ts.size != n:
            raise InvalidParameter(f"timestamps: {ts.size} timestamps for {n} points", parameter="timestamps")
        if not np.isfinite(ts).all() or (np.diff(ts) < 0).any():
            raise InvalidParameter("timestamps must be finite and non-decreasing", parameter="timestamps")
    if params.radius is not None and not (0 < params.radius <= limits.snaptoroad_max_radius_m):
        raise InvalidParameter(
            f"radius must be in (0, {limits.snaptoroad_max_radius_m:g}] metres",
            parameter="radius",
        )
    return pts


def component_for(datasets: DatasetRegistry, lat: float, lng: float, parameter: str, profile: str) -> MatchingComponent:
    """The road network component of ``profile`` of the smallest dataset covering the point that
    has one; InvalidParameter naming ``profile`` when the covering regions all lack the profile."""
    covering = datasets.covering(lat, lng, margin_deg=0.01)
    for ds in covering:
        if profile not in ds.profiles:
            continue
        try:
            component: MatchingComponent = ds.component("roadnet", profile)
            return component
        except DatasetError:
            continue
    if covering and not any(profile in ds.profiles for ds in covering):
        covering[0].require_profile(profile)  # raises, naming the region's profiles
    raise InvalidParameter(f"{parameter}: no road data covers {lat},{lng}", parameter=parameter)


def network_for(datasets: DatasetRegistry, lat: float, lng: float, parameter: str, profile: str = "car") -> RoadNetwork:
    """The road network of the smallest dataset covering the point that has a road graph."""
    return component_for(datasets, lat, lng, parameter, profile).network


def _lnglat(net: RoadNetwork, x: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """Rounded (lat list, lng list) of local points (7 decimals, as engine.geo.round_coord)."""
    lat, lng = net.proj.to_latlng(x, y)
    return np.round(lat, 7).tolist(), np.round(lng, 7).tolist()


def run(datasets: DatasetRegistry, params: SnapParams, limits: Limits | None = None) -> dict[str, Any]:
    limits = limits or DEFAULT_LIMITS
    pts = _validate(params, limits)
    net = network_for(datasets, float(pts[0, 0]), float(pts[0, 1]), "points", canonical(params.profile))
    x, y = net.proj.to_xy(pts[:, 0], pts[:, 1])
    sigma = params.radius or DEFAULT_SIGMA_M

    if len(pts) == 1:
        return _nearest(net, float(x[0]), float(y[0]), limits)

    ts = np.asarray(params.timestamps, dtype=np.float64) if params.timestamps is not None else None
    options = MatchOptions(sigma=sigma)
    segments = match(net, x, y, ts, options)
    if not segments:
        raise InvalidParameter(f"points: no road within {options.radius:.0f} m of any point", parameter="points")
    snapped: list[dict[str, Any]] = []
    lines: list[list[list[float]]] = []
    for seg in segments:
        snapped.extend(_segment_entries(net, seg, params.interpolate))
        if seg.path_x.size >= 2:
            lat, lng = net.proj.to_latlng(seg.path_x, seg.path_y)
            lines.append(np.round(np.column_stack([lng, lat]), 7).tolist())
    if not lines:
        point_lat, point_lng = _lnglat(net, segments[0].x[:1], segments[0].y[:1])
        geometry: dict[str, Any] = {"type": "Point", "coordinates": [point_lng[0], point_lat[0]]}
    elif len(lines) == 1:
        geometry = {"type": "LineString", "coordinates": lines[0]}
    else:
        geometry = {"type": "MultiLineString", "coordinates": lines}
    return {"snapped": snapped, "geometry": geometry}


def _segment_entries(net: RoadNetwork, seg: MatchedSegment, interpolate: bool) -> list[dict[str, Any]]:
    names, way_id = net.names, net.way_id
    lat, lng = _lnglat(net, seg.x, seg.y)
    index = seg.index.tolist()
    edges = seg.edge.tolist()
    dist = np.round(seg.distance, 1).tolist()
    entries = [
        {
            "original_index": index[i],
            "coord": {"lat": lat[i], "lng": lng[i]},
            "name": names[net.name_id[edges[i]]] if net.name_id[edges[i]] >= 0 else "",
            "way_id": int(way_id[edges[i]]),
            "distance": dist[i],
        }
        for i in range(len(index))
    ]
    if not interpolate:
        return entries
    vlat, vlng = _lnglat(net, seg.path_x, seg.path_y)
    vedge = seg.path_edge.tolist()
    at = seg.point_vertex.tolist()
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        out.append(entry)
        if i + 1 < len(entries):
            for v in range(at[i] + 1, at[i + 1]):
                e = vedge[v]
                out.append(
                    {
                        "coord": {"lat": vlat[v], "lng": vlng[v]},
                        "name": names[net.name_id[e]] if net.name_id[e] >= 0 else "",
                        "way_id": int(way_id[e]),
                    }
                )
    return out


def _nearest(net: RoadNetwork, x: float, y: float, limits: Limits) -> dict[str, Any]:
    radius = 50.0
    while True:
        cands = net.grid.candidates(x, y, radius, 1)
        if cands.edge.size or radius >= limits.snap_max_distance_m:
            break
        radius = min(radius * 4, limits.snap_max_distance_m)
    if not cands.edge.size:
        raise InvalidParameter(f"points: no road within {limits.snap_max_distance_m:.0f} m", parameter="points")
    edge = int(cands.edge[0])
    px, py = float(cands.x[0]), float(cands.y[0])
    lat, lng = _lnglat(net, np.array([px]), np.array([py]))
    entry: dict[str, Any] = {
        "original_index": 0,
        "coord": {"lat": lat[0], "lng": lng[0]},
        "name": net.name(edge),
        "way_id": int(net.way_id[edge]),
        "distance": round(float(cands.distance[0]), 1),
    }
    return {
        "snapped": [entry],
        "geometry": {"type": "Point", "coordinates": [entry["coord"]["lng"], entry["coord"]["lat"]]},
    }
