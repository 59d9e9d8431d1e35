"""Scaling curve on synthetic cities (bench/synthetic.py): import time, peak memory, query latency.

For each size (target node count): generate the PBF, import it with the full pipeline
(``engine.ingest.pipeline.import_pbf``, every stage) in a child process whose peak RSS is the
import's memory, then in another child open the dataset and time, in process:

* ``route``: ``engine.services.routing.run`` without steps between seeded random node pairs;
* ``snap``: ``engine.services.snaptoroad.run`` on noisy traces (sigma 10 m, 100 m spacing);
* ``iso``: ``engine.services.isochrone.run``, one 10-minute contour from random origins.

    .venv/bin/python -m bench.scaling [--sizes 10000,100000,1000000] [--pairs 200]
                                      [--engine-only 10000,100000,1000000]

``--engine-only`` sizes are measured without the import (no routing): map matching and the
isochrone core on a network built straight from the generated ways, for sizes whose import does
not fit in the time budget.

Each import child is killed after ``--timeout`` seconds (default 600, the 10-minute budget
of a 1M-node import). Results: bench/results/scaling.json.

Search and geofencing (addresses, POIs and names on the synthetic city, fences per account) have
their own curve, bench/scaling_search.py; ``--addresses 100000,1000000`` here runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.child import json_child
from bench.matching import RESULTS

WORK = Path(os.environ.get("MERIDIAN_SCALING_DIR", "/tmp/meridian-scaling"))


def child_import(pbf: str, data: str) -> None:
    from engine.ingest.pipeline import import_pbf

    t0 = time.perf_counter()
    res = import_pbf(Path(pbf), Path(data), "synthetic", force=True)
    out = {
        "seconds": round(time.perf_counter() - t0, 2),
        "stages": {k: v["seconds"] for k, v in res.manifest["stages"].items()},
        "counts": res.manifest["counts"],
        # the manifest's: each stage resets the process's peak (engine.progress)
        "peak_rss_mb": res.manifest["peak_rss_mb"],
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
    ds = reg.require("synthetic")
    graph = ds.component("roadnet").graph
    net = ds.component("roadnet").network
    open_s = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    n = graph.n_nodes
    lat, lng = np.asarray(graph.node_lat), np.asarray(graph.node_lng)

    def pick() -> tuple[float, float]:
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
    snap_run(reg, SnapParams((pick(), pick())))  # warm-up
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
    iso_ms: list[float] = []
    iso_run(reg, IsochroneParams(*pick(), times=(10.0,)))
    for _ in range(max(5, pairs // 20)):
        t = time.perf_counter()
        iso_run(reg, IsochroneParams(*pick(), times=(10.0,)))
        iso_ms.append((time.perf_counter() - t) * 1e3)

    def pct(v):
        return (
            {"p50": round(float(np.percentile(v, 50)), 3), "p95": round(float(np.percentile(v, 95)), 3)} if v else None
        )

    print(
        json.dumps(
            {
                "open_s": round(open_s, 2),
                "route_ms": pct(route_ms),
                "route_failed": failed,
                "snap_ms": pct(snap_ms),
                "snap_points_per_trace": round(float(np.mean(points)), 1) if points else 0,
                "iso10_ms": pct(iso_ms),
                "query_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "ch": {
                    "seconds": graph.meta["seconds"].get("ch"),
                    "core": graph.meta["counts"].get("ch_core"),
                    "shortcuts": graph.meta["counts"].get("ch_shortcuts"),
                    "ch_nodes": graph.n_edges,
                },
            }
        )
    )


def child_engine_only(size: int, seed: int, n: int) -> None:
    """Map matching and isochrones on a network built straight from the generated ways
    (``engine.matching.network.from_ways``, no import, no CH): the query side at sizes the
    import cannot reach in time."""
    from bench.synthetic import generate
    from engine.isochrone.compute import contours, plain_turns, reach
    from engine.matching.hmm import MatchOptions, _path_edges, match
    from engine.matching.network import from_ways
    from engine.matching.traces import distance_to_polyline, sample_trace

    t0 = time.perf_counter()
    city = generate(size, seed)
    net = from_ways(city.lat, city.lng, city.ways)
    _ = net.grid
    turns = plain_turns(net)
    build_s = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    snap_ms: list[float] = []
    on = total = 0
    while len(snap_ms) < n:
        a = int(rng.integers(0, net.node_count))
        near = np.flatnonzero(np.hypot(net.node_x - net.node_x[a], net.node_y - net.node_y[a]) < 3000)
        edges = _path_edges(net.first_out, net.head, net.tail, net.duration, a, int(rng.choice(near)), 1e12)
        if edges.size < 5:
            continue
        tr = sample_trace(net, edges, 100.0, 10.0, rng)
        t = time.perf_counter()
        segs = match(net, tr.x, tr.y, tr.timestamps, MatchOptions(sigma=10.0))
        snap_ms.append((time.perf_counter() - t) * 1e3)
        on += sum(int((distance_to_polyline(s.x, s.y, tr.path) < 2.0).sum()) for s in segs)
        total += tr.x.size
    iso_ms: list[float] = []
    while len(iso_ms) < n:
        p = int(rng.integers(0, net.node_count))
        cand = net.grid.candidates(net.node_x[p], net.node_y[p], 200.0, 1)
        if not cand.edge.size:
            continue
        t = time.perf_counter()
        entry = reach(net, turns, net.duration, True, int(cand.edge[0]), float(cand.offset[0]), -1, 600.0)
        contours(net, entry, net.duration, [600.0])
        iso_ms.append((time.perf_counter() - t) * 1e3)
    print(
        json.dumps(
            {
                "graph_nodes": net.node_count,
                "graph_edges": net.edge_count,
                "build_s": round(build_s, 1),
                "match_ms_p50": round(float(np.median(snap_ms)), 2),
                "match_on_path": round(on / total, 4),
                "match_points_per_trace": round(total / len(snap_ms), 1),
                "iso10_core_ms_p50": round(float(np.median(iso_ms)), 2),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


def run_child(args: list[str], timeout: float) -> dict:
    return json_child("bench.scaling", args, timeout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--keep", action="store_true", help="keep the generated datasets")
    parser.add_argument(
        "--engine-only",
        default="",
        help="sizes (comma list) measured without import: matching and isochrone "
        "cores on a network built from the generated ways",
    )
    parser.add_argument("--addresses", default="", help="run bench.scaling_search for these address counts")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.addresses:
        from bench import scaling_search  # noqa: PLC0415

        scaling_search.main(["--addresses", args.addresses])
        return
    if args.child:
        kind, *rest = args.child
        if kind == "import":
            child_import(*rest)
        elif kind == "engine":
            child_engine_only(int(rest[0]), int(rest[1]), int(rest[2]))
        else:
            child_query(rest[0], int(rest[1]), int(rest[2]))
        return

    from bench.synthetic import generate, write_pbf

    WORK.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    print(
        f"{'nodes':>9} {'ways':>7} {'gen s':>6} {'import s':>8} {'roads s':>7} {'CH s':>6} "
        f"{'CH core':>7} {'peak MB':>7} {'route p50/p95 ms':>17} {'snap p50 ms':>11} "
        f"{'iso10 p50 ms':>12}"
    )
    for size in (int(s) for s in args.sizes.split(",") if s):
        t0 = time.perf_counter()
        city = generate(size, args.seed)
        pbf = WORK / f"synthetic-{size}.osm.pbf"
        write_pbf(city, pbf)
        gen_s = time.perf_counter() - t0
        data = WORK / f"data-{size}"
        shutil.rmtree(data, ignore_errors=True)
        row: dict[str, Any] = {
            "target_nodes": size,
            "osm_nodes": city.node_count,
            "ways": len(city.ways),
            "generate_s": round(gen_s, 2),
        }
        try:
            row["import"] = run_child(["--child", "import", str(pbf), str(data)], args.timeout)
            row["query"] = run_child(["--child", "query", str(data), str(args.pairs), str(args.seed)], args.timeout)
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
        print(
            f"{city.node_count:>9} {len(city.ways):>7} {gen_s:>6.1f} {imp['seconds']:>8.1f} "
            f"{imp['stages'].get('roads', float('nan')):>7.1f} {q['ch']['seconds'] or 0:>6.1f} "
            f"{q['ch']['core'] or 0:>7} {imp['peak_rss_mb']:>7.0f} "
            f"{route['p50']:>8.2f}/{route['p95']:<8.2f} {q['snap_ms']['p50']:>11.2f} "
            f"{q['iso10_ms']['p50']:>12.2f}"
        )
    engine_rows = []
    if args.engine_only:
        print(
            f"\nwithout import (engine.matching.network.from_ways, no routing):\n"
            f"{'nodes':>9} {'graph n':>8} {'graph e':>8} {'build s':>7} {'match p50 ms':>12} "
            f"{'on path':>7} {'iso10 core p50 ms':>17} {'peak MB':>7}"
        )
    for size in (int(s) for s in args.engine_only.split(",") if s):
        try:
            r = run_child(["--child", "engine", str(size), str(args.seed), "20"], args.timeout)
        except (subprocess.TimeoutExpired, RuntimeError) as exc:
            r = {"error": str(exc)[-300:]}
        r["target_nodes"] = size
        engine_rows.append(r)
        if "error" in r:
            print(f"{size:>9}  {r['error']}")
            continue
        print(
            f"{size:>9} {r['graph_nodes']:>8} {r['graph_edges']:>8} {r['build_s']:>7} "
            f"{r['match_ms_p50']:>12} {r['match_on_path']:>7} {r['iso10_core_ms_p50']:>17} "
            f"{r['peak_rss_mb']:>7.0f}"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "scaling.json"
    # rows of sizes not run this time are kept from the previous results
    previous = json.loads(out.read_text()) if out.exists() else {}
    if isinstance(previous, list):
        previous = {"import_and_services": previous}

    def merged(old: list[dict], new: list[dict]) -> list[dict]:
        by_size = {r["target_nodes"]: r for r in old}
        by_size.update({r["target_nodes"]: r for r in new})
        return [by_size[k] for k in sorted(by_size)]

    report = {
        "import_and_services": merged(previous.get("import_and_services", []), rows),
        "engine_only": merged(previous.get("engine_only", []), engine_rows),
    }
    out.write_text(json.dumps(report, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
