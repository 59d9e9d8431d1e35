"""The roads stage alone, for some travel profiles, on a country PBF of bench/country.py: what the
profiles beyond the car add to a country's import, measured without importing the search index
and the car's graph again (bench.country measures those), and how fast their routes answer.

1. the import's ``roads`` stage (``engine.ingest.roads``, as ``meridian import`` runs it: one
   reading pass, then each profile's graph, contraction and derived arrays, one at a time) under
   ``/usr/bin/time -v`` in a child process: wall time, peak RSS; per profile its reading, turn
   table and contraction seconds, CH nodes, core size and shortcuts (from each graph's meta.json);
2. in process on each written graph, ``--queries`` routes (``Router.leg``) between random points
   of the whole country, and between points within 5 and 20 km of each other (a walk, a ride):
   p50 and p95 in milliseconds, and the routes' median length.

Results: the size's entry of bench/results/country.json, under ``roads_stage`` (keyed by the
profiles); ``python -m bench.report`` shows them with the country table.

    .venv/bin/python -m bench.roads_stage --nodes 10000000 --profiles foot,bicycle [--queries 200]
        [--reuse]   # keep an earlier run's stage (its log and graphs), measure the routes again
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.country import RESULTS, WORK, parse_time_v, size_key
from engine import layout
from engine.identical_files import distinct_bytes
from engine.ingest.context import ImportContext
from engine.ingest.roads import run as roads_stage
from engine.progress import ImportProgress, stage_peaks
from engine.routing.graph import RoadGraph
from engine.routing.router import Router
from engine.routing.snap import Snap

RADII_KM = (None, 5.0, 20.0)  # None: any two points of the country


def run_child(pbf: Path, out: Path, profiles: tuple[str, ...]) -> None:
    """In the child: the stage, its progress on stdout, then one JSON line of its own figures."""
    out.mkdir(parents=True, exist_ok=True)
    ctx = ImportContext(pbf, "country", out, profiles=profiles, progress=ImportProgress(sys.stdout, live=False))
    t0 = time.perf_counter()
    with stage_peaks() as peaks:  # with the contractions' child processes
        counts = roads_stage(ctx)
    figures = {
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": round(peaks.rss, 1),
        "peak_anon_mb": round(peaks.anon, 1),
        "counts": counts,
    }
    print(json.dumps(figures), flush=True)


def stage_figures(out: Path, log: Path, profiles: tuple[str, ...]) -> dict[str, Any]:
    text = log.read_text()
    timed = parse_time_v(text)
    if timed["exit_status"] != 0:
        raise RuntimeError(f"the roads stage failed: see {log}")
    own = json.loads(next(line for line in reversed(text.splitlines()) if line.startswith('{"seconds"')))
    per_profile = {}
    for name in profiles:
        meta = json.loads((out / layout.profile_graph_dir(name) / "meta.json").read_text())
        per_profile[name] = {"seconds": meta["seconds"], "counts": meta["counts"]}
    return {
        **timed,
        "stage_seconds": own["seconds"],
        "stage_peak_rss_mb": own["peak_rss_mb"],
        "stage_peak_anon_mb": own.get("peak_anon_mb"),
        "profiles": per_profile,
        "graphs_mb": round(distinct_bytes(out) / 1e6, 1),
    }


def route_latency(graph_dir: Path, queries: int, seed: int) -> dict[str, Any]:
    """p50 / p95 of ``Router.leg`` between random points, for each of :data:`RADII_KM`."""
    router = Router(RoadGraph.open(graph_dir))
    g = router.g
    rng = np.random.default_rng(seed)
    lat0, lat1 = float(g.node_lat.min()), float(g.node_lat.max())
    lng0, lng1 = float(g.node_lng.min()), float(g.node_lng.max())

    def anywhere() -> tuple[float, float]:
        return float(rng.uniform(lat0, lat1)), float(rng.uniform(lng0, lng1))

    def within(lat: float, lng: float, km: float) -> tuple[float, float]:
        dlat = km / 111.2  # degrees of latitude; a degree of longitude is cos(lat) times shorter
        dlng = dlat / math.cos(math.radians(lat))
        return lat + float(rng.uniform(-dlat, dlat)), lng + float(rng.uniform(-dlng, dlng))

    def snapped(at: tuple[float, float]) -> Snap:
        found = router.snap(*at)
        assert found is not None  # the synthetic country's roads cover its box
        return found

    for _ in range(5):  # kernels compiled or loaded, graph pages touched once
        router.leg(snapped(anywhere()), snapped(anywhere()))
    results: dict[str, Any] = {}
    for km in RADII_KM:
        ms: list[float] = []
        lengths: list[float] = []
        while len(ms) < queries:
            a = anywhere()
            sa, sb = snapped(a), snapped(anywhere() if km is None else within(*a, km))
            t0 = time.perf_counter()
            leg = router.leg(sa, sb)
            ms.append((time.perf_counter() - t0) * 1e3)
            if leg is not None:
                lengths.append(router.leg_summary(leg)[0] / 1000)
        results["any" if km is None else f"within_{km:g}_km"] = {
            "p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2),
            "median_km": round(float(np.median(lengths)), 1) if lengths else None,
        }
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000_000, help="the size (its PBF from bench.country)")
    parser.add_argument("--profiles", default="foot,bicycle")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse", action="store_true", help="keep an earlier run's stage")
    parser.add_argument("--child", nargs=2, metavar=("PBF", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    profiles = tuple(p for p in args.profiles.split(",") if p)
    if args.child:
        run_child(Path(args.child[0]), Path(args.child[1]), profiles)
        return
    pbf = WORK / f"country-{args.nodes}.osm.pbf"
    out = WORK / f"n{args.nodes}" / f"roads-{'-'.join(profiles)}"
    log = out.with_suffix(".log")
    if not (args.reuse and log.exists()):
        if not pbf.exists():
            raise SystemExit(f"{pbf} is missing: run bench.country --nodes {args.nodes} first")
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "bench.roads_stage", "--profiles", args.profiles]
        with log.open("w") as stream:
            subprocess.run([*cmd, "--child", str(pbf), str(out)], stdout=stream, stderr=subprocess.STDOUT, check=False)
    figures = stage_figures(out, log, profiles)
    figures["routes"] = {
        name: route_latency(out / layout.profile_graph_dir(name), args.queries, args.seed) for name in profiles
    }
    print(json.dumps(figures, indent=2), flush=True)
    done = json.loads(RESULTS.read_text())
    entry = next(e for e in done["sizes"] if size_key(e) == (args.nodes, "car"))  # what the car's import adds to
    entry.setdefault("roads_stage", {})[",".join(profiles)] = figures
    RESULTS.write_text(json.dumps(done, indent=2) + "\n")


if __name__ == "__main__":
    main()
