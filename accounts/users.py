"""People behind accounts: e-mail, password, verification, role, disabled flag, plan.

Flask-free, shared by the portal and ``meridian accounts``; it works on the same tables and
sessions as :class:`~accounts.store.AccountStore` (whose keys the portal issues). Records are
plain immutable dataclasses, never ORM objects.

Two counters on each account end what was handed out before a change: ``token_generation``
(every mail link carries it, ``accounts/tokens.py``) is bumped by a verification, a password
change or reset and an e-mail change; ``session_generation`` (every portal session carries it)
is bumped by a sign-out and a password change or reset.
"""

from __future__ import annotations

import builtins
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from accounts.models import Account, ApiKey, Plan, utcnow
from accounts.passwords import hash_password, needs_rehash, password_problem, verify_dummy, verify_password
from accounts.store import AccountError, AccountStore, _aware
from accounts.tokens import EMAIL, RESET, VERIFY, Token, TokenSigner

ROLES = ("user", "admin")
MAX_EMAIL_LENGTH = 254
# A deliberately plain syntax check (no quoted local parts, no IP literals): one @, a dotted
# domain of letters, digits and hyphens. Deliverability is proven by the verification mail.
_EMAIL = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)


def normalize_email(raw: str) -> str:
    """The stored form of an address (trimmed, lower-case); AccountError when it is not one."""
    email = (raw or "").strip().lower()
    if not email or len(email) > MAX_EMAIL_LENGTH or not _EMAIL.match(email):
        raise AccountError("email: not a valid e-mail address (like name@example.com)")
    return email


