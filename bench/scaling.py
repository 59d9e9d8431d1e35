"""Scaling curve on synthetic cities (bench/synthetic.py): import time, peak memory, query latency.

For each size (target node count): generate the PBF, import it with the full pipeline
(``engine.ingest.pipeline.import_pbf``, every stage) in a child process whose peak RSS is the
import's memory, then in another child open the dataset and time, in process:

* ``route``: ``engine.services.routing.run`` without steps between seeded random node pairs;
* ``snap``: ``engine.services.snaptoroad.run`` on noisy traces (sigma 10 m, 100 m spacing);
* ``iso``: ``engine.services.isochrone.run``, one 10-minute contour from random origins.

    .venv/bin/python -m bench.scaling [--sizes 10000,100000,1000000] [--pairs 200]

Each import child is killed after ``--timeout`` seconds (default 600, the 10-minute budget
of a 1M-node import). Results: bench/results/scaling.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.matching import RESULTS
from config.settings import PROJECT_ROOT

WORK = Path(os.environ.get("MERIDIAN_SCALING_DIR", "/tmp/meridian-scaling"))


def child_import(pbf: str, data: str) -> None:
    from engine.ingest.pipeline import import_pbf

    t0 = time.perf_counter()
    res = import_pbf(Path(pbf), Path(data), "synthetic", force=True)
    out = {
        "seconds": round(time.perf_counter() - t0, 2),
        "stages": {k: v["seconds"] for k, v in res.manifest["stages"].items()},
        "counts": res.manifest["counts"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(out))


def child_query(data: str, pairs: int, seed: int) -> None:
    from engine.dataset import DatasetRegistry
    from engine.matching.traces import sample_trace, true_route
    from engine.services.isochrone import IsochroneParams
    from engine.services.isochrone import run as iso_run
    from engine.services.routing import RoutingParams
    from engine.services.routing import run as route_run
    from engine.services.snaptoroad import SnapParams
    from engine.services.snaptoroad import run as snap_run

    t0 = time.perf_counter()
    reg = DatasetRegistry(Path(data))
    ds = reg.get("synthetic")
    graph = ds.component("roadnet").graph
    net = ds.component("roadnet").network
    open_s = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    n = graph.n_nodes
    lat, lng = np.asarray(graph.node_lat), np.asarray(graph.node_lng)

    def pick():
        i = int(rng.integers(0, n))
        return float(lat[i]), float(lng[i])

    for _ in range(3):  # warm-up: component loading, numba compilation
        route_run(reg, RoutingParams(origin=pick(), destination=pick(), steps=False))
    route_ms, failed = [], 0
    for _ in range(pairs):
        a, b = pick(), pick()
        t = time.perf_counter()
        try:
            route_run(reg, RoutingParams(origin=a, destination=b, steps=False))
        except Exception:  # a pair without route: count it, keep timing the others
            failed += 1
            continue
        route_ms.append((time.perf_counter() - t) * 1e3)
    snap_ms, points = [], []
    for _ in range(max(5, pairs // 10)):
        edges = true_route(net, rng, 3000.0)
        if edges is None:
            continue
        tr = sample_trace(net, edges, 100.0, 10.0, rng)
        tlat, tlng = net.proj.to_latlng(tr.x, tr.y)
        params = SnapParams(tuple(zip(tlat.tolist(), tlng.tolist(), strict=False)), radius=10.0)
        t = time.perf_counter()
        snap_run(reg, params)
        snap_ms.append((time.perf_counter() - t) * 1e3)
        points.append(tr.x.size)
    iso_ms = []
    iso_run(reg, IsochroneParams(*pick(), times=(10.0,)))
    for _ in range(max(5, pairs // 20)):
        t = time.perf_counter()
        iso_run(reg, IsochroneParams(*pick(), times=(10.0,)))
        iso_ms.append((time.perf_counter() - t) * 1e3)

    def pct(v):
        return {"p50": round(float(np.percentile(v, 50)), 3), "p95": round(float(np.percentile(v, 95)), 3)} if v else None

    print(json.dumps({
        "open_s": round(open_s, 2),
        "route_ms": pct(route_ms), "route_failed": failed,
        "snap_ms": pct(snap_ms), "snap_points_per_trace": round(float(np.mean(points)), 1) if points else 0,
        "iso10_ms": pct(iso_ms),
        "query_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


def run_child(args: list[str], timeout: float) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.scaling", *args], cwd=PROJECT_ROOT, capture_output=True,
        text=True, timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--keep", action="store_true", help="keep the generated datasets")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "import":
            child_import(*rest)
        else:
            child_query(rest[0], int(rest[1]), int(rest[2]))
        return

    from bench.synthetic import generate, write_pbf

    WORK.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'nodes':>9} {'ways':>7} {'gen s':>6} {'import s':>8} {'roads s':>7} {'peak MB':>7} "
          f"{'route p50/p95 ms':>17} {'snap p50 ms':>11} {'iso10 p50 ms':>12}")
    for size in (int(s) for s in args.sizes.split(",")):
        t0 = time.perf_counter()
        city = generate(size, args.seed)
        pbf = WORK / f"synthetic-{size}.osm.pbf"
        write_pbf(city, pbf)
        gen_s = time.perf_counter() - t0
        data = WORK / f"data-{size}"
        shutil.rmtree(data, ignore_errors=True)
        row = {"target_nodes": size, "osm_nodes": city.node_count, "ways": len(city.ways),
               "generate_s": round(gen_s, 2)}
        try:
            row["import"] = run_child(["--child", "import", str(pbf), str(data)], args.timeout)
            row["query"] = run_child(["--child", "query", str(data), str(args.pairs),
                                      str(args.seed)], args.timeout)
        except subprocess.TimeoutExpired:
            row["error"] = f"timed out after {args.timeout:.0f}s"
        except RuntimeError as exc:
            row["error"] = str(exc)
        rows.append(row)
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
            pbf.unlink(missing_ok=True)
        if "error" in row:
            print(f"{city.node_count:>9} {len(city.ways):>7} {gen_s:>6.1f}  {row['error'][-300:]}")
            continue
        imp, q = row["import"], row["query"]
        route = q["route_ms"] or {"p50": float("nan"), "p95": float("nan")}
        print(f"{city.node_count:>9} {len(city.ways):>7} {gen_s:>6.1f} {imp['seconds']:>8.1f} "
              f"{imp['stages'].get('roads', float('nan')):>7.1f} {imp['peak_rss_mb']:>7.0f} "
              f"{route['p50']:>8.2f}/{route['p95']:<8.2f} {q['snap_ms']['p50']:>11.2f} "
              f"{q['iso10_ms']['p50']:>12.2f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "scaling.json"
    out.write_text(json.dumps(rows, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
