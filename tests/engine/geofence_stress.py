"""Many threads checking points against one freshly built FenceIndex at the same moment.

Run as a program (``python -m tests.engine.geofence_stress``) by ``test_geofence_threads.py``, so
that a crash in native code (GEOS heap corruption: SIGABRT, SIGSEGV) fails that test instead of
killing pytest. Each round builds a new index over large random fences, the way
``FenceIndexCache`` hands one new index to every waiting request thread, releases all threads
together on a barrier and compares every answer with one computed beforehand by a single thread
on an index of its own. Exit status: 0 when every answer matched, 1 when one did not (printed),
a negative number (the signal) when the process crashed.
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time

import numpy as np
from shapely.geometry import Polygon

from engine.geofence.index import FenceIndex
from engine.geofence.model import Fence


def random_fences(rng: np.random.Generator, count: int, vertices: int) -> list[Fence]:
    """``count`` star-shaped polygons (valid: one vertex per angle) of ``vertices`` vertices
    around Helsinki, overlapping each other, with jagged radii."""
    fences = []
    for i in range(count):
        lat0 = 60.17 + rng.uniform(-0.02, 0.02)
        lng0 = 24.94 + rng.uniform(-0.04, 0.04)
        angles = np.sort(rng.uniform(0.0, 2 * math.pi, vertices))
        radius = rng.uniform(0.002, 0.02) * rng.uniform(0.5, 1.0, vertices)
        ring = np.column_stack((lng0 + 2 * radius * np.cos(angles), lat0 + radius * np.sin(angles)))
        fences.append(Fence(f"f{i}", "polygon", f"fence {i}", geometry=Polygon(ring)))
    return fences


def random_points(rng: np.random.Generator, count: int) -> list[tuple[float, float]]:
    return [(60.17 + rng.uniform(-0.05, 0.05), 24.94 + rng.uniform(-0.1, 0.1)) for _ in range(count)]


def answer(index: FenceIndex, lat: float, lng: float) -> tuple:
    """Every query path: all fences with distances, containment one by one and as a batch."""
    return index.check(lat, lng), index.containing(lat, lng), index.containing_many([lat], [lng])


def rebuilt(fences: list[Fence]) -> list[Fence]:
    """The same fences over new geometry objects (no state shared with another index)."""
    return [Fence(f.id, f.kind, f.name, geometry=Polygon(f.geometry.exterior.coords)) for f in fences]  # type: ignore[union-attr]


def run_round(fences: list[Fence], points: list, expected: list, threads: int) -> list[str]:
    index = FenceIndex(rebuilt(fences))
    barrier = threading.Barrier(threads)
    errors: list[str] = []

    def work(offset: int) -> None:
        barrier.wait()
        for k in range(len(points)):
            j = (k + offset) % len(points)
            lat, lng = points[j]
            got = answer(index, lat, lng)
            if got != expected[j]:
                errors.append(f"point {j}: {got} != {expected[j]}")

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fences", type=int, default=40)
    parser.add_argument("--vertices", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--points", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    fences = random_fences(rng, args.fences, args.vertices)
    points = random_points(rng, args.points)
    reference = FenceIndex(rebuilt(fences))
    expected = [answer(reference, lat, lng) for lat, lng in points]
    deadline = time.monotonic() + args.seconds
    rounds = 0
    while time.monotonic() < deadline:
        errors = run_round(fences, points, expected, args.threads)
        rounds += 1
        if errors:
            print(f"round {rounds}: {len(errors)} wrong answers; first: {errors[0]}", flush=True)
            return 1
    print(f"{rounds} rounds, every answer right", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
