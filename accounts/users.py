"""People behind accounts: e-mail, password, verification, role, disabled flag, plan.

Flask-free, shared by the portal and ``meridian accounts``; it works on the same tables and
sessions as :class:`~accounts.store.AccountStore` (whose keys the portal issues). Records are
plain immutable dataclasses, never ORM objects.
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

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def session_stamp(self) -> str:
        """Changes whenever the password does: sessions carry it, so a password change (or
        reset) signs every other session out."""
        import hashlib

        return hashlib.sha256((self.password_hash or "").encode()).hexdigest()[:16]


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
        if needs_rehash(user.password_hash):
            self.set_password(user.id, password, check_rule=False)
            user = self.get(user.id)
        return user

    def mark_verified(self, account_id: int) -> None:
        with self.store.session() as s, s.begin():
            row = s.get(Account, account_id)
            if row is not None and row.email_verified_at is None:
                row.email_verified_at = utcnow()

    def set_password(self, account_id: int, password: str, *, check_rule: bool = True) -> None:
        if check_rule:
            problem = password_problem(password)
            if problem:
                raise AccountError(problem)
        password_hash = hash_password(password)
        with self.store.session() as s, s.begin():
            s.execute(update(Account).where(Account.id == account_id).values(password_hash=password_hash))

    def change_email(self, account_id: int, new_email: str) -> bool:
        """Set a new (verified) address; False if another account took it meanwhile."""
        email = normalize_email(new_email)
        try:
            with self.store.session() as s, s.begin():
                if s.scalar(select(Account.id).where(Account.email == email, Account.id != account_id)):
                    return False
                s.execute(
                    update(Account).where(Account.id == account_id).values(email=email, email_verified_at=utcnow())
                )
        except IntegrityError:
            return False
        return True

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
        )
