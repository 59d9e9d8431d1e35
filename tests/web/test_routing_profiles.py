"""``profile`` on routing, both faces: foot and bicycle routes on the samples, Mapbox's aliases,
an unknown profile a 400 naming ``profile`` and the values it accepts."""

from __future__ import annotations

import pytest

from app.core_format import to_core

ORIGIN, DESTINATION = "43.7312,7.4197", "43.7406,7.4270"  # Monaco: Fontvieille to the Casino


def gateway(client, key, **params):
    query = "&".join(f"{k}={v}" for k, v in {"origin": ORIGIN, "destination": DESTINATION, **params}.items())
    return client.get(f"/v1/routing?{query}", headers={"X-API-Key": key})


@pytest.mark.parametrize("profile", ["foot", "bicycle"])
def test_both_faces_answer_the_profiles_route(client, api_key, profile):
    gw = gateway(client, api_key, profile=profile)
    core = client.get(
        f"/services/json?cmd=routing&origin={ORIGIN}&destination={DESTINATION}&profile={profile}",
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert gw.status_code == 200 and core.status_code == 200, gw.get_data(as_text=True)[:300]
    typed = gw.get_json()
    assert core.get_json()["meridiantest"]["response"] == to_core(typed)
    route = typed["routes"][0]
    assert route["legs"][0]["steps"][0]["maneuver"]["type"] == "depart"
    car = gateway(client, api_key).get_json()["routes"][0]
    # a walk or a ride takes longer than the drive over about the same distance
    assert route["duration"] > car["duration"]
    speed_kmh = route["distance"] / route["duration"] * 3.6
    assert (3.0 < speed_kmh < 5.5) if profile == "foot" else (5.0 < speed_kmh < 16.0)


@pytest.mark.parametrize(("alias", "profile"), [("walking", "foot"), ("cycling", "bicycle"), ("driving", "car")])
def test_mapbox_aliases(client, api_key, alias, profile):
    assert gateway(client, api_key, profile=alias).get_json() == gateway(client, api_key, profile=profile).get_json()


def test_unknown_profile_is_a_400_naming_it_and_the_allowed_values(client, api_key):
    resp = gateway(client, api_key, profile="hovercraft")
    assert resp.status_code == 400
    body = resp.get_json()
    assert body["parameter"] == "profile"
    for name in ("car", "foot", "bicycle", "walking"):
        assert name in body["message"]
    core = client.get(
        f"/services/json?cmd=routing&origin={ORIGIN}&destination={DESTINATION}&profile=hovercraft",
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert core.status_code == 400 and "profile" in core.get_data(as_text=True)


def test_openapi_describes_profile(client):
    spec = client.get("/api-json").get_json()
    params = {p["name"]: p for p in spec["paths"]["/v1/routing"]["get"]["parameters"]}
    assert set(params["profile"]["schema"]["enum"]) >= {"car", "foot", "bicycle", "driving", "walking", "cycling"}


def test_isochrone_profile_is_checked_too(client, api_key):
    resp = client.get("/v1/isochrone?lat=43.7384&lng=7.4246&time=5&profile=hovercraft", headers={"X-API-Key": api_key})
    assert resp.status_code == 400 and resp.get_json()["parameter"] == "profile"
