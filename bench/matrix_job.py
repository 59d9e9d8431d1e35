"""A large matrix job on a synthetic city (bench/synthetic.py): time and peak memory of the worker's
code path (``engine.services.matrix.run_rows``, each block serialised as ``tasks/matrix_job.py``
stores it), in a fresh process so its peak RSS is the job's alone.

    python -m bench.matrix_job --nodes 100000 --points 10000 [--rows 100] [--seed 1]

The city is generated and imported into ``$MERIDIAN_SCALING_DIR`` (default /tmp/meridian-scaling)
unless already there. Points are random intersections of the city. Results:
bench/results/matrix_job.json (one entry per size and point count).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from bench.matching import RESULTS

WORK = Path(os.environ.get("MERIDIAN_SCALING_DIR", "/tmp/meridian-scaling"))


def child_job(data: str, points_file: str, rows: int) -> None:
    import numpy as np

    from engine.codec import json_bytes
    from engine.dataset import DatasetRegistry
    from engine.services import matrix

    points = [tuple(p) for p in json.loads(Path(points_file).read_text())]
    registry = DatasetRegistry(Path(data))
    params = matrix.MatrixParams(tuple(points))
    t0 = time.perf_counter()
    header, blocks = matrix.run_rows(registry, params, rows)
    snapped_s = time.perf_counter() - t0
    stored = len(orjson.dumps(header))
    largest = 0
    nulls = 0
    first_block_s = None
    for _start, block in blocks:
        first_block_s = first_block_s or time.perf_counter() - t0
        for values in block.values():
            text = json_bytes(values)
            stored += len(text)
            largest = max(largest, len(text))
        nulls += int(np.isnan(block["durations"]).sum())
    print(
        json.dumps(
            {
                "seconds": round(time.perf_counter() - t0, 1),
                "snap_s": round(snapped_s, 1),
                "first_block_s": round(first_block_s or 0.0, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "stored_mb": round(stored / 1e6, 1),
                "largest_value_mb": round(largest / 1e6, 2),
                "null_cells": nulls,
            }
        )
    )


def _child(args: list[str], timeout: float) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.matrix_job", "--child", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--child", nargs="*")
    args = parser.parse_args()
    if args.child is not None:
        child_job(args.child[0], args.child[1], int(args.child[2]))
        return
    from bench.synthetic import generate, write_pbf

    WORK.mkdir(parents=True, exist_ok=True)
    city = generate(args.nodes, args.seed)
    data = WORK / f"data-{args.nodes}"
    row: dict[str, Any] = {"target_nodes": args.nodes, "osm_nodes": city.node_count, "points": args.points}
    if not (data / "regions" / "synthetic" / "current").exists():
        pbf = WORK / f"synthetic-{args.nodes}.osm.pbf"
        write_pbf(city, pbf)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "bench.scaling", "--child", "import", str(pbf), str(data)],
            check=True,
            capture_output=True,
            timeout=args.timeout,
        )
        row["import_s"] = round(time.perf_counter() - t0, 1)
    rng = random.Random(args.seed)
    picks = rng.sample(range(len(city.lat)), args.points)
    points_file = WORK / f"points-{args.nodes}-{args.points}.json"
    points_file.write_text(json.dumps([[float(city.lat[i]), float(city.lng[i])] for i in picks]))
    row["rows_per_chunk"] = args.rows
    row["load_1min"] = round(os.getloadavg()[0], 1)
    row.update(_child([str(data), str(points_file), str(args.rows)], args.timeout))
    print(json.dumps(row))
    path = RESULTS / "matrix_job.json"
    old = json.loads(path.read_text()) if path.exists() else []
    old = [r for r in old if (r["target_nodes"], r["points"]) != (args.nodes, args.points)]
    path.write_text(json.dumps([*old, row], indent=1) + "\n")


if __name__ == "__main__":
    main()
