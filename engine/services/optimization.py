"""Route optimisation (``POST /v1/optimization``): VROOM (its Python bindings, ``pyvroom``) over
Meridian's own travel-time matrix, each route's geometry from Meridian's router.

Parameters follow VROOM's problem format (jobs with a location, service time, delivery/pickup
amounts, skills, priority, time windows; shipments: a pickup and a delivery step with an amount,
served by one vehicle in that order; vehicles with start/end, capacity, skills, a time window and
a travel ``profile``: car, foot or bicycle, or their aliases, :mod:`engine.routing.profiles`);
locations here are ``(lat, lng)`` like everywhere in the engine (the web schema turns VROOM's
``[lng, lat]`` around).

Result (VROOM's solution, amounts and loads recomputed from the route's order)::

    {"code": 0,
     "summary": {"cost", "routes", "unassigned", "service", "duration", "waiting_time",
                 "distance", "delivery": [...], "pickup": [...]},
     "unassigned": [{"id", "type": job|pickup|delivery, "location": [lng, lat], "reason"?}],
     "routes": [{"vehicle", "cost", "service", "duration", "waiting_time", "distance",
                 "delivery", "pickup",
                 "steps": [{"type": start|job|pickup|delivery|end, "id"?, "location": [lng, lat], "arrival",
                            "duration", "service", "waiting_time", "load": [...]}],
                 "geometry": <polyline | GeoJSON LineString>}]}

Durations between locations are the matrix's (:func:`engine.services.matrix.run`, the same
snapping and weights as ``/v1/routing``), rounded to whole seconds for VROOM: one matrix per
profile the fleet uses, given to VROOM under the profile's name (a vehicle travels by its own
profile's matrix), and each route's geometry and distance are its vehicle's profile's. Errors: an
unknown profile, or one the region was not imported with -> InvalidParameter naming
``vehicles[i].profile``; a location farther than the snap limit from any way of a profile the
fleet uses -> InvalidParameter naming the job or vehicle field (``jobs[3].location``); a location
with no route of such a profile to or from the others -> InvalidParameter naming it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import vroom

from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter
from engine.geo import round_coord
from engine.limits import DEFAULT_LIMITS, Limits
from engine.routing.profiles import DEFAULT as DEFAULT_PROFILE
from engine.routing.profiles import PROFILES, canonical
from engine.routing.router import Router
from engine.routing.snap import Snap
from engine.services import matrix
from engine.services.routing import GEOMETRIES, escape_fragments, line_geometry, snap_points

LatLng = tuple[float, float]
Window = tuple[int, int]
Amount = tuple[int, ...]

TASK_TYPES = ("job", "pickup", "delivery")  # the steps that carry an id
# What VROOM's integer types hold (a larger number would fail in the bindings, not as a 400)
MAX_ID = 2**53 - 1  # ids: exact in JSON's doubles too
MAX_SKILL = 2**32 - 1
MAX_AMOUNT = 2**31 - 1
MAX_SECONDS = 2**31 - 1  # service times and time windows
# VROOM's search effort: its command line's default (5) for up to LARGE jobs, 3 above (on this
# machine's 200-job benchmark 3-4x faster for a cost 1 % higher: docs/benchmarks.md)
EXPLORATION_LEVEL = 5
LARGE_EXPLORATION_LEVEL = 3
LARGE = 100
SOLVE_TIMEOUT_S = 8.0  # VROOM answers its best solution so far past this (a busy worker still answers)
MAX_THREADS = 4


@dataclass(frozen=True)
class Job:
    id: int
    location: LatLng
    service: int = 0
    delivery: Amount = ()
    pickup: Amount = ()
    skills: tuple[int, ...] = ()
    priority: int = 0
    time_windows: tuple[Window, ...] = ()


@dataclass(frozen=True)
class Vehicle:
    id: int
    start: LatLng | None = None
    end: LatLng | None = None
    capacity: Amount = ()
    skills: tuple[int, ...] = ()
    time_window: Window | None = None
    profile: str = DEFAULT_PROFILE  # a profile name or its alias


@dataclass(frozen=True)
class ShipmentStep:
    id: int
    location: LatLng
    service: int = 0
    time_windows: tuple[Window, ...] = ()


@dataclass(frozen=True)
class Shipment:
    """Picked up at ``pickup``, delivered at ``delivery``, by the same vehicle."""

    pickup: ShipmentStep
    delivery: ShipmentStep
    amount: Amount = ()
    skills: tuple[int, ...] = ()
    priority: int = 0


@dataclass(frozen=True)
class OptimizationParams:
    jobs: tuple[Job, ...]
    vehicles: tuple[Vehicle, ...]
    geometry: str = "polyline"
    shipments: tuple[Shipment, ...] = ()

    @property
    def tasks(self) -> int:
        """Jobs, and shipments' pickups and deliveries: what the limit and the quota count."""
        return len(self.jobs) + 2 * len(self.shipments)

    @property
    def locations(self) -> int:
        """Distinct locations: the side of the matrix."""
        return len(_locations(self)[0])


