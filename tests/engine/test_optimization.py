"""Route optimisation (engine.services.optimization): VROOM's answer over Meridian's matrix checked
by an independent checker (tests/engine/optimization_check.py), a mixed fleet (each vehicle by its
own profile's matrix and ways), and the 400s naming the field."""

from __future__ import annotations

import dataclasses

import pytest

from engine.errors import InvalidParameter
from engine.geo import haversine_m
from engine.limits import Limits
from engine.polyline import decode
from engine.services import matrix
from engine.services import optimization as opt
from tests.engine.optimization_check import check_solution, connected_points, problem
from tests.engine.osm_grid import OsmGrid
from tests.engine.test_travel_profiles import serve as serve_profiles


def params_of(body: dict, geometry: str = "polyline") -> opt.OptimizationParams:
    """The engine's params from a VROOM-shaped body (what the web schema does)."""

    def point(p):
        return None if p is None else (p[1], p[0])

    jobs = tuple(
        opt.Job(
            id=j["id"],
            location=point(j["location"]),
            service=j.get("service", 0),
            delivery=tuple(j.get("delivery", ())),
            pickup=tuple(j.get("pickup", ())),
            skills=tuple(j.get("skills", ())),
            time_windows=tuple(tuple(w) for w in j.get("time_windows", ())),
        )
        for j in body["jobs"]
    )
    vehicles = tuple(
        opt.Vehicle(
            id=v["id"],
            start=point(v.get("start")),
            end=point(v.get("end")),
            capacity=tuple(v.get("capacity", ())),
            skills=tuple(v.get("skills", ())),
            time_window=tuple(v["time_window"]) if "time_window" in v else None,
            profile=v.get("profile", "car"),
        )
        for v in body["vehicles"]
    )
    return opt.OptimizationParams(jobs=jobs, vehicles=vehicles, geometry=geometry)


@pytest.mark.parametrize(("region", "jobs", "vehicles"), [("monaco", 40, 3), ("helsinki", 55, 4)])
def test_routes_honour_time_windows_and_capacities(datasets, region, jobs, vehicles):
    points = connected_points(datasets, region, jobs + 1, seed=jobs)
    body = problem(points, vehicles, seed=5)
    answer = opt.run(datasets, params_of(body))
    counts = check_solution(datasets, body, answer)
    assert counts["served"] >= jobs * 0.6, counts  # a 4-hour horizon: most of the jobs fit
    for route in answer["routes"]:
        line = decode(route["geometry"])
        depot = body["vehicles"][0]["start"]
        assert abs(line[0][0] - depot[1]) < 0.01 and abs(line[0][1] - depot[0]) < 0.01  # starts at the depot


def test_a_mixed_fleet_travels_each_by_its_profile(datasets):
    """A bicycle courier beside two vans: the checker times each vehicle by its own profile's
    matrix (a courier timed by the car's would arrive before it can), and each route's distance
    and line are its profile's."""
    points = connected_points(datasets, "monaco", 31, seed=12, profiles=("car", "bicycle"))
    body = problem(points, 3, seed=9)
    body["vehicles"][0]["profile"] = "cycling"  # Mapbox's alias, as the web face accepts it
    params = params_of(body, geometry="polyline6")
    body["vehicles"][0]["profile"] = "bicycle"  # what the checker reads
    answer = opt.run(datasets, params)
    counts = check_solution(datasets, body, answer)
    assert counts["served"] >= 20, counts
    routes = {r["vehicle"]: r for r in answer["routes"]}
    assert body["vehicles"][0]["id"] in routes, "the courier rides"
    locations = {(round(p[1], 7), round(p[0], 7)): p for p in points}
    for vehicle in body["vehicles"]:
        route = routes.get(vehicle["id"])
        if route is None:
            continue
        stops = [locations[tuple(s["location"])] for s in route["steps"]]
        cells = matrix.run(datasets, matrix.MatrixParams(tuple(stops), profile=vehicle.get("profile", "car")))
        legs = sum(cells["distances"][k][k + 1] for k in range(len(stops) - 1))
        assert route["distance"] == pytest.approx(legs, abs=0.1 * len(stops)), vehicle
        line = decode(route["geometry"], 6)
        drawn = sum(haversine_m(*a, *b) for a, b in zip(line, line[1:], strict=False))
        assert drawn == pytest.approx(route["distance"], rel=0.02, abs=20.0 * len(stops)), vehicle


def test_a_profile_the_region_lacks_names_the_vehicle(tmp_path):
    g = OsmGrid("A----B----C----D", grid_m=20)
    g.way("ABCD", highway="residential")
    ds = serve_profiles(tmp_path, g, profiles=("car", "foot"))
    vehicle = opt.Vehicle(1, start=g.coord("A"), end=g.coord("A"))
    jobs = (opt.Job(7, g.coord_between("C", "D")),)
    fleet = (vehicle, dataclasses.replace(vehicle, id=2, profile="walking"))
    walked = opt.run(ds, opt.OptimizationParams(jobs, fleet))
    assert walked["summary"]["routes"] == 1 and walked["unassigned"] == []
    fleet += (dataclasses.replace(vehicle, id=3, profile="bicycle"),)
    with pytest.raises(InvalidParameter) as err:
        opt.run(ds, opt.OptimizationParams(jobs, fleet))
    assert err.value.parameter == "vehicles[2].profile" and "its profiles: car, foot" in str(err.value)


