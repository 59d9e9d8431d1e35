"""Benchmark: N x N car matrices on a sample region, in process and over HTTP (a gunicorn server
given by --url and --key, optional). Prints a table and writes JSON (--out).

    python scripts/bench_matrix.py --data /work/testdata --region helsinki --sizes 100,1000 \\
        [--url http://127.0.0.1:8000 --key mrd_...] [--out bench-matrix.json]
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from engine.dataset import DatasetRegistry
from engine.services import matrix


def points(dataset, n: int, seed: int = 1) -> tuple[tuple[float, float], ...]:
    rng = np.random.default_rng(seed)
    b = dataset.bbox
    out: list[tuple[float, float]] = []
    while len(out) < n:
        lat, lng = rng.uniform(b.min_lat, b.max_lat), rng.uniform(b.min_lng, b.max_lng)
        if dataset.router.snap(lat, lng, 1000.0) is not None:
            out.append((round(float(lat), 6), round(float(lng), 6)))
    return tuple(out)


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--region", default="helsinki")
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--url")
    ap.add_argument("--key")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    registry = DatasetRegistry(Path(args.data))
    dataset = registry.get(args.region)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        pts = points(dataset, n)
        params = matrix.MatrixParams(pts)
        matrix.run(registry, params)  # compile and warm
        row = {
            "region": args.region,
            "n": n,
            "in_process_s": best_of(lambda p=params: matrix.run(registry, p), args.repeat),
        }
        if args.url:
            calls = iter(range(1, 1_000_000))

            def call(pts: tuple[tuple[float, float], ...] = pts, calls: Iterator[int] = calls) -> None:
                # the first point moved by k x 1e-7 degrees (1 cm): a new cache key every call, so
                # every call is computed, never answered from the Redis cache
                k = next(calls)
                moved = [(pts[0][0] + k * 1e-7, pts[0][1]), *pts[1:]]
                body = json.dumps({"sources": [{"lat": a, "lng": b} for a, b in moved]}).encode()
                req = urllib.request.Request(
                    f"{args.url}/v1/matrix",
                    data=body,
                    headers={"Content-Type": "application/json", "X-API-Key": args.key},
                )
                with urllib.request.urlopen(req, timeout=300) as resp:
                    resp.read()

            call()
            row["http_s"] = best_of(call, args.repeat)
        rows.append(row)
        print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
