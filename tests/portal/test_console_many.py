"""The console's matrix and optimisation (issue 30, item 3): the forms turned into the API's JSON
bodies, the answers into a table and coloured routes with numbered points, and the calls through
the app with the user's key (counted like any other, errors shown with the API's message)."""

from __future__ import annotations

import html
import json
import re

import pytest

from app.portal.console import BY_SERVICE, Badge, frame
from app.portal.console_many import (
    DEPOT_COLOUR,
    EXAMPLE,
    UNASSIGNED_COLOUR,
    VEHICLE_COLOURS,
    FormError,
    clock,
    distance_text,
    duration_text,
    matrix_body,
    matrix_view,
    optimization_body,
    plan_view,
)
from engine.render.overlays import Marker
from engine.services.staticmap import StaticMapParams, viewport_for
from tests.portal.test_console import MAP_IMAGE, _console_user, _usage_today


# ---------------------------------------------------------------- forms -> bodies
def test_matrix_form_becomes_the_body_destinations_only_when_given():
    body = matrix_body({"sources": "43.73, 7.41\n\n43.74,7.42|43.75,7.43 ", "destinations": "", "profile": "foot"})
    assert body == {
        "sources": [{"lat": 43.73, "lng": 7.41}, {"lat": 43.74, "lng": 7.42}, {"lat": 43.75, "lng": 7.43}],
        "profile": "foot",
    }
    with_destinations = matrix_body({"sources": "1,2", "destinations": "3,4", "profile": ""})
    assert with_destinations["destinations"] == [{"lat": 3.0, "lng": 4.0}] and with_destinations["profile"] == "car"
    with pytest.raises(FormError, match=r"^destinations: line 2: 'x' is not a lat,lng point$"):
        matrix_body({"sources": "1,2", "destinations": "3,4\nx"})


def test_optimization_form_becomes_a_vroom_problem_on_the_chosen_profile():
    body = optimization_body(
        {
            "jobs": "43.73,7.41 08:00-09:30 10:00-10:15:30 amount=2 service=300\n\n43.74,7.42",
            "vehicles": "43.70,7.40 capacity=5 08:00-12:00\n43.70,7.40 43.71,7.41",
            "profile": "bicycle",
        }
    )
    assert body["jobs"] == [
        {
            "id": 1,
            "location": [7.41, 43.73],
            "time_windows": [[28800, 34200], [36000, 36930]],
            "delivery": [2],
            "service": 300,
        },
        {"id": 3, "location": [7.42, 43.74]},  # ids are line numbers
    ]
    assert body["vehicles"] == [
        {"id": 1, "start": [7.40, 43.70], "end": [7.40, 43.70], "profile": "bicycle", "capacity": [5],
         "time_window": [28800, 43200]},
        {"id": 2, "start": [7.40, 43.70], "end": [7.41, 43.71], "profile": "bicycle"},
    ]  # fmt: skip
    assert body["geometry"] == "geojson"
    with pytest.raises(FormError, match=r"^jobs: line 1: 'weight=2' is neither"):
        optimization_body({"jobs": "43.73,7.41 weight=2", "vehicles": "43.7,7.4"})
    with pytest.raises(FormError, match=r"^vehicles: line 1: a start"):
        optimization_body({"jobs": "43.73,7.41", "vehicles": "capacity=4"})
    assert len(optimization_body(EXAMPLE)["jobs"]) == 9
    # the forms' defaults are bodies too
    assert len(matrix_body(BY_SERVICE["matrix"].defaults)["sources"]) == 3
    assert [j["delivery"] for j in optimization_body(BY_SERVICE["optimization"].defaults)["jobs"]] == [[1]] * 3


