"""Benchmark: a route optimisation problem (N jobs with 1-hour time windows, V vehicles from one
depot) on a sample region, in process (``engine.services.optimization.run``: snapping, Meridian's
matrix, VROOM, the routes' lines) and over HTTP (``--url --key``: a running deployment, its
``optimization`` queue and worker). Every answer is checked by the tests' independent checker.

    PYTHONPATH=. python scripts/bench_optimization.py --data /work/testdata --region helsinki \\
        --jobs 200 --vehicles 10 [--url http://127.0.0.1:8000 --key mrd_...]
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from pathlib import Path

from engine.dataset import DatasetRegistry
from engine.services import optimization
from tests.engine.optimization_check import check_solution, connected_points, problem
from tests.engine.test_optimization import params_of


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--region", default="helsinki")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--vehicles", type=int, default=10)
    ap.add_argument("--url")
    ap.add_argument("--key")
    args = ap.parse_args()
    registry = DatasetRegistry(Path(args.data))
    body = problem(
        connected_points(registry, args.region, args.jobs + 1, seed=200),
        args.vehicles,
        seed=200,
        horizon=8 * 3600,
        capacity=60,
    )
    optimization.run(registry, params_of(problem(connected_points(registry, args.region, 5, seed=1), 1, seed=1)))
    started = time.perf_counter()
    answer = optimization.run(registry, params_of(body))
    row: dict[str, object] = {"in_process_s": round(time.perf_counter() - started, 3)}
    row.update(check_solution(registry, body, answer))
    if args.url:
        started = time.perf_counter()
        req = urllib.request.Request(
            f"{args.url}/v1/optimization",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-API-Key": args.key},
        )
        with urllib.request.urlopen(req, timeout=300) as resp:
            over_http = json.loads(resp.read())
        row["http_s"] = round(time.perf_counter() - started, 3)
        check_solution(registry, body, over_http)
    print(" ".join(f"{k}={v}" for k, v in {"region": args.region, "jobs": args.jobs, **row}.items()), flush=True)


if __name__ == "__main__":
    main()
