"""Car matrices side by side: Meridian ``POST /v1/matrix`` over HTTP next to OSRM CH
``GET /table/v1/driving/...?annotations=duration,distance`` and Valhalla ``POST
/sources_to_targets`` (auto costing), on the same seeded points, with the same client
(``bench.http_client``: one keep-alive ``http.client`` connection per server).

For each sample region and each size N (100 and 1,000 by default), N seeded random points of the
region's box that snap to a road within ``--snap-m``; every run sends the N x N matrix to each
engine in turn (Meridian, OSRM, Valhalla), after one warm-up round nobody times; p50 over
``--runs``. Valhalla above ``--valhalla-rounds-max`` points (it takes minutes for 1,000 x 1,000)
is called once, after the others' rounds, so that its work does not load theirs; an answer not
there within ``--timeout-s`` is reported as such (the server is not waited for again).
Meridian's first point moves by k x 1e-7 degrees (1 cm) every call, so that every call is
computed, never answered from the Redis cache. Meridian is its own stack, started here:
a redis-server of its own, gunicorn (``config/gunicorn.py``, 2 workers) and a Celery worker on
queue ``matrix`` (concurrency 1; a matrix above ``matrix_inline_cells`` is computed there while
the request waits), a key whose plan has no quota windows (the quota script still runs). Also
timed: ``engine.services.matrix.run`` in this process (snapping, the CH buckets, the
JSON-ready rows), so the table shows what the HTTP path adds.

Agreement (each size, the last run's answers): the share of cells whose distance is within 5 % of
OSRM's, and every other cell put in the first class that explains it: no route in one engine;
a source or destination that the two engines snapped more than ``SNAP_APART_M`` apart because
Meridian passed over a nearer fragment of its network (a road cut off at the extract's edge) or
a track for the well-connected network, where OSRM snaps to the nearest road; snapped apart
otherwise; both distances under ``SHORT_M`` (a few metres of snapping is more than
5 %); else another path.

    PEERS_DIR=... OSRM_CH_PORT=... VALHALLA_PORT=... python -m bench.matrix [--regions monaco,helsinki]
        [--sizes 100,1000] [--runs 5] [--data-dir DIR] [--start-peers] [--out bench/results/matrix.json]

Prints a table and writes the JSON that ``bench.report`` turns into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import peers
from bench.http_client import Http
from bench.peers import peers_region, start_peers
from bench.record import run_record
from config.settings import PROJECT_ROOT, Settings
from engine.dataset import DatasetRegistry
from engine.geo import haversine_m
from engine.ingest.pipeline import import_pbf
from engine.services import matrix

RESULTS = PROJECT_ROOT / "bench" / "results"
SAMPLES = PROJECT_ROOT / "data" / "samples"
SNAP_APART_M = 20.0
SHORT_M = 500.0
LatLng = tuple[float, float]


def sample_points(dataset: Any, n: int, seed: int = 1, snap_m: float = 1000.0) -> list[LatLng]:
    """``n`` seeded random points of the dataset's box that snap to a road within ``snap_m``."""
    rng = np.random.default_rng(seed)
    b = dataset.bbox
    out: list[LatLng] = []
    while len(out) < n:
        lat, lng = rng.uniform(b.min_lat, b.max_lat), rng.uniform(b.min_lng, b.max_lng)
        if dataset.router.snap(lat, lng, snap_m) is not None:
            out.append((round(float(lat), 6), round(float(lng), 6)))
    return out


# ---------------------------------------------------------------------------- the engines' calls
@dataclass
class Answer:
    """One engine's matrix, in metres and seconds, NaN where it has no route, and where it
    snapped each point (sources; the matrices are square)."""

    seconds: float
    durations: np.ndarray
    distances: np.ndarray
    snapped: list[LatLng]


def _array(rows: list[list[float | None]], scale: float = 1.0) -> np.ndarray:
    return np.array([[np.nan if v is None else v * scale for v in row] for row in rows], dtype=np.float64)


