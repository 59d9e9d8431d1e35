"""Foot and bicycle next to both peers: agreement of route distances with Valhalla (``pedestrian``,
``bicycle`` costings) and with OSRM (``foot.lua``, ``bicycle.lua`` builds), the peers' agreement
with each other on the same pairs, the pairs a peer routes and Meridian answers 404; and, on foot,
speed over HTTP and the 10-minute walking isochrone next to Valhalla's.

    PEERS_DIR=... OSRM_CH_PORT=... VALHALLA_PORT=... \\
    .venv/bin/python -m bench.profiles_agreement --data-dir DATA_DIR [--regions monaco,helsinki]
        [--profiles foot,bicycle] [--pairs 300] [--speed-pairs 200] [--isochrones 20] [--no-speed]

Peers: the kit's regions ``<region>-foot`` and ``<region>-bicycle`` (build.sh with
``OSRM_PROFILE=.../foot.lua`` or ``bicycle.lua`` and ``ENGINES="osrm valhalla"``); the benchmark
switches the kit to each in turn (bench/peers.py). OSRM is asked on its CH port.

Pairs: seeded random nodes of OSM ways read from the PBF with osmium (not from any engine's
graph), of the highway classes some engine may use for the profile (:data:`PAIR_HIGHWAYS`),
excluding ways tagged ``access``/``foot``/``bicycle`` = ``no``/``private`` and underground ways
(``tunnel=yes`` or a negative ``layer``: a coordinate cannot say it means the tunnel under the
street, and central Helsinki has a service tunnel network under its streets that each engine
snaps to differently); each engine snaps them its own way. A pair agrees when the two distances are within 10 % of each other.

Speed (foot): ``/v1/routing?profile=foot&steps=true`` on a gunicorn of our own (bench.routing's)
against Valhalla's ``pedestrian`` route with maneuvers, one keep-alive client each, taking turns,
on the first ``--speed-pairs`` pairs. Isochrones: 10-minute walking contour, Meridian in process
(``engine.services.isochrone.run``) against Valhalla's ``/isochrone`` (pedestrian) over HTTP, area
ratio per origin; Meridian's 10-minute car isochrone from the same origins for the latency.

Writes bench/results/profiles-agreement.json (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import osmium
import shapely
import shapely.geometry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import peers  # noqa: E402
from bench.http_client import Http  # noqa: E402
from bench.make_queries import CAR_HIGHWAYS  # noqa: E402
from engine.dataset import DatasetRegistry  # noqa: E402
from engine.errors import MeridianError  # noqa: E402
from engine.services.isochrone import IsochroneParams  # noqa: E402
from engine.services.isochrone import run as isochrone  # noqa: E402
from engine.services.routing import RoutingParams, run  # noqa: E402

SAMPLES = ROOT / "data" / "samples"
COSTING = {"foot": "pedestrian", "bicycle": "bicycle"}
# the roads people walk and ride on: OSRM car.lua's classes (bench.make_queries) without the
# motorways and trunk roads, plus tracks and paths
MOTOR_ROADS = frozenset({"motorway", "motorway_link", "trunk", "trunk_link"})
ROADS = (CAR_HIGHWAYS - MOTOR_ROADS) | {"track", "path"}
PAIR_HIGHWAYS = {
    "foot": ROADS | {"footway", "pedestrian", "steps"},
    "bicycle": ROADS | {"cycleway"},
}
CLOSED = frozenset({"no", "private"})
WITHIN = 0.10
ISO_MINUTES = 10.0


# -- pairs ------------------------------------------------------------------------------------


class _WayNodes(osmium.SimpleHandler):
    """Node locations of the highway ways of each profile's classes."""

    def __init__(self) -> None:
        super().__init__()
        self.points: dict[str, set[tuple[float, float]]] = {p: set() for p in PAIR_HIGHWAYS}

    def way(self, w) -> None:
        highway = w.tags.get("highway")
        if not highway or any(w.tags.get(k) in CLOSED for k in ("access", "foot", "bicycle")):
            return
        if w.tags.get("tunnel") == "yes" or w.tags.get("layer", "").startswith("-"):
            return
        for profile, classes in PAIR_HIGHWAYS.items():
            if highway in classes:
                self.points[profile].update((round(n.lat, 7), round(n.lon, 7)) for n in w.nodes if n.location.valid())