def check(params: OptimizationParams, limits: Limits) -> None:
    """Sizes, profiles, time windows and amount dimensions (400 naming the field)."""
    if not params.jobs and not params.shipments:
        raise InvalidParameter("jobs (or shipments) must list at least one task", parameter="jobs")
    if params.tasks > limits.optimization_jobs:
        raise InvalidParameter(
            f"at most {limits.optimization_jobs} jobs (a shipment counts two) are allowed",
            parameter="shipments" if params.shipments else "jobs",
        )
    if not params.vehicles:
        raise InvalidParameter("vehicles must list at least one vehicle", parameter="vehicles")
    if len(params.vehicles) > limits.optimization_vehicles:
        raise InvalidParameter(f"at most {limits.optimization_vehicles} vehicles are allowed", parameter="vehicles")
    if params.geometry not in GEOMETRIES:
        raise InvalidParameter(f"geometry must be one of {', '.join(GEOMETRIES)}", parameter="geometry")
    _check_numbers(params)
    for name, ids in (
        ("jobs", [j.id for j in params.jobs]),
        ("vehicles", [v.id for v in params.vehicles]),
        ("shipments", [sh.pickup.id for sh in params.shipments]),
        ("shipments", [sh.delivery.id for sh in params.shipments]),
    ):
        seen: set[int] = set()
        for i, id_ in enumerate(ids):
            if id_ in seen:
                field = f"{name}[{i}].id" if name != "shipments" else f"{name}[{i}]"
                raise InvalidParameter(f"duplicate id {id_}", parameter=field)
            seen.add(id_)
    dims: tuple[str, int] | None = None
    for field, amount in _amounts(params):
        if dims is None:
            dims = (field, len(amount))
        elif len(amount) != dims[1]:
            raise InvalidParameter(
                f"{field} has {len(amount)} dimensions, {dims[0]} has {dims[1]}: every amount and capacity "
                "must have the same number",
                parameter=field,
            )
    for i, v in enumerate(params.vehicles):
        if dims is not None and not v.capacity:
            raise InvalidParameter(
                f"{dims[0]} is given: every vehicle needs a capacity of {dims[1]} dimensions",
                parameter=f"vehicles[{i}].capacity",
            )
        canonical(v.profile, f"vehicles[{i}].profile")
        if v.start is None and v.end is None:
            raise InvalidParameter("a vehicle needs a start or an end", parameter=f"vehicles[{i}]")
        if v.time_window is not None:
            _check_window(v.time_window, f"vehicles[{i}].time_window")
    for i, job in enumerate(params.jobs):
        for k, window in enumerate(job.time_windows):
            _check_window(window, f"jobs[{i}].time_windows[{k}]")
    for i, sh in enumerate(params.shipments):
        for kind, step in (("pickup", sh.pickup), ("delivery", sh.delivery)):
            for k, window in enumerate(step.time_windows):
                _check_window(window, f"shipments[{i}].{kind}.time_windows[{k}]")


def _check_numbers(params: OptimizationParams) -> None:
    """Every number within what the solver's integer types hold."""
    values: list[tuple[str, list[int], int]] = []
    for i, job in enumerate(params.jobs):
        spans = [x for w in job.time_windows for x in w]
        values += [
            (f"jobs[{i}].id", [job.id], MAX_ID),
            (f"jobs[{i}].service", [job.service], MAX_SECONDS),
            (f"jobs[{i}].delivery", list(job.delivery), MAX_AMOUNT),
            (f"jobs[{i}].pickup", list(job.pickup), MAX_AMOUNT),
            (f"jobs[{i}].skills", list(job.skills), MAX_SKILL),
            (f"jobs[{i}].priority", [job.priority], 100),
            (f"jobs[{i}].time_windows", spans, MAX_SECONDS),
        ]
    for i, sh in enumerate(params.shipments):
        values += [
            (f"shipments[{i}].amount", list(sh.amount), MAX_AMOUNT),
            (f"shipments[{i}].skills", list(sh.skills), MAX_SKILL),
        ]
        values += [(f"shipments[{i}].priority", [sh.priority], 100)]
        for kind, step in (("pickup", sh.pickup), ("delivery", sh.delivery)):
            values += [
                (f"shipments[{i}].{kind}.id", [step.id], MAX_ID),
                (f"shipments[{i}].{kind}.service", [step.service], MAX_SECONDS),
                (f"shipments[{i}].{kind}.time_windows", [x for w in step.time_windows for x in w], MAX_SECONDS),
            ]
    for i, v in enumerate(params.vehicles):
        values += [
            (f"vehicles[{i}].id", [v.id], MAX_ID),
            (f"vehicles[{i}].capacity", list(v.capacity), MAX_AMOUNT),
            (f"vehicles[{i}].skills", list(v.skills), MAX_SKILL),
            (f"vehicles[{i}].time_window", list(v.time_window or ()), MAX_SECONDS),
        ]
    for field, numbers, most in values:
        if any(not 0 <= n <= most for n in numbers):
            raise InvalidParameter(f"{field}: numbers from 0 to {most}", parameter=field)


