"""Dependencies down. The accounts database unreachable (a PostgreSQL URL on a port where nothing listens: a real
connection refusal): a web process still boots, a request whose key is not cached gets a clean
503 with Retry-After, and a key seen shortly before keeps being served from its cached record."""

from __future__ import annotations

import pytest

from accounts.access import AccessControl
from accounts.store import AccountStore
from tests.fixtures_live import free_port


@pytest.fixture()
def dead_db_url() -> str:
    return f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/meridian?connect_timeout=2"


def test_app_boots_and_answers_503_without_the_database(settings, dead_db_url):
    from app import create_app

    app = create_app(settings.with_overrides(database_url=dead_db_url))  # must not raise
    resp = app.test_client().get(
        "/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": "mrd_AAAAAAAAAA_" + "b" * 32}
    )
    body = resp.get_json()
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "5", body
    assert body["message"] == "the accounts database is unavailable; retry shortly"
    core = app.test_client().get(
        "/services/json?cmd=geocoding&addr=x", headers={"Authorization": "Bearer mrd_AAAAAAAAAA_" + "b" * 32}
    )
    assert core.status_code == 503 and core.get_json()[settings.service_name]["error"]["code"] == "SERVICE_UNAVAILABLE"


def test_known_key_served_from_cache_while_the_database_is_down(settings, store, dead_db_url):
    issued = store.create_key("outage", "pro")
    access = AccessControl(store, quota=None, cache_ttl_s=0.0)
    assert access.authenticate(issued.key).id == issued.record.id  # cached, already expired (TTL 0)
    access.store = AccountStore(dead_db_url)  # the database goes away
    assert access.authenticate(issued.key).id == issued.record.id  # stale record served
    other = store.create_key("outage-unknown", "pro")
    with pytest.raises(Exception) as err:
        access.authenticate(other.key)
    assert "OperationalError" in type(err.value).__name__


def test_redis_down_is_a_clean_503_for_device_checks(settings, store):
    """Found by bench.load: a geofencing check with a device during a Redis restart answered 500
    (the device state lives in Redis)."""
    from app import create_app

    dead = f"redis://127.0.0.1:{free_port()}/0"
    app = create_app(settings.with_overrides(redis_url=dead, quota_fail_open=True))
    key = store.create_key("redis-outage", "pro").key
    resp = app.test_client().get("/v1/geofencing?lat=43.7350&lng=7.4200&device=van-1", headers={"X-API-Key": key})
    body = resp.get_json()
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "2", body
    assert body["message"] == "a backing service is unavailable; retry shortly"
