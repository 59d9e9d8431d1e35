"""Every function on both faces: the same engine answer, typed on /v1 and in the core envelope
with string coordinates; 400s naming the parameter; 404s on the gateway for empty answers."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from app.core_format import from_core, to_core

# (gateway path, core query) pairs that must give the same answer.
CASES = {
    "geocoding": ("/v1/geocoding?query=Aleksanterinkatu%2052", "cmd=geocoding&addr=Aleksanterinkatu%2052"),
    "reverse": ("/v1/reverse-geocoding?lat=60.1675&lng=24.9427", "cmd=reverse_geocoding&lat=60.1675&lng=24.9427"),
    "suggest": ("/v1/suggest?q=Mannerh", "cmd=suggest&q=Mannerh"),
    "poi": (
        "/v1/poi?category=cafe&near=60.1675,24.9427&radius=500",
        "cmd=poi&category=cafe&near=60.1675,24.9427&radius=500",
    ),
    "categories": ("/v1/poi/categories", "cmd=poi_categories"),
    "nearest": (
        "/v1/proximity/nearest?lat=43.7384&lng=7.4246&categories=fuel",
        "cmd=proximity&operation=nearest&lat=43.7384&lng=7.4246&categories=fuel",
    ),
    "proximity (the spec's path)": (
        "/v1/proximity?lat=43.7384&lng=7.4246&categories=fuel",
        "cmd=proximity&operation=nearest&lat=43.7384&lng=7.4246&categories=fuel",
    ),
    "routing": (
        "/v1/routing?origin=43.7312,7.4197&destination=43.7406,7.4270",
        "cmd=routing&origin=43.7312,7.4197&destination=43.7406,7.4270",
    ),
    "snaptoroad": (
        "/v1/snaptoroad?points=43.7384,7.4246|43.7390,7.4252|43.7396,7.4260",
        "cmd=snaptoroad&points=43.7384,7.4246|43.7390,7.4252|43.7396,7.4260",
    ),
}
HEAVY = {
    "isochrone": ("/v1/isochrone?lat=43.7384&lng=7.4246&time=5,10", "cmd=isochrone&lat=43.7384&lng=7.4246&time=5,10"),
    "geometry": ("/v1/geoment?lat=43.7384&lng=7.4246", "cmd=geometry&lat=43.7384&lng=7.4246"),
}


def both_faces(client, key, gateway_path, core_query):
    gw = client.get(gateway_path, headers={"X-API-Key": key})
    core = client.get(f"/services/json?{core_query}", headers={"Authorization": f"Bearer {key}"})
    assert gw.status_code == 200, gw.get_data(as_text=True)[:400]
    assert core.status_code == 200, core.get_data(as_text=True)[:400]
    envelope = core.get_json()["meridiantest"]
    assert envelope["cmd"] == core_query.split("&")[0].removeprefix("cmd=") and envelope["version"] == "1"
    return gw.get_json(), envelope["response"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_answer_on_both_faces(client, api_key, name):
    typed, core = both_faces(client, api_key, *CASES[name])
    assert core == to_core(typed)
    assert from_core(core) == typed


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(HEAVY))
def test_heavy_functions_through_worker(client, api_key, celery_worker, name):
    typed, core = both_faces(client, api_key, *HEAVY[name])
    assert core == to_core(typed)
    assert typed["type"] == "FeatureCollection" and typed["features"]


def test_core_coordinates_are_strings(client, api_key):
    _, core = both_faces(client, api_key, *CASES["geocoding"])
    cand = core["candidates"][0]
    assert set(cand["address"]) >= {"country", "city", "street", "number"}
    assert isinstance(cand["coord"]["x"], str) and isinstance(cand["coord"]["y"], str)
    assert cand["address"]["country"] == "FIN" and float(cand["coord"]["y"]) > 60


@pytest.mark.parametrize(
    "path,parameter",
    [
        ("/v1/reverse-geocoding?lat=91&lng=0", "lat"),
        ("/v1/reverse-geocoding?lat=60", "lng"),
        ("/v1/suggest?q=", "q"),
        ("/v1/poi?radius=100", "q"),
        ("/v1/poi?q=cafe&radius=100", "radius"),
        ("/v1/proximity/nearest?lat=43.7&lng=7.4", "categories"),
        ("/v1/proximity?lat=43.7&lng=7.4", "categories"),
        ("/v1/proximity/nearest?lat=43.7&lng=7.4&categories=teleport", "categories"),
        ("/v1/routing?origin=43.7312,7.4197", "destination"),
        ("/v1/routing?origin=43.7312,7.4197&destination=43.74,7.42&avoid=bridges", "avoid"),
        ("/v1/routing?origin=43.7312,7.4197&destination=43.74,7.42&alternatives=9", "alternatives"),
        ("/v1/routing?origin=43.7312,7.4197&destination=43.74,7.42&geometry=svg", "geometry"),
        ("/v1/routing?origin=0.5,0.5&destination=43.74,7.42", "origin"),
        ("/v1/snaptoroad?points=" + "|".join(["43.7384,7.4246"] * 1001), "points"),
        ("/v1/snaptoroad?points=43.7384,7.4246|43.7390,7.4252&timestamps=1,2,3", "timestamps"),
        ("/v1/isochrone?lat=43.7&lng=7.4", "time"),
        ("/v1/isochrone?lat=43.7&lng=7.4&time=5&distance=100", "time"),
        ("/v1/isochrone?lat=43.7&lng=7.4&time=500", "time"),
        ("/v1/staticmaps?center=43.7,7.4&zoom=15&size=2000x100", "size"),
        ("/v1/staticmaps?center=43.7,7.4", "zoom"),
        ("/v1/staticmaps?center=43.7,7.4&zoom=15&markers=color:red|label:AB|43.7,7.4", "markers"),
        ("/v1/geoment?name=Monaco&osm_id=5", "name"),
        ("/v1/geoment?lat=43.7", "lng"),
    ],
)
def test_400_names_parameter(client, api_key, path, parameter):
    resp = client.get(path, headers={"X-API-Key": api_key})
    assert resp.status_code == 400, resp.get_data(as_text=True)[:300]
    body = resp.get_json()
    assert body["parameter"] == parameter and parameter in body["message"]


@pytest.mark.parametrize(
    "path,message",
    [
        ("/v1/poi?q=x&category=teleport", "category: unknown category 'teleport'; see /v1/poi/categories"),
        (
            "/v1/proximity/nearest?lat=43.7&lng=7.4&categories=fuel,teleport",
            "categories: unknown category 'teleport'; see /v1/poi/categories",
        ),
        ("/v1/poi?q=x&category=amenity=", "category: malformed OSM tag 'amenity=' (use key=value)"),
    ],
)
def test_category_errors_name_the_value_and_the_parameter_once(client, api_key, path, message):
    resp = client.get(path, headers={"X-API-Key": api_key})
    assert resp.status_code == 400 and resp.get_json()["message"] == message


@pytest.mark.parametrize(
    "path",
    [
        "/v1/reverse-geocoding?lat=43.60&lng=7.60",  # at sea, outside every dataset
        "/v1/proximity/nearest?lat=60.17&lng=24.94&categories=fuel&radius=50",
        "/v1/poi?q=Xqzvbnmwq",
    ],
)
def test_gateway_404_core_empty(client, api_key, path):
    resp = client.get(path, headers={"X-API-Key": api_key})
    assert resp.status_code == 404, resp.get_data(as_text=True)[:300]
    assert resp.get_json()["statusCode"] == 404


def test_core_empty_not_404(client, api_key):
    resp = client.get(
        "/services/json?cmd=reverse_geocoding&lat=43.60&lng=7.60", headers={"Authorization": f"Bearer {api_key}"}
    )
    assert resp.status_code == 200
    assert resp.get_json()["meridiantest"]["response"]["candidates"] == []


def test_etag_and_304(client, api_key):
    path = "/v1/reverse-geocoding?lat=60.1675&lng=24.9427"
    first = client.get(path, headers={"X-API-Key": api_key})
    etag = first.headers["ETag"]
    assert first.headers["Cache-Control"].startswith("private, max-age=")
    again = client.get(path, headers={"X-API-Key": api_key, "If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    other = client.get(path + "&radius=50", headers={"X-API-Key": api_key})
    assert other.headers["ETag"] != etag
    reordered = client.get("/v1/reverse-geocoding?lng=24.9427&lat=60.1675", headers={"X-API-Key": api_key})
    assert reordered.headers["ETag"] == etag
    core = client.get(
        "/services/json?cmd=reverse_geocoding&lat=60.1675&lng=24.9427",
        headers={"Authorization": f"Bearer {api_key}", "If-None-Match": etag},
    )
    assert core.status_code == 304  # both faces: the same parameters, the same data


def test_repeated_markers_parameters(app):
    """A repeated list parameter keeps every value (webargs' rule), on the core face's parser."""
    from app.functions.staticmap import StaticMapArgs
    from app.validation import CORE_PARSER

    query = urlencode(
        [
            ("cmd", "staticmap"),
            ("center", "43.7384,7.4246"),
            ("zoom", "15"),
            ("markers", "color:red|label:A|43.7384,7.4246"),
            ("markers", "color:blue|43.7390,7.4250|43.7395,7.4255"),
        ]
    )
    with app.test_request_context(f"/services/json?{query}"):
        params = CORE_PARSER.parse(StaticMapArgs(), location="query")
    assert [m.color for m in params.markers] == ["red", "blue", "blue"]