def _check_window(window: Window, field: str) -> None:
    start, end = window
    if start < 0 or end < start:
        raise InvalidParameter(f"time window [{start}, {end}] ends before it starts", parameter=field)


def _amounts(params: OptimizationParams) -> list[tuple[str, Amount]]:
    """Every amount given (an empty one means none), with its field name."""
    out = [(f"vehicles[{i}].capacity", v.capacity) for i, v in enumerate(params.vehicles) if v.capacity]
    for i, job in enumerate(params.jobs):
        out += [(f"jobs[{i}].{kind}", a) for kind, a in (("delivery", job.delivery), ("pickup", job.pickup)) if a]
    out += [(f"shipments[{i}].amount", sh.amount) for i, sh in enumerate(params.shipments) if sh.amount]
    return out


def _locations(params: OptimizationParams) -> tuple[list[LatLng], list[str]]:
    """Distinct locations, in order of first use, and the field that first used each."""
    index: dict[LatLng, int] = {}
    names: list[str] = []
    for i, v in enumerate(params.vehicles):
        for end, point in (("start", v.start), ("end", v.end)):
            if point is not None and point not in index:
                index[point] = len(names)
                names.append(f"vehicles[{i}].{end}")
    tasks = [(f"jobs[{i}].location", job.location) for i, job in enumerate(params.jobs)]
    for i, sh in enumerate(params.shipments):
        tasks += [(f"shipments[{i}].pickup.location", sh.pickup.location)]
        tasks += [(f"shipments[{i}].delivery.location", sh.delivery.location)]
    for name, point in tasks:
        if point not in index:
            index[point] = len(names)
            names.append(name)
    return list(index), names


@dataclass(frozen=True)
class _Network:
    """One travel profile's side of a problem: its router, the locations snapped by it, and its
    duration (whole seconds) and distance matrices over the locations."""

    router: Router
    snaps: list[Snap]
    durations: np.ndarray
    distances: np.ndarray


def run(datasets: DatasetRegistry, params: OptimizationParams, limits: Limits | None = None) -> dict[str, Any]:
    limits = limits or DEFAULT_LIMITS
    check(params, limits)
    points, names = _locations(params)
    networks = {
        profile: _network(datasets, points, names, limits, profile, field) for profile, field in _profiles(params)
    }
    solution = _solve(params, points, networks)
    return _answer(params, points, solution, networks, limits)


def _profiles(params: OptimizationParams) -> list[tuple[str, str]]:
    """The fleet's profiles (names, not aliases), each once, with the field of the first vehicle
    that names it (``vehicles[2].profile``: the field a region without the profile names)."""
    first: dict[str, str] = {}
    for i, v in enumerate(params.vehicles):
        first.setdefault(canonical(v.profile), f"vehicles[{i}].profile")
    return list(first.items())


def _network(
    datasets: DatasetRegistry, points: list[LatLng], names: list[str], limits: Limits, profile: str, field: str
) -> _Network:
    """``profile``'s router, snaps and matrices; 400s name a point off every way of the profile,
    or ``field`` when the region was imported without it."""
    router, snaps = snap_points(datasets, points, names, limits, profile, field)
    return _Network(router, snaps, *_matrix(datasets, points, names, limits, profile))


