"""Issue 26, findings 1 and 11, through the real app and a real Redis: a plan's quota is the
account's (its keys share one bucket), an account has at most the plan's ``max_keys`` live keys,
and while Redis is unreachable the self-service plans refuse (503) instead of serving unlimited."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from accounts.store import AccountError, AccountStore
from tests.fixtures_live import free_port, open_store

pytestmark = pytest.mark.integration

GATEWAY = "/v1/geocoding?query=Aleksanterinkatu%2052"
CORE = "/services/json?cmd=geocoding&addr=Aleksanterinkatu%2052"


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _get(client, key: str, i: int = 0):
    """One geocoding request, on the gateway or (odd ``i``) on the core face."""
    if i % 2:
        return client.get(CORE, headers={"Authorization": f"Bearer {key}"})
    return client.get(GATEWAY, headers={"X-API-Key": key})


# ---------------------------------------------------------------- finding 1: one bucket per account
def test_keys_of_one_account_share_the_minute_quota(client, store):
    """The attack: a free account made 10 keys and got 10 x its per-minute quota."""
    plan = _name("acct-minute")
    store.set_plan(plan, per_minute=6, per_day=0, per_month=0, services=["*"])
    account = _name("many-keys")
    keys = [store.create_key(account, plan).key for _ in range(4)]
    statuses = Counter(_get(client, keys[i % 4], i).status_code for i in range(24))  # 6 per key
    assert statuses == {200: 6, 429: 18}, statuses
    # another account of the same plan has its own bucket, and so has a key an operator gave
    # this account on another plan
    assert _get(client, store.create_key(_name("other"), plan).key).status_code == 200
    assert _get(client, store.create_key(account, "pro").key).status_code == 200


def test_day_window_is_the_accounts_and_headers_show_its_bucket(client, store):
    plan = _name("acct-day")
    store.set_plan(plan, per_minute=0, per_day=5, per_month=0, services=["*"])
    account = _name("day-keys")
    first, second, third = (store.create_key(account, plan).key for _ in range(3))
    remaining = [int(_get(client, first, i).headers["RateLimit-Remaining"]) for i in range(2)]
    assert remaining == [4, 3]
    resp = _get(client, second)
    assert resp.status_code == 200 and resp.headers["RateLimit-Remaining"] == "2"  # the account's bucket
    assert resp.headers["RateLimit-Limit"] == "5"
    statuses = Counter(_get(client, key, i).status_code for i, key in enumerate([third, second, third, first]))
    assert statuses == {200: 2, 429: 2}, statuses
    refused = _get(client, third)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert refused.get_json()["statusCode"] == 429


def test_usage_stays_per_key(client, store, app):
    plan = _name("acct-usage")
    store.set_plan(plan, per_minute=100, per_day=0, per_month=0, services=["*"])
    account = _name("usage-keys")
    a, b = (store.create_key(account, plan) for _ in range(2))
    for _ in range(3):
        assert _get(client, a.key).status_code == 200
    assert _get(client, b.key).status_code == 200
    from accounts.quota import QuotaCounter, bucket_of

    counter = QuotaCounter(app.extensions["meridian"].redis, app.extensions["meridian"].settings.service_name)
    app.extensions["meridian"].access.quota.settle_all()
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert counter.usage(a.record.prefix, 1)[today] == {"geocoding": 3}
    assert counter.usage(b.record.prefix, 1)[today] == {"geocoding": 1}
    assert counter.current(bucket_of(a.record)).minute == 4


# ---------------------------------------------------------------- finding 1: key cap
def _capped_plan(store: AccountStore, max_keys: int = 3) -> str:
    plan = _name("capped")
    store.set_plan(plan, per_minute=0, per_day=0, per_month=0, services=["*"], max_keys=max_keys)
    return plan


def test_key_cap_refuses_one_more_live_key(store):
    plan, account = _capped_plan(store), _name("cap")
    keys = [store.create_key(account, plan) for _ in range(3)]
    with pytest.raises(AccountError, match=r"key limit reached: the capped-\w+ plan allows 3 live keys"):
        store.create_key(account, plan)
    # revoked and expired keys do not count
    store.revoke(keys[0].key)
    fourth = store.create_key(account, plan, expires_at=datetime.now(UTC) + timedelta(seconds=1))
    with pytest.raises(AccountError):
        store.create_key(account, plan)
    with store.session() as s, s.begin():  # let the fourth key expire without sleeping
        from sqlalchemy import update

        from accounts.models import ApiKey

        s.execute(
            update(ApiKey)
            .where(ApiKey.prefix == fourth.record.prefix)
            .values(expires_at=datetime.now(UTC) - timedelta(minutes=1))
        )
    store.create_key(account, plan)
    # another account has its own cap; 0 = no cap
    store.create_key(_name("cap-other"), plan)
    unlimited = _name("uncapped")
    store.set_plan(unlimited, services=["*"], max_keys=0)
    for _ in range(6):
        store.create_key(account + "-u", unlimited)


def test_rotation_at_the_cap_keeps_the_old_key_for_its_grace_period(store, client):
    plan, account = _capped_plan(store, max_keys=2), _name("rotate")
    a, b = (store.create_key(account, plan) for _ in range(2))
    a2 = store.rotate(a.key, timedelta(hours=1))  # at the cap: allowed, the old key keeps working
    b2 = store.rotate(b.key, timedelta(hours=1))
    assert _get(client, a.key).status_code == 200 and _get(client, a2.key).status_code == 200
    with pytest.raises(AccountError, match="key limit reached"):
        store.create_key(account, plan)  # the keys in their grace period count until it ends
    with pytest.raises(AccountError, match="rotation grace period"):
        store.rotate(a2.key, timedelta(hours=1))  # at most twice the cap while rotating
    store.rotate(b2.key, timedelta(0))  # without a grace period the old key ends at once


def test_cli_keys_create_beyond_the_cap_is_a_one_line_error(settings, store, monkeypatch):
    from cli.main import main

    plan, account = _capped_plan(store, max_keys=1), _name("cli-cap")
    store.create_key(account, plan)
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("DATA_DIR", str(settings.data_dir))
    result = CliRunner().invoke(main, ["keys", "create", "--account", account, "--plan", plan])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: key limit reached"), result.output
    shown = CliRunner().invoke(main, ["plans", "set", plan, "--max-keys", "2", "--quota-fail-closed"])
    assert shown.exit_code == 0 and "max_keys=2" in shown.output and "quota_fail_open=false" in shown.output


def test_concurrent_creations_respect_the_cap(backend_store):
    """Keys created at the same time by several threads: never more than the cap."""
    from concurrent.futures import ThreadPoolExecutor

    plan, account = _capped_plan(backend_store, max_keys=3), _name("race")
    backend_store.create_key(account, plan)  # the account exists

    def create(_):
        try:
            backend_store.create_key(account, plan)
            return "ok"
        except AccountError:
            return "refused"
        except Exception as exc:  # SQLite: a writer that lost the race may find the database locked
            return type(exc).__name__

    with ThreadPoolExecutor(8) as pool:
        outcomes = Counter(pool.map(create, range(12)))
    live = [k for k in backend_store.list_keys(account) if k.state() == "active"]
    assert len(live) == 3, outcomes
    assert outcomes["ok"] == 2, outcomes


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_store(request, settings, tmp_path):
    if request.param == "sqlite":
        return open_store(settings.with_overrides(database_url=f"sqlite:///{tmp_path / 'race.db'}"))
    return open_store(settings.with_overrides(database_url=request.getfixturevalue("postgres_url")))


# ---------------------------------------------------------------- finding 11: fail closed
@pytest.fixture()
def dead_redis_app(settings, tmp_path):
    """An app whose Redis does not answer (a closed port), over an accounts database of its own,
    with the deployment defaults (QUOTA_FAIL_OPEN=true) and PORTAL_DEFAULT_PLAN=trial."""
    from app import create_app
    from config.settings import Settings

    own = Settings.from_env(
        {
            "DATA_DIR": str(settings.data_dir),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'accounts.db'}",
            "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
            "SERVICE_NAME": settings.service_name,
            "NODE_ENV": "test",
            "QUOTA_FAIL_OPEN": "true",
            "PORTAL_DEFAULT_PLAN": "trial",
        }
    )
    store = open_store(own)
    store.set_plan("trial", per_minute=10, services=["*"])
    return create_app(own).test_client(), store


def test_redis_down_self_service_plans_fail_closed(dead_redis_app):
    """The attack: a 10/min key got 30 of 30 with Redis unreachable."""
    client, store = dead_redis_app
    for plan in ("free", "trial"):
        key = store.create_key(_name(plan), plan).key
        gateway = _get(client, key)
        assert gateway.status_code == 503, (plan, gateway.get_data(as_text=True))
        assert int(gateway.headers["Retry-After"]) > 0
        body = gateway.get_json()
        assert body["statusCode"] == 503 and body["error"] and body["path"] == "/v1/geocoding"
        core = _get(client, key, 1)
        assert core.status_code == 503 and core.headers["Retry-After"]
        assert core.get_json()["meridiantest"]["error"]["code"] == "SERVICE_UNAVAILABLE"


def test_redis_down_operator_plans_fail_open_by_choice(dead_redis_app):
    client, store = dead_redis_app
    assert _get(client, store.create_key(_name("pro"), "pro").key).status_code == 200  # QUOTA_FAIL_OPEN
    store.set_plan("free", quota_fail_open=True)  # the operator's choice for the free plan
    assert _get(client, store.create_key(_name("free"), "free").key).status_code == 200
    store.set_plan("pro", quota_fail_open=False)
    key = store.create_key(_name("pro"), "pro").key
    assert _get(client, key).status_code == 503


def test_fail_closed_plans_follow_portal_default_plan():
    from config.settings import Settings

    assert Settings.from_env({}).quota_fail_closed_plans == ("free",)
    assert Settings.from_env({"PORTAL_DEFAULT_PLAN": " trial "}).quota_fail_closed_plans == ("free", "trial")