def meridian(client: Http, key: str, points: list[LatLng], call: int) -> Answer:
    moved = [(points[0][0] + call * 1e-7, points[0][1]), *points[1:]]
    body = json.dumps({"sources": [{"lat": a, "lng": b} for a, b in moved]}).encode()
    elapsed, status, data = client.request("POST", "/v1/matrix", body=body, headers={"X-API-Key": key})
    assert status == 200, (status, data[:300])
    doc = json.loads(data)
    snapped = [(w["location"]["lat"], w["location"]["lng"]) for w in doc["sources"]]
    return Answer(elapsed, _array(doc["durations"]), _array(doc["distances"]), snapped)


def osrm(client: Http, points: list[LatLng]) -> Answer:
    coords = ";".join(f"{lng},{lat}" for lat, lng in points)
    path = f"/table/v1/driving/{coords}?annotations=duration,distance"
    elapsed, status, data = client.request("GET", path)
    assert status == 200, (status, data[:300])
    doc = json.loads(data)
    snapped = [(w["location"][1], w["location"][0]) for w in doc["sources"]]
    return Answer(elapsed, _array(doc["durations"]), _array(doc["distances"]), snapped)


def valhalla(client: Http, points: list[LatLng], retry: bool = True) -> Answer:
    locations = [{"lat": lat, "lon": lng} for lat, lng in points]
    body = {"sources": locations, "targets": locations, "costing": "auto", "verbose": False}
    elapsed, status, data = client.request("POST", "/sources_to_targets", body=json.dumps(body).encode(), retry=retry)
    assert status == 200, (status, data[:300])
    doc = json.loads(data)["sources_to_targets"]
    return Answer(elapsed, _array(doc["durations"]), _array(doc["distances"], 1000.0), [])


# ---------------------------------------------------------------------------- agreement
def passed_over(dataset: Any, points: list[LatLng]) -> np.ndarray:
    """Per point: whether Meridian snapped it past a nearer road piece, a fragment of its network
    (a road cut off at the extract's edge) or a track, to the well-connected network (OSRM
    snaps to the nearest road and routes from its small components as it can)."""
    snapper = dataset.router.snapper
    out = []
    for lat, lng in points:
        s = snapper.snap(lat, lng)
        nearest = snapper.candidates(lat, lng, s.distance_m + 1.0, limit=1)
        out.append(bool(nearest) and nearest[0].edge != s.edge and nearest[0].distance_m < s.distance_m - 1.0)
    return np.array(out)


def agreement(ours: Answer, theirs: Answer, passed: np.ndarray) -> dict[str, Any]:
    """Cells within 5 % of OSRM's distance, and the others by the first class that explains
    them (``passed``: the points Meridian snapped past a nearer fragment, :func:`passed_over`)."""
    m, o = ours.distances, theirs.distances
    apart = np.array([haversine_m(*a, *b) > SNAP_APART_M for a, b in zip(ours.snapped, theirs.snapped, strict=True)])
    both = ~np.isnan(m) & ~np.isnan(o)
    close = both & (np.abs(m - o) <= 0.05 * o)
    left = ~close
    classes: dict[str, int] = {}
    moved = apart & passed
    for name, mask in (
        ("no route in Meridian only", np.isnan(m) & ~np.isnan(o)),
        ("no route in OSRM only", ~np.isnan(m) & np.isnan(o)),
        ("no route in either", np.isnan(m) & np.isnan(o)),
        (
            f"a point snapped > {SNAP_APART_M:g} m apart: Meridian passed over a nearer fragment or track",
            moved[:, None] | moved[None, :],
        ),
        (f"a point snapped > {SNAP_APART_M:g} m apart, other", apart[:, None] | apart[None, :]),
        (f"both under {SHORT_M:g} m", (m < SHORT_M) & (o < SHORT_M)),
        ("another path", np.ones_like(left)),
    ):
        take = left & mask
        classes[name] = int(take.sum())
        left &= ~mask
    ratio = m[both & (o > 0)] / o[both & (o > 0)]
    return {
        "cells": int(m.size),
        "within_5pct": int(close.sum()),
        "share_within_5pct": round(float(close.sum() / m.size), 4),
        "share_within_10pct": round(float((both & (np.abs(m - o) <= 0.10 * o)).sum() / m.size), 4),
        "median_distance_ratio": round(float(np.median(ratio)), 4) if ratio.size else None,
        "points_snapped_apart": int(apart.sum()),
        "points_passed_over_a_nearer_fragment": int(passed.sum()),
        "others": classes,
    }


