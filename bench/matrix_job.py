"""A large matrix job on a synthetic city (bench/synthetic.py): time and peak memory of the worker's
code path (``engine.services.matrix.run_rows``, each block serialised as ``tasks/matrix_job.py``
stores it), in a fresh process so its peak RSS is the job's alone.

    python -m bench.matrix_job --nodes 100000 --points 10000 [--rows 100] [--seed 1] [--http]

``--http`` runs the same job as a user does instead: the Procfile's processes serve the city
(bench.load_deploy), ``POST /v1/matrix`` with the points as sources and ``async`` (destinations:
the same), ``/v1/jobs/{id}`` polled until done, then its result downloaded as JSON and as CSV
(byte counts and times; the JSON's first and last bytes checked), and the matrix worker's peak RSS.

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
import psutil  # type: ignore[import-untyped]
import requests

from bench.child import json_child
from bench.load_deploy import Deployment
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
    return json_child("bench.matrix_job", ["--child", *args], timeout)


def _download(url: str, key: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    size, head, tail = 0, b"", b""
    with requests.get(url, headers={"X-API-Key": key}, stream=True, timeout=3600) as resp:
        resp.raise_for_status()
        for block in resp.iter_content(1 << 20):
            head = head if len(head) >= 64 else (head + block)[:64]
            tail = (tail + block)[-64:]
            size += len(block)
    return {"seconds": round(time.perf_counter() - t0, 1), "mb": round(size / 1e6, 1), "head": head, "tail": tail}


def http_job(data: Path, points: list[list[float]], timeout: float) -> dict[str, Any]:
    """The job through the API, as a user runs it (module doc)."""
    dep = Deployment(data)
    key = dep.start()["load"]
    try:
        body: dict[str, Any] = {"sources": [{"lat": lat, "lng": lng} for lat, lng in points], "async": True}
        t0 = time.perf_counter()
        resp = requests.post(f"{dep.base_url}/v1/matrix", json=body, headers={"X-API-Key": key}, timeout=120)
        if resp.status_code != 202:
            raise RuntimeError(f"POST /v1/matrix answered {resp.status_code}: {resp.text[:300]}")
        status_url = dep.base_url + resp.json()["status_url"]
        state: dict[str, Any] = {}
        while time.perf_counter() - t0 < timeout:
            state = requests.get(status_url, headers={"X-API-Key": key}, timeout=60).json()
            if state.get("status") in ("done", "failed"):
                break
            time.sleep(1.0)
        done_s = time.perf_counter() - t0
        if state.get("status") != "done":
            raise RuntimeError(f"job not done: {json.dumps(state)[:300]}")
        worker_peak_mb = max(
            peak_rss_mb(p.pid) for p in [psutil.Process(dep.procs["matrixworker"].pid), *dep.children("matrixworker")]
        )
        as_json = _download(dep.base_url + state["result_url"], key)
        if not (as_json["head"].startswith(b'{"durations":[[') and as_json["tail"].endswith(b"}")):
            raise RuntimeError(f"the JSON result is not a matrix document: {as_json['head']!r} ... {as_json['tail']!r}")
        as_csv = _download(dep.base_url + state["csv_url"], key)
        return {
            "http_job_done_s": round(done_s, 1),
            "http_progress": state.get("progress"),
            "matrix_worker_peak_rss_mb": round(worker_peak_mb, 1),
            "download_json": {k: as_json[k] for k in ("seconds", "mb")},
            "download_csv": {k: as_csv[k] for k in ("seconds", "mb")},
        }
    finally:
        dep.stop()


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident set (VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--http", action="store_true", help="through the API: job, polling, JSON and CSV download")
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
    row["mode"] = "http" if args.http else "worker code path"
    row["rows_per_chunk"] = args.rows
    row["load_1min"] = round(os.getloadavg()[0], 1)
    if args.http:
        row.update(http_job(data, json.loads(points_file.read_text()), args.timeout))
    else:
        row.update(_child([str(data), str(points_file), str(args.rows)], args.timeout))
    print(json.dumps(row))
    path = RESULTS / "matrix_job.json"
    old = json.loads(path.read_text()) if path.exists() else []
    same = (args.nodes, args.points, row["mode"])
    old = [r for r in old if (r["target_nodes"], r["points"], r.get("mode", "worker code path")) != same]
    path.write_text(json.dumps([*old, row], indent=1) + "\n")


if __name__ == "__main__":
    main()
