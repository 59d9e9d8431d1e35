"""Why a route's distance differs from OSRM's: OSRM is asked to drive Meridian's own path.

For every pair whose distance differs by more than 5 %, Meridian's route geometry, resampled to
at most ``MAX_POINTS`` points, is sent to OSRM's ``/match`` with a tight radius. OSRM then prices
that exact path with its own car profile, and the pair falls into one of six classes:

- ``osrm_moved_point``: OSRM starts or ends the route more than ``MOVED_M`` from the requested
  point (the point's road is in one of OSRM's small components, and OSRM answers from the nearest
  road of its big one), while Meridian routes from the point itself: the two answer different
  questions. On Monaco (2026-11-25) these are the hill roads north-west of La Turbie, which reach
  the rest of the extract only by ``highway=track`` (dropped by OSRM's car profile, kept as
  connectors by ours, driven by Valhalla): OSRM moves the point 1.2-2 km. ``valhalla_m`` is
  Valhalla's distance for the pair when a Valhalla is given; ``valhalla_agrees`` says it is within
  5 % of ours.
- ``snapped_elsewhere``: the two engines put the origin or the destination on different roads
  (more than ``SAME_POINT_M`` apart): the point lies between roads, and the routes start or end on
  different streets. OSRM snaps to the nearest road of any size; Meridian to the nearest road of
  the well-connected network (data, and a documented rule).
- ``near_tie``: OSRM's time for Meridian's path is within ``TIE`` of its time for its own path.
  Both engines minimise time, and the two paths are near-equal by OSRM's own measure, so the
  distance gap comes from the speed models (profile), not from a wrong path.
- ``osrm_cannot_drive``: OSRM cannot follow the path in one piece (no match, points dropped, or a
  split). The path uses a road or a turn that OSRM's car profile excludes and ours allows (data
  read differently, e.g. access tags, or a restriction one side does not apply). On Helsinki
  (2026-11-23) all four end on the same stretch of Vilhonkatu west of Kaisaniemenkatu, tagged
  ``motor_vehicle=destination`` and ``psv=yes``: we reach it from Kaisaniemenkatu, OSRM's route
  from Mikonkatu (about 95 m shorter), and OSRM's ``/match`` does not take our approach into the
  restricted stretch. Both engines' times for the two routes are within 2-3 % of each other.
- ``osrm_rates_ours_faster``: OSRM's ``/match`` time for our path is more than ``TIE`` *below* its
  ``/route`` time for its own path, with the same endpoints. OSRM's two services price the same
  maneuvers differently. For example, from 60.1740684,24.952268 OSRM's own route makes a U-turn
  on a service road, and ``/match`` prices our path without that U-turn 31 % lower. The
  comparison does not settle these.
- ``osrm_rates_ours_slower``: OSRM can drive our path but rates it more than ``TIE`` slower than
  its own. Our speed model disagrees with OSRM's by more than ``TIE`` on these streets. These
  are the cases to look into.

For the last two classes, ``where`` says which stretches of the path the two engines price most
differently: OSRM's time between consecutive points of the resampled path (its ``/match`` legs,
turn costs included) next to ours over the same metres (edge times and turn costs of our leg),
the ``SPANS`` stretches with the largest gap, each with its street (ours) and where it starts.
A turn OSRM prices at 10 s and we at 0.5 s shows up as a stretch of a few metres with a gap of
9.5 s. A gap of at least OSRM's U-turn penalty (20 s) on a stretch of at most 50 m is OSRM
charging a U-turn where our path makes none (``osrm_uturn``); ``osrm_s_for_ours_without_its_uturns``
is OSRM's time for our path less those gaps. On Monaco (2026-11-23) every pair OSRM rates slower
has one, at Rond-Point Sainte-Dévote or in Tunnel Rocher Antoine 1er, where one-way pieces of one
street bend back on each other; without those charges OSRM's own prices put our path within 5 %
of its route or below it (engine/routing/profile.py, "Known difference from OSRM").
"""

from __future__ import annotations

import json
import math
from urllib.parse import quote

import numpy as np

from bench.http_client import Http
from engine.errors import MeridianError
from engine.geo import haversine_m
from engine.limits import DEFAULT_LIMITS
from engine.routing.turns import leg_turn_costs
from engine.services.routing import RoutingParams, run

MAX_POINTS = 100  # osrm-routed's default --max-matching-size
RADIUS_M = 5.0
TIE = 0.05
SAME_POINT_M = 3.0
MOVED_M = 100.0
SPANS = 2
OSRM_UTURN_S = 20.0  # osrm-backend's car profile: u_turn_penalty
UTURN_SPAN_M = 50.0
CLASSES = (
    "osrm_moved_point",
    "snapped_elsewhere",
    "near_tie",
    "osrm_cannot_drive",
    "osrm_rates_ours_faster",
    "osrm_rates_ours_slower",
)