# ---------------------------------------------------------------------------- Meridian's stack
@contextlib.contextmanager
def meridian_stack(data_dir: Path, queues: str) -> Iterator[tuple[int, str]]:
    """A redis-server, gunicorn (2 workers) and a Celery worker on ``queues`` (concurrency 1) of
    our own over ``data_dir``, and a key on a plan with no quota windows: yields (port, key)."""
    from accounts.store import AccountStore
    from tests.fixtures_live import free_port, start_gunicorn, start_redis, start_worker, stop, wait_worker

    work = Path(tempfile.mkdtemp(prefix="meridian-bench-matrix-"))
    redis_port = free_port()
    redis_proc = start_redis(redis_port, work)
    settings = Settings.from_env(
        {
            "DATA_DIR": str(data_dir),
            "DATABASE_URL": f"sqlite:///{work / 'accounts.db'}",
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "SERVICE_NAME": f"meridianbench{os.getpid()}",
            "TASK_WAIT_TIMEOUT": "120",
        }
    )
    store = AccountStore(settings.database_url)
    store.create_schema()
    store.set_plan("bench-unlimited", per_minute=0, per_day=0, per_month=0, services=["*"], max_matrix_cells=0)
    key = store.create_key("bench-matrix", "bench-unlimited").key
    port = free_port()
    procs = []
    try:
        procs.append(start_worker(settings, work / "worker.log", queues=queues, concurrency=1, name="bench"))
        wait_worker(settings, procs[-1], timeout=600)  # its warm-up loads every kernel first
        procs.append(start_gunicorn(settings, port, work / "gunicorn.log"))
        yield port, key
    finally:
        for proc in reversed(procs):
            stop(proc)
        redis_proc.terminate()
        redis_proc.wait(10)


# ---------------------------------------------------------------------------- the run
def p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def in_process_ms(registry: DatasetRegistry, points: list[LatLng], runs: int) -> float:
    params = matrix.MatrixParams(tuple(points))
    matrix.run(registry, params)  # compile and warm
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        matrix.run(registry, params)
        times.append(time.perf_counter() - t0)
    return p50_ms(times)