def make_pairs(region: str, n: int, seed: int) -> dict[str, list]:
    """Per profile, ``n`` seeded pairs of ((lat, lng), (lat, lng)) drawn from the PBF's way nodes."""
    handler = _WayNodes()
    handler.apply_file(str(SAMPLES / f"{region}.osm.pbf"), locations=True)
    out = {}
    for profile, points in handler.points.items():
        pts = sorted(points)
        rng = np.random.default_rng(seed)
        idx = rng.choice(len(pts), size=(n, 2))
        out[profile] = [(pts[i], pts[j]) for i, j in idx if i != j]
    return out


# -- the engines -------------------------------------------------------------------------------


def valhalla_body(a, b, profile: str, steps: bool) -> bytes:
    body = {
        "locations": [{"lat": a[0], "lon": a[1]}, {"lat": b[0], "lon": b[1]}],
        "costing": COSTING[profile],
        "directions_options": {"units": "kilometers"},
    }
    if not steps:
        body["directions_type"] = "none"
    return json.dumps(body).encode()


def valhalla_m(client: Http, a, b, profile: str) -> float | None:
    _, status, body = client.request("POST", "/route", valhalla_body(a, b, profile, False))
    return float(json.loads(body)["trip"]["summary"]["length"]) * 1000.0 if status == 200 else None


def osrm_m(client: Http, a, b) -> float | None:
    _, status, body = client.request("GET", f"/route/v1/driving/{a[1]},{a[0]};{b[1]},{b[0]}?overview=false")
    doc = json.loads(body)
    return float(doc["routes"][0]["distance"]) if status == 200 and doc.get("code") == "Ok" else None


def meridian_m(registry: DatasetRegistry, a, b, profile: str) -> tuple[float | None, str]:
    try:
        doc = run(registry, RoutingParams(origin=a, destination=b, profile=profile, steps=False))
    except MeridianError as exc:
        return None, str(exc)
    return float(doc["routes"][0]["distance"]), ""


# -- agreement ---------------------------------------------------------------------------------


def agreement(xs: list[float | None], ys: list[float | None]) -> dict:
    """Pairs both answered, the share within 10 %, the median ratio x / y."""
    ratios = [x / y if y > 1 else 1.0 for x, y in zip(xs, ys, strict=True) if x is not None and y is not None]
    within = sum(abs(r - 1) <= WITHIN for r in ratios)
    return {
        "both_routed": len(ratios),
        "within_10pct": round(within / len(ratios), 3) if ratios else None,
        "median_ratio": round(float(np.median(ratios)), 3) if ratios else None,
    }


def _log_ratio(x: float | None, y: float | None) -> float:
    return abs(math.log(x / y)) if x and y and x > 1 and y > 1 else 0.0


def _agree(x: float | None, y: float | None) -> bool:
    return x is not None and y is not None and (y <= 1 or abs(x / y - 1) <= WITHIN)