def resample(coords: list[list[float]], n_max: int = MAX_POINTS) -> list[tuple[float, float]]:
    """``[lng, lat]`` vertices to at most ``n_max`` (lat, lng) points evenly spaced along the line
    (ends kept). Equirectangular lengths are plenty to space the points."""
    lng = np.array([c[0] for c in coords])
    lat = np.array([c[1] for c in coords])
    k = math.cos(math.radians(float(lat.mean())))
    seg = np.hypot(np.diff(lng) * k, np.diff(lat))
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    if len(coords) <= n_max or cum[-1] == 0.0:
        return list(zip(lat.tolist(), lng.tolist(), strict=True))
    at = np.linspace(0.0, cum[-1], n_max)
    return list(zip(np.interp(at, cum, lat).tolist(), np.interp(at, cum, lng).tolist(), strict=True))


def osrm_drive(client: Http, points: list[tuple[float, float]]) -> dict | None:
    """OSRM's distance and time along ``points`` in one piece, or None when it cannot follow them."""
    coords = ";".join(f"{lng:.7f},{lat:.7f}" for lat, lng in points)
    radii = ";".join(f"{RADIUS_M:g}" for _ in points)
    _, status, body = client.request(
        "GET", f"/match/v1/driving/{quote(coords, safe=',;.-')}?radiuses={radii}&gaps=ignore&tidy=false&overview=false"
    )
    doc = json.loads(body) if body else {}
    if status != 200 or doc.get("code") != "Ok":
        return None
    matchings = doc.get("matchings") or []
    if len(matchings) != 1 or any(tp is None for tp in doc.get("tracepoints") or [None]):
        return None
    legs = matchings[0]["legs"]
    return {
        "distance": matchings[0]["distance"],
        "duration": matchings[0]["duration"],
        "legs": [(leg["distance"], leg["duration"]) for leg in legs],
        "points": [(tp["location"][1], tp["location"][0]) for tp in doc["tracepoints"]],
    }


