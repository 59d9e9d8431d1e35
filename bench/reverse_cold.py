"""Reverse geocoding from a cold page cache, in process: what one lookup reads from disk and how
long it takes, as a node whose dataset is larger than its memory sees it.

Before each measured call the pages of the region's ``search.sqlite`` are dropped from the page
cache (``bench.page_cache.evict_file``) and SQLite's memory map is off, so every page the call
needs is a read (``bench.procfs.storage_read_bytes``). ``--n`` times, three calls, each from a
cold file and at a random point of the region's box of its own: the whole lookup
(``engine.services.reverse_geocoding.run``, one answer), its address step
(``SpatialCache.addresses_near``) and its street step (``SpatialCache.parts_near``); p50 and p90 of
the bytes read and the milliseconds of each. What the connection's own page cache holds (SQLite's,
2 MB by default: mostly the B-trees' interior pages, which every lookup shares) stays, as in a
serving process; every other page is a read. (A step measured at the point of the lookup before
it would find the lower interior pages that lookup read still in SQLite's cache, and cost one
read: runs before 2026-12-02 evening did that, ``steps_at_own_points`` absent.) A read is at
least 16 KB here: the kernel reads ahead around a missed page.

    .venv/bin/python -m bench.reverse_cold --data-dir DIR [--label TEXT] [--data-dir DIR2 --label TEXT2 ...]
        [--region country] [--n 300]

Several data directories (two imports of one extract by two versions of the code) are measured
side by side: the same points, each point's calls on one dataset then on the next, so that the
disk's speed, which drifts on a shared machine, weighs on them alike.

Results: one run per data directory, appended to the runs of bench/results/reverse_cold.json;
``python -m bench.report`` shows them.
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
from engine.beside import Beside
from engine.dataset import DatasetRegistry
from engine.search.index import spatial_cache
from engine.services import reverse_geocoding
from engine.services.reverse_geocoding import ReverseParams

RESULTS = PROJECT_ROOT / "bench" / "results" / "reverse_cold.json"
RADIUS_M = 100.0
# the whole lookup; its two spatial steps alone; the two in turn on one thread, and the street step
# beside the address step (engine/beside.py), as the lookup runs them
STEPS = ("lookup", "addresses", "streets", "both_in_turn", "both_beside")


def cold_call(path: Path, call: Callable[[], object]) -> tuple[float, float]:
    """(milliseconds, KB read) of ``call`` right after ``path``'s pages are dropped."""
    evict_file(path)
    before, t0 = storage_read_bytes(), time.perf_counter()
    call()
    return (time.perf_counter() - t0) * 1000, (storage_read_bytes() - before) / 1024


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.median(values)), 2), "p90": round(float(np.percentile(values, 90)), 2)}


class _Probe:
    """One dataset's cold calls at a point, and their figures."""

    def __init__(self, data_dir: Path, region: str) -> None:
        self.registry = DatasetRegistry(data_dir)
        dataset = self.registry.get(region)
        if dataset is None:
            raise SystemExit(f"no region {region!r} under {data_dir}")
        self.bbox: list[float] = dataset.manifest["bbox"]
        self.index = dataset.search
        self.index.execute("PRAGMA mmap_size=0").fetchall()  # this thread's connection: reads, not page faults
        self.cache = spatial_cache(self.index)
        self.steps: dict[str, dict[str, list[float]]] = {s: {"ms": [], "kb": []} for s in STEPS}

    def _in_turn(self, lat: float, lng: float) -> None:
        self.cache.addresses_near(lat, lng, RADIUS_M, 20)
        self.cache.parts_near(lat, lng, RADIUS_M)

    def _beside(self, lat: float, lng: float) -> None:
        streets = Beside(self.cache.parts_near, lat, lng, RADIUS_M)
        self.cache.addresses_near(lat, lng, RADIUS_M, 20)
        streets.result()

    def at(self, points: list[tuple[float, float]]) -> None:
        """One call of each step, each at its own point of ``points`` (one per step)."""
        (lat, lng), (a_lat, a_lng), (s_lat, s_lng), turn, side = points
        calls = {
            "lookup": lambda: reverse_geocoding.run(self.registry, ReverseParams(lat=lat, lng=lng)),
            "addresses": lambda: self.cache.addresses_near(a_lat, a_lng, RADIUS_M, 20),
            "streets": lambda: self.cache.parts_near(s_lat, s_lng, RADIUS_M),
            "both_in_turn": lambda: self._in_turn(*turn),
            "both_beside": lambda: self._beside(*side),
        }
        for step, call in calls.items():
            ms, kb = cold_call(self.index.path, call)
            self.steps[step]["ms"].append(ms)
            self.steps[step]["kb"].append(kb)

    def figures(self, region: str) -> dict[str, Any]:
        return {
            "region": region,
            "points": len(self.steps["lookup"]["ms"]),
            "search_db_mb": round(os.path.getsize(self.index.path) / 1e6, 1),
            "steps_at_own_points": True,
            "steps": {step: {k: _summary(v) for k, v in figures.items()} for step, figures in self.steps.items()},
        }


def measure(data_dirs: list[Path], region: str, n: int, seed: int) -> list[dict[str, Any]]:
    """The figures of each data directory's region at the same random points (of the first one's
    box; ``n`` for each step), the directories taking turns."""
    probes = [_Probe(data_dir, region) for data_dir in data_dirs]
    min_lng, min_lat, max_lng, max_lat = probes[0].bbox
    rng = np.random.default_rng(seed)
    for _ in range(n):
        points = [(float(rng.uniform(min_lat, max_lat)), float(rng.uniform(min_lng, max_lng))) for _step in STEPS]
        for probe in probes:
            probe.at(points)
    return [probe.figures(region) for probe in probes]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, action="append", required=True, help="repeat to compare")
    parser.add_argument("--region", default="country")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--label", action="append", default=[], help="what each dataset is (code, size), in --data-dir's order"
    )
    args = parser.parse_args(argv)
    labels = args.label or [""] * len(args.data_dir)
    if len(labels) != len(args.data_dir):
        parser.error("give one --label per --data-dir, or none")
    load = os.getloadavg()[0]
    measured = measure(args.data_dir, args.region, args.n, args.seed)
    record = run_record("bench.reverse_cold", argv, load)
    entries = [{**record, "label": label, **figures} for label, figures in zip(labels, measured, strict=True)]
    for data_dir, entry in zip(args.data_dir, entries, strict=True):
        print(f"{entry['label'] or data_dir}: {entry['search_db_mb']} MB search.sqlite, {entry['points']} points")
        for step, f in entry["steps"].items():
            print(
                f"  {step:<10} {f['kb']['p50']:>8.1f} KB p50 {f['kb']['p90']:>8.1f} KB p90   {f['ms']['p50']:>7.2f} ms p50"
            )
    runs = json.loads(RESULTS.read_text())["runs"] if RESULTS.exists() else []
    RESULTS.write_text(json.dumps({"runs": [*runs, *entries]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