def _matrix(
    datasets: DatasetRegistry, points: list[LatLng], names: list[str], limits: Limits, profile: str
) -> tuple[np.ndarray, np.ndarray]:
    """Meridian's duration (whole seconds) and distance matrices of ``profile`` over the
    locations; a location with no route to or from another is refused, naming its field."""
    n = len(points)
    square = dataclasses.replace(limits, matrix_locations=max(limits.matrix_locations, n), matrix_cells=max(n * n, 1))
    out = matrix.run_arrays(datasets, matrix.MatrixParams(sources=tuple(points), profile=profile), square)
    durations = out["durations"]  # nan: no route
    missing = np.isnan(durations)
    if missing.any():
        worst = int(np.argmax(missing.sum(axis=0) + missing.sum(axis=1)))
        raise InvalidParameter(
            f"{names[worst]}: no {PROFILES[profile].adjective} route between this location and the others",
            parameter=names[worst],
        )
    distances = out["distances"]
    return np.rint(durations).astype(np.uint32), distances


def _solve(params: OptimizationParams, points: list[LatLng], networks: dict[str, _Network]) -> Any:
    index = {p: i for i, p in enumerate(points)}
    dims = next((len(a) for _, a in _amounts(params)), 0)
    problem = vroom.Input()
    for profile, network in networks.items():
        problem.set_durations_matrix(profile, network.durations)
    for v in params.vehicles:
        problem.add_vehicle(
            vroom.Vehicle(
                v.id,
                start=None if v.start is None else index[v.start],
                end=None if v.end is None else index[v.end],
                profile=canonical(v.profile),
                capacity=list(_padded(v.capacity, dims)),
                skills=set(v.skills) or None,
                time_window=None if v.time_window is None else vroom.TimeWindow(*v.time_window),
            )
        )
    for job in params.jobs:
        problem.add_job(
            vroom.Job(
                job.id,
                location=index[job.location],
                default_service=job.service,
                delivery=vroom.Amount(list(_padded(job.delivery, dims))),
                pickup=vroom.Amount(list(_padded(job.pickup, dims))),
                skills=set(job.skills) or None,
                priority=job.priority,
                time_windows=[vroom.TimeWindow(*w) for w in job.time_windows],
            )
        )
    for sh in params.shipments:
        problem.add_shipment(
            _shipment_step(sh.pickup, index),
            _shipment_step(sh.delivery, index),
            amount=vroom.Amount(list(_padded(sh.amount, dims))),
            skills=set(sh.skills) or None,
            priority=sh.priority,
        )
    threads = max(1, min(MAX_THREADS, os.cpu_count() or 1))
    level = EXPLORATION_LEVEL if params.tasks <= LARGE else LARGE_EXPLORATION_LEVEL
    return problem.solve(exploration_level=level, nb_threads=threads, timeout=timedelta(seconds=SOLVE_TIMEOUT_S))


def _shipment_step(step: ShipmentStep, index: dict[LatLng, int]) -> Any:
    return vroom.ShipmentStep(
        step.id,
        location=index[step.location],
        default_service=step.service,
        time_windows=[vroom.TimeWindow(*w) for w in step.time_windows],
    )


@dataclass(frozen=True)
class _Task:
    """A step's effect on the load: on board from the start (a job's delivery), then off and on."""

    on_at_start: Amount
    off: Amount
    on: Amount
    location: LatLng
    skills: tuple[int, ...]


def _tasks(params: OptimizationParams, dims: int) -> dict[tuple[str, int], _Task]:
    """Every task by (step type, id)."""
    zero = (0,) * dims
    out: dict[tuple[str, int], _Task] = {}
    for job in params.jobs:
        delivery, pickup = _padded(job.delivery, dims), _padded(job.pickup, dims)
        out["job", job.id] = _Task(delivery, delivery, pickup, job.location, job.skills)
    for sh in params.shipments:
        amount = _padded(sh.amount, dims)
        out["pickup", sh.pickup.id] = _Task(zero, zero, amount, sh.pickup.location, sh.skills)
        out["delivery", sh.delivery.id] = _Task(zero, amount, zero, sh.delivery.location, sh.skills)
    return out


def _lnglat(point: LatLng) -> list[float]:
    return [round_coord(point[1]), round_coord(point[0])]