def test_too_small_a_fleet_reports_unassigned_jobs_and_reasons(datasets):
    points = connected_points(datasets, "monaco", 31, seed=30)
    body = problem(points, 1, seed=6)
    body["vehicles"][0]["capacity"] = [6]
    body["jobs"][0]["skills"] = [7]  # no vehicle has it
    body["jobs"][1]["delivery"] = [9]  # more than the van carries
    answer = opt.run(datasets, params_of(body, geometry="geojson"))
    counts = check_solution(datasets, body, answer)
    assert counts["unassigned"] > 0
    reasons = {u["id"]: u.get("reason", "") for u in answer["unassigned"]}
    assert reasons[body["jobs"][0]["id"]].startswith("skills")
    assert reasons[body["jobs"][1]["id"]].startswith("capacity")
    assert answer["routes"][0]["geometry"]["type"] == "LineString"


def test_invalid_problems_name_the_field(datasets):
    points = connected_points(datasets, "monaco", 4, seed=2)
    base = params_of(problem(points, 2, seed=1))
    job, vehicle = base.jobs[1], base.vehicles[1]
    cases = [
        (
            dataclasses.replace(
                base, jobs=(base.jobs[0], dataclasses.replace(job, time_windows=((0, 10), (500, 100))))
            ),
            "jobs[1].time_windows[1]",
        ),
        (
            dataclasses.replace(base, vehicles=(base.vehicles[0], dataclasses.replace(vehicle, capacity=(5, 5)))),
            "vehicles[1].capacity",
        ),
        (dataclasses.replace(base, jobs=(base.jobs[0], dataclasses.replace(job, pickup=(1, 2)))), "jobs[1].pickup"),
        (
            dataclasses.replace(base, vehicles=(base.vehicles[0], dataclasses.replace(vehicle, capacity=()))),
            "vehicles[1].capacity",
        ),
        (dataclasses.replace(base, vehicles=(dataclasses.replace(vehicle, profile="bike"),)), "vehicles[0].profile"),
        (
            dataclasses.replace(base, vehicles=(base.vehicles[0], dataclasses.replace(vehicle, profile="truck"))),
            "vehicles[1].profile",
        ),
        (
            dataclasses.replace(base, vehicles=(dataclasses.replace(vehicle, time_window=(9, 3)),)),
            "vehicles[0].time_window",
        ),
        (
            dataclasses.replace(base, jobs=(base.jobs[0], dataclasses.replace(job, location=(0.0, 0.0)))),
            "jobs[1].location",
        ),
        (dataclasses.replace(base, jobs=(base.jobs[0], dataclasses.replace(job, id=base.jobs[0].id))), "jobs[1].id"),
        (dataclasses.replace(base, jobs=base.jobs * 2), "jobs"),
        (dataclasses.replace(base, vehicles=base.vehicles * 2), "vehicles"),
        (dataclasses.replace(base, jobs=()), "jobs"),
    ]
    small = Limits(optimization_jobs=5, optimization_vehicles=3)
    for params, field in cases:
        with pytest.raises(InvalidParameter) as err:
            opt.run(datasets, params, small)
        assert err.value.parameter == field, (field, str(err.value))


def test_shipments_are_picked_up_before_they_are_delivered(datasets):
    points = connected_points(datasets, "helsinki", 31, seed=77)
    body = problem(points[:21], 2, seed=8, capacity=8)
    body["shipments"] = [
        {
            "amount": [3],
            "pickup": {"id": 500 + k, "location": [points[21 + 2 * k][1], points[21 + 2 * k][0]], "service": 60},
            "delivery": {
                "id": 500 + k,
                "location": [points[22 + 2 * k][1], points[22 + 2 * k][0]],
                "service": 60,
                "time_windows": [[0, 3 * 3600]],
            },
        }
        for k in range(5)
    ]
    params = dataclasses.replace(
        params_of(body),
        shipments=tuple(
            opt.Shipment(
                pickup=opt.ShipmentStep(
                    sh["pickup"]["id"], (sh["pickup"]["location"][1], sh["pickup"]["location"][0]), 60
                ),
                delivery=opt.ShipmentStep(
                    sh["delivery"]["id"],
                    (sh["delivery"]["location"][1], sh["delivery"]["location"][0]),
                    60,
                    ((0, 3 * 3600),),
                ),
                amount=(3,),
            )
            for sh in body["shipments"]
        ),
    )
    answer = opt.run(datasets, params)
    counts = check_solution(datasets, body, answer)
    served = {(s["type"], s["id"]) for r in answer["routes"] for s in r["steps"] if "id" in s}
    assert ("pickup", 500) in served or ("pickup", 500) in {(u["type"], u["id"]) for u in answer["unassigned"]}
    assert counts["served"] >= 20, counts