def bench_size(
    registry: DatasetRegistry, region: str, n: int, args: argparse.Namespace, port: int, key: str, with_peers: bool
) -> tuple[dict[str, Any], dict[str, Answer]]:
    dataset = registry.require(region)
    points = sample_points(dataset, n, seed=args.seed, snap_m=args.snap_m)
    clients = {"meridian": Http("127.0.0.1", port), "osrm": Http(*peers.OSRM_CH), "valhalla": Http(*peers.VALHALLA)}
    for c in clients.values():
        c.conn.timeout = args.timeout_s
    calls = {
        "meridian": lambda k: meridian(clients["meridian"], key, points, k),
        "osrm": lambda k: osrm(clients["osrm"], points),
        "valhalla": lambda k: valhalla(clients["valhalla"], points, retry=k > 0),
    }
    calls = {name: call for name, call in calls.items() if name in args.engines and (with_peers or name == "meridian")}
    in_process = in_process_ms(registry, points, args.runs)  # first: this process holds no answers yet
    once = [name for name in calls if name == "valhalla" and n > args.valhalla_rounds_max]
    times: dict[str, list[float]] = {name: [] for name in calls}
    last: dict[str, Answer] = {}
    for run in range(args.runs + 1):  # run 0 warms every engine up
        for name, call in calls.items():
            if name not in once:
                last[name] = call(run + 1)
                if run:
                    times[name].append(last[name].seconds)
    timed_out = []
    for name in once:  # one call, after the others' rounds, so that its minutes load none of theirs
        try:
            last[name] = calls[name](0)
            times[name].append(last[name].seconds)
        except TimeoutError:
            timed_out.append(name)
    row: dict[str, Any] = {
        "region": region,
        "n": n,
        "runs": args.runs,
        "in_process_p50_ms": in_process,
        **{f"{name}_p50_ms": p50_ms(t) for name, t in times.items() if t},
        **{f"{name}_ms": [round(s * 1000, 1) for s in t] for name, t in times.items() if t},
        "single_call": once,
        "timed_out": timed_out,
        "timeout_s": args.timeout_s,
    }
    for peer in ("osrm", "valhalla"):
        if times.get(peer):
            row[f"meridian_over_{peer}"] = round(row["meridian_p50_ms"] / row[f"{peer}_p50_ms"], 2)
    if "osrm" in last:
        row["agreement_vs_osrm"] = agreement(last["meridian"], last["osrm"], passed_over(dataset, points))
    return row, last


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{'region':<10}{'N':>6}{'in process':>12}{'Meridian':>10}{'OSRM CH':>10}{'Valhalla':>10}{'/OSRM':>8}{'/Valh.':>8}"
    )
    for r in rows:
        print(
            f"{r['region']:<10}{r['n']:>6}{r['in_process_p50_ms']:>12}{r['meridian_p50_ms']:>10}"
            f"{r.get('osrm_p50_ms', ''):>10}{r.get('valhalla_p50_ms', ''):>10}"
            f"{r.get('meridian_over_osrm', ''):>8}{r.get('meridian_over_valhalla', ''):>8}"
        )
    print("(p50 ms over HTTP, same client; in process: engine.services.matrix.run)")
    for r in rows:
        agr = r.get("agreement_vs_osrm")
        if agr:
            print(
                f"{r['region']} {r['n']}x{r['n']}: {agr['share_within_5pct']:.1%} of {agr['cells']} cells within 5 % "
                f"of OSRM's distance; the others: {agr['others']}"
            )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--regions", default="monaco,helsinki")
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--valhalla-rounds-max",
        type=int,
        default=100,
        help="above this many points Valhalla is called once, after the others' rounds (it takes minutes)",
    )
    ap.add_argument("--timeout-s", type=float, default=300.0, help="an engine's answer is waited for this long")
    ap.add_argument("--engines", default="meridian,osrm,valhalla", help="which of meridian,osrm,valhalla to time")
    ap.add_argument("--snap-m", type=float, default=250.0, help="points snap to a road within this many metres")
    ap.add_argument("--data-dir", help="a DATA_DIR with the samples imported (default: import into a temporary one)")
    ap.add_argument("--start-peers", action="store_true", help="switch the peers kit to each region first")
    ap.add_argument("--out", default=str(RESULTS / "matrix.json"))
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still stops its servers
    args.engines = args.engines.split(",")
    regions = [r for r in args.regions.split(",") if r]
    data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="meridian-matrix-")) / "data"
    for region in regions:
        import_pbf(SAMPLES / f"{region}.osm.pbf", data_dir, region)
    registry = DatasetRegistry(data_dir)
    load_start = os.getloadavg()[0]
    rows = []
    with meridian_stack(data_dir, "matrix") as (port, key):
        for region in regions:
            if args.start_peers:
                start_peers(region)
            with_peers = peers_region() == region
            for n in (int(s) for s in args.sizes.split(",")):
                row, _ = bench_size(registry, region, n, args, port, key, with_peers)
                rows.append(row)
                print({k: v for k, v in row.items() if not k.endswith("_ms") or "p50" in k}, flush=True)
    doc = {
        "benchmark": "matrix",
        **run_record("bench.matrix", argv, load_start),
        "results": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print_table(rows)
    print(f"\nload average {doc['load_start']} -> {doc['load_end']} on {doc['cores']} cores; wrote {out}")


if __name__ == "__main__":
    main()
