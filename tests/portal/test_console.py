"""The console's map of an answer: the request's points, the answer's points, lines and polygon
rings; only the function's own parameters are sent."""

from __future__ import annotations

import re

import pytest

from app.portal.console import BY_SERVICE, FUNCTIONS, map_params, overlays, query_string, request_points

ROUTE = {
    "routes": [
        {
            "geometry": {"type": "LineString", "coordinates": [[7.41, 43.73], [7.42, 43.74], [7.43, 43.75]]},
            "legs": [{"steps": [{"location": {"lat": 43.73, "lng": 7.41}}, {"location": {"lat": 43.74, "lng": 7.42}}]}],
        }
    ]
}
ISOCHRONE = {
    "type": "FeatureCollection",
    "features": [
        {
            "type": "Feature",
            "geometry": {
                "type": "MultiPolygon",
                "coordinates": [
                    [[[7.0, 43.0], [7.1, 43.0], [7.1, 43.1], [7.0, 43.0]]],
                    [[[7.2, 43.2], [7.3, 43.2], [7.2, 43.3], [7.2, 43.2]]],
                ],
            },
            "properties": {"time": 5},
        }
    ],
}


def test_thirteen_functions_with_their_paths():
    assert len(FUNCTIONS) == 13 and len({f.path for f in FUNCTIONS}) == 13


def test_route_map_has_the_line_and_the_request_points_only():
    given = request_points(
        BY_SERVICE["routing"], {"origin": "43.73,7.41", "destination": "43.75,7.43", "waypoints": ""}
    )
    assert given == [(43.73, 7.41), (43.75, 7.43)]
    params = map_params(ROUTE, given, answer_points=False)
    assert [(m.lat, m.lng, m.color, m.label) for m in params.markers] == [
        (43.73, 7.41, "red", "A"),
        (43.75, 7.43, "red", "B"),
    ]
    assert [p.points for p in params.paths] == [((43.73, 7.41), (43.74, 7.42), (43.75, 7.43))]


def test_isochrone_rings_become_paths_and_answer_points_markers():
    points, lines = overlays(ISOCHRONE)
    assert points == [] and len(lines) == 2 and lines[0][0] == (43.0, 7.0)
    params = map_params({"results": [{"lat": 43.5, "lng": 7.5}, {"lat": 91, "lng": 0}]}, [])
    assert [(m.lat, m.color) for m in params.markers] == [(43.5, "blue")]  # out-of-range point ignored
    assert map_params({"results": []}, []) is None


def test_query_string_keeps_only_the_functions_filled_parameters():
    allowed = [{"name": "query"}, {"name": "limit"}]
    assert query_string(allowed, {"query": " Helsinki ", "limit": "", "evil": "1"}) == "query=Helsinki"
    assert request_points(BY_SERVICE["isochrone"], {"lat": "x", "lng": "7"}) == []


def test_encoded_route_geometry_is_drawn():
    from engine import polyline

    encoded = polyline.encode([(43.73, 7.41), (43.74, 7.42)], 5)
    _, lines = overlays({"routes": [{"geometry": encoded}]})
    assert lines == [[(43.73, 7.41), (43.74, 7.42)]]


# ---------------------------------------------------------------- through the app (issue 26, finding 1)
def _console_user(portal_app, plan: str | None = None):
    """A signed-in client of a new account (on ``plan``, default the portal's) with one key."""
    from accounts.users import UserDirectory
    from app.portal.services import portal
    from tests.portal.test_pages import create_key, login, make_user

    client = portal_app.test_client()
    email, account_id = make_user(portal_app)
    if plan is not None:
        with portal_app.app_context():
            users: UserDirectory = portal().users
            users.set_plan(account_id, plan)
    login(client, email)
    key, _, _ = create_key(client)
    return client, key


def _ask(client, key: str, fn: str = "geocoding", **values: str):
    from tests.portal.test_pages import csrf

    page = client.get(f"/portal/console?fn={fn}")
    fields = values or {"query": "Mannerheimintie 5, Helsinki"}
    return client.post(f"/portal/console?fn={fn}", data={"csrf_token": csrf(page.data), "key": key, **fields})