# ---------------------------------------------------------------- answers -> views
def test_matrix_view_numbers_the_points_and_shows_missing_routes_as_a_dash():
    body = {"sources": [{"lat": 43.73, "lng": 7.41}, {"lat": 43.74, "lng": 7.42}]}
    answer = {"durations": [[0.0, 75.5], [None, 0.0]], "distances": [[0.0, 1234.5], [None, 0.0]]}
    view = matrix_view(body, answer)
    table = view.table
    assert [c["number"] for c in table["columns"]] == [1, 2] and table["shared"]
    cell = table["rows"][0]["cells"][1]
    assert (cell["duration"], cell["duration_text"], cell["distance_text"], cell["ids"]) == (
        75.5, "1:16", "1.23 km", "s0 d1"
    )  # fmt: skip
    missing = table["rows"][1]["cells"][0]
    assert (missing["duration"], missing["duration_text"], missing["distance_text"]) == (None, "—", "—")
    assert [(b.text, b.ids) for b in view.badges] == [("1", "s0 d0"), ("2", "s1 d1")]
    # destinations of their own are numbered after the sources
    apart = matrix_view({**body, "destinations": [{"lat": 43.75, "lng": 7.43}]}, {"durations": [[9.0], [8.0]]})
    assert [c["number"] for c in apart.table["columns"]] == [3]
    assert [(b.text, b.ids) for b in apart.badges][-1] == ("3", "d0")
    assert apart.table["rows"][0]["cells"][0]["distance_text"] == "—"  # not asked for


def test_texts():
    assert [duration_text(s) for s in (None, 0, 59.6, 3725)] == ["—", "0:00", "1:00", "1:02:05"]
    assert [distance_text(m) for m in (None, 999.4, 1500)] == ["—", "999 m", "1.50 km"]
    assert clock(8 * 3600 + 65) == "08:01:05"


def test_plan_view_colours_each_vehicle_and_numbers_its_stops():
    body = optimization_body(EXAMPLE)

    def step(kind, lng, lat, arrival, job=None):
        out = {"type": kind, "location": [lng, lat], "arrival": arrival, "service": 0, "waiting_time": 0, "load": [1]}
        return out if job is None else {**out, "id": job}

    answer = {
        "summary": {"duration": 600, "distance": 4000.0},
        "routes": [
            {
                "vehicle": 3,
                "duration": 600,
                "distance": 4000.0,
                "geometry": {
                    "type": "LineString",
                    "coordinates": [[7.4197, 43.7312], [7.42, 43.735], [7.4246, 43.7384]],
                },
                "steps": [
                    step("start", 7.4197, 43.7312, 28800),
                    step("job", 7.42, 43.735, 29100, 4),
                    step("job", 7.421, 43.736, 29400, 2),
                    step("end", 7.4246, 43.7384, 29700),
                ],
            }
        ],
        "unassigned": [{"id": 9, "type": "job", "location": [7.429, 43.741], "reason": "capacity: too much"}],
    }
    view = plan_view(body, answer)
    route = view.plan["routes"][0]
    assert route["colour"] == VEHICLE_COLOURS[2]  # the third vehicle's line, whichever routes are used
    assert [s["stop"] for s in route["steps"]] == ["", 1, 2, ""] and route["steps"][1]["arrival"] == "08:05:00"
    assert [p.color for p in view.paths] == [VEHICLE_COLOURS[2]] and len(view.paths[0].points) == 3
    assert [(b.text, b.colour) for b in view.badges] == [
        ("D", DEPOT_COLOUR), ("1", VEHICLE_COLOURS[2]), ("2", VEHICLE_COLOURS[2]), ("D", DEPOT_COLOUR),
        ("!", UNASSIGNED_COLOUR),
    ]  # fmt: skip
    assert view.plan["unused"] == [1, 2] and view.plan["unassigned"][0]["reason"] == "capacity: too much"
    assert view.map_params() is not None


def test_badges_sit_on_the_static_maps_own_projection():
    points = [(43.73, 7.41), (43.75, 7.43)]
    params = StaticMapParams(width=640, height=400, markers=tuple(Marker(*p) for p in points))
    placed = frame(params, [Badge(p, str(i), "#000000", f"s{i}", "") for i, p in enumerate(points)])
    vp = viewport_for(params)
    for item, point in zip(placed["badges"], points, strict=True):
        x, y = vp.to_pixel(*point)
        assert (item["x"], item["y"]) == (round(float(x), 1), round(float(y), 1))
        assert 0 <= item["x"] <= 640 and placed["head"] <= item["y"] <= 400
    assert placed["badges"][0]["x"] < placed["badges"][1]["x"] and placed["badges"][0]["y"] > placed["badges"][1]["y"]


