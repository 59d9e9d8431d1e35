"""401/403/429 decided identically on the core (Bearer) and the gateway (X-API-Key), real Redis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend_settings(request, settings):
    """The whole access suite runs on SQLite and on PostgreSQL (selected by DATABASE_URL)."""
    if request.param == "sqlite":
        return settings
    return settings.with_overrides(database_url=request.getfixturevalue("postgres_url"))


@pytest.fixture(scope="module")
def store(backend_settings):
    from accounts.store import AccountStore

    s = AccountStore(backend_settings.database_url)
    s.create_schema()
    return s


@pytest.fixture(scope="module")
def app(backend_settings, store):
    from app import create_app

    return create_app(backend_settings)


@pytest.fixture(scope="module")
def api_key(store):
    return store.create_key("tests", "pro").key


CORE = "/services/json?cmd=geocoding&addr=Aleksanterinkatu%2052"
GATEWAY = "/v1/geocoding?query=Aleksanterinkatu%2052"


def core_get(client, key=None, header=None):
    headers = {"Authorization": header} if header is not None else ({"Authorization": f"Bearer {key}"} if key else {})
    return client.get(CORE, headers=headers)


def gateway_get(client, key=None):
    return client.get(GATEWAY, headers={"X-API-Key": key} if key is not None else {})


def assert_core_error(resp, status):
    assert resp.status_code == status, resp.get_data(as_text=True)
    body = resp.get_json()["meridiantest"]
    assert body["version"] == "1"
    assert body["error"]["status"] == status
    assert body["error"]["message"]
    return body["error"]


def assert_gateway_error(resp, status):
    assert resp.status_code == status, resp.get_data(as_text=True)
    body = resp.get_json()
    assert set(body) >= {"statusCode", "message", "error", "timestamp", "path", "requestId"}
    assert body["statusCode"] == status
    assert body["requestId"] == resp.headers["X-Request-Id"]
    assert body["timestamp"].endswith("Z")
    return body


@pytest.mark.parametrize(
    "header",
    [None, "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "Token abc", "bearer mrd_short_x"],
    ids=["missing", "basic", "bearer-no-token", "bearer-blank", "other-scheme", "malformed-key"],
)
def test_core_401_bad_header(client, header):
    resp = client.get(CORE, headers={"Authorization": header} if header is not None else {})
    err = assert_core_error(resp, 401)
    assert err["code"] == "UNAUTHORIZED"


def test_core_rejects_gateway_header(client, api_key):
    assert_core_error(client.get(CORE, headers={"X-API-Key": api_key}), 401)


def test_gateway_rejects_bearer(client, api_key):
    assert_gateway_error(client.get(GATEWAY, headers={"Authorization": f"Bearer {api_key}"}), 401)


@pytest.mark.parametrize("key", ["", "nonsense", "mrd_AAAAAAAAAA_" + "b" * 32], ids=["empty", "malformed", "unknown"])
def test_gateway_401_bad_key(client, key):
    body = assert_gateway_error(gateway_get(client, key), 401)
    assert "key" in body["message"].lower()


def test_unknown_key_401_on_core(client):
    assert_core_error(core_get(client, "mrd_AAAAAAAAAA_" + "b" * 32), 401)


def test_wrong_secret_part_is_401(client, store):
    key = store.create_key("tests", "pro").key
    forged = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    assert_gateway_error(gateway_get(client, forged), 401)
    assert_core_error(core_get(client, forged), 401)


def test_expired_key_401_both_faces(client, store):
    key = store.create_key("tests", "pro", expires_at=datetime.now(UTC) - timedelta(minutes=1)).key
    assert "expired" in assert_gateway_error(gateway_get(client, key), 401)["message"]
    assert "expired" in assert_core_error(core_get(client, key), 401)["message"]


def test_revoked_key_401_both_faces(client, store):
    key = store.create_key("tests", "pro").key
    assert store.revoke(key)
    assert "revoked" in assert_gateway_error(gateway_get(client, key), 401)["message"]
    assert "revoked" in assert_core_error(core_get(client, key), 401)["message"]


def test_revocation_takes_effect_within_cache_ttl(client, store, settings):
    import time

    key = store.create_key("tests", "pro").key
    assert gateway_get(client, key).status_code == 200
    store.revoke(key)
    time.sleep(settings.auth_cache_ttl_s + 0.2)
    assert_gateway_error(gateway_get(client, key), 401)


def test_scope_outside_key_403_both_faces(client, store):
    key = store.create_key("tests", "pro", scopes=["routing"]).key
    assert "geocoding" in assert_gateway_error(gateway_get(client, key), 403)["message"]
    assert assert_core_error(core_get(client, key), 403)["code"] == "FORBIDDEN"


def test_service_outside_plan_403_both_faces(client, store):
    store.set_plan("maps-only", per_minute=100, per_day=100, services=["staticmap"])
    key = store.create_key("tests", "maps-only").key
    assert_gateway_error(gateway_get(client, key), 403)
    assert_core_error(core_get(client, key), 403)


def test_quota_429_with_retry_after_both_faces(client, store):
    store.set_plan("tiny", per_minute=3, per_day=1000, services=["*"])
    key = store.create_key("tests", "tiny").key
    # Both faces spend the same quota.
    assert gateway_get(client, key).status_code == 200
    assert core_get(client, key).status_code == 200
    ok = gateway_get(client, key)
    assert ok.status_code == 200
    assert ok.headers["RateLimit-Remaining"] == "0"
    denied = gateway_get(client, key)
    body = assert_gateway_error(denied, 429)
    assert "quota" in body["message"]
    assert 1 <= int(denied.headers["Retry-After"]) <= 60
    assert denied.headers["X-RateLimit-Remaining"] == "0"
    err = assert_core_error(core_get(client, key), 429)
    assert err["code"] == "QUOTA_EXCEEDED"


def test_daily_quota_429(client, store):
    store.set_plan("daily2", per_minute=0, per_day=2, services=["*"])
    key = store.create_key("tests", "daily2").key
    assert [gateway_get(client, key).status_code for _ in range(3)] == [200, 200, 429]
    assert int(gateway_get(client, key).headers["Retry-After"]) > 0


def test_rate_limit_headers_on_every_v1_response(client, store):
    store.set_plan("headers", per_minute=10, per_day=100, services=["*"])
    key = store.create_key("tests", "headers").key
    first = gateway_get(client, key)
    second = client.get("/v1/geocoding?query=Xqzvbnmwq%20Pzxqjkv", headers={"X-API-Key": key})
    for resp in (first, second):
        for name in (
            "RateLimit-Limit",
            "RateLimit-Remaining",
            "RateLimit-Reset",
            "X-RateLimit-Limit",
            "X-RateLimit-Remaining",
            "X-RateLimit-Reset",
        ):
            assert name in resp.headers, (name, resp.status_code)
    assert first.headers["RateLimit-Limit"] == "10"
    assert int(second.headers["RateLimit-Remaining"]) == int(first.headers["RateLimit-Remaining"]) - 1


def test_usage_counted_per_service(client, store, app):
    from accounts.quota import QuotaCounter

    issued = store.create_key("tests", "pro")
    for _ in range(2):
        gateway_get(client, issued.key)
    core_get(client, issued.key)
    app.extensions["meridian"].access.quota.settle_all()  # requests served from a reservation
    counter = QuotaCounter(app.extensions["meridian"].redis, "meridiantest")
    today = next(iter(counter.usage(issued.record.prefix, days=1).values()))
    assert today == {"geocoding": 3}


def test_no_key_needed_for_health_and_docs(client):
    for path in ("/health", "/v1/health", "/v1/health/live", "/api", "/api-json"):
        assert client.get(path).status_code == 200, path