def _answer(
    params: OptimizationParams,
    points: list[LatLng],
    solution: Any,
    networks: dict[str, _Network],
    limits: Limits,
) -> dict[str, Any]:
    dims = next((len(a) for _, a in _amounts(params)), 0)
    tasks = _tasks(params, dims)
    profiles = {v.id: canonical(v.profile) for v in params.vehicles}
    frame = solution.routes
    routes = []
    for vehicle_id, rows in frame.groupby("vehicle_id", sort=False, observed=True):
        steps = []
        indices: list[int] = []
        for row in rows.itertuples(index=False):
            step: dict[str, Any] = {
                "type": str(row.type),
                "location": _lnglat(points[int(row.location_index)]),
                "arrival": int(row.arrival),
                "duration": int(row.duration),
                "service": int(row.service),
                "waiting_time": int(row.waiting_time),
            }
            if step["type"] in TASK_TYPES:
                step["id"] = int(row.id)
            steps.append(step)
            indices.append(int(row.location_index))
        on_route = [tasks[s["type"], s["id"]] for s in steps if "id" in s]
        delivery = _total([t.off for t in on_route], dims)
        pickup = _total([t.on for t in on_route], dims)
        load = _total([t.on_at_start for t in on_route], dims)
        for step in steps:
            if "id" in step:
                task = tasks[step["type"], step["id"]]
                load = [a - off + on for a, off, on in zip(load, task.off, task.on, strict=True)]
            step["load"] = list(load)
        network = networks[profiles[int(vehicle_id)]]
        distance = float(sum(network.distances[a, b] for a, b in zip(indices, indices[1:], strict=False)))
        routes.append(
            {
                "vehicle": int(vehicle_id),
                "cost": steps[-1]["duration"],
                "service": sum(s["service"] for s in steps),
                "duration": steps[-1]["duration"],
                "waiting_time": sum(s["waiting_time"] for s in steps),
                "distance": round(distance, 1),
                "delivery": delivery,
                "pickup": pickup,
                "steps": steps,
                "geometry": _route_geometry(
                    network.router, [network.snaps[i] for i in indices], [points[i] for i in indices], params, limits
                ),
            }
        )
    served = {(s["type"], s["id"]) for r in routes for s in r["steps"] if "id" in s}
    unassigned = [_unassigned(key, task, params) for key, task in tasks.items() if key not in served]
    summary = {
        "cost": int(solution.summary.cost),
        "routes": len(routes),
        "unassigned": len(unassigned),
        "service": sum(r["service"] for r in routes),
        "duration": sum(r["duration"] for r in routes),
        "waiting_time": sum(r["waiting_time"] for r in routes),
        "distance": round(sum(r["distance"] for r in routes), 1),
        "delivery": _total([r["delivery"] for r in routes], dims),
        "pickup": _total([r["pickup"] for r in routes], dims),
    }
    return {"code": 0, "summary": summary, "unassigned": unassigned, "routes": routes}


def _padded(amount: Amount, dims: int) -> Amount:
    """An amount not given: zero in every dimension."""
    return amount or (0,) * dims


def _total(amounts: list[Any], dims: int) -> list[int]:
    total = [0] * dims
    for amount in amounts:
        for k, value in enumerate(amount):
            total[k] += int(value)
    return total


def _unassigned(key: tuple[str, int], task: _Task, params: OptimizationParams) -> dict[str, Any]:
    """An unassigned task, with the reason when a look at the vehicles tells it."""
    out: dict[str, Any] = {"id": key[1], "type": key[0], "location": _lnglat(task.location)}
    able = [v for v in params.vehicles if set(task.skills) <= set(v.skills)]
    carried = [max(off, on) for off, on in zip(task.off, task.on, strict=True)]
    if not able:
        out["reason"] = "skills: no vehicle has every skill the task requires"
    elif not any(all(n <= c for n, c in zip(carried, v.capacity, strict=True)) for v in able):
        out["reason"] = "capacity: the amount exceeds the capacity of every vehicle that could serve it"
    return out


def _route_geometry(
    router: Router, snaps: list[Snap], points: list[LatLng], params: OptimizationParams, limits: Limits
) -> dict[str, Any] | str:
    """The road line through a route's stops, leg by leg, as the router draws it."""
    lats: list[np.ndarray] = []
    lngs: list[np.ndarray] = []
    for k in range(len(snaps) - 1):
        a, b = snaps[k], snaps[k + 1]
        if a == b:
            continue
        leg = router.leg(a, b)
        if leg is None:  # a stop on a fragment of the network: as the matrix and the router do
            moved = escape_fragments(router, points[k : k + 2], [a, b], limits) or [a, b]
            leg = router.leg(moved[0], moved[1])
        if leg is None:
            continue
        la, ln = router.leg_geometry(leg)
        if lats:
            la, ln = la[1:], ln[1:]
        lats.append(la)
        lngs.append(ln)
    if not lats:
        only = snaps[0]
        lats, lngs = [np.array([only.lat])], [np.array([only.lng])]
    return line_geometry(np.concatenate(lats), np.concatenate(lngs), params.geometry)
