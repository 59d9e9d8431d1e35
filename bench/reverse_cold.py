"""Reverse geocoding from a cold page cache, in process: what one lookup reads from disk and how
long it takes, as a node whose dataset is larger than its memory sees it.

Before each measured call the pages of the region's ``search.sqlite`` are dropped from the page
cache (``bench.page_cache.evict_file``) and SQLite's memory map is off, so every page the call
needs is a read (``bench.procfs.storage_read_bytes``). For each of ``--n`` random points of the
region's box, three calls, each from a cold file: the whole lookup
(``engine.services.reverse_geocoding.run``, one answer), its address step
(``SpatialCache.addresses_near``) and its street step (``SpatialCache.parts_near``); p50 and p90 of
the bytes read and the milliseconds of each. What the connection's own page cache holds (SQLite's,
2 MB by default: mostly the B-trees' interior pages, which every lookup shares) stays, as in a
serving process; every other page is a read. A read is at least 16 KB here: the kernel reads
ahead around a missed page.

    .venv/bin/python -m bench.reverse_cold --data-dir DIR [--region country] [--n 300] [--label TEXT]

Results: appended to the runs of bench/results/reverse_cold.json; ``python -m bench.report`` shows
them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.page_cache import evict_file
from bench.procfs import storage_read_bytes
from bench.record import run_record
from config.settings import PROJECT_ROOT
from engine.dataset import DatasetRegistry
from engine.search.index import spatial_cache
from engine.services import reverse_geocoding
from engine.services.reverse_geocoding import ReverseParams

RESULTS = PROJECT_ROOT / "bench" / "results" / "reverse_cold.json"
RADIUS_M = 100.0


def cold_call(path: Path, call: Callable[[], object]) -> tuple[float, float]:
    """(milliseconds, KB read) of ``call`` right after ``path``'s pages are dropped."""
    evict_file(path)
    before, t0 = storage_read_bytes(), time.perf_counter()
    call()
    return (time.perf_counter() - t0) * 1000, (storage_read_bytes() - before) / 1024


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.median(values)), 2), "p90": round(float(np.percentile(values, 90)), 2)}


def measure(data_dir: Path, region: str, n: int, seed: int) -> dict[str, Any]:
    registry = DatasetRegistry(data_dir)
    dataset = registry.get(region)
    if dataset is None:
        raise SystemExit(f"no region {region!r} under {data_dir}")
    index = dataset.search
    index.execute("PRAGMA mmap_size=0").fetchall()  # this thread's connection: reads, not page faults
    cache = spatial_cache(index)
    min_lng, min_lat, max_lng, max_lat = dataset.manifest["bbox"]
    rng = np.random.default_rng(seed)
    steps: dict[str, dict[str, list[float]]] = {s: {"ms": [], "kb": []} for s in ("lookup", "addresses", "streets")}
    for _ in range(n):
        lat, lng = float(rng.uniform(min_lat, max_lat)), float(rng.uniform(min_lng, max_lng))
        calls = {
            "lookup": lambda: reverse_geocoding.run(registry, ReverseParams(lat=lat, lng=lng)),  # noqa: B023
            "addresses": lambda: cache.addresses_near(lat, lng, RADIUS_M, 20),  # noqa: B023
            "streets": lambda: cache.parts_near(lat, lng, RADIUS_M),  # noqa: B023
        }
        for step, call in calls.items():
            ms, kb = cold_call(index.path, call)
            steps[step]["ms"].append(ms)
            steps[step]["kb"].append(kb)
    return {
        "region": region,
        "points": n,
        "search_db_mb": round(os.path.getsize(index.path) / 1e6, 1),
        "steps": {step: {k: _summary(v) for k, v in figures.items()} for step, figures in steps.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--region", default="country")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--label", default="", help="what the dataset is (code, size), kept with the figures")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    figures = measure(args.data_dir, args.region, args.n, args.seed)
    entry = {**run_record("bench.reverse_cold", argv, load), "label": args.label, **figures}
    print(f"{args.label or args.data_dir}: {figures['search_db_mb']} MB search.sqlite, {args.n} points")
    for step, f in figures["steps"].items():
        print(
            f"  {step:<10} {f['kb']['p50']:>8.1f} KB p50 {f['kb']['p90']:>8.1f} KB p90   {f['ms']['p50']:>7.2f} ms p50"
        )
    runs = json.loads(RESULTS.read_text())["runs"] if RESULTS.exists() else []
    RESULTS.write_text(json.dumps({"runs": [*runs, entry]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