# ---------------------------------------------------------------- through the app
def _ask(client, key: str, fn: str, **values: str):
    from tests.portal.test_pages import csrf

    page = client.get(f"/portal/console?fn={fn}")
    return client.post(f"/portal/console?fn={fn}", data={"csrf_token": csrf(page.data), "key": key, **values})


THREE = "43.7312,7.4197\n43.7384,7.4246\n43.7406,7.4270"


@pytest.mark.integration
def test_console_matrix_is_the_apis_answer_counted_on_the_key(portal_app, portal_worker):
    client, key = _console_user(portal_app, "standard")
    page = _ask(client, key, "matrix", sources=THREE, destinations="", profile="car")
    assert page.status_code == 200 and b'class="status s2">200<' in page.data and re.search(MAP_IMAGE, page.data)
    api = client.post(
        "/v1/matrix",
        json={"sources": [{"lat": float(a), "lng": float(b)} for a, b in (p.split(",") for p in THREE.split())]},
        headers={"X-API-Key": key},
    ).get_json()
    cells = re.findall(rb'data-points="s(\d) d(\d)" data-duration="([^"]+)" data-distance="([^"]+)"', page.data)
    assert len(cells) == 9
    for i, j, duration, distance in cells:
        assert (
            float(duration) == api["durations"][int(i)][int(j)] and float(distance) == api["distances"][int(i)][int(j)]
        )
    assert len(re.findall(rb'<g class="badge" data-ids="s\d d\d">', page.data)) == 3
    # one matrix of 9 cells (1 unit) from the console and one from this test, and the console's map
    assert _usage_today(portal_app, key) == {"matrix": 2, "staticmap": 1}


@pytest.mark.integration
def test_console_shows_the_apis_400_when_a_profile_is_refused(portal_app, portal_worker):
    client, key = _console_user(portal_app, "standard")
    page = _ask(client, key, "matrix", sources=THREE, destinations="", profile="hovercraft")
    api = client.post(
        "/v1/matrix",
        json={"sources": [{"lat": 43.73, "lng": 7.42}], "profile": "hovercraft"},
        headers={"X-API-Key": key},
    )
    assert api.status_code == 400
    message = api.get_json()["message"]
    assert "profile" in message
    assert page.status_code == 200 and b'class="status s4">400<' in page.data
    shown = re.search(rb'<p class="errors" role="alert" id="api-error">([^<]+)</p>', page.data)
    assert shown and html.unescape(shown.group(1).decode()) == message
    assert b'id="matrix-table"' not in page.data and not re.search(MAP_IMAGE, page.data)


@pytest.mark.integration
def test_console_form_errors_send_nothing(portal_app, portal_worker):
    client, key = _console_user(portal_app, "standard")
    page = _ask(client, key, "optimization", jobs="here", vehicles="43.73,7.42", profile="car")
    assert page.status_code == 400 and b"jobs: line 1: &#39;here&#39; is neither" in page.data
    assert _usage_today(portal_app, key) == {}


@pytest.mark.integration
def test_console_optimisation_example(portal_app, portal_worker):
    client, key = _console_user(portal_app, "standard")
    form = client.get("/portal/console?fn=optimization&example=monaco").data
    assert EXAMPLE["vehicles"].split("\n")[2].encode() in form
    page = _ask(client, key, "optimization", **EXAMPLE)
    assert page.status_code == 200 and b'class="status s2">200<' in page.data, page.data[-3000:]
    shown = re.findall(rb'<pre class="json mono">(.*?)</pre>', page.data, re.S)[-1]  # after the request body
    answer = json.loads(html.unescape(shown.decode()))
    assert len(re.findall(rb'<section class="route"', page.data)) == len(answer["routes"]) >= 2
    unassigned = re.findall(rb'<tr data-points="u\d" data-job="(\d+)"', page.data)
    assert [int(j) for j in unassigned] == [u["id"] for u in answer["unassigned"]] and b"capacity:" in page.data
