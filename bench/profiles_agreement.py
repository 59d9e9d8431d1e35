"""Foot and bicycle routes next to Valhalla's ``pedestrian`` and ``bicycle`` costings (:8002), on
the same seeded random pairs: the share of pairs whose distance is within 10 % of Valhalla's,
and the pairs one engine routes and the other does not.

    .venv/bin/python -m bench.profiles_agreement --data-dir DATA_DIR [--regions monaco,helsinki]
                                                 [--pairs 200] [--profiles foot,bicycle]

Pairs: midpoints of random road pieces of the profile's well-connected network (seeded). The
peers kit serves one region at a time: a region Valhalla does not cover is skipped (said so).
OSRM's foot/bicycle builds (one data set per profile) are not measured here yet.
Writes bench/results/profiles-agreement.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import peers  # noqa: E402
from engine.dataset import DatasetRegistry  # noqa: E402
from engine.errors import MeridianError  # noqa: E402
from engine.services.routing import RoutingParams, run  # noqa: E402

VALHALLA = peers.url(peers.VALHALLA) + "/route"
COSTING = {"foot": "pedestrian", "bicycle": "bicycle", "car": "auto"}


def valhalla_m(a, b, profile: str) -> float | None:
    body = {
        "locations": [{"lat": a[0], "lon": a[1]}, {"lat": b[0], "lon": b[1]}],
        "costing": COSTING[profile],
        "directions_options": {"units": "kilometers"},
        "directions_type": "none",
    }
    req = urllib.request.Request(VALHALLA, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return float(json.load(resp)["trip"]["summary"]["length"]) * 1000.0
    except Exception:
        return None


def pairs(registry: DatasetRegistry, region: str, profile: str, n: int, seed: int) -> list:
    router = registry.require(region).router_for(profile)
    big = np.flatnonzero(np.asarray(router.snapper.big_edge))
    rng = np.random.default_rng(seed)
    picks = rng.choice(big, size=(n, 2))
    return [(router.g.point_along(int(e), 0.5), router.g.point_along(int(f), 0.5)) for e, f in picks]


def measure(registry: DatasetRegistry, region: str, profile: str, n: int) -> dict | None:
    todo = pairs(registry, region, profile, n, seed=29)
    if all(valhalla_m(a, b, profile) is None for a, b in todo[:2]):
        return None  # Valhalla serves another region now
    within = both = ours_only = theirs_only = 0
    ratios = []
    for a, b in todo:
        try:
            ours = run(registry, RoutingParams(origin=a, destination=b, profile=profile, steps=False))
            mine = ours["routes"][0]["distance"]
        except MeridianError:
            mine = None
        theirs = valhalla_m(a, b, profile)
        if mine is None or theirs is None:
            ours_only += mine is not None
            theirs_only += theirs is not None
            continue
        both += 1
        ratio = mine / theirs if theirs > 1 else 1.0
        ratios.append(ratio)
        within += abs(ratio - 1) <= 0.10
    return {
        "region": region,
        "profile": profile,
        "pairs": n,
        "both_routed": both,
        "within_10pct": round(within / both, 3) if both else None,
        "median_ratio": round(float(np.median(ratios)), 3) if ratios else None,
        "only_meridian": ours_only,
        "only_valhalla": theirs_only,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--regions", default="monaco,helsinki")
    ap.add_argument("--profiles", default="foot,bicycle")
    ap.add_argument("--pairs", type=int, default=200)
    args = ap.parse_args()
    registry = DatasetRegistry(args.data_dir)
    rows = []
    for region in args.regions.split(","):
        for profile in args.profiles.split(","):
            row = measure(registry, region, profile, args.pairs)
            if row is None:
                print(f"{region} {profile}: Valhalla does not serve this region now, skipped")
                continue
            rows.append(row)
            print(json.dumps(row))
    out = ROOT / "bench" / "results" / "profiles-agreement.json"
    out.write_text(json.dumps({"valhalla": VALHALLA, "rows": rows}, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
