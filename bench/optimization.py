"""Route optimisation next to VROOM + OSRM: the same problem (``--jobs`` jobs with 1-hour time
windows in an 8-hour day, 60-300 s of service, deliveries of 1-3; ``--vehicles`` vans of capacity
60 from one depot; ``tests/engine/optimization_check.py`` builds it) solved

(a) end to end by Meridian: ``POST /v1/optimization`` over gunicorn (2 workers), its
    ``optimization`` queue and a Celery worker (concurrency 1), a redis-server of its own
    (``bench.matrix.meridian_stack``); every answer checked by the tests' independent checker
    (arrival times from Meridian's matrix, time windows, capacities, each job once);
(b) by VROOM (``pyvroom``) over OSRM CH in the same run, as VROOM's own ``-g`` run would do it:
    ``GET /table/v1/driving/...?annotations=duration,distance`` for the locations, the solve
    (the same exploration level and threads as Meridian's, ``engine.services.optimization``),
    then each route's geometry from ``GET /route/v1/driving/...?overview=full``.

Runs take turns (a, b, a, b, ...) after one warm-up of each; p50 over ``--runs``. Meridian's depot
moves by k x 1e-7 degrees (1 cm) every call, so that no call is answered from the Redis cache.

``--problems K`` solves K problems (seeds 200, 201, ...: other points, windows and amounts): VROOM's
local search follows the matrix it is given, so two matrices of one problem that differ by a few
seconds here and there send it down different paths and one problem's times say as much about
that path as about either stack. The verdict is the K problems' total time, each problem's row
beside it.

    PEERS_DIR=... OSRM_CH_PORT=... python -m bench.optimization [--region helsinki] [--jobs 200]
        [--vehicles 10] [--runs 3] [--problems 5] [--data-dir DIR] [--start-peers]
        [--out bench/results/optimization.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import vroom

from bench import peers
from bench.http_client import Http
from bench.matrix import RESULTS, SAMPLES, meridian_stack
from bench.peers import peers_region, start_peers
from bench.record import run_record
from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf
from engine.services import matrix, optimization
from tests.engine.optimization_check import check_solution, connected_points, problem


def moved(body: dict[str, Any], call: int) -> dict[str, Any]:
    """``body`` with the depot (every vehicle's start and end) moved by ``call`` x 1e-7 degrees."""
    depot = [body["vehicles"][0]["start"][0], body["vehicles"][0]["start"][1] + call * 1e-7]
    return {**body, "vehicles": [{**v, "start": depot, "end": depot} for v in body["vehicles"]]}


def meridian(client: Http, key: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    elapsed, status, data = client.request(
        "POST", "/v1/optimization", body=json.dumps(body).encode(), headers={"X-API-Key": key}
    )
    assert status == 200, (status, data[:300])
    return elapsed, json.loads(data)


def _locations(body: dict[str, Any]) -> list[list[float]]:
    """The problem's distinct locations ``[lng, lat]``: the depot first, then the jobs'."""
    out: list[list[float]] = []
    for loc in [body["vehicles"][0]["start"], *(j["location"] for j in body["jobs"])]:
        if loc not in out:
            out.append(loc)
    return out


def vroom_osrm(osrm: Http, body: dict[str, Any]) -> dict[str, Any]:
    """(b): OSRM's table, VROOM's solve over its durations, OSRM's route lines; seconds of each."""
    locations = _locations(body)
    index = {tuple(loc): i for i, loc in enumerate(locations)}
    coords = ";".join(f"{lng},{lat}" for lng, lat in locations)
    t0 = time.perf_counter()
    status, data = osrm.request("GET", f"/table/v1/driving/{coords}?annotations=duration,distance")[1:]
    assert status == 200, (status, data[:300])
    table = json.loads(data)
    durations = np.rint(np.array(table["durations"], dtype=np.float64)).astype(np.uint32)
    t1 = time.perf_counter()
    solution = solve(body, index, durations)
    t2 = time.perf_counter()
    routes = solution.routes
    for _vehicle, rows in routes.groupby("vehicle_id", sort=False, observed=True):
        stops = ";".join(coords.split(";")[i] for i in rows["location_index"].astype(int))
        status = osrm.request("GET", f"/route/v1/driving/{stops}?overview=full&geometries=polyline")[1]
        assert status == 200
    t3 = time.perf_counter()
    served = int((routes["type"] == "job").sum())
    return {
        "seconds": t3 - t0,
        "table_s": t1 - t0,
        "solve_s": t2 - t1,
        "geometry_s": t3 - t2,
        "served": served,
        "unassigned": len(body["jobs"]) - served,
        "routes": int(routes["vehicle_id"].nunique()),
        "cost": int(solution.summary.cost),
    }


def solve(body: dict[str, Any], index: dict[tuple[float, ...], int], durations: np.ndarray) -> Any:
    """VROOM over ``durations``, with Meridian's search settings for a problem of this size."""
    problem_ = vroom.Input()
    problem_.set_durations_matrix("car", durations)
    for v in body["vehicles"]:
        problem_.add_vehicle(
            vroom.Vehicle(
                v["id"],
                start=index[tuple(v["start"])],
                end=index[tuple(v["end"])],
                capacity=v["capacity"],
                time_window=vroom.TimeWindow(*v["time_window"]),
            )
        )
    for j in body["jobs"]:
        problem_.add_job(
            vroom.Job(
                j["id"],
                location=index[tuple(j["location"])],
                default_service=j["service"],
                delivery=vroom.Amount(j["delivery"]),
                time_windows=[vroom.TimeWindow(*w) for w in j["time_windows"]],
            )
        )
    tasks = len(body["jobs"])
    level = optimization.EXPLORATION_LEVEL if tasks <= optimization.LARGE else optimization.LARGE_EXPLORATION_LEVEL
    threads = max(1, min(optimization.MAX_THREADS, os.cpu_count() or 1))
    return problem_.solve(
        exploration_level=level, nb_threads=threads, timeout=timedelta(seconds=optimization.SOLVE_TIMEOUT_S)
    )


def solve_on_meridian_matrix(registry: DatasetRegistry, body: dict[str, Any]) -> float:
    """Seconds of VROOM's solve alone over Meridian's own car matrix of the problem (in process):
    with the solve over OSRM's matrix it tells the solver's search, which follows the matrix it is
    given, from the rest of each end-to-end call."""
    locations = _locations(body)
    index = {tuple(loc): i for i, loc in enumerate(locations)}
    params = matrix.MatrixParams(tuple((lat, lng) for lng, lat in locations), annotations=("duration",))
    durations = np.rint(matrix.run_arrays(registry, params)["durations"]).astype(np.uint32)
    t0 = time.perf_counter()
    solve(body, index, durations)
    return time.perf_counter() - t0


def compare(
    client: Http, osrm: Http, key: str, registry: DatasetRegistry, body: dict[str, Any], runs: int
) -> dict[str, Any]:
    """One problem: Meridian end to end and VROOM + OSRM taking turns, p50 of ``runs`` after a
    warm-up of each; every Meridian answer checked."""
    ours: list[float] = []
    theirs: list[dict[str, Any]] = []
    own_matrix_solves: list[float] = []
    for run in range(runs + 1):  # run 0 warms both up
        sent = moved(body, run + 1)
        elapsed, answer = meridian(client, key, sent)
        checked = check_solution(registry, sent, answer)
        other = vroom_osrm(osrm, body)
        own_solve = solve_on_meridian_matrix(registry, body)
        if run:
            ours.append(elapsed)
            theirs.append(other)
            own_matrix_solves.append(own_solve)
    p50 = {
        k: round(statistics.median(r[k] for r in theirs), 3) for k in ("seconds", "table_s", "solve_s", "geometry_s")
    }
    m = {
        "p50_s": round(statistics.median(ours), 3),
        "seconds": [round(s, 3) for s in ours],
        **checked,
        "cost": answer["summary"]["cost"],
        "p50_solve_alone_s": round(statistics.median(own_matrix_solves), 3),
    }
    v = {
        **{f"p50_{k}": val for k, val in p50.items()},
        "seconds": [round(r["seconds"], 3) for r in theirs],
        **{k: theirs[-1][k] for k in ("served", "unassigned", "routes", "cost")},
    }
    return {"meridian": m, "vroom_osrm": v, "meridian_over_vroom_osrm": round(m["p50_s"] / p50["seconds"], 2)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--region", default="helsinki")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--vehicles", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--problems", type=int, default=5, help="problems of seeds 200, 201, ... (see above)")
    ap.add_argument("--data-dir", help="a DATA_DIR with the samples imported (default: import into a temporary one)")
    ap.add_argument("--start-peers", action="store_true", help="switch the peers kit to the region first")
    ap.add_argument("--out", default=str(RESULTS / "optimization.json"))
    args = ap.parse_args(argv)
    data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="meridian-opt-")) / "data"
    import_pbf(SAMPLES / f"{args.region}.osm.pbf", data_dir, args.region)
    registry = DatasetRegistry(data_dir)
    bodies = [
        (
            seed,
            problem(
                connected_points(registry, args.region, args.jobs + 1, seed=seed),
                args.vehicles,
                seed=seed,
                horizon=8 * 3600,
                capacity=60,
            ),
        )
        for seed in range(200, 200 + args.problems)
    ]
    if args.start_peers:
        start_peers(args.region)
    if peers_region() != args.region:
        raise SystemExit(f"the peers kit does not serve {args.region} (--start-peers)")
    load_start = os.getloadavg()[0]
    with meridian_stack(data_dir, "optimization") as (port, key):
        client, osrm = Http("127.0.0.1", port), Http(*peers.OSRM_CH)
        for c in (client, osrm):
            c.conn.timeout = 120
        problems = [{"seed": seed, **compare(client, osrm, key, registry, body, args.runs)} for seed, body in bodies]
    ours = sum(p["meridian"]["p50_s"] for p in problems)
    theirs = sum(p["vroom_osrm"]["p50_seconds"] for p in problems)
    doc = {
        "benchmark": "optimization",
        **run_record("bench.optimization", argv, load_start),
        "region": args.region,
        "jobs": args.jobs,
        "vehicles": args.vehicles,
        "runs": args.runs,
        "solve_timeout_s": optimization.SOLVE_TIMEOUT_S,
        "problems": problems,
        "total_p50_s": {"meridian": round(ours, 3), "vroom_osrm": round(theirs, 3)},
        "meridian_over_vroom_osrm": round(ours / theirs, 2),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"\n{args.region}: {args.jobs} jobs with time windows, {args.vehicles} vehicles, p50 of {args.runs} runs")
    print(f"{'seed':<6}{'Meridian s':>12}{'VROOM+OSRM s':>14}{'ratio':>7}{'solve alone, ours / OSRM matrix':>34}")
    for p in problems:
        m, v = p["meridian"], p["vroom_osrm"]
        solves = f"{m['p50_solve_alone_s']} / {v['p50_solve_s']}"
        print(f"{p['seed']:<6}{m['p50_s']:>12}{v['p50_seconds']:>14}{p['meridian_over_vroom_osrm']:>7}{solves:>34}")
    print(
        f"total {round(ours, 3)} s / {round(theirs, 3)} s: Meridian / VROOM+OSRM {doc['meridian_over_vroom_osrm']}x; "
        f"load {doc['load_start']} -> {doc['load_end']}; wrote {out}"
    )


if __name__ == "__main__":
    main()
