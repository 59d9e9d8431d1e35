"""Memory and time of one account's fence index in one process (issue 26, finding 5).

Every web process that serves a check builds the account's whole ``FenceIndex``; this measures
what that costs for large fences: ``--fences`` polygons of ``--vertices`` vertices each (jagged
stars around Helsinki), stored bodies parsed the way ``FenceService`` loads them from SQL
(``parse_fence(..., check_validity=False)``), the index built, then the first and the following
checks of a point against every fence.

Resident memory (VmRSS, so GEOS's allocations count too) is read with the stored bodies (JSON
text) in memory as the base, after parsing them, after the index is built with the list of parsed
fences dropped (what the cache keeps) and after the first checks (with glibc's ``malloc_trim`` before each reading); the peak (VmHWM) is above the
base too. A check on a small index runs before the base is read, so that what a process pays
once (the numba kernel of the distances) is not counted for the account. Run it in a fresh process per configuration.

Usage: .venv/bin/python bench/geofence_memory.py [--fences 120] [--vertices 10000] [--label now]
Appends a row to bench/results/geofence_memory.json.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.geofence.index import FenceIndex  # noqa: E402
from engine.geofence.model import parse_fence  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "geofence_memory.json"


def status_mb(field: str) -> float:
    """VmRSS (resident now) or VmHWM (peak resident) of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {field} in /proc/self/status")


def rss_mb() -> float:
    """Resident memory after a garbage collection and glibc's ``malloc_trim``, so that freed
    temporaries of the build do not count (what the process keeps, not how its heap is cut)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return status_mb("VmRSS")


def bodies(count: int, vertices: int, seed: int = 26) -> list[str]:
    """The stored bodies as JSON text (what the database hands back)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        lat0, lng0 = 60.17 + rng.uniform(-0.05, 0.05), 24.94 + rng.uniform(-0.1, 0.1)
        angles = np.sort(rng.uniform(0.0, 2 * math.pi, vertices - 1))
        radius = rng.uniform(0.002, 0.02) * rng.uniform(0.5, 1.0, vertices - 1)
        ring = np.column_stack((lng0 + 2 * radius * np.cos(angles), lat0 + radius * np.sin(angles))).tolist()
        ring.append(ring[0])
        body = {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring]}, "properties": {}}
        out.append(json.dumps(body))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fences", type=int, default=120)
    parser.add_argument("--vertices", type=int, default=10_000)
    parser.add_argument("--label", default="current")
    args = parser.parse_args()
    stored = bodies(args.fences, args.vertices)
    # one check on a small index first: what every process pays once (compiling or loading the
    # numba kernel, GEOS's first allocations) stays out of the account's numbers
    FenceIndex([parse_fence(json.loads(b), fence_id="warm") for b in bodies(1, 1000)]).check(60.17, 24.94)
    base = rss_mb()
    t0 = time.perf_counter()
    fences = [parse_fence(json.loads(b), fence_id=f"f{i}", check_validity=False) for i, b in enumerate(stored)]
    t_parse = time.perf_counter() - t0
    gc.collect()
    parsed = rss_mb()
    t0 = time.perf_counter()
    index = FenceIndex(fences)
    t_build = time.perf_counter() - t0
    del fences
    gc.collect()
    built = rss_mb()
    rng = np.random.default_rng(1)
    points = list(zip(rng.uniform(60.12, 60.22, 50), rng.uniform(24.84, 25.04, 50), strict=True))
    t0 = time.perf_counter()
    index.check(*points[0])
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for p in points[1:]:
        index.check(*p)
    t_check = (time.perf_counter() - t0) / (len(points) - 1)
    checked = rss_mb()
    row = {
        "label": args.label,
        "fences": args.fences,
        "vertices_per_fence": args.vertices,
        "index_vertices": index.vertices if hasattr(index, "vertices") else None,
        "rss_parsed_mb": round(parsed - base, 1),
        "rss_index_mb": round(built - base, 1),
        "rss_after_checks_mb": round(checked - base, 1),
        "rss_peak_mb": round(status_mb("VmHWM") - base, 1),
        "parse_s": round(t_parse, 3),
        "build_s": round(t_build, 3),
        "first_check_ms": round(t_first * 1000, 2),
        "check_all_ms": round(t_check * 1000, 3),
        "python": platform.python_version(),
    }
    print(f"{'':24} {args.label}")
    for key, value in row.items():
        print(f"{key:24} {value}")
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    results.append(row)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
