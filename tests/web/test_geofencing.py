"""Geofencing on both faces, in process (Flask test client, real Redis, SQLite): fences drawn with
explicit metre offsets, checks inside/outside/on the edge/in a hole, a circle at Helsinki's
latitude, transitions over a sequence of points, validation 400s, account isolation, pagination.

Live gunicorn/Celery tests (concurrency, a second worker, webhooks) are in
``test_geofencing_live.py``.
"""

from __future__ import annotations

import json
import math
import uuid
from urllib.parse import quote

import pytest
from pyproj import Geod

GEOD = Geod(ellps="WGS84")
MONACO = (43.7350, 7.4200)
HELSINKI = (60.1699, 24.9384)


def offset(origin, east_m: float, north_m: float) -> tuple[float, float]:
    """(lat, lng) at east/north metres from origin (local WGS84 radii of curvature)."""
    lat0, lng0 = origin
    a, f = 6_378_137.0, 1 / 298.257223563
    e2 = f * (2 - f)
    s2 = math.sin(math.radians(lat0)) ** 2
    m_lat = math.radians(1) * a * (1 - e2) / (1 - e2 * s2) ** 1.5
    m_lng = math.radians(1) * a / math.sqrt(1 - e2 * s2) * math.cos(math.radians(lat0))
    return lat0 + north_m / m_lat, lng0 + east_m / m_lng


def center(east_m: float, north_m: float) -> dict:
    lat, lng = offset(MONACO, east_m, north_m)
    return {"lat": lat, "lng": lng}


def ring(origin, corners):
    pts = [[offset(origin, e, n)[1], offset(origin, e, n)[0]] for e, n in corners]
    return pts + [pts[0]]