def measure(registry: DatasetRegistry, region: str, profile: str, todo: list) -> dict:
    osrm, valhalla = Http(*peers.OSRM_CH), Http(*peers.VALHALLA)
    mer, errors, osr, val = [], [], [], []
    for a, b in todo:
        m, err = meridian_m(registry, a, b, profile)
        mer.append(m)
        errors.append(err)
        osr.append(osrm_m(osrm, a, b))
        val.append(valhalla_m(valhalla, a, b, profile))
    refused = [
        {"origin": a, "destination": b, "osrm_m": o, "valhalla_m": v, "error": e}
        for (a, b), m, o, v, e in zip(todo, mer, osr, val, errors, strict=True)
        if m is None and (o is not None or v is not None)
    ]
    # the peers agree with each other and Meridian with neither: the clearest defects, listed first
    lone = [
        i
        for i in range(len(todo))
        if _agree(osr[i], val[i]) and not _agree(mer[i], osr[i]) and not _agree(mer[i], val[i])
    ]
    worst = sorted(
        range(len(todo)),
        key=lambda i: (i not in lone, -max(_log_ratio(mer[i], val[i]), _log_ratio(mer[i], osr[i]))),
    )
    return {
        "region": region,
        "profile": profile,
        "pairs": len(todo),
        "routed": {
            "meridian": sum(x is not None for x in mer),
            "osrm": sum(x is not None for x in osr),
            "valhalla": sum(x is not None for x in val),
        },
        "meridian_vs_valhalla": agreement(mer, val),
        "meridian_vs_osrm": agreement(mer, osr),
        "osrm_vs_valhalla": agreement(osr, val),
        "meridian_404_osrm_routes": sum(r["osrm_m"] is not None for r in refused),
        "meridian_404_valhalla_routes": sum(r["valhalla_m"] is not None for r in refused),
        "meridian_404": refused,
        "peers_agree_meridian_not": len(lone),
        "outliers": [
            {
                "origin": todo[i][0],
                "destination": todo[i][1],
                "meridian_m": mer[i],
                "osrm_m": osr[i],
                "valhalla_m": val[i],
            }
            for i in worst[:30]
        ],
    }


# -- speed (foot) -------------------------------------------------------------------------------


def _pcts(values: list[float]) -> dict:
    return {
        "p50": round(float(np.percentile(values, 50)) * 1e3, 2),
        "p95": round(float(np.percentile(values, 95)) * 1e3, 2),
    }


def route_speed(server: tuple[str, str], todo: list, turn: int = 25) -> dict:
    """Foot routes with turn-by-turn steps over HTTP: Meridian and Valhalla take turns."""
    url, key = server
    host, port = url.rsplit("//", 1)[1].split(":")
    ours, theirs = Http(host, int(port)), Http(*peers.VALHALLA)
    headers = {"X-API-Key": key}
    path = "/v1/routing?origin={:.7f},{:.7f}&destination={:.7f},{:.7f}&profile=foot&steps=true"
    for a, b in todo:  # warm-up: every pair once (both gunicorn workers load the foot graph lazily)
        ours.request("GET", path.format(*a, *b), headers=headers)
        theirs.request("POST", "/route", valhalla_body(a, b, "foot", True))
    mine: list[float] = []
    peer: list[float] = []
    for start in range(0, len(todo), turn):
        chunk = todo[start : start + turn]
        for a, b in chunk:
            dt, status, _ = ours.request("GET", path.format(*a, *b), headers=headers)
            if status == 200:
                mine.append(dt)
        for a, b in chunk:
            dt, status, _ = theirs.request("POST", "/route", valhalla_body(a, b, "foot", True))
            if status == 200:
                peer.append(dt)
    ours_ms, theirs_ms = _pcts(mine), _pcts(peer)
    return {
        "pairs": len(todo),
        "meridian_ms": ours_ms,
        "valhalla_ms": theirs_ms,
        "p50_over_valhalla": round(ours_ms["p50"] / theirs_ms["p50"], 2),
    }


def _area_m2(geom, lat0: float) -> float:
    kx, ky = 111_320.0 * math.cos(math.radians(lat0)), 110_540.0
    return float(shapely.transform(geom, lambda c: c * [kx, ky]).area)


def valhalla_isochrone(client: Http, lat: float, lng: float):
    body = {
        "locations": [{"lat": lat, "lon": lng}],
        "costing": "pedestrian",
        "contours": [{"time": ISO_MINUTES}],
        "polygons": True,
    }
    dt, status, raw = client.request("POST", "/isochrone", json.dumps(body).encode())
    if status != 200:
        return dt, None
    features = json.loads(raw)["features"]
    return dt, shapely.make_valid(shapely.geometry.shape(features[0]["geometry"]))


