"""Accounts with passwords and mail tokens, on a real SQLite database: argon2id hash format,
password rule, no enumeration in the directory's answers, single-use expiring signed tokens bound
to the account's state (each rule that ends older links), disable/plan changes reaching the keys,
key rotation with a grace period."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import event, text

from accounts.access import AccessControl, AccessDenied
from accounts.store import AccountError, AccountStore
from accounts.tokens import EMAIL, RESET, VERIFY, TokenError, TokenSigner
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
    token = signer.issue(VERIFY, user)
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
        expired.consume(signer.issue(VERIFY, user), VERIFY)


# ---------------------------------------------------------------- links bound to the account (issue 26, finding 2)
SUPERSEDED = "no longer valid"
NEW_PASSWORD = "another pass 2"


@pytest.fixture()
def signer(store):
    return TokenSigner(SECRET, store)


def links(users, signer, account_id: int) -> dict[str, str]:
    """One link of each purpose for the account as it is now."""
    user = users.get(account_id)
    return {
        VERIFY: signer.issue(VERIFY, user),
        RESET: signer.issue(RESET, user),
        EMAIL: signer.issue(EMAIL, user, email=f"new-{account_id}@example.com"),
    }


def assert_all_dead(signer, issued: dict[str, str]) -> None:
    for purpose, token in issued.items():
        with pytest.raises(TokenError, match=SUPERSEDED):
            signer.read(token, purpose)
        with pytest.raises(TokenError, match=SUPERSEDED):
            signer.consume(token, purpose)


def test_verifying_ends_every_older_link(users, signer):
    user = users.sign_up("v1@example.com", "long enough 1")
    older = links(users, signer, user.id)
    users.verify_by_link(signer, older.pop(VERIFY))
    assert users.get(user.id).verified
    assert_all_dead(signer, older)


def test_a_reset_ends_every_older_link_and_every_session(users, signer):
    user = users.sign_up("r1@example.com", "long enough 1")
    older = links(users, signer, user.id)
    second_reset = signer.issue(RESET, user)
    users.reset_by_link(signer, older.pop(RESET), NEW_PASSWORD)
    after = users.get(user.id)
    assert after.verified  # the reset mail reached the address's owner
    assert after.session_generation == user.session_generation + 1
    assert users.authenticate("r1@example.com", NEW_PASSWORD) is not None
    assert_all_dead(signer, {**older, "reset": second_reset})


def test_a_refused_new_password_keeps_the_reset_link(users, signer):
    user = users.sign_up("r2@example.com", "long enough 1")
    token = signer.issue(RESET, user)
    with pytest.raises(AccountError, match="too short"):
        users.reset_by_link(signer, token, "short1")
    users.reset_by_link(signer, token, NEW_PASSWORD)
    with pytest.raises(TokenError, match="already been used"):
        users.reset_by_link(signer, token, NEW_PASSWORD)


def test_a_password_change_ends_every_older_link_and_every_session(users, signer):
    user = users.sign_up("p1@example.com", "long enough 1")
    older = links(users, signer, user.id)
    users.set_password(user.id, NEW_PASSWORD)
    assert users.get(user.id).session_generation == user.session_generation + 1
    assert_all_dead(signer, older)


def test_an_email_change_ends_every_older_link(users, signer):
    user = users.sign_up("c1@example.com", "long enough 1")
    users.mark_verified(user.id)  # the operator's verification ends older links too
    older = links(users, signer, user.id)
    change = older.pop(EMAIL)
    assert users.change_email_by_link(signer, change).email == f"new-{user.id}@example.com"
    after = users.get(user.id)
    assert after.email == f"new-{user.id}@example.com" and after.verified
    assert_all_dead(signer, older)


def test_a_sign_out_everywhere_keeps_the_links(users, signer):
    user = users.sign_up("s1@example.com", "long enough 1")
    token = signer.issue(RESET, user)
    users.end_sessions(user.id)
    assert users.get(user.id).session_generation == user.session_generation + 1
    assert signer.read(token, RESET).account_id == user.id


def test_an_unverified_account_cannot_move_to_another_address(users, signer):
    """The pre-hijack: a change link made for an account whose address was never proved."""
    user = users.sign_up("u1@example.com", "long enough 1")
    token = signer.issue(EMAIL, user, email="attacker@example.com")
    with pytest.raises(AccountError, match="never confirmed"):
        users.change_email_by_link(signer, token)
    assert users.get(user.id).email == "u1@example.com"


def test_a_link_is_bound_to_the_address_it_was_sent_for(users, signer, store):
    user = users.sign_up("b1@example.com", "long enough 1")
    token = signer.issue(RESET, user)
    with store.engine.begin() as conn:  # an address changed by a path that forgot the counter
        conn.execute(text("UPDATE accounts SET email = 'b2@example.com' WHERE id = :i"), {"i": user.id})
    with pytest.raises(TokenError, match=SUPERSEDED):
        signer.read(token, RESET)


def test_of_two_racing_resets_one_wins(users, signer):
    user = users.sign_up("race@example.com", "long enough 1")
    tokens = [signer.issue(RESET, user) for _ in range(2)]
    hashed = users.get(user.id).password_hash
    barrier = threading.Barrier(2, timeout=30)
    outcomes: list[str] = []

    def redeem(token: str, password: str) -> None:
        barrier.wait()
        try:
            users.reset_by_link(signer, token, password)
            outcomes.append("ok")
        except TokenError:
            outcomes.append("refused")

    threads = [threading.Thread(target=redeem, args=(t, f"racing pass {i}")) for i, t in enumerate(tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == ["ok", "refused"]
    after = users.get(user.id)
    assert after.password_hash != hashed and after.token_generation == user.token_generation + 1


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
