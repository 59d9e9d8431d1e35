"""An independent checker of route optimisation answers, and a problem generator, shared by the
engine and web tests: arrival times recomputed from Meridian's own matrix of each vehicle's
profile and the service times, every time window and capacity checked, every job at most once,
the rest reported unassigned."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.dataset import DatasetRegistry
from engine.services import matrix


def connected_points(
    datasets: DatasetRegistry, region: str, n: int, seed: int, profiles: tuple[str, ...] = ("car",)
) -> list[tuple[float, float]]:
    """``n`` points of a sample region that snap and reach each other both ways, by every one
    of ``profiles``."""
    dataset = datasets.get(region)
    assert dataset is not None
    rng = np.random.default_rng(seed)
    b = dataset.bbox
    out: list[tuple[float, float]] = []
    while len(out) < n:
        lat, lng = float(rng.uniform(b.min_lat, b.max_lat)), float(rng.uniform(b.min_lng, b.max_lng))
        if any(dataset.router_for(p).snap(lat, lng, 1000.0) is None for p in profiles):
            continue
        pair = (*out[:1], (lat, lng))
        cells = [matrix.run(datasets, matrix.MatrixParams(pair, profile=p))["durations"] for p in profiles]
        if all(v is not None for durations in cells for row in durations for v in row):
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


def _tasks(body: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """Every task by (step type, id): location, service, windows, what leaves and joins the load,
    what is on board from the start, and its shipment's other step."""
    dims = max([len(v.get("capacity", [])) for v in body["vehicles"]] or [0])
    zero = [0] * dims
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for j in body["jobs"]:
        delivery, pickup = j.get("delivery", zero), j.get("pickup", zero)
        out["job", j["id"]] = {**j, "off": delivery, "on": pickup, "initial": delivery, "pair": None}
    for sh in body.get("shipments", []):
        amount = sh.get("amount", zero)
        p, d = sh["pickup"], sh["delivery"]
        out["pickup", p["id"]] = {**p, "off": zero, "on": amount, "initial": zero, "pair": ("delivery", d["id"])}
        out["delivery", d["id"]] = {**d, "off": amount, "on": zero, "initial": zero, "pair": ("pickup", p["id"])}
    return out


def check_solution(datasets: DatasetRegistry, body: dict[str, Any], answer: dict[str, Any]) -> dict[str, int]:
    """Assert that ``answer`` honours ``body`` by Meridian's own matrix; returns counts."""
    tasks = _tasks(body)
    vehicles = {v["id"]: v for v in body["vehicles"]}
    locations: list[tuple[float, float]] = []
    for item in [*body["vehicles"], *tasks.values()]:
        for field in ("start", "end", "location"):
            if field in item and (item[field][1], item[field][0]) not in locations:
                locations.append((item[field][1], item[field][0]))
    where = {loc: i for i, loc in enumerate(locations)}
    profiles = {v.get("profile", "car") for v in body["vehicles"]}
    by_profile = {
        p: np.rint(np.array(matrix.run(datasets, matrix.MatrixParams(tuple(locations), profile=p))["durations"], float))
        for p in profiles
    }

    seen: list[tuple[str, int]] = []
    for route in answer["routes"]:
        vehicle = vehicles[route["vehicle"]]
        durations = by_profile[vehicle.get("profile", "car")]
        steps = route["steps"]
        assert steps[0]["type"] == "start" and steps[-1]["type"] == "end"
        keys = [(s["type"], s["id"]) for s in steps[1:-1]]
        stops = [(vehicle["start"][1], vehicle["start"][0])]
        stops += [(tasks[k]["location"][1], tasks[k]["location"][0]) for k in keys]
        stops.append((vehicle["end"][1], vehicle["end"][0]))
        window = vehicle.get("time_window", [0, 2**31])
        capacity = vehicle.get("capacity", [])
        load = np.sum([tasks[k]["initial"] for k in keys] or [[0] * len(capacity)], axis=0)
        assert np.all(load <= capacity), (route["vehicle"], load.tolist(), capacity)
        for key in keys:  # a shipment: both steps on this route, the pickup first
            pair = tasks[key]["pair"]
            if pair is not None:
                assert pair in keys, (key, "without its other step")
                if key[0] == "pickup":
                    assert keys.index(key) < keys.index(pair), (key, "delivered before it is picked up")
        # earliest schedule by our matrix: if the answer's order is feasible, this one is
        t = max(window[0], steps[0]["arrival"])
        reported_free = steps[0]["arrival"]
        for k in range(1, len(steps)):
            leg = durations[where[stops[k - 1]], where[stops[k]]]
            t += leg
            reported_free += leg
            assert steps[k]["arrival"] >= reported_free - 1, (route["vehicle"], k, "arrives before it can")
            step = steps[k]
            if step["type"] != "end":
                task_key = (step["type"], step["id"])
                task = tasks[task_key]
                seen.append(task_key)
                windows = task.get("time_windows") or [[0, 2**31]]
                open_ = [w for w in windows if t <= w[1]]
                assert open_, (task_key, t, windows, "time window missed")
                t = max(t, open_[0][0]) + task.get("service", 0)
                begin = step["arrival"] + step["waiting_time"]
                assert any(w[0] <= begin <= w[1] for w in windows), (task_key, begin, windows)
                reported_free = begin + task.get("service", 0)
                load = load - np.array(task["off"]) + np.array(task["on"])
                assert np.all(load >= 0) and np.all(load <= capacity), (task_key, load.tolist())
                assert step["location"] == [round(task["location"][0], 7), round(task["location"][1], 7)]
        assert t <= window[1], (route["vehicle"], t, window, "vehicle back after its time window")
        assert steps[-1]["arrival"] <= window[1]
    assert len(seen) == len(set(seen)), "a task served twice"
    unassigned = [(u["type"], u["id"]) for u in answer["unassigned"]]
    assert set(seen).isdisjoint(unassigned)
    assert set(seen) | set(unassigned) == set(tasks), "a task neither served nor reported unassigned"
    assert answer["summary"]["unassigned"] == len(unassigned)
    return {"served": len(seen), "unassigned": len(unassigned), "routes": len(answer["routes"])}
