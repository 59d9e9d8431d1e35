"""The upgrade path: a database made by the release before the portal (its DDL captured from that
release's ``AccountStore.create_schema()`` in tests/portal/fixtures/) is upgraded in place by
``create_schema()``; its keys still authenticate, its plans and accounts are kept, and the new
sign-in columns work. SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from accounts.access import AccessControl
from accounts.migrations import LATEST
from accounts.store import AccountStore
from accounts.users import UserDirectory
from tests.portal.databases import fresh_database

FIXTURES = Path(__file__).parent / "fixtures"
OLD_KEY = "mrd_AbCdEfGhIj_" + "k" * 32


class _NoQuota:
    def spend(self, *args, **kwargs):  # never reached: only authenticate() is called
        raise AssertionError("quota not expected")


def _make_previous_release_db(url: str, dialect: str) -> None:
    ddl = (FIXTURES / f"schema_v1.{dialect}.sql").read_text()
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in ddl.split(";"):
            body = "\n".join(line for line in statement.splitlines() if not line.startswith("--")).strip()
            if body:
                conn.execute(text(body))
        conn.execute(
            text(
                "INSERT INTO plans (name, description, per_minute, per_day, per_month, services, created_at) "
                "VALUES ('legacy', 'kept', 7, 70, 700, '[\"geocoding\"]', '2025-01-01 00:00:00')"
            )
        )
        conn.execute(text("INSERT INTO accounts (name, email, created_at) VALUES ('acme', NULL, '2025-01-01')"))
        conn.execute(
            text(
                "INSERT INTO api_keys (prefix, key_hash, secret_hash, label, account_id, plan_id, scopes, "
                "expires_at, revoked_at, created_at) VALUES ('AbCdEfGhIj', :h, :s, 'old', "
                "(SELECT id FROM accounts WHERE name = 'acme'), (SELECT id FROM plans WHERE name = 'legacy'), "
                "NULL, NULL, NULL, '2025-01-01')"
            ),
            {"h": hashlib.sha256(OLD_KEY.encode()).hexdigest(), "s": hashlib.sha256(b"secret").hexdigest()},
        )
    engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_previous_release_database_upgrades_in_place(dialect, tmp_path):
    with fresh_database(dialect, tmp_path) as url:
        _make_previous_release_db(url, dialect)
        store = AccountStore(url)
        store.create_schema()
        store.create_schema()  # a second start is a no-op

        columns = {c["name"] for c in inspect(store.engine).get_columns("accounts")}
        assert {"password_hash", "email_verified_at", "role", "disabled_at", "plan_id"} <= columns
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT version FROM meridian_schema")).scalar() == LATEST

        access = AccessControl(store, _NoQuota(), cache_ttl_s=0)
        record = access.authenticate(OLD_KEY)
        assert (record.account_name, record.plan.name, record.plan.per_minute) == ("acme", "legacy", 7)
        assert record.label == "old" and not record.account_disabled

        users = UserDirectory(store)
        old = users.find("acme")
        assert old is not None and old.role == "user" and old.plan == "legacy" and old.email is None
        new = users.sign_up("New.Person@Example.org", "correct horse 9")
        assert new is not None and new.email == "new.person@example.org" and not new.verified
        assert users.sign_up("new.person@example.org", "another pass 1") is None  # unique address
        store.engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_empty_database_is_created_at_latest_version(dialect, tmp_path):
    with fresh_database(dialect, tmp_path) as url:
        store = AccountStore(url)
        store.create_schema()
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT version FROM meridian_schema")).scalar() == LATEST
        issued = store.create_key("fresh", "free")
        assert store.find(issued.key).account_name == "fresh"
        store.engine.dispose()


def test_newer_database_is_refused(tmp_path):
    with fresh_database("sqlite", tmp_path) as url:
        store = AccountStore(url)
        store.create_schema()
        with store.engine.begin() as conn:
            conn.execute(text("UPDATE meridian_schema SET version = :v"), {"v": LATEST + 1})
        with pytest.raises(RuntimeError, match="newer than this release"):
            AccountStore(url).create_schema()
