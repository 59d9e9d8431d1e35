"""The spec's error body everywhere, and 400s that name the parameter before the engine runs."""

from __future__ import annotations

import pytest

GATEWAY_FIELDS = {"statusCode", "message", "error", "timestamp", "path", "requestId"}


# Every answer here comes before a dataset is read: this module overrides the suite's app, settings
# and key with the ones over an empty DATA_DIR (tests/conftest.py), so it runs without the samples.
@pytest.fixture(scope="session")
def settings(bare_settings):
    return bare_settings


@pytest.fixture(scope="session")
def app(bare_app):
    return bare_app


@pytest.fixture(scope="session")
def api_key(bare_api_key):
    return bare_api_key


def gw(client, api_key, query):
    return client.get(f"/v1/geocoding?{query}", headers={"X-API-Key": api_key})


def assert_body(resp, status, parameter=None):
    assert resp.status_code == status, resp.get_data(as_text=True)
    body = resp.get_json()
    assert set(body) >= GATEWAY_FIELDS
    assert body["statusCode"] == status
    assert body["path"] == resp.request.path
    assert body["requestId"] == resp.headers["X-Request-Id"]
    if parameter:
        assert body.get("parameter") == parameter
        assert parameter in body["message"]
    return body


@pytest.mark.parametrize(
    "query,parameter,fragment",
    [
        ("", "query", "required"),
        ("query=", "query", "empty"),
        ("query=x&limit=0", "limit", "limit"),
        ("query=x&limit=abc", "limit", "integer"),
        ("query=x&limit=51", "limit", "limit"),
        ("query=x&near=91,0", "near", "latitude"),
        ("query=x&near=0,181", "near", "longitude"),
        ("query=x&near=43.7", "near", "<lat>,<lng>"),
        ("query=x&near=a,b", "near", "not a number"),
        ("query=x&bbox=1,2,3", "bbox", "minlng"),
        ("query=x&bbox=8,43,7,44", "bbox", "minlng < maxlng"),
        ("query=x&country=Monaco", "country", "alpha"),
        ("query=x&qeury=typo", "qeury", "unknown parameter"),
        ("query=x&street=Rue%20Grimaldi", "query", "either"),
    ],
)
def test_gateway_400_names_parameter(client, api_key, query, parameter, fragment):
    body = assert_body(gw(client, api_key, query), 400, parameter)
    assert fragment.lower() in body["message"].lower()


def test_core_400_envelope_names_parameter(client, api_key):
    resp = client.get("/services/json?cmd=geocoding&addr=x&near=95,1", headers={"Authorization": f"Bearer {api_key}"})
    assert resp.status_code == 400
    err = resp.get_json()["meridiantest"]["error"]
    assert err["parameter"] == "near" and err["code"] == "INVALID_PARAMETER"
    assert resp.get_json()["meridiantest"]["cmd"] == "geocoding"


def test_core_missing_addr_names_addr(client, api_key):
    resp = client.get("/services/json?cmd=geocoding", headers={"Authorization": f"Bearer {api_key}"})
    assert resp.status_code == 400
    assert resp.get_json()["meridiantest"]["error"]["parameter"] == "addr"


@pytest.mark.parametrize("query,fragment", [("", "cmd"), ("cmd=teleport", "unknown command")])
def test_core_bad_cmd(client, api_key, query, fragment):
    resp = client.get(f"/services/v2/json?{query}", headers={"Authorization": f"Bearer {api_key}"})
    assert resp.status_code == 400
    err = resp.get_json()["meridiantest"]["error"]
    assert err["parameter"] == "cmd" and fragment in err["message"]


def test_unknown_path_404_body(client):
    body = assert_body(client.get("/v1/nowhere"), 404)
    assert "/v1/nowhere" in body["message"]


def test_method_not_allowed_405_body(client, api_key):
    resp = client.post("/v1/geocoding?query=x", headers={"X-API-Key": api_key})
    assert_body(resp, 405)
    assert "GET" in resp.headers["Allow"]


def test_uri_too_long_414_body(client, api_key, settings):
    resp = gw(client, api_key, "query=" + "a" * (settings.limits.request_line_bytes + 10))
    assert_body(resp, 414)


def test_body_too_large_413_body(client, settings):
    resp = client.post(
        "/v1/geocoding",
        data=b"x" * (settings.limits.request_body_bytes + 1),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert resp.status_code in (405, 413)
    assert_body(resp, resp.status_code)


def test_core_unknown_path_uses_envelope(client):
    resp = client.get("/services/nothing")
    assert resp.status_code == 404
    assert resp.get_json()["meridiantest"]["error"]["status"] == 404


def test_request_id_honoured_and_echoed(client, api_key):
    resp = client.get("/v1/geocoding", headers={"X-API-Key": api_key, "X-Request-Id": "abc-123"})
    assert resp.headers["X-Request-Id"] == "abc-123"
    assert resp.get_json()["requestId"] == "abc-123"
    generated = client.get("/v1/health/live", headers={"X-Request-Id": "bad id with spaces"})
    assert generated.headers["X-Request-Id"] != "bad id with spaces" and len(generated.headers["X-Request-Id"]) == 32


@pytest.mark.parametrize("overrides", [{}, {"debug": True, "environment": "production"}], ids=["default", "debug-prod"])
def test_500_hides_exception_text(app, settings, overrides):
    """Never a stack trace in an answer in production, even with DEBUG=true."""
    from app import create_app

    flaky = create_app(settings.with_overrides(**overrides))

    @flaky.get("/v1/_boom")
    def boom():
        raise RuntimeError("secret internal detail")

    resp = flaky.test_client().get("/v1/_boom")
    assert resp.status_code == 500
    body = resp.get_json()
    assert body["statusCode"] == 500 and "secret" not in resp.get_data(as_text=True)
    assert "trace" not in body