@dataclass(frozen=True)
class User:
    id: int
    name: str  # the account name the CLI uses (`meridian keys list --account NAME`)
    email: str | None
    verified: bool
    role: str
    disabled: bool
    plan: str
    created_at: datetime | None
    password_hash: str | None = None
    token_generation: int = 0  # mail links carry it (accounts/tokens.py)
    session_generation: int = 0  # portal sessions carry it (app/portal/blueprint.py)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class UserDirectory:
    def __init__(self, store: AccountStore, default_plan: str = "free") -> None:
        self.store = store
        self.default_plan = default_plan

    # ---------------------------------------------------------------- reading
    def get(self, account_id: int) -> User | None:
        with self.store.session() as s:
            row = s.get(Account, account_id)
            return self._user(s, row) if row is not None else None

    def by_email(self, email: str) -> User | None:
        try:
            email = normalize_email(email)
        except AccountError:
            return None
        with self.store.session() as s:
            row = s.scalar(select(Account).where(Account.email == email))
            return self._user(s, row) if row is not None else None

    def find(self, email_or_name: str) -> User | None:
        """By e-mail address, else by account name (the CLI accepts both)."""
        user = self.by_email(email_or_name)
        if user is not None:
            return user
        with self.store.session() as s:
            row = s.scalar(select(Account).where(Account.name == email_or_name))
            return self._user(s, row) if row is not None else None

    def list(self, *, limit: int = 500, offset: int = 0) -> list[User]:
        """A page of accounts in id order, in three queries whatever its length."""
        with self.store.session() as s:
            return self._users(s, s.scalars(select(Account).order_by(Account.id).limit(limit).offset(offset)).all())

    def key_count(self, account_id: int) -> int:
        return self.key_counts([account_id]).get(account_id, 0)

    def key_counts(self, account_ids: Iterable[int]) -> dict[int, int]:
        """Unrevoked keys per account, for the given accounts (absent: none), in one query."""
        with self.store.session() as s:
            counts = s.execute(
                select(ApiKey.account_id, func.count())
                .where(ApiKey.account_id.in_(list(account_ids)), ApiKey.revoked_at.is_(None))
                .group_by(ApiKey.account_id)
            )
            return {account_id: int(n) for account_id, n in counts}

    # ---------------------------------------------------------------- sign-up and sign-in
    def sign_up(self, email: str, password: str) -> User | None:
        """A new unverified account; None when the address is already taken (the caller answers
        the same either way: no enumeration). AccountError for a bad address or password."""
        email = normalize_email(email)
        problem = password_problem(password)
        if problem:
            raise AccountError(problem)
        password_hash = hash_password(password)  # hashed in both cases: same time
        plan_id = self._plan_id(self.default_plan)
        try:
            with self.store.session() as s, s.begin():
                if s.scalar(select(Account.id).where(Account.email == email)) is not None:
                    return None
                row = Account(
                    name=f"user-{secrets.token_hex(6)}",
                    email=email,
                    password_hash=password_hash,
                    role="user",
                    plan_id=plan_id,
                    created_at=utcnow(),
                )
                s.add(row)
                s.flush()
                return self._user(s, row)
        except IntegrityError:  # the same address signed up concurrently
            return None

    def authenticate(self, email: str, password: str) -> User | None:
        """The user if the address and password match (disabled accounts too: the caller says
        so); the same work when the address is unknown."""
        user = self.by_email(email)
        if user is None or not user.password_hash:
            verify_dummy()
            return None
        if not verify_password(user.password_hash, password):
            return None
        if needs_rehash(user.password_hash):  # the same password in a newer format: nothing ends
            with self.store.session() as s, s.begin():
                s.execute(update(Account).where(Account.id == user.id).values(password_hash=hash_password(password)))
            user = self.get(user.id)
        return user

    def mark_verified(self, account_id: int) -> None:
        """The operator's verification (``meridian accounts verify``); it ends older mail links."""
        with self.store.session() as s, s.begin():
            row = s.get(Account, account_id)
            if row is not None and row.email_verified_at is None:
                _verify(row)
                row.token_generation += 1

    def set_password(self, account_id: int, password: str) -> None:
        """A new password (the settings page): every other session and every mail link ends."""
        password_hash = _new_password_hash(password)
        with self.store.session() as s, s.begin():
            row = s.get(Account, account_id)
            if row is None:
                raise AccountError("no such account")
            _set_password_hash(row, password_hash)
            row.token_generation += 1

    def end_sessions(self, account_id: int) -> None:
        """Sign every portal session of the account out (a sign-out does, for copied cookies too)."""
        with self.store.session() as s, s.begin():
            s.execute(
                update(Account)
                .where(Account.id == account_id)
                .values(session_generation=Account.session_generation + 1)
            )

    # ---------------------------------------------------------------- mail links
    def verify_by_link(self, signer: TokenSigner, token: str) -> Token:
        """Confirm the address a verification link was sent to (TokenError: the link is not valid)."""
        return signer.consume(token, VERIFY, lambda _s, row, _content: _verify(row))

    def reset_by_link(self, signer: TokenSigner, token: str, password: str) -> Token:
        """Set the password a reset link asks for: the mail reached its owner, so the address is
        verified, and every session and every other link ends. AccountError: the password
        breaks the rule (the link stays usable); TokenError: the link is not valid."""
        password_hash = _new_password_hash(password)
        return signer.consume(
            token, RESET, lambda _s, row, _content: _set_password_hash(row, password_hash, verify=True)
        )

    def change_email_by_link(self, signer: TokenSigner, token: str) -> Token:
        """Move the account to the address an e-mail change link was sent to (and proved). Only a
        verified account changes its address; AccountError when another account has taken the
        new address meanwhile (the link stays usable); TokenError: the link is not valid."""

        def change(s: Session, row: Account, content: Token) -> None:
            email = normalize_email(content.email or "")
            if row.email_verified_at is None:
                raise AccountError("email: the account's current address was never confirmed")
            if s.scalar(select(Account.id).where(Account.email == email, Account.id != row.id)) is not None:
                raise AccountError("email: that address is now used by another account")
            row.email = email
            row.email_verified_at = utcnow()

        try:
            return signer.consume(token, EMAIL, change)
        except IntegrityError:  # the same address taken concurrently (unique index)
            raise AccountError("email: that address is now used by another account") from None

    def email_taken(self, email: str) -> bool:
        return self.by_email(email) is not None

    # ---------------------------------------------------------------- operator
    def set_disabled(self, account_id: int, disabled: bool) -> None:
        """Disable (every key answers 401 within AUTH_CACHE_TTL) or enable an account."""
        with self.store.session() as s, s.begin():
            row = s.get(Account, account_id)
            if row is None:
                raise AccountError("no such account")
            if disabled and row.disabled_at is None:
                row.disabled_at = utcnow()
            elif not disabled:
                row.disabled_at = None

    def set_role(self, account_id: int, role: str) -> None:
        if role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}")
        with self.store.session() as s, s.begin():
            s.execute(update(Account).where(Account.id == account_id).values(role=role))

    def set_plan(self, account_id: int, plan: str) -> int:
        """The account's plan, and that of every key it has; returns the number of keys moved."""
        plan_id = self._plan_id(plan)
        with self.store.session() as s, s.begin():
            if s.get(Account, account_id) is None:
                raise AccountError("no such account")
            s.execute(update(Account).where(Account.id == account_id).values(plan_id=plan_id))
            moved = s.execute(update(ApiKey).where(ApiKey.account_id == account_id).values(plan_id=plan_id))
            return int(getattr(moved, "rowcount", 0) or 0)

    # ---------------------------------------------------------------- helpers
    def _plan_id(self, name: str) -> int:
        with self.store.session() as s:
            plan_id = s.scalar(select(Plan.id).where(Plan.name == name))
            if plan_id is None:
                names = ", ".join(s.scalars(select(Plan.name)))
                raise AccountError(f"unknown plan {name!r} (plans: {names})")
            return int(plan_id)

    def _user(self, s: Session, row: Account) -> User:
        return self._users(s, [row])[0]

    def _users(self, s: Session, rows: Sequence[Account]) -> builtins.list[User]:
        """The records of ``rows``: each account's plan, or for an account the CLI made (which has
        none of its own) the plan of its newest key, in two queries whatever their number."""
        plan_names: dict[int | None, str] = {plan_id: name for plan_id, name in s.execute(select(Plan.id, Plan.name))}
        without_plan = [r.id for r in rows if plan_names.get(r.plan_id) is None]
        key_plans = self._newest_key_plans(s, without_plan) if without_plan else {}
        return [self._record(r, plan_names.get(r.plan_id) or plan_names.get(key_plans.get(r.id))) for r in rows]

    @staticmethod
    def _newest_key_plans(s: Session, account_ids: Sequence[int]) -> dict[int, int]:
        """The plan id of each account's newest key."""
        newest = select(func.max(ApiKey.id)).where(ApiKey.account_id.in_(account_ids)).group_by(ApiKey.account_id)
        return {
            account_id: plan_id
            for account_id, plan_id in s.execute(select(ApiKey.account_id, ApiKey.plan_id).where(ApiKey.id.in_(newest)))
        }

    def _record(self, row: Account, plan_name: str | None) -> User:
        return User(
            id=row.id,
            name=row.name,
            email=row.email,
            verified=row.email_verified_at is not None,
            role=row.role or "user",
            disabled=row.disabled_at is not None,
            plan=plan_name or self.default_plan,
            created_at=_aware(row.created_at),
            password_hash=row.password_hash,
            token_generation=row.token_generation or 0,
            session_generation=row.session_generation or 0,
        )


def _new_password_hash(password: str) -> str:
    problem = password_problem(password)
    if problem:
        raise AccountError(problem)
    return hash_password(password)


def _verify(row: Account) -> None:
    if row.email_verified_at is None:
        row.email_verified_at = utcnow()


def _set_password_hash(row: Account, password_hash: str, *, verify: bool = False) -> None:
    """A new password ends every session of the account."""
    row.password_hash = password_hash
    row.session_generation += 1
    if verify:
        _verify(row)