def square(origin, x0, y0, x1, y1):
    return ring(origin, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


# A 100 m x 80 m yard with a 40 m x 20 m hole (metres east/north of MONACO).
YARD = {
    "type": "Feature",
    "properties": {"name": "Yard", "metadata": {"site": 7}},
    "geometry": {"type": "Polygon", "coordinates": [square(MONACO, 0, 0, 100, 80), square(MONACO, 30, 30, 70, 50)]},
}


def new_key(store, label="geo"):
    return store.create_key(f"geofence-{label}-{uuid.uuid4().hex[:8]}", "pro")


def h(key):
    return {"X-API-Key": key.key if hasattr(key, "key") else key}


def create(client, key, body, status=200):
    resp = client.post("/v1/geofences", json=body, headers=h(key))
    assert resp.status_code == status, resp.get_data(as_text=True)
    return resp.get_json()


def check(client, key, lat, lng, **extra):
    q = f"lat={lat}&lng={lng}" + "".join(f"&{k}={quote(str(v))}" for k, v in extra.items())
    resp = client.get(f"/v1/geofencing?{q}", headers=h(key))
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert resp.headers["Cache-Control"] == "private, no-store"
    return {f["id"]: f for f in resp.get_json()["fences"]}


def error(resp, status=400):
    assert resp.status_code == status, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["statusCode"] == status
    return body


@pytest.fixture(scope="module")
def key(store):
    return new_key(store, "main")


# ----------------------------------------------------------------------------- geometry


def test_inside_outside_edge_hole(client, key):
    fence = create(client, key, YARD)
    assert fence["type"] == "polygon" and fence["name"] == "Yard" and fence["metadata"] == {"site": 7}
    assert fence["id"].startswith("gf_") and len(fence["geometry"]["coordinates"]) == 2
    fid = fence["id"]
    cases = {
        # name: ((east, north), inside, metres to the nearest boundary)
        "inside": ((10, 40), True, 10.0),
        "inside-near-hole": ((50, 25), True, 5.0),
        "in-hole": ((50, 40), False, 10.0),
        "on-shell-edge": ((100, 40), True, 0.0),
        "on-hole-edge": ((30, 40), True, 0.0),
        "on-vertex": ((0, 0), True, 0.0),
        "outside-east": ((125, 40), False, 25.0),
        "outside-north": ((50, 95), False, 15.0),
    }
    for name, ((e, n), inside, dist) in cases.items():
        lat, lng = offset(MONACO, e, n)
        got = check(client, key, lat, lng, fences=fid)[fid]
        assert got["inside"] is inside, name
        assert got["distance"] == pytest.approx(dist, abs=0.05), name
        assert got["transition"] is None and got["name"] == "Yard"


def test_circle_at_helsinki_latitude_in_metres(client, key):
    fence = create(
        client,
        key,
        {"type": "circle", "center": {"lat": HELSINKI[0], "lng": HELSINKI[1]}, "radius": 500, "name": "Kauppatori"},
    )
    assert fence["center"] == {"lat": HELSINKI[0], "lng": HELSINKI[1]} and fence["radius"] == 500
    fid = fence["id"]
    for azimuth in (0, 45, 90, 180, 270):  # east-west: a degree of longitude is half a degree of latitude here
        for metres, inside in ((498.0, True), (502.0, False)):
            lng, lat, _ = GEOD.fwd(HELSINKI[1], HELSINKI[0], azimuth, metres)
            got = check(client, key, lat, lng, fences=fid)[fid]
            assert got["inside"] is inside, (azimuth, metres)
            assert got["distance"] == pytest.approx(2.0, abs=0.05), (azimuth, metres)


def test_default_order_inside_first_then_distance(client, store):
    k = new_key(store, "order")
    far = create(client, k, {"type": "circle", "center": center(500, 0), "radius": 100})["id"]
    near = create(client, k, {"type": "circle", "center": center(200, 0), "radius": 100})["id"]
    yard = create(client, k, YARD)["id"]
    lat, lng = offset(MONACO, 10, 10)
    resp = client.get(f"/v1/geofencing?lat={lat}&lng={lng}", headers=h(k))
    assert [f["id"] for f in resp.get_json()["fences"]] == [yard, near, far]


def test_transitions_across_a_sequence_of_points(client, key):
    fid = create(client, key, YARD)["id"]
    device = f"truck-{uuid.uuid4().hex[:6]}"
    path = [
        ((-20, 40), "outside"),
        ((10, 40), "enter"),
        ((20, 45), "inside"),
        ((50, 40), "exit"),
        ((52, 41), "outside"),
        ((90, 70), "enter"),
        ((100, 80), "inside"),
        ((130, 80), "exit"),
    ]
    seen = []
    for (e, n), _expected in path:
        lat, lng = offset(MONACO, e, n)
        seen.append(check(client, key, lat, lng, fences=fid, device=device)[fid]["transition"])
    assert seen == [t for _, t in path]


def test_admin_area_fence(client, store, datasets):
    ds = datasets.get("monaco")
    area = max(ds.admin.areas, key=lambda a: a.geometry.area)
    k = new_key(store, "admin")
    fence = create(client, k, {"type": "admin", "osm_id": area.osm_id, "name": area.name})
    assert (
        fence["type"] == "admin"
        and fence["osm_id"] == area.osm_id
        and fence["geometry"]["type"] in ("Polygon", "MultiPolygon")
    )
    pt = area.geometry.representative_point()
    assert check(client, k, pt.y, pt.x)[fence["id"]]["inside"] is True
    assert check(client, k, 43.0, 5.0)[fence["id"]]["inside"] is False  # far outside the extract
    body = error(client.post("/v1/geofences", json={"type": "admin", "osm_id": 999_999_999_999}, headers=h(k)))
    assert body["parameter"] == "osm_id"


# ----------------------------------------------------------------------------- validation


def bowtie():
    return ring(MONACO, [(0, 0), (50, 50), (50, 0), (0, 50)])


@pytest.mark.parametrize(
    "body, parameter, words",
    [
        (
            {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [square(MONACO, 0, 0, 10, 10)[:-1]]}},
            "geometry",
            "not closed",
        ),
        ({"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [bowtie()]}}, "geometry", "self-intersect"),
        (
            {
                "type": "Feature",
                "geometry": {"type": "Polygon", "coordinates": [[[7.42, 43.73], [7.43, 43.73], [7.42, 43.73]]]},
            },
            "geometry",
            "at least 4",
        ),
        (
            {"type": "Polygon", "coordinates": [[[7.42, 43.73], [7.43, 43.73], [7.43, 95.0], [7.42, 43.73]]]},
            "geometry",
            "out of range",
        ),
        (
            {"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[7.42, 43.73], [7.43, 43.74]]}},
            "geometry",
            "Polygon or MultiPolygon",
        ),
        ({"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 0}, "radius", "> 0"),
        ({"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": -5}, "radius", "> 0"),
        ({"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 1e7}, "radius", "maximum"),
        ({"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": "10"}, "radius", "number"),
        ({"type": "circle", "center": {"lat": "43.73", "lng": 7.42}, "radius": 10}, "center.lat", "number"),
        ({"type": "circle", "center": {"lat": 143.73, "lng": 7.42}, "radius": 10}, "center", "range"),
        ({"type": "circle", "center": {"lat": 43.73}, "radius": 10}, "center.lng", "missing"),
        (
            {"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 10, "metadata": [1]},
            "metadata",
            "JSON object",
        ),
        ({"type": "hexagon"}, "type", "one of"),
        ({"center": {"lat": 43.73, "lng": 7.42}, "radius": 10}, "type", "missing"),
        ({"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 10, "colour": "red"}, "colour", "unknown"),
        (
            {"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 10, "webhook_url": "ftp://x.org/h"},
            "webhook_url",
            "http or https",
        ),
        ({"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 10, "name": "x" * 201}, "name", "longer"),
    ],
)
def test_create_400_names_the_reason(client, key, body, parameter, words):
    err = error(client.post("/v1/geofences", json=body, headers=h(key)))
    assert err.get("parameter") == parameter, err
    assert words.lower() in err["message"].lower(), err


def test_too_many_vertices_400(client, key):
    n = 10_001
    ring_ = [
        [7.42 + 0.001 * math.cos(2 * math.pi * i / n), 43.73 + 0.001 * math.sin(2 * math.pi * i / n)] for i in range(n)
    ]
    err = error(
        client.post("/v1/geofences", json={"type": "Polygon", "coordinates": [ring_ + [ring_[0]]]}, headers=h(key))
    )
    assert err["parameter"] == "geometry" and "too many vertices" in err["message"]


def test_vertices_of_the_account_over_the_plan_cap_400(client, store):
    """Issue 26, finding 5: a plan caps the vertices of all of an account's fences together."""
    plan = f"geocap-{uuid.uuid4().hex[:8]}"
    store.set_plan(plan, services=["*"], max_fence_vertices=1_000)
    key = store.create_key(f"geofence-cap-{uuid.uuid4().hex[:8]}", plan)

    def body(n):
        ring_ = [
            [7.42 + 0.001 * math.cos(2 * math.pi * i / n), 43.73 + 0.001 * math.sin(2 * math.pi * i / n)]
            for i in range(n)
        ]
        return {"type": "Polygon", "coordinates": [ring_ + [ring_[0]]]}

    create(client, key, body(599))
    err = error(client.post("/v1/geofences", json=body(599), headers=h(key)))
    assert err["parameter"] == "geometry"
    assert "maximum of 1000" in err["message"] and "max_fence_vertices" in err["message"]
    resp = core(client, key, cmd="geofence_create", fence=json.dumps(body(599)))
    assert resp.status_code == 400
    assert resp.get_json()["meridiantest"]["error"]["parameter"] == "geometry"
    create(client, key, body(399))  # up to the cap


def test_too_many_fences_per_account(store, settings):
    from accounts.fences import FenceStore
    from engine.errors import InvalidParameter
    from engine.geofence.model import parse_fence

    fences = FenceStore(store.engine)
    acct = new_key(store, "limit").record.account_id
    fence = parse_fence({"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 10})
    for _ in range(3):
        fences.create(acct, fence, max_fences=3)
    with pytest.raises(InvalidParameter, match="too many fences"):
        fences.create(acct, fence, max_fences=3)
    assert fences.list(acct)[1] == 3


def test_not_json_body_400(client, key):
    resp = client.post("/v1/geofences", data="{not json", headers={**h(key), "Content-Type": "application/json"})
    error(resp)


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("lng=7.42", "lat"),
        ("lat=43.7", "lng"),
        ("lat=91&lng=7.42", "lat"),
        ("lat=43.7&lng=abc", "lng"),
        ("lat=43.7&lng=7.42&fences=gf_doesnotexist0000", "fences"),
        ("lat=43.7&lng=7.42&device=" + "d" * 129, "device"),
        ("lat=43.7&lng=7.42&radius=3", "radius"),
    ],
)
def test_check_400(client, key, query, parameter):
    assert error(client.get(f"/v1/geofencing?{query}", headers=h(key)))["parameter"] == parameter


def test_batch_check_and_validation(client, store):
    k = new_key(store, "batch")
    yard = create(client, k, YARD)["id"]
    circle = create(client, k, {"type": "circle", "center": center(10, 10), "radius": 30})["id"]
    pts = [offset(MONACO, 10, 10), offset(MONACO, 50, 40), offset(MONACO, 500, 500), offset(MONACO, 90, 70)]
    body = {
        "points": [{"lat": a, "lng": b, "device": d} for (a, b), d in zip(pts, ["v1", "v2", None, "v1"], strict=True)]
    }
    resp = client.post("/v1/geofencing/batch", json=body, headers=h(k))
    assert resp.status_code == 200, resp.get_data(as_text=True)
    res = resp.get_json()["results"]
    assert [sorted(r["inside"]) for r in res] == [sorted([yard, circle]), [], [], [yard]]
    assert {(t["id"], t["transition"]) for t in res[0]["transitions"]} == {(yard, "enter"), (circle, "enter")}
    assert res[1]["transitions"] == [] and res[2]["transitions"] is None
    assert res[3]["transitions"] == [{"id": circle, "transition": "exit"}]  # v1 moved out of the circle
    # single checks continue the same device state
    assert check(client, k, *pts[3], device="v1")[yard]["transition"] == "inside"
    too_many = {"points": [{"lat": 1, "lng": 1}] * 1001}
    assert error(client.post("/v1/geofencing/batch", json=too_many, headers=h(k)))["parameter"] == "points"
    bad = {"points": [{"lat": 1, "lng": 1}, {"lat": 100, "lng": 1}]}
    err = error(client.post("/v1/geofencing/batch", json=bad, headers=h(k)))
    assert err["parameter"].startswith("points") and err["parameter"].endswith("lat") and "1" in err["message"]
    other = {"points": [{"lat": 1, "lng": 1}], "fences": ["gf_nope"]}
    assert error(client.post("/v1/geofencing/batch", json=other, headers=h(k)))["parameter"] == "fences"


# ----------------------------------------------------------------------------- management, isolation


def test_list_paginated_get_delete(client, store):
    k = new_key(store, "crud")
    ids = [
        create(client, k, {"type": "circle", "center": {"lat": 43.73, "lng": 7.42}, "radius": 10 + i, "name": f"c{i}"})[
            "id"
        ]
        for i in range(3)
    ]
    page1 = client.get("/v1/geofences?limit=2", headers=h(k)).get_json()
    page2 = client.get("/v1/geofences?limit=2&offset=2", headers=h(k)).get_json()
    assert page1["total"] == page2["total"] == 3 and page1["limit"] == 2 and page2["offset"] == 2
    assert [f["id"] for f in page1["fences"] + page2["fences"]] == ids
    got = client.get(f"/v1/geofences/{ids[1]}", headers=h(k))
    assert got.status_code == 200 and got.get_json()["radius"] == 11
    assert got.headers["Cache-Control"] == "private, no-store"
    assert client.delete(f"/v1/geofences/{ids[1]}", headers=h(k)).get_json() == {"id": ids[1], "deleted": True}
    error(client.get(f"/v1/geofences/{ids[1]}", headers=h(k)), 404)
    error(client.delete(f"/v1/geofences/{ids[1]}", headers=h(k)), 404)
    assert set(check(client, k, 43.73, 7.42)) == {ids[0], ids[2]}
    assert error(client.get("/v1/geofences?limit=0", headers=h(k)))["parameter"] == "limit"
    assert error(client.get("/v1/geofences?limt=2", headers=h(k)))["parameter"] == "limt"


def test_account_isolation(client, store):
    owner, stranger = new_key(store, "owner"), new_key(store, "stranger")
    same_account = store.create_key(owner.record.account_name, "pro")  # another key of the owner's account
    fid = create(client, owner, YARD)["id"]
    lat, lng = offset(MONACO, 10, 40)
    assert fid in check(client, same_account, lat, lng)
    error(client.get(f"/v1/geofences/{fid}", headers=h(stranger)), 404)
    error(client.delete(f"/v1/geofences/{fid}", headers=h(stranger)), 404)
    error(client.get(f"/v1/geofences/{fid}/events", headers=h(stranger)), 404)
    assert (
        error(client.get(f"/v1/geofencing?lat={lat}&lng={lng}&fences={fid}", headers=h(stranger)))["parameter"]
        == "fences"
    )
    assert check(client, stranger, lat, lng) == {}
    assert client.get("/v1/geofences", headers=h(stranger)).get_json()["total"] == 0
    resp = client.post(
        "/v1/geofencing/batch", json={"points": [{"lat": lat, "lng": lng}], "fences": [fid]}, headers=h(stranger)
    )
    assert error(resp)["parameter"] == "fences"
    assert client.get(f"/v1/geofences/{fid}", headers=h(owner)).status_code == 200


def test_auth_required(client):
    assert client.get("/v1/geofences").status_code == 401
    assert client.post("/v1/geofences", json=YARD).status_code == 401
    assert client.get("/v1/geofencing?lat=1&lng=1").status_code == 401


# ----------------------------------------------------------------------------- core face


def core(client, key, **params):
    q = "&".join(f"{k}={quote(str(v))}" for k, v in params.items())
    return client.get(f"/services/json?{q}", headers={"Authorization": f"Bearer {key.key}"})


def test_core_face_create_check_list_get_delete(client, store):
    k = new_key(store, "core")
    resp = core(
        client,
        k,
        cmd="geofence_create",
        fence=json.dumps({"type": "circle", "radius": 100, "name": "Core", "center": {"lat": 43.73, "lng": 7.42}}),
    )
    assert resp.status_code == 200, resp.get_data(as_text=True)
    env = resp.get_json()["meridiantest"]
    assert env["cmd"] == "geofence_create" and env["version"] == "1"
    fence = env["response"]
    assert fence["center"] == {"x": "7.42", "y": "43.73"} and fence["radius"] == 100
    fid = fence["id"]
    resp = core(client, k, cmd="geofencing", lat=43.7301, lng=7.42, device="core-dev")
    assert resp.headers["Cache-Control"] == "private, no-store"
    fences = resp.get_json()["meridiantest"]["response"]["fences"]
    assert [(f["id"], f["inside"], f["transition"]) for f in fences] == [(fid, True, "enter")]
    assert fences[0]["distance"] == pytest.approx(100 - 11.1, abs=0.3)
    listing = core(client, k, cmd="geofence_list").get_json()["meridiantest"]["response"]
    assert listing["total"] == 1 and listing["fences"][0]["id"] == fid
    assert core(client, k, cmd="geofence_get", id=fid).get_json()["meridiantest"]["response"]["name"] == "Core"
    assert core(client, k, cmd="geofence_events", id=fid).get_json()["meridiantest"]["response"]["events"] == []
    assert core(client, k, cmd="geofence_delete", id=fid).get_json()["meridiantest"]["response"]["deleted"] is True
    gone = core(client, k, cmd="geofence_get", id=fid)
    assert gone.status_code == 404 and gone.get_json()["meridiantest"]["error"]["code"] == "NOT_FOUND"
    bad = core(
        client, k, cmd="geofence_create", fence='{"type": "circle", "radius": 0, "center": {"lat": 1, "lng": 1}}'
    )
    assert bad.status_code == 400 and bad.get_json()["meridiantest"]["error"]["parameter"] == "radius"
    bad = core(client, k, cmd="geofence_create", fence="not json")
    assert bad.status_code == 400 and bad.get_json()["meridiantest"]["error"]["parameter"] == "fence"


def test_openapi_documents_geofencing(client):
    spec = client.get("/api-json").get_json()
    for path, methods in {
        "/v1/geofencing": {"get"},
        "/v1/geofencing/batch": {"post"},
        "/v1/geofences": {"get", "post"},
        "/v1/geofences/{fence_id}": {"get", "delete"},
        "/v1/geofences/{fence_id}/events": {"get"},
    }.items():
        assert methods <= set(spec["paths"][path]), path
    text = json.dumps(spec["paths"]["/v1/geofences"]["post"])
    assert "X-Meridian-Signature" in text and "HMAC-SHA256" in text and "X-Meridian-Delivery" in text
