"""/v1/matrix (GET and POST) and core cmd=matrix: the same answer on every face, for every travel
profile, the 400s naming the parameter, one quota unit per 100 cells, and large matrices through
the `matrix` queue (wait, or a job with async), the profile with them."""

from __future__ import annotations

import pytest

from engine.services import matrix
from tests.web.test_batch import wait_job


def monaco_points(n: int) -> list[tuple[float, float]]:
    """n points on a grid over Monaco (each within the snap limit of a road)."""
    side = int(n**0.5) + 1
    return [(43.727 + 0.012 * (k // side) / side, 7.410 + 0.018 * (k % side) / side) for k in range(n)]


def piped(points) -> str:
    return "|".join(f"{lat:.6f},{lng:.6f}" for lat, lng in points)


def objects(points) -> list[dict[str, float]]:
    return [{"lat": float(f"{lat:.6f}"), "lng": float(f"{lng:.6f}")} for lat, lng in points]


def rounded(points) -> tuple[tuple[float, float], ...]:
    """The points as the faces read them (6 decimals)."""
    return tuple((float(f"{a:.6f}"), float(f"{b:.6f}")) for a, b in points)


def test_get_post_and_core_agree_with_the_engine(client, api_key, datasets):
    src, dst = monaco_points(4), monaco_points(9)[4:]
    headers = {"X-API-Key": api_key}
    get = client.get(f"/v1/matrix?sources={piped(src)}&destinations={piped(dst)}", headers=headers)
    post = client.post("/v1/matrix", json={"sources": objects(src), "destinations": objects(dst)}, headers=headers)
    core = client.get(
        f"/services/json?cmd=matrix&sources={piped(src)}&destinations={piped(dst)}",
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert get.status_code == post.status_code == core.status_code == 200, get.get_data(as_text=True)[:300]
    expected = matrix.run(datasets, matrix.MatrixParams(rounded(src), rounded(dst)))
    assert get.get_json() == post.get_json() == expected
    assert len(core.get_json()["meridiantest"]["response"]["durations"]) == 4
    only = client.get(f"/v1/matrix?sources={piped(src)}&annotations=distance", headers=headers).get_json()
    assert "durations" not in only and len(only["distances"]) == 4 and len(only["distances"][0]) == 4


@pytest.mark.parametrize(("profile", "alias"), [("foot", "walking"), ("bicycle", "cycling")])
def test_every_face_takes_the_profile_and_its_alias(client, api_key, datasets, profile, alias):
    src, dst = monaco_points(4), monaco_points(9)[4:]
    headers = {"X-API-Key": api_key}
    query = f"sources={piped(src)}&destinations={piped(dst)}"
    get = client.get(f"/v1/matrix?{query}&profile={profile}", headers=headers)
    body = {"sources": objects(src), "destinations": objects(dst)}
    post = client.post("/v1/matrix", json={**body, "profile": alias}, headers=headers)
    core = client.get(
        f"/services/json?cmd=matrix&{query}&profile={alias}", headers={"Authorization": f"Bearer {api_key}"}
    )
    assert get.status_code == post.status_code == core.status_code == 200, get.get_data(as_text=True)[:300]
    expected = matrix.run(datasets, matrix.MatrixParams(rounded(src), rounded(dst), profile=profile))
    assert get.get_json() == post.get_json() == expected
    assert core.get_json()["meridiantest"]["response"]["durations"] == expected["durations"]
    car = client.post("/v1/matrix", json=body, headers=headers).get_json()
    assert car["durations"] != expected["durations"]  # the profile's own graph and speeds


@pytest.mark.parametrize(
    ("method", "query_or_body", "parameter"),
    [
        ("get", "sources=43.73,7.42&profile=bike", "profile"),
        ("get", "sources=43.73,7.42|95,7.42", "sources"),
        ("get", "sources=", "sources"),
        ("get", "sources=43.73,7.42&destinations=43.73,x", "destinations"),
        ("get", f"sources={piped(monaco_points(1001))}", "sources"),
        ("get", "sources=43.73,7.42&annotations=speed", "annotations"),
        ("post", {"sources": []}, "sources"),
        ("post", {"sources": [{"lat": 43.73}]}, "sources"),
        ("post", {"sources": objects(monaco_points(2)), "profile": "truck"}, "profile"),
        ("post", {"destinations": objects(monaco_points(2))}, "sources"),
        ("post", {"sources": objects(monaco_points(1001))}, "sources"),
    ],
)
def test_bad_requests_name_the_parameter(client, api_key, method, query_or_body, parameter):
    headers = {"X-API-Key": api_key}
    if method == "get":
        resp = client.get(f"/v1/matrix?{query_or_body}", headers=headers)
    else:
        resp = client.post("/v1/matrix", json=query_or_body, headers=headers)
    assert resp.status_code == 400, resp.get_data(as_text=True)[:300]
    body = resp.get_json()
    assert body["parameter"].split(".")[0].split("[")[0] == parameter, body
    if parameter == "profile":
        for allowed in ("car", "foot", "bicycle", "driving", "walking", "cycling"):
            assert allowed in body["message"], body


def test_quota_one_unit_per_100_cells(client, store, datasets):
    store.set_plan("matrix10", per_minute=0, per_day=10, per_month=0, services=["matrix"])
    key = store.create_key("matrix-quota", "matrix10").key
    points = objects(monaco_points(15))  # 225 cells: 3 units
    first = client.post("/v1/matrix", json={"sources": points}, headers={"X-API-Key": key})
    assert first.status_code == 200 and first.headers["RateLimit-Remaining"] == "7"
    small = client.get(f"/v1/matrix?sources={piped(monaco_points(2))}", headers={"X-API-Key": key})
    assert small.status_code == 200 and small.headers["RateLimit-Remaining"] == "6"  # 4 cells: 1 unit
    over = client.post("/v1/matrix", json={"sources": objects(monaco_points(27))}, headers={"X-API-Key": key})
    assert over.status_code == 429  # 729 cells: 8 units > 6 left


def test_openapi_describes_profile(client):
    spec = client.get("/api-json").get_json()
    get = {p["name"]: p for p in spec["paths"]["/v1/matrix"]["get"]["parameters"]}
    body = spec["paths"]["/v1/matrix"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    posted = spec["components"]["schemas"][body["$ref"].rsplit("/", 1)[-1]]["properties"]
    for described in (get["profile"]["schema"], posted["profile"]):
        assert set(described["enum"]) == {"car", "foot", "bicycle", "driving", "walking", "cycling"}


@pytest.mark.integration
@pytest.mark.parametrize("profile", ["car", "foot"])
def test_large_matrix_through_the_worker_and_as_a_job(client, api_key, celery_worker, datasets, profile):
    points = monaco_points(110)  # 12,100 cells: above the inline threshold
    body = {"sources": objects(points), "profile": profile}
    headers = {"X-API-Key": api_key}
    # first in this process: the kernels compiled here fill numba's cache for the worker too
    sources = tuple((p["lat"], p["lng"]) for p in body["sources"])
    expected = matrix.run(datasets, matrix.MatrixParams(sources, profile=profile))
    for _ in range(3):  # a cold worker (datasets, arc costs) may exceed the wait: 503, retry shortly
        waited = client.post("/v1/matrix", json=body, headers=headers)
        if waited.status_code != 503:
            break
    assert waited.status_code == 200, waited.get_data(as_text=True)[:300]
    assert waited.get_json() == expected
    job = client.post("/v1/matrix", json={**body, "async": True}, headers=headers)
    assert job.status_code == 202
    done = wait_job(client, job.get_json()["job_id"], api_key)
    assert done["status"] == "done", done
    assert client.get(done["result_url"], headers=headers).get_json() == expected


def test_a_post_body_is_part_of_the_etag(client, api_key, datasets):
    """POST /v1/matrix carries its parameters in the body: another body is another ETag, and the
    ETag of one matrix never answers 304 for another (the query string is empty for both)."""
    headers = {"X-API-Key": api_key}
    first = client.post("/v1/matrix", json={"sources": objects(monaco_points(2))}, headers=headers)
    etag = first.headers["ETag"]
    again = client.post(
        "/v1/matrix", json={"sources": objects(monaco_points(2))}, headers={**headers, "If-None-Match": etag}
    )
    assert again.status_code == 304 and again.data == b""
    other_body = {"sources": objects(monaco_points(3)[1:])}
    other = client.post("/v1/matrix", json=other_body, headers={**headers, "If-None-Match": etag})
    assert other.status_code == 200 and other.headers["ETag"] != etag
    assert other.get_json()["sources"] != first.get_json()["sources"]