def isochrones(registry: DatasetRegistry, origins: list) -> dict:
    """10-minute walking isochrone next to Valhalla's; the car's 10-minute isochrone's latency."""
    valhalla = Http(*peers.VALHALLA)
    for profile in ("foot", "car"):  # warm-up
        isochrone(registry, IsochroneParams(origins[0][0], origins[0][1], times=(ISO_MINUTES,), profile=profile))
    ratios: list[float] = []
    lat_ms: dict[str, list[float]] = {"foot": [], "car": [], "valhalla": []}
    for lat, lng in origins:
        feats = {}
        for profile in ("foot", "car"):
            t0 = time.perf_counter()
            doc = isochrone(registry, IsochroneParams(lat, lng, times=(ISO_MINUTES,), profile=profile))
            lat_ms[profile].append(time.perf_counter() - t0)
            feats[profile] = doc["features"]
        dt, theirs = valhalla_isochrone(valhalla, lat, lng)
        lat_ms["valhalla"].append(dt)
        if theirs is None or theirs.is_empty or not feats["foot"]:
            continue
        mine = shapely.make_valid(shapely.geometry.shape(feats["foot"][0]["geometry"]))
        ratios.append(_area_m2(mine, lat) / _area_m2(theirs, lat))
    return {
        "origins": len(origins),
        "compared": len(ratios),
        "area_ratio_median": round(float(np.median(ratios)), 3) if ratios else None,
        "area_ratio_p10_p90": [round(float(np.percentile(ratios, q)), 3) for q in (10, 90)] if ratios else None,
        "within_0.67_1.5": round(sum(0.67 <= r <= 1.5 for r in ratios) / len(ratios), 3) if ratios else None,
        "foot_ms": _pcts(lat_ms["foot"]),
        "car_ms": _pcts(lat_ms["car"]),
        "valhalla_ms": _pcts(lat_ms["valhalla"]),
    }


# -- the run ------------------------------------------------------------------------------------


def print_row(row: dict) -> None:
    cells = [
        f"{row['region']:9} {row['profile']:8}",
        *(
            f"{name} {row[key]['within_10pct']} ({row[key]['both_routed']})"
            for name, key in (
                ("vs Valhalla", "meridian_vs_valhalla"),
                ("vs OSRM", "meridian_vs_osrm"),
                ("OSRM~Valhalla", "osrm_vs_valhalla"),
            )
        ),
        f"404 where OSRM/Valhalla route {row['meridian_404_osrm_routes']}/{row['meridian_404_valhalla_routes']}",
    ]
    print("  ".join(cells))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--regions", default="monaco,helsinki")
    ap.add_argument("--profiles", default="foot,bicycle")
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2929)
    ap.add_argument("--speed-pairs", type=int, default=200)
    ap.add_argument("--isochrones", type=int, default=20)
    ap.add_argument("--no-speed", action="store_true", help="agreement only")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "profiles-agreement.json")
    args = ap.parse_args(argv)
    from bench.routing import own_server  # gunicorn over the data dir, for the speed part

    registry = DatasetRegistry(args.data_dir)
    rows, speed = [], []
    with contextlib.ExitStack() as stack:
        server = None if args.no_speed else stack.enter_context(own_server(args.data_dir))
        for region in args.regions.split(","):
            todo = make_pairs(region, args.pairs, args.seed)
            for profile in args.profiles.split(","):
                peers.start_peers(f"{region}-{profile}")
                row = measure(registry, region, profile, todo[profile])
                print_row(row)
                rows.append(row)
                if profile == "foot" and server is not None:
                    s = {"region": region, "route": route_speed(server, todo["foot"][: args.speed_pairs])}
                    origins = [a for a, _ in todo["foot"][: args.isochrones]]
                    s["isochrone_10min"] = isochrones(registry, origins)
                    print(json.dumps(s))
                    speed.append(s)
    doc = {
        "benchmark": "profiles-agreement",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python -m bench.profiles_agreement " + " ".join(argv or sys.argv[1:]),
        "load_average": list(os.getloadavg()),
        "rows": rows,
        "speed": speed,
    }
    args.out.write_text(json.dumps(doc, indent=1))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
