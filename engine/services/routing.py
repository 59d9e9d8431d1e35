"""Directions by car, on foot or by bicycle (``cmd=routing``, ``/v1/routing``): snapped points,
legs, steps, geometry.

``profile`` (:mod:`engine.routing.profiles`: ``car``, ``foot``, ``bicycle``; aliases ``driving``,
``walking``, ``cycling``) picks the profile's own graph; distances, durations and steps are the
profile's. A region imported without that profile: InvalidParameter naming ``profile`` and the
profiles it has.

Result::

    {"routes": [{"distance": m, "duration": s, "geometry": <polyline str | GeoJSON LineString>,
                 "legs": [{"distance", "duration", "steps": [{"instruction", "maneuver": {"type",
                           "modifier", "exit", "bearing_before", "bearing_after"}, "name",
                           "distance", "duration", "location": {"lat", "lng"}}]}]}],
     "waypoints": [{"location": {"lat", "lng"}, "snap_distance": m, "name": street}]}

The first route is the best; alternatives (only without intermediate waypoints) follow.
Errors: a point farther than ``Limits.snap_max_distance_m`` from any drivable road ->
InvalidParameter naming ``origin`` / ``destination`` / ``waypoints``; no region covering the
points or no path between them -> NotFound.

Points start on the nearest road of the well-connected network within the snap limit
(:meth:`engine.routing.snap.EdgeSnapper.snap`). A point with only a fragment of the network in
reach (roads cut off where the extract ends) starts on the fragment; when no route leaves it,
the point moves to the nearest road of the well-connected network within
``FRAGMENT_ESCAPE`` times the snap limit, as OSRM and Valhalla do, and its waypoint's
``snap_distance`` says how far that is. Only then is the answer 404.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine import polyline
from engine.dataset import Dataset, DatasetRegistry
from engine.errors import InvalidParameter, NotFound
from engine.geo import round_coord
from engine.limits import DEFAULT_LIMITS, Limits
from engine.routing.directions import build_steps
from engine.routing.profiles import DEFAULT as DEFAULT_PROFILE
from engine.routing.profiles import PROFILES, canonical
from engine.routing.router import Leg, Router, avoid_mask
from engine.routing.snap import Snap

LatLng = tuple[float, float]

AVOIDABLE = ("tolls", "ferries", "motorways")
FRAGMENT_ESCAPE = 1.5  # times Limits.snap_max_distance_m
GEOMETRIES = ("polyline", "polyline6", "geojson")


@dataclass(frozen=True)
class RoutingParams:
    origin: tuple[float, float]  # (lat, lng)
    destination: tuple[float, float]
    waypoints: tuple[tuple[float, float], ...] = ()
    alternatives: int = 0
    avoid: frozenset[str] = field(default_factory=frozenset)
    steps: bool = True
    geometry: str = "polyline"
    profile: str = DEFAULT_PROFILE


def _check(params: RoutingParams, limits: Limits) -> None:
    if len(params.waypoints) > limits.routing_waypoints:
        raise InvalidParameter(f"at most {limits.routing_waypoints} waypoints are allowed", parameter="waypoints")
    if not 0 <= params.alternatives <= limits.routing_alternatives:
        raise InvalidParameter(
            f"alternatives must be between 0 and {limits.routing_alternatives}",
            parameter="alternatives",
        )
    bad = set(params.avoid) - set(AVOIDABLE)
    if bad:
        raise InvalidParameter(f"avoid accepts {', '.join(AVOIDABLE)}; got {', '.join(sorted(bad))}", parameter="avoid")
    if params.geometry not in GEOMETRIES:
        raise InvalidParameter(f"geometry must be one of {', '.join(GEOMETRIES)}", parameter="geometry")
    canonical(params.profile)


def _candidates(
    datasets: DatasetRegistry, points: list[LatLng], names: list[str], limits: Limits, profile: str, profile_field: str
) -> list[Dataset]:
    """Datasets covering every point (within the snap distance) with ``profile``, smallest bbox first.

    A point outside every region is farther than the snap limit from any road we know: 400
    naming it. Points each covered but by no common region: 404 (no route across regions).
    Covering regions all imported without the profile: 400 naming ``profile_field``."""
    everything = datasets.all()
    common = everything
    for (lat, lng), pname in zip(points, names, strict=True):
        margin = limits.snap_max_distance_m / 111_320.0 / max(math.cos(math.radians(lat)), 0.1)
        found = [d for d in common if d.bbox.contains(lat, lng, margin)]
        if not found and not any(d.bbox.contains(lat, lng, margin) for d in everything):
            raise InvalidParameter(
                f"{pname} ({lat:.6f},{lng:.6f}) is farther than {limits.snap_max_distance_m:.0f} m "
                f"from any {PROFILES[profile].ways} (outside every imported region)",
                parameter=pname,
            )
        common = found
    if not common:
        raise NotFound("no imported region contains all the route points: no route between them")
    with_profile = [d for d in common if profile in d.profiles]
    if not with_profile:
        common[0].require_profile(profile, profile_field)  # raises, naming the region's profiles
    common = with_profile
    if len(common) > 1:
        common.sort(key=lambda d: (d.bbox.max_lng - d.bbox.min_lng) * (d.bbox.max_lat - d.bbox.min_lat))
    return common


def _snap_all(router: Router, points: list[LatLng], names: list[str], limits: Limits, profile: str) -> list[Snap]:
    snaps = []
    for (lat, lng), pname in zip(points, names, strict=True):
        s = router.snap(lat, lng, limits.snap_max_distance_m)
        if s is None:
            raise InvalidParameter(
                f"{pname} ({lat:.6f},{lng:.6f}) is farther than {limits.snap_max_distance_m:.0f} m "
                f"from any {PROFILES[profile].ways}",
                parameter=pname,
            )
        snaps.append(s)
    return snaps


def _legs(router: Router, snaps: list[Snap], mask: Any) -> list[Leg] | None:
    legs: list[Leg] = []
    for a, b in zip(snaps, snaps[1:], strict=False):
        leg = router.leg(a, b, mask)
        if leg is None:
            return None
        legs.append(leg)
    return legs


def snap_points(
    datasets: DatasetRegistry,
    points: list[LatLng],
    names: list[str],
    limits: Limits,
    profile: str = DEFAULT_PROFILE,
    profile_field: str = "profile",
) -> tuple[Router, list[Snap]]:
    """The ``profile``'s router of the smallest region that snaps every point, and the snapped
    points (the matrix snaps its points the same way). ``profile_field``: the request's field
    named when the region lacks the profile (optimisation: ``vehicles[2].profile``)."""
    first_error: InvalidParameter | None = None
    for dataset in _candidates(datasets, points, names, limits, profile, profile_field):
        router = dataset.router_for(profile)
        try:
            return router, _snap_all(router, points, names, limits, profile)
        except InvalidParameter as exc:  # overlapping regions: try the next one
            first_error = first_error or exc
    raise first_error or NotFound("no imported region covers all the route points")


def escape_fragments(router: Router, points: list[LatLng], snaps: list[Snap], limits: Limits) -> list[Snap] | None:
    """The snaps again, those on a fragment moved to the well-connected network (None: no move)."""
    big = router.snapper.big_edge
    out: list[Snap] = []
    moved = False
    for (lat, lng), s in zip(points, snaps, strict=True):
        if not big[s.edge]:
            found = router.snapper.snap_big(lat, lng, FRAGMENT_ESCAPE * limits.snap_max_distance_m)
            if found is not None:
                s, moved = found, True
        out.append(s)
    return out if moved else None


def line_geometry(lat: NDArray[np.float64], lng: NDArray[np.float64], kind: str) -> dict[str, Any] | str:
    if kind == "geojson":
        return {
            "type": "LineString",
            "coordinates": [[round_coord(x), round_coord(y)] for y, x in zip(lat.tolist(), lng.tolist(), strict=True)],
        }
    return polyline.encode_arrays(lat, lng, 6 if kind == "polyline6" else 5)


def run(datasets: DatasetRegistry, params: RoutingParams, limits: Limits | None = None) -> dict[str, Any]:
    limits = limits or DEFAULT_LIMITS
    _check(params, limits)
    points = [params.origin, *params.waypoints, params.destination]
    names = ["origin", *["waypoints"] * len(params.waypoints), "destination"]
    profile = canonical(params.profile)
    router, snaps = snap_points(datasets, points, names, limits, profile)
    mask = avoid_mask(params.avoid)
    legs = _legs(router, snaps, mask)
    if legs is None:
        escaped = escape_fragments(router, points, snaps, limits)
        legs = _legs(router, escaped, mask) if escaped is not None else None
        if legs is None or escaped is None:
            what = "origin and destination" if len(snaps) == 2 else "route points"
            extra = f" while avoiding {', '.join(sorted(params.avoid))}" if params.avoid else ""
            raise NotFound(f"no {PROFILES[profile].adjective} route between the {what}{extra}")
        snaps = escaped
    routes = [legs]
    if params.alternatives and len(legs) == 1:
        for alt in router.alternatives(snaps[0], snaps[1], legs[0], params.alternatives, mask):
            routes.append([alt])
    out_routes = [_route(router, r, params) for r in routes]
    g = router.g
    waypoints = [
        {
            "location": {"lat": round_coord(s.lat), "lng": round_coord(s.lng)},
            "snap_distance": round(s.distance_m, 1),
            "name": g.name(s.edge),
        }
        for s in snaps
    ]
    return {"routes": out_routes, "waypoints": waypoints}


def _route(router: Router, legs: list[Leg], params: RoutingParams) -> dict[str, Any]:
    out_legs = []
    lats: list[NDArray[np.float64]] = []
    lngs: list[NDArray[np.float64]] = []
    total_d = total_t = 0.0
    for i, leg in enumerate(legs):
        dist, dur = router.leg_summary(leg)
        total_d += dist
        total_t += dur
        item: dict[str, Any] = {"distance": round(dist, 1), "duration": round(dur, 1)}
        if params.steps:
            item["steps"] = build_steps(router, leg, last_leg=i == len(legs) - 1)
        else:
            item["steps"] = []
        out_legs.append(item)
        la, ln = router.leg_geometry(leg)
        if lats:
            la, ln = la[1:], ln[1:]
        lats.append(la)
        lngs.append(ln)
    lat, lng = (lats[0], lngs[0]) if len(lats) == 1 else (np.concatenate(lats), np.concatenate(lngs))
    return {
        "distance": round(total_d, 1),
        "duration": round(total_t, 1),
        "geometry": line_geometry(lat, lng, params.geometry),
        "legs": out_legs,
    }