def _usage_today(portal_app, key: str) -> dict[str, int]:
    """The key's usage today per service."""
    from datetime import UTC, datetime

    from accounts.quota import QuotaCounter

    rt = portal_app.extensions["meridian"]
    rt.access.quota.settle_all()  # usage spent from a reservation reaches Redis when settled
    counter = QuotaCounter(rt.redis, rt.settings.service_name)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    return counter.usage(rt.store.find(key).prefix, 1).get(today, {})


MAP_IMAGE = rb'<img src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}" alt="map of the answer"'


@pytest.mark.integration
def test_free_plan_console_shows_the_answer_without_a_map(portal_app, portal_worker):
    """The attack: the console drew static maps, uncounted, for a plan without static maps."""
    client, key = _console_user(portal_app)  # the portal's default plan: free, no static maps
    resp = _ask(client, key)
    assert resp.status_code == 200 and b'class="status s2">200<' in resp.data and b"Mannerheimintie" in resp.data
    assert not re.search(MAP_IMAGE, resp.data)
    assert b"static maps are not in your plan" in resp.data
    assert _usage_today(portal_app, key) == {"geocoding": 1}  # the call counted, no map drawn


@pytest.mark.integration
def test_console_call_and_its_map_count_against_the_plan(portal_app, portal_worker):
    client, key = _console_user(portal_app, "standard")
    resp = _ask(client, key)
    assert resp.status_code == 200 and re.search(MAP_IMAGE, resp.data)
    assert _usage_today(portal_app, key) == {"geocoding": 1, "staticmap": 1}
    dashboard = client.get("/portal/dashboard").data
    assert re.search(rb'<td class="counters">2</td>', dashboard)  # the account's minute window


@pytest.mark.integration
def test_console_respects_the_quota(portal_app, portal_worker):
    from app.portal.services import portal

    plan = "console-3"
    with portal_app.app_context():
        portal().store.set_plan(plan, per_minute=3, per_day=0, per_month=0, services=["*"])
    client, key = _console_user(portal_app, plan)
    assert re.search(MAP_IMAGE, _ask(client, key).data)  # units 1 and 2: the answer and its map
    second = _ask(client, key)  # unit 3: the answer; its map is over the quota
    assert b'class="status s2">200<' in second.data and not re.search(MAP_IMAGE, second.data)
    assert b"no map: your plan&#39;s quota is used up" in second.data
    third = _ask(client, key)
    assert b'class="status s4">429<' in third.data


def test_a_parameter_with_a_fixed_choice_is_offered_as_a_selector():
    from app.portal.console import parameters

    spec = {
        "paths": {
            "/v1/routing": {
                "get": {
                    "parameters": [
                        {"in": "query", "name": "profile", "schema": {"type": "string", "enum": ["car", "foot"]}},
                        {"in": "query", "name": "origin", "schema": {"type": "string"}},
                    ]
                }
            }
        }
    }
    found = {p["name"]: p for p in parameters(spec, BY_SERVICE["routing"])}
    assert found["profile"]["choices"] == ["car", "foot"] and found["origin"]["choices"] == []


@pytest.mark.integration
def test_console_offers_the_travel_profile_and_walks(portal_app, portal_worker):
    client, key = _console_user(portal_app, "standard")
    page = client.get("/portal/console?fn=routing")
    assert b'<select id="p-profile" name="profile">' in page.data and b'<option value="walking">' in page.data
    points = {"origin": "43.7312,7.4197", "destination": "43.7406,7.4270", "geometry": "geojson"}
    walk = _ask(client, key, "routing", profile="foot", **points)
    assert walk.status_code == 200 and b'class="status s2">200<' in walk.data
    assert b'<option value="foot" selected>' in walk.data and re.search(MAP_IMAGE, walk.data)
    _keep_map(walk.data, "console-walking-route.png")


def _keep_map(page: bytes, name: str) -> None:
    """The console's map image, kept under tests/artifacts/ for the reader (issue 29 asks to see it)."""
    import base64

    from config.settings import PROJECT_ROOT

    found = re.search(rb'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert found
    artifacts = PROJECT_ROOT / "tests" / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / name).write_bytes(base64.b64decode(found.group(1)))
