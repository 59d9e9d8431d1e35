"""Map matching benchmark: Meridian snap to road next to OSRM /match, on synthetic noisy traces.

Traces are made from true routes on Meridian's road graph of each sample (shortest paths by
duration between random nodes, at least ``--min-length`` m), sampled every 100 m, moved by
Gaussian noise of sigma 10 m and 20 m per axis, with timestamps from the edge durations. The
same traces (same timestamps, ``radiuses`` = sigma) go to OSRM's ``/match`` over HTTP
(keep-alive) and to Meridian's ``engine.services.snaptoroad.run`` in process.

Metrics per engine and sigma:

* ``on_path``: share of *input* points whose snapped position lies within 2 m of the true path
  (points an engine drops count as misses) — "on the right road", graph-agnostic;
* ``on_route`` (Meridian only): share whose matched edge (either direction) is an edge of the
  true route — the strict graph-level version;
* ``mean_dist``: mean distance (m) from the snapped points to the true path;
* ``dropped``: share of points left unmatched; ``pieces``: matched segments per trace;
* latency per trace p50 / p95 (ms): Meridian in process, OSRM over HTTP.

    .venv/bin/python -m bench.matching [--traces 50] [--regions monaco,helsinki]

OSRM serves one region at a time (``serve.sh start <region>``): a region whose OSRM is not
up is measured for Meridian only. Results: bench/results/matching.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np

from bench import peers
from bench.peers import start_peers
from config.settings import PROJECT_ROOT
from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf
from engine.matching.traces import distance_to_polyline, sample_trace, true_route
from engine.services.snaptoroad import SnapParams, run

SAMPLES = PROJECT_ROOT / "data" / "samples"
RESULTS = PROJECT_ROOT / "bench" / "results"
OSRM = peers.OSRM_CH


def bench_data_dir() -> Path:
    return Path(os.environ.get("MERIDIAN_BENCH_DATA", str(PROJECT_ROOT / "var" / "bench-data")))


def load_registry(regions: list[str]) -> DatasetRegistry:
    data = bench_data_dir()
    for region in regions:
        import_pbf(SAMPLES / f"{region}.osm.pbf", data, region)
    return DatasetRegistry(data)


def osrm_region() -> str | None:
    """Which region OSRM serves (by asking for the nearest road to each sample's centre)."""
    for region, (lat, lng) in {"monaco": (43.7384, 7.4246), "helsinki": (60.1699, 24.9384)}.items():
        try:
            conn = http.client.HTTPConnection(*OSRM, timeout=2)
            conn.request("GET", f"/nearest/v1/driving/{lng},{lat}")
            body = json.loads(conn.getresponse().read())
            conn.close()
        except OSError:
            return None
        if body.get("code") == "Ok" and body["waypoints"][0]["distance"] < 2000:
            return region
    return None


def osrm_match(conn: http.client.HTTPConnection, lat, lng, ts, sigma):
    coords = ";".join(f"{b:.6f},{a:.6f}" for a, b in zip(lat, lng, strict=False))
    stamps = ";".join(str(int(round(t))) for t in ts)
    radii = ";".join(f"{sigma:g}" for _ in lat)
    path = (
        f"/match/v1/driving/{quote(coords, safe=',;.-')}?timestamps={stamps}&radiuses={radii}"
        "&overview=full&geometries=geojson&gaps=split"
    )
    conn.request("GET", path)
    body = json.loads(conn.getresponse().read())
    out: list[tuple[float, float] | None] = [None] * len(lat)
    if body.get("code") != "Ok":
        return out, 0
    for i, tp in enumerate(body.get("tracepoints") or []):
        if tp is not None:
            out[i] = (tp["location"][1], tp["location"][0])
    return out, len(body.get("matchings") or [])


def summarize(rows: list[dict]) -> dict:
    lat = np.array([r["ms"] for r in rows])
    pts = sum(r["points"] for r in rows)
    d = np.concatenate([r["dists"] for r in rows]) if rows else np.zeros(0)
    out = {
        "traces": len(rows),
        "points_per_trace": round(pts / max(1, len(rows)), 1),
        "on_path": round(sum(r["on_path"] for r in rows) / max(1, pts), 4),
        "mean_dist_m": round(float(d.mean()), 2) if d.size else None,
        "dropped": round(sum(r["dropped"] for r in rows) / max(1, pts), 4),
        "pieces_per_trace": round(float(np.mean([r["pieces"] for r in rows])), 2),
        "p50_ms": round(float(np.percentile(lat, 50)), 2),
        "p95_ms": round(float(np.percentile(lat, 95)), 2),
    }
    if rows and "on_route" in rows[0]:
        out["on_route"] = round(sum(r["on_route"] for r in rows) / max(1, pts), 4)
    return out


def bench_region(
    reg: DatasetRegistry, region: str, sigmas, n_traces: int, min_length: float, with_osrm: bool, seed: int
) -> dict:
    comp = reg.require(region).component("roadnet")
    net = comp.network
    twin = np.asarray(comp.twin)
    result: dict = {}
    conn = http.client.HTTPConnection(*OSRM, timeout=10) if with_osrm else None
    for sigma in sigmas:
        rng = np.random.default_rng(seed)
        mer_rows, osrm_rows = [], []
        for _ in range(n_traces):
            edges = true_route(net, rng, min_length)
            if edges is None:
                continue
            tr = sample_trace(net, edges, 100.0, sigma, rng)
            lat, lng = net.proj.to_latlng(tr.x, tr.y)
            ts = np.round(tr.timestamps).astype(np.int64)
            params = SnapParams(
                tuple(zip(lat.tolist(), lng.tolist(), strict=False)),
                timestamps=tuple(float(t) for t in ts),
                radius=sigma,
            )
            t0 = time.perf_counter()
            res = run(reg, params)
            ms = (time.perf_counter() - t0) * 1e3
            route = set(edges.tolist())
            snapped = [s for s in res["snapped"] if "original_index" in s]
            sx, sy = net.proj.to_xy(
                np.array([s["coord"]["lat"] for s in snapped]), np.array([s["coord"]["lng"] for s in snapped])
            )
            d = distance_to_polyline(np.atleast_1d(sx), np.atleast_1d(sy), tr.path)
            # strict: the matched edge, re-found from the snapped point and its way id
            on_route = 0
            cands = net.grid.candidates(np.atleast_1d(sx), np.atleast_1d(sy), 0.5, 16)
            for k, s in enumerate(snapped):
                sel = cands.edge[cands.point == k]
                sel = [e for e in sel if int(net.way_id[e]) == s["way_id"]]
                on_route += any(e in route or int(twin[e]) in route for e in sel)
            geom = res["geometry"]
            pieces = len(geom["coordinates"]) if geom["type"] == "MultiLineString" else 1
            mer_rows.append(
                {
                    "ms": ms,
                    "points": tr.x.size,
                    "on_path": int((d < 2.0).sum()),
                    "dists": d,
                    "dropped": tr.x.size - len(snapped),
                    "pieces": pieces,
                    "on_route": on_route,
                }
            )
            if conn is not None:
                t0 = time.perf_counter()
                pts, n_match = osrm_match(conn, lat, lng, ts, sigma)
                ms = (time.perf_counter() - t0) * 1e3
                got = [p for p in pts if p is not None]
                if got:
                    ox, oy = net.proj.to_xy(np.array([p[0] for p in got]), np.array([p[1] for p in got]))
                    od = distance_to_polyline(np.atleast_1d(ox), np.atleast_1d(oy), tr.path)
                else:
                    od = np.zeros(0)
                osrm_rows.append(
                    {
                        "ms": ms,
                        "points": tr.x.size,
                        "on_path": int((od < 2.0).sum()),
                        "dists": od,
                        "dropped": tr.x.size - len(got),
                        "pieces": n_match,
                    }
                )
        result[f"sigma_{sigma:g}"] = {"meridian": summarize(mer_rows)}
        if osrm_rows:
            result[f"sigma_{sigma:g}"]["osrm"] = summarize(osrm_rows)
    if conn is not None:
        conn.close()
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--traces",
        type=int,
        default=200,
        help="traces per region and sigma (50 moves the share by a point between draws)",
    )
    parser.add_argument("--regions", default="monaco,helsinki")
    parser.add_argument(
        "--start-peers",
        action="store_true",
        help="switch the peers (../shared/peers serve.sh) to each region before measuring it",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    regions = args.regions.split(",")
    reg = load_registry(regions)
    served = osrm_region()
    # warm up (numba compilation, component loading)
    for region in regions:
        bench_region(reg, region, (10.0,), 2, 500.0, False, 0)
    report: dict = {"osrm_served": {}, "regions": {}}
    print(
        f"{'region':9} {'sigma':>5} {'engine':9} {'pts/tr':>6} {'on_path':>8} {'on_route':>8} "
        f"{'mean m':>7} {'dropped':>7} {'pieces':>6} {'p50 ms':>7} {'p95 ms':>7}"
    )
    for region in regions:
        if args.start_peers:
            start_peers(region)
            served = osrm_region()
        min_length = 3000.0 if region == "monaco" else 1500.0
        res = bench_region(reg, region, (10.0, 20.0), args.traces, min_length, served == region, args.seed)
        report["regions"][region] = res
        report["osrm_served"][region] = served == region
        for key, engines in res.items():
            for engine, s in engines.items():
                print(
                    f"{region:9} {key[6:]:>5} {engine:9} {s['points_per_trace']:>6} "
                    f"{s['on_path']:>8.3f} {s.get('on_route', float('nan')):>8.3f} "
                    f"{s['mean_dist_m'] or 0:>7.2f} {s['dropped']:>7.3f} "
                    f"{s['pieces_per_trace']:>6} {s['p50_ms']:>7.2f} {s['p95_ms']:>7.2f}"
                )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "matching.json"
    out.write_text(json.dumps(report, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
