"""Accounts with passwords and mail tokens, on a real SQLite database: argon2id hash format,
password rule, no enumeration in the directory's answers, single-use expiring signed tokens,
disable/plan changes reaching the keys, key rotation with a grace period."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import event

from accounts.access import AccessControl, AccessDenied
from accounts.store import AccountError, AccountStore
from accounts.tokens import RESET, VERIFY, TokenError, TokenSigner
from accounts.users import UserDirectory, normalize_email
from tests.portal.databases import fresh_database

SECRET = "s" * 40


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    with fresh_database(request.param, tmp_path) as url:
        s = AccountStore(url)
        s.create_schema()
        yield s
        s.engine.dispose()


@pytest.fixture()
def users(store):
    return UserDirectory(store)


def test_password_hash_is_argon2id_and_never_the_password(users, store):
    user = users.sign_up("a@example.com", "long enough 1")
    assert user.password_hash.startswith("$argon2id$v=19$m=")
    assert "long enough 1" not in user.password_hash
    assert users.authenticate("A@Example.com ", "long enough 1").id == user.id
    assert users.authenticate("a@example.com", "long enough 2") is None
    assert users.authenticate("nobody@example.com", "long enough 1") is None


@pytest.mark.parametrize(
    ("password", "why"),
    [("short1", "too short"), ("onlyletterslong", "too weak"), ("1234567890123", "too weak"), ("x1" * 101, "too long")],
)
def test_password_rule(users, password, why):
    with pytest.raises(AccountError, match=why):
        users.sign_up("b@example.com", password)


@pytest.mark.parametrize("email", ["", "plain", "a@b", "a@@b.com", "a b@c.com", "a@-b.com", "x" * 250 + "@e.com"])
def test_invalid_addresses_are_refused(email):
    with pytest.raises(AccountError, match="email"):
        normalize_email(email)


def test_unknown_address_costs_the_same_as_a_wrong_password(users):
    users.sign_up("c@example.com", "long enough 1")
    users.authenticate("c@example.com", "wrong password 1")  # warm up

    def median_time(email: str) -> float:
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            users.authenticate(email, "wrong password 1")
            times.append(time.perf_counter() - t0)
        return sorted(times)[2]

    known, unknown = median_time("c@example.com"), median_time("nobody@example.com")
    # both are one argon2 verification (tens of ms); a skipped hash would be 100 times faster
    assert 0.33 < unknown / known < 3.0, (known, unknown)


def test_tokens_are_single_use_signed_and_expiring(users, store):
    user = users.sign_up("d@example.com", "long enough 1")
    signer = TokenSigner(SECRET, store)
    token = signer.issue(VERIFY, user.id)
    with pytest.raises(TokenError, match="not meant"):
        signer.read(token, RESET)
    with pytest.raises(TokenError, match="invalid"):
        signer.consume(token[:-2] + ("AA" if not token.endswith("AA") else "BB"), VERIFY)
    with pytest.raises(TokenError, match="invalid"):
        TokenSigner("t" * 40, store).consume(token, VERIFY)
    assert signer.consume(token, VERIFY).account_id == user.id
    with pytest.raises(TokenError, match="already been used"):
        signer.consume(token, VERIFY)
    expired = TokenSigner(SECRET, store, max_age_s=-1)
    with pytest.raises(TokenError, match="expired"):
        expired.consume(signer.issue(VERIFY, user.id), VERIFY)


def test_disable_and_plan_change_reach_every_key(users, store):
    user = users.sign_up("e@example.com", "long enough 1")
    assert user.plan == "free"
    issued = store.create_key(user.name, user.plan)
    access = AccessControl(store, quota=None, cache_ttl_s=0)
    assert access.authenticate(issued.key).plan.name == "free"
    assert users.set_plan(user.id, "pro") == 1
    assert access.authenticate(issued.key).plan.name == "pro"
    users.set_disabled(user.id, True)
    with pytest.raises(AccessDenied, match="disabled"):
        access.authenticate(issued.key)
    users.set_disabled(user.id, False)
    assert access.authenticate(issued.key).prefix == issued.record.prefix


def statements_of(store, call):
    """(what ``call()`` returned, how many SQL statements it sent)."""
    sent: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):
        sent.append(statement)

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        return call(), len(sent)
    finally:
        event.remove(store.engine, "before_cursor_execute", count)


def add_accounts(users, store, n: int) -> None:
    """``n`` accounts: signed-up ones with 0-2 keys, and CLI-made ones whose plan is their newest key's."""
    for i in range(n):
        if i % 3 == 2:
            store.create_key(f"cli-{n}-{i}", "standard")
            store.create_key(f"cli-{n}-{i}", "pro")
            continue
        user = users.sign_up(f"u{n}-{i}@example.com", "long enough 1")
        for _ in range(i % 3):
            store.create_key(user.name, user.plan)


def test_the_account_listing_costs_the_same_few_statements_for_any_length(users, store):
    def listing():
        listed = users.list()
        return [(u.id, u.plan) for u in listed], users.key_counts(u.id for u in listed)

    add_accounts(users, store, 3)
    _, few = statements_of(store, listing)
    add_accounts(users, store, 30)
    (rows, counts), many = statements_of(store, listing)
    assert many == few <= 4
    assert len(rows) == 33
    # the same answers as the one-account lookups
    assert rows == [(u_id, users.get(u_id).plan) for u_id, _ in rows]
    assert {u_id: counts.get(u_id, 0) for u_id, _ in rows} == {u_id: users.key_count(u_id) for u_id, _ in rows}
    assert {plan for _, plan in rows} == {"free", "pro"} and set(counts.values()) == {1, 2}


def test_rotation_keeps_the_old_key_for_the_grace_period(store):
    issued = store.create_key("rot", "standard", scopes=["geocoding"], label="prod")
    new = store.rotate(issued.record.prefix, timedelta(hours=1))
    assert new.key != issued.key and new.record.label == "prod" and new.record.scopes == ("geocoding",)
    old = store.find(issued.record.prefix)
    assert old.expires_at is not None and not old.expired()
    assert old.expired(old.expires_at + timedelta(seconds=1))
    with pytest.raises(AccountError, match="between 0 and 7 days"):
        store.rotate(new.record.prefix, timedelta(days=8))
    store.rotate(new.record.prefix, timedelta(0))
    assert store.find(new.record.prefix).expired()