def timeline(router, leg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Our leg at its junctions: cumulative metres and travel seconds at the start of every edge
    and at the end (n + 1 values), and the turn costs paid at the n - 1 junctions, in order."""
    part = np.ones(len(leg.edges))
    part[0] -= leg.start
    part[-1] = leg.end - (leg.start if len(leg.edges) == 1 else 0.0)
    metres = np.concatenate(([0.0], np.cumsum(part * router.length[leg.edges])))
    travel = np.concatenate(([0.0], np.cumsum(part * router.duration[leg.edges])))
    return metres, travel, leg_turn_costs(leg.edges, router.tfirst, router.tto, router.tcost)


def seconds_at(metres: np.ndarray, travel: np.ndarray, turns: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Our time to reach each distance of ``at``: travel, plus the turns of the junctions passed
    (one reached exactly is not passed yet)."""
    passed = np.searchsorted(metres[1:-1], at, side="left")
    return np.interp(at, metres, travel) + np.concatenate(([0.0], np.cumsum(turns)))[passed]


def locate(router, leg, driven: dict, spans: int = SPANS) -> dict:
    """Where OSRM's time for our path exceeds ours: the ``spans`` stretches with the largest gap,
    and OSRM's time for our path without its U-turn charges (see the module doc). OSRM's distances
    are scaled to ours, so that the two measures of one path line up."""
    metres, travel, turns = timeline(router, leg)
    legs = np.array(driven["legs"], dtype=float)
    at = np.concatenate(([0.0], np.cumsum(legs[:, 0])))
    at *= metres[-1] / at[-1] if at[-1] > 0 else 1.0
    ours = np.diff(seconds_at(metres, travel, turns, at))
    gap = legs[:, 1] - ours
    uturn = (gap >= OSRM_UTURN_S) & (legs[:, 0] <= UTURN_SPAN_M)
    where = []
    for k in np.argsort(-gap)[:spans].tolist():
        edge = int(leg.edges[min(np.searchsorted(metres, (at[k] + at[k + 1]) / 2) - 1, len(leg.edges) - 1)])
        lat, lng = driven["points"][k]
        where.append(
            {
                "street": router.g.name(edge),
                "at": [round(lat, 6), round(lng, 6)],
                "metres": round(float(legs[k, 0]), 1),
                "osrm_s": round(float(legs[k, 1]), 1),
                "ours_s": round(float(ours[k]), 1),
                "gap_s": round(float(gap[k]), 1),
                "osrm_uturn": bool(uturn[k]),
            }
        )
    return {
        "where": where,
        "osrm_uturns": int(uturn.sum()),
        "osrm_s_for_ours_without_its_uturns": round(float(driven["duration"] - gap[uturn].sum()), 1),
    }


def osrm_endpoints(client: Http, a, b) -> list[tuple[float, float]] | None:
    """Where OSRM's /route puts the origin and the destination, (lat, lng) each."""
    _, status, body = client.request(
        "GET", f"/route/v1/driving/{a[1]:.7f},{a[0]:.7f};{b[1]:.7f},{b[0]:.7f}?overview=false"
    )
    doc = json.loads(body) if body else {}
    if status != 200 or doc.get("code") != "Ok":
        return None
    return [(w["location"][1], w["location"][0]) for w in doc["waypoints"]]


def _our_leg(router, a, b):
    o, d = router.snap(*a, DEFAULT_LIMITS.snap_max_distance_m), router.snap(*b, DEFAULT_LIMITS.snap_max_distance_m)
    return None if o is None or d is None else router.leg(o, d)


def classify(datasets, client: Http, a, b, osrm_s: float, router=None, valhalla_m=None) -> dict:
    """One pair: its class and, where OSRM could drive our path, its time for it over its own
    (and, with ``router``, where the two engines' prices differ most; with ``valhalla_m``, a
    function (origin, destination) -> Valhalla's metres or None, Valhalla's distance where OSRM
    moved a point)."""
    try:
        doc = run(datasets, RoutingParams(origin=a, destination=b, steps=False, geometry="geojson"))
    except MeridianError:
        return {"class": "osrm_rates_ours_slower", "why": "no Meridian route"}
    ours = [(w["location"]["lat"], w["location"]["lng"]) for w in doc["waypoints"]]
    theirs = osrm_endpoints(client, a, b)
    if theirs is not None:
        apart = max(haversine_m(p[0], p[1], q[0], q[1]) for p, q in zip(ours, theirs, strict=True))
        if apart > SAME_POINT_M:
            # how far OSRM itself moved a requested point (a point on a road OSRM counts as a
            # small component starts on its big network instead, up to kilometres away)
            moved = max(haversine_m(p[0], p[1], q[0], q[1]) for p, q in zip((a, b), theirs, strict=True))
            out: dict = {"endpoints_apart_m": round(apart, 1), "osrm_moved_m": round(moved, 1)}
            if moved <= MOVED_M:
                return {"class": "snapped_elsewhere", **out}
            return {
                "class": "osrm_moved_point",
                **out,
                **second_opinion(valhalla_m, a, b, doc["routes"][0]["distance"]),
            }
    driven = osrm_drive(client, resample(doc["routes"][0]["geometry"]["coordinates"]))
    if driven is None:
        return {"class": "osrm_cannot_drive"}
    ratio = driven["duration"] / osrm_s if osrm_s > 0 else math.inf
    verdict = (
        "near_tie" if abs(ratio - 1.0) <= TIE else "osrm_rates_ours_faster" if ratio < 1.0 else "osrm_rates_ours_slower"
    )
    out = {"class": verdict, "osrm_time_ratio": round(ratio, 4), "osrm_s_for_ours": round(driven["duration"], 1)}
    leg = _our_leg(router, a, b) if router is not None and verdict != "near_tie" else None
    if leg is not None:
        out.update(locate(router, leg, driven))
    return out


def second_opinion(valhalla_m, a, b, ours_m: float) -> dict:
    """Valhalla's distance for the pair, and whether it is within ``TIE`` of ours."""
    theirs = valhalla_m(a, b) if valhalla_m is not None else None
    if theirs is None:
        return {}
    return {"valhalla_m": round(theirs, 1), "valhalla_agrees": abs(ours_m / theirs - 1.0) <= TIE if theirs else False}


def explain(datasets, client: Http, rows: list[tuple], router=None, valhalla_m=None) -> dict:
    """``rows``: (|distance ratio - 1|, origin, destination, our m, OSRM m, our s, OSRM s) of the
    pairs outside 5 %. Counts per class and every pair's verdict (``router``: the region's, for
    ``where``; ``valhalla_m``: see :func:`classify`)."""
    verdicts = []
    for _, a, b, md, od, mt, ot in rows:
        v = classify(datasets, client, a, b, ot, router, valhalla_m)
        verdicts.append(
            {
                "origin": list(a),
                "destination": list(b),
                "meridian_m": round(md, 1),
                "osrm_m": round(od, 1),
                "meridian_s": round(mt, 1),
                "osrm_s": round(ot, 1),
                **v,
            }
        )
    return {
        "outside_5pct": len(rows),
        "counts": {c: sum(v["class"] == c for v in verdicts) for c in CLASSES},
        "slower_only_by_osrm_uturns": sum(uturns_explain(v) for v in verdicts),
        "osrm_moved_a_point_over_100m": sum(v["class"] == "osrm_moved_point" for v in verdicts),
        "osrm_moved_a_point_valhalla_agrees_with_us": sum(bool(v.get("valhalla_agrees")) for v in verdicts),
        "pairs": verdicts,
    }


def uturns_explain(verdict: dict) -> bool:
    """A pair OSRM rates slower only because of its U-turn charges on our path: without them its
    time for our path is within ``TIE`` of its own route's, or below."""
    without = verdict.get("osrm_s_for_ours_without_its_uturns")
    return (
        verdict["class"] == "osrm_rates_ours_slower"
        and without is not None
        and without <= verdict["osrm_s"] * (1.0 + TIE)
    )
