"""An independent checker of route optimisation answers, and a problem generator, shared by the
engine and web tests: arrival times recomputed from Meridian's own matrix and the service times,
every time window and capacity checked, every job at most once, the rest reported unassigned."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.dataset import DatasetRegistry
from engine.services import matrix


def connected_points(datasets: DatasetRegistry, region: str, n: int, seed: int) -> list[tuple[float, float]]:
    """``n`` points of a sample region that snap and reach each other both ways."""
    dataset = datasets.get(region)
    assert dataset is not None
    rng = np.random.default_rng(seed)
    b = dataset.bbox
    out: list[tuple[float, float]] = []
    while len(out) < n:
        lat, lng = float(rng.uniform(b.min_lat, b.max_lat)), float(rng.uniform(b.min_lng, b.max_lng))
        if dataset.router.snap(lat, lng, 1000.0) is None:
            continue
        candidate = [*out, (lat, lng)]
        durations = matrix.run(datasets, matrix.MatrixParams(tuple(candidate[:1] + candidate[-1:])))["durations"]
        if all(v is not None for row in durations for v in row):
            out.append((lat, lng))
    return out


def problem(
    points: list[tuple[float, float]], vehicles: int, seed: int, horizon: int = 4 * 3600, capacity: int = 12
) -> dict[str, Any]:
    """A VROOM problem (its JSON shape, ``[lng, lat]``): the first point the depot, the others
    jobs with a delivery of 1-3, 60-300 s of service and a 1-hour time window in the horizon."""
    rng = np.random.default_rng(seed)
    depot = [points[0][1], points[0][0]]
    jobs = []
    for i, (lat, lng) in enumerate(points[1:]):
        start = int(rng.integers(0, horizon - 3600))
        jobs.append(
            {
                "id": 100 + i,
                "location": [lng, lat],
                "service": int(rng.integers(60, 300)),
                "delivery": [int(rng.integers(1, 4))],
                "time_windows": [[start, start + 3600]],
            }
        )
    fleet = [
        {"id": k + 1, "start": depot, "end": depot, "capacity": [capacity], "time_window": [0, horizon]}
        for k in range(vehicles)
    ]
    return {"jobs": jobs, "vehicles": fleet}


def check_solution(datasets: DatasetRegistry, body: dict[str, Any], answer: dict[str, Any]) -> dict[str, int]:
    """Assert that ``answer`` honours ``body`` by Meridian's own matrix; returns counts."""
    jobs = {j["id"]: j for j in body["jobs"]}
    vehicles = {v["id"]: v for v in body["vehicles"]}
    locations: list[tuple[float, float]] = []
    for item in [*body["vehicles"], *body["jobs"]]:
        for key in ("start", "end", "location"):
            if key in item and (item[key][1], item[key][0]) not in locations:
                locations.append((item[key][1], item[key][0]))
    where = {loc: i for i, loc in enumerate(locations)}
    durations = np.rint(np.array(matrix.run(datasets, matrix.MatrixParams(tuple(locations)))["durations"], float))

    seen: list[int] = []
    for route in answer["routes"]:
        vehicle = vehicles[route["vehicle"]]
        steps = route["steps"]
        assert steps[0]["type"] == "start" and steps[-1]["type"] == "end"
        stops = [(vehicle["start"][1], vehicle["start"][0])]
        stops += [(jobs[s["id"]]["location"][1], jobs[s["id"]]["location"][0]) for s in steps[1:-1]]
        stops.append((vehicle["end"][1], vehicle["end"][0]))
        window = vehicle.get("time_window", [0, 2**31])
        capacity = vehicle.get("capacity", [])
        load = np.sum([jobs[s["id"]].get("delivery", [0] * len(capacity)) for s in steps[1:-1]], axis=0)
        assert np.all(load <= capacity), (route["vehicle"], load.tolist(), capacity)
        # earliest schedule by our matrix: if the answer's order is feasible, this one is
        t = max(window[0], steps[0]["arrival"])
        reported_free = steps[0]["arrival"]
        for k in range(1, len(steps)):
            leg = durations[where[stops[k - 1]], where[stops[k]]]
            t += leg
            reported_free += leg
            assert steps[k]["arrival"] >= reported_free - 1, (route["vehicle"], k, "arrives before it can")
            step = steps[k]
            if step["type"] == "job":
                job = jobs[step["id"]]
                seen.append(job["id"])
                windows = job.get("time_windows") or [[0, 2**31]]
                open_ = [w for w in windows if t <= w[1]]
                assert open_, (job["id"], t, windows, "time window missed")
                t = max(t, open_[0][0]) + job.get("service", 0)
                begin = step["arrival"] + step["waiting_time"]
                assert any(w[0] <= begin <= w[1] for w in windows), (job["id"], begin, windows)
                reported_free = begin + job.get("service", 0)
                load = (
                    load
                    - np.array(job.get("delivery", [0] * len(capacity)))
                    + np.array(job.get("pickup", [0] * len(capacity)))
                )
                assert np.all(load >= 0) and np.all(load <= capacity), (job["id"], load.tolist())
                assert step["location"] == [round(job["location"][0], 7), round(job["location"][1], 7)]
        assert t <= window[1], (route["vehicle"], t, window, "vehicle back after its time window")
        assert steps[-1]["arrival"] <= window[1]
    assert len(seen) == len(set(seen)), "a job served twice"
    unassigned = [u["id"] for u in answer["unassigned"]]
    assert set(seen).isdisjoint(unassigned)
    assert set(seen) | set(unassigned) == set(jobs), "a job neither served nor reported unassigned"
    assert answer["summary"]["unassigned"] == len(unassigned)
    return {"served": len(seen), "unassigned": len(unassigned), "routes": len(answer["routes"])}
