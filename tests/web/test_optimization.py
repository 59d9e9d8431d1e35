"""POST /v1/optimization and core cmd=optimization: small problems answered in the request, larger
ones by a worker on the `optimization` queue (wait, or a job with async), every answer checked by
the independent checker; a mixed fleet (vehicles' `profile`); the 400s naming the field; the quota
cost."""

from __future__ import annotations

import json
import time

import pytest
import requests

from tests.engine.optimization_check import check_solution, connected_points, problem
from tests.web.test_batch import wait_job


def small_problem(datasets, jobs: int = 6, vehicles: int = 2) -> dict:
    return problem(connected_points(datasets, "monaco", jobs + 1, seed=11), vehicles, seed=3)


def test_small_problem_in_the_request_and_on_the_core(client, api_key, datasets):
    body = small_problem(datasets)
    started = time.perf_counter()
    resp = client.post("/v1/optimization", json=body, headers={"X-API-Key": api_key})
    elapsed = time.perf_counter() - started
    assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
    answer = resp.get_json()
    check_solution(datasets, body, answer)
    assert all(isinstance(r["geometry"], str) for r in answer["routes"])
    assert elapsed < 1.0  # inline: a few milliseconds of solving (the bound is loose for a shared machine)
    core = client.get(
        "/services/json",
        query_string={"cmd": "optimization", "problem": json.dumps(body)},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert core.status_code == 200, core.get_data(as_text=True)[:300]
    assert core.get_json()["meridiantest"]["response"]["summary"]["routes"] == answer["summary"]["routes"]


def test_a_mixed_fleet_on_both_faces(client, api_key, datasets):
    points = connected_points(datasets, "monaco", 9, seed=13, profiles=("car", "bicycle", "foot"))
    body = problem(points, 3, seed=4)
    body["vehicles"][0]["profile"] = "bicycle"
    body["vehicles"][1]["profile"] = "foot"
    resp = client.post("/v1/optimization", json=body, headers={"X-API-Key": api_key})
    assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
    check_solution(datasets, body, resp.get_json())
    aliased = _with(_with(body, ["vehicles", 0, "profile"], "cycling"), ["vehicles", 1, "profile"], "walking")
    core = client.get(
        "/services/json",
        query_string={"cmd": "optimization", "problem": json.dumps(aliased)},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert core.status_code == 200, core.get_data(as_text=True)[:300]
    assert core.get_json()["meridiantest"]["response"]["summary"]["cost"] == resp.get_json()["summary"]["cost"]
    unknown = client.post(
        "/v1/optimization", json=_with(body, ["vehicles", 2, "profile"], "truck"), headers={"X-API-Key": api_key}
    )
    assert unknown.status_code == 400 and unknown.get_json()["parameter"] == "vehicles[2].profile"
    assert all(name in unknown.get_json()["message"] for name in ("car", "foot", "bicycle", "walking"))


def test_openapi_describes_the_vehicles_profile(client):
    spec = client.get("/api-json").get_json()
    vehicle = spec["components"]["schemas"]["Vehicle"]
    assert set(vehicle["properties"]["profile"]["enum"]) == {"car", "foot", "bicycle", "driving", "walking", "cycling"}


def _with(body: dict, path: list, value) -> dict:
    out = json.loads(json.dumps(body))
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def test_bad_problems_name_the_field(client, api_key, datasets):
    body = small_problem(datasets, jobs=4)
    many = {"jobs": [body["jobs"][0]] * 1001, "vehicles": body["vehicles"]}
    cases = [
        (_with(body, ["jobs", 3, "time_windows"], [[0, 100], [900, 500]]), "jobs[3].time_windows[1]"),
        (_with(body, ["vehicles", 1, "capacity"], [5, 5]), "vehicles[1].capacity"),
        (_with(body, ["jobs", 2, "delivery"], [1, 1]), "jobs[2].delivery"),
        (_with(body, ["jobs", 1, "location"], [0.0, 0.0]), "jobs[1].location"),
        (_with(body, ["jobs", 1, "location"], [7.42]), "jobs[1].location"),
        (_with(body, ["jobs", 0, "location"], [7.42, 95.0]), "jobs[0].location"),
        (_with(body, ["vehicles", 0, "profile"], "bike"), "vehicles[0].profile"),
        (_with(body, ["vehicles", 0, "time_window"], [10, 5]), "vehicles[0].time_window"),
        (_with(body, ["jobs", 2, "service"], -1), "jobs[2].service"),
        (_with(body, ["jobs", 2, "colour"], "red"), "jobs[2].colour"),
        (_with(body, ["jobs", 2, "id"], 2**64 + 5), "jobs[2].id"),  # beyond the solver's integers: not a 500
        (_with(body, ["jobs", 3, "delivery"], [2**40]), "jobs[3].delivery"),
        (_with(body, ["vehicles", 1, "skills"], [2**33]), "vehicles[1].skills"),
        ({"vehicles": body["vehicles"]}, "jobs"),
        (many, "jobs"),
        ({"jobs": body["jobs"], "vehicles": body["vehicles"] * 51}, "vehicles"),
    ]
    for case, field in cases:
        resp = client.post("/v1/optimization", json=case, headers={"X-API-Key": api_key})
        assert resp.status_code == 400, (field, resp.get_data(as_text=True)[:300])
        assert resp.get_json()["parameter"] == field, (field, resp.get_json())


def test_quota_one_unit_per_job_and_per_100_cells(client, store, datasets):
    store.set_plan("optim40", per_minute=0, per_day=40, per_month=0, services=["optimization"])
    key = store.create_key("optim-quota", "optim40").key
    body = small_problem(datasets, jobs=6)  # 6 jobs, 7 distinct locations: 6 + 1 units
    resp = client.post("/v1/optimization", json=body, headers={"X-API-Key": key})
    assert resp.status_code == 200 and resp.headers["RateLimit-Remaining"] == "33"


@pytest.mark.integration
def test_larger_problem_through_the_worker_and_as_a_job(client, api_key, celery_worker, datasets):
    points = connected_points(datasets, "helsinki", 41, seed=41, profiles=("car", "bicycle"))
    body = problem(points, 3, seed=9)  # above the inline size
    body["vehicles"][2]["profile"] = "bicycle"  # the profile travels to the worker too
    headers = {"X-API-Key": api_key}
    for _ in range(3):  # a cold worker (datasets, numba kernels) may exceed the wait: 503, retry shortly
        waited = client.post("/v1/optimization", json=body, headers=headers)
        if waited.status_code != 503:
            break
    assert waited.status_code == 200, waited.get_data(as_text=True)[:300]
    counts = check_solution(datasets, body, waited.get_json())
    assert counts["served"] > 20
    job = client.post("/v1/optimization", json={**body, "async": True}, headers=headers)
    assert job.status_code == 202
    done = wait_job(client, job.get_json()["job_id"], api_key)
    assert done["status"] == "done"
    check_solution(datasets, body, done["result"])


@pytest.mark.integration
@pytest.mark.slow
def test_200_jobs_10_vehicles_over_http_end_to_end(live_server, api_key, celery_worker, datasets):
    """The issue's target (<= 10 s on this machine): gunicorn, the queue, the worker, VROOM, the lines."""
    body = problem(connected_points(datasets, "helsinki", 201, seed=200), 10, seed=200, horizon=8 * 3600, capacity=60)
    headers = {"X-API-Key": api_key}
    warm = problem(connected_points(datasets, "helsinki", 14, seed=2), 2, seed=2)  # the worker's datasets and kernels
    for _ in range(3):
        if requests.post(f"{live_server}/v1/optimization", json=warm, headers=headers, timeout=60).status_code != 503:
            break
    started = time.perf_counter()
    resp = requests.post(f"{live_server}/v1/optimization", json=body, headers=headers, timeout=60)
    elapsed = time.perf_counter() - started
    assert resp.status_code == 200, resp.text[:300]
    counts = check_solution(datasets, body, resp.json())
    print(f"\n200 jobs, 10 vehicles over HTTP: {elapsed:.2f} s, {counts}")
    assert counts["served"] >= 190
    assert elapsed < 20  # the target is 10 s; the bound leaves room for a machine shared with other runs


def test_core_face_names_the_field_and_shipments(client, api_key, datasets):
    body = small_problem(datasets, jobs=4)
    bad = _with(body, ["jobs", 3, "time_windows"], [[900, 500]])
    core = client.get(
        "/services/json",
        query_string={"cmd": "optimization", "problem": json.dumps(bad)},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert core.status_code == 400, core.get_data(as_text=True)[:300]
    assert "jobs[3].time_windows[0]" in core.get_data(as_text=True)
    not_json = client.get(
        "/services/json",
        query_string={"cmd": "optimization", "problem": "{"},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert not_json.status_code == 400 and "problem" in not_json.get_data(as_text=True)
    step = {"id": 9, "location": body["jobs"][0]["location"], "time_windows": [[50, 10]]}
    shipment = {"pickup": {**step, "time_windows": []}, "delivery": step, "amount": [1]}
    bad = client.post("/v1/optimization", json={**body, "shipments": [shipment]}, headers={"X-API-Key": api_key})
    assert bad.status_code == 400 and bad.get_json()["parameter"] == "shipments[0].delivery.time_windows[0]", (
        bad.get_json()
    )
    fine = {**shipment, "delivery": {**step, "location": body["jobs"][1]["location"], "time_windows": []}}
    both = {**body, "shipments": [fine]}
    ok = client.post("/v1/optimization", json=both, headers={"X-API-Key": api_key})
    assert ok.status_code == 200, ok.get_data(as_text=True)[:300]
    check_solution(datasets, both, ok.get_json())
