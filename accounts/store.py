"""The account store: plans, accounts and keys in SQL, returned as plain immutable records.

Web processes never hold ORM objects across requests: :meth:`AccountStore.lookup` returns a
:class:`KeyRecord` that the access layer caches for a few seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import string
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, event, func, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from accounts import fences as _fences  # noqa: F401  (geofence tables join Base.metadata)
from accounts.models import Account, ApiKey, Plan, utcnow
from config.plans import DEFAULT_PLANS, SERVICES

KEY_PREFIX = "mrd"
MAX_ROTATION_GRACE = timedelta(days=7)
_ALPHABET = string.ascii_letters + string.digits
_ALPHABET_SET = frozenset(_ALPHABET)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class AccountError(ValueError):
    """A bad request to the store (unknown plan, unknown service, ...); the message says which."""


@dataclass(frozen=True)
class PlanRecord:
    name: str
    per_minute: int
    per_day: int
    per_month: int
    services: tuple[str, ...]
    description: str = ""
    max_keys: int = 0  # live keys per account; 0 = no limit
    max_fence_vertices: int = 0  # vertices of all of an account's fences together; 0 = no limit
    max_matrix_cells: int = 0  # cells of one matrix request; 0 = the deployment's limit
    quota_fail_open: bool | None = None  # None: the deployment's default for this plan

    def includes(self, service: str) -> bool:
        return "*" in self.services or service in self.services


@dataclass(frozen=True)
class KeyRecord:
    id: int
    prefix: str
    key_hash: str
    secret_hash: str
    account_id: int
    account_name: str
    plan: PlanRecord
    scopes: tuple[str, ...] | None
    expires_at: datetime | None
    revoked: bool
    label: str = ""
    account_disabled: bool = False
    created_at: datetime | None = None
    # the account in Redis quota counters (accounts/quota.py): its id and creation time, so two
    # databases sharing a Redis (tests, staging) never share an account's bucket
    account_ref: str = ""

    def matches(self, key: str) -> bool:
        return hmac.compare_digest(self.key_hash, hash_key(key))

    def expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and (now or datetime.now(UTC)) >= self.expires_at

    def state(self) -> str:
        """``revoked``, ``expired`` or ``active``: how the CLI and the portal list a key."""
        return "revoked" if self.revoked else "expired" if self.expired() else "active"

    def allows(self, service: str) -> bool:
        if not self.plan.includes(service):
            return False
        return self.scopes is None or service in self.scopes


@dataclass(frozen=True)
class IssuedKey:
    key: str
    secret: str
    record: KeyRecord


def hash_key(key: str) -> str:
    """SHA-256 is right for high-entropy random keys (no password stretching needed)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def split_key(key: str) -> str | None:
    """The lookup prefix of a well-formed key, or None."""
    parts = key.split("_")
    if len(parts) != 3 or parts[0] != KEY_PREFIX or len(parts[1]) != 10 or len(parts[2]) < 20:
        return None
    if not _ALPHABET_SET.issuperset(parts[1] + parts[2]):
        return None
    return parts[1]


def account_ref(account_id: int, created_at: datetime | None) -> str:
    """An account's name in the Redis quota counters: ``<id>.<creation time in microseconds>``."""
    if created_at is None:
        return str(account_id)
    return f"{account_id}.{(created_at - _EPOCH) // timedelta(microseconds=1)}"


def _random(n: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:  # SQLite drops tzinfo
        return value.replace(tzinfo=UTC)
    return value


def _check_services(services: list[str] | tuple[str, ...], what: str) -> list[str]:
    unknown = [s for s in services if s != "*" and s not in SERVICES]
    if unknown:
        raise AccountError(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(SERVICES)})")
    return list(services)


def make_engine(database_url: str) -> Engine:
    if database_url.startswith("sqlite:///"):
        Path(database_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(database_url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: sqlite3.Connection, _record: object) -> None:  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(database_url, pool_pre_ping=True, pool_size=5, max_overflow=5)


class AccountStore:
    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.engine = make_engine(database_url)
        self._session = sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> Session:
        return self._session()

    # ---------------------------------------------------------------- schema
    def create_schema(self) -> None:
        """Create the tables, or upgrade those of an earlier release in place (accounts/migrations.py)."""
        from accounts.migrations import upgrade

        upgrade(self.engine)
        self.seed_plans()

    def seed_plans(self) -> None:
        """Insert the default plans that do not exist yet (never overwrites an edited plan); a
        process that races another one on a new database finds the plans there on its retry."""
        for attempt in range(3):
            try:
                with self.session() as s, s.begin():
                    existing = set(s.scalars(select(Plan.name)))
                    for plan in DEFAULT_PLANS:
                        if plan["name"] not in existing:
                            s.add(Plan(**plan))
                return
            except IntegrityError:
                if attempt == 2:
                    raise

    # ---------------------------------------------------------------- plans
    def list_plans(self) -> list[PlanRecord]:
        with self.session() as s:
            return [self._plan_record(p) for p in s.scalars(select(Plan).order_by(Plan.id))]

    def set_plan(
        self,
        name: str,
        *,
        per_minute: int | None = None,
        per_day: int | None = None,
        per_month: int | None = None,
        services: list[str] | None = None,
        description: str | None = None,
        max_keys: int | None = None,
        max_fence_vertices: int | None = None,
        quota_fail_open: bool | None = None,
        max_matrix_cells: int | None = None,
    ) -> PlanRecord:
        limits: dict[str, int | None] = {
            "per_minute": per_minute,
            "per_day": per_day,
            "per_month": per_month,
            "max_keys": max_keys,
            "max_fence_vertices": max_fence_vertices,
            "max_matrix_cells": max_matrix_cells,
        }
        for label, value in limits.items():
            if value is not None and value < 0:
                raise AccountError(f"{label} must be >= 0 (0 = unlimited)")
        # the columns given (None: left as they are)
        changes: dict[str, object] = {**limits, "description": description, "quota_fail_open": quota_fail_open}
        with self.session() as s, s.begin():
            plan = s.scalar(select(Plan).where(Plan.name == name))
            if plan is None:
                plan = Plan(name=name, services=[], description="")
                s.add(plan)
            for column, given in changes.items():
                if given is not None:
                    setattr(plan, column, given)
            if services is not None:
                plan.services = _check_services(services, "service")
            s.flush()
            return self._plan_record(plan)

    # ---------------------------------------------------------------- keys
    def create_key(
        self,
        account: str,
        plan: str = "standard",
        *,
        scopes: list[str] | None = None,
        expires_at: datetime | None = None,
        label: str = "",
    ) -> IssuedKey:
        """A new key; refused (:class:`AccountError`) when the account already has the plan's
        ``max_keys`` live keys."""
        return self._issue(account, plan, scopes=scopes, expires_at=expires_at, label=label, rotation=None)

    def _issue(
        self,
        account: str,
        plan: str,
        *,
        scopes: list[str] | None,
        expires_at: datetime | None,
        label: str,
        rotation: timedelta | None,
    ) -> IssuedKey:
        """Insert a key within the plan's ``max_keys`` (:meth:`_check_key_cap`); ``rotation``: the
        grace period of the key it replaces, None for a new key."""
        if scopes is not None:
            scopes = _check_services(scopes, "scope")
        with self.session() as s, s.begin():
            plan_row = s.scalar(select(Plan).where(Plan.name == plan))
            if plan_row is None:
                names = ", ".join(s.scalars(select(Plan.name)))
                raise AccountError(f"unknown plan {plan!r} (plans: {names})")
            account_row = s.scalar(select(Account).where(Account.name == account))
            if account_row is None:
                account_row = Account(name=account)
                s.add(account_row)
                s.flush()
            elif plan_row.max_keys:
                # a write first: the account's row lock (PostgreSQL) or the database's write lock
                # (SQLite) is held from before the count until the new key is committed, so two
                # creations at once cannot both pass the cap
                s.execute(update(Account).where(Account.id == account_row.id).values(name=Account.name))
                self._check_key_cap(s, account_row.id, plan_row, rotation)
            prefix = _random(10)
            while s.scalar(select(ApiKey.id).where(ApiKey.prefix == prefix)) is not None:
                prefix = _random(10)
            key = f"{KEY_PREFIX}_{prefix}_{_random(32)}"
            secret = secrets.token_urlsafe(32)
            row = ApiKey(
                prefix=prefix,
                key_hash=hash_key(key),
                secret_hash=hashlib.sha256(secret.encode()).hexdigest(),
                label=label,
                account_id=account_row.id,
                plan_id=plan_row.id,
                scopes=scopes,
                expires_at=expires_at,
            )
            s.add(row)
            s.flush()
            row.account = account_row
            row.plan = plan_row
            return IssuedKey(key=key, secret=secret, record=self._key_record(row))

    @staticmethod
    def _check_key_cap(s: Session, account_id: int, plan: Plan, rotation: timedelta | None) -> None:
        """A new key only while the account has fewer than ``plan.max_keys`` live (neither revoked
        nor expired) keys. A rotation may go beyond by the old keys still in their grace period,
        up to twice the cap (every key can be rotated once with a grace period; an old key stops
        counting when its grace ends); a rotation without grace replaces its key one for one."""
        now = utcnow()
        live = s.scalar(
            select(func.count(ApiKey.id)).where(
                ApiKey.account_id == account_id,
                ApiKey.revoked_at.is_(None),
                or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > now),
            )
        )
        limit = plan.max_keys if rotation is None else 2 * plan.max_keys + (0 if rotation else 1)
        if (live or 0) >= limit:
            if rotation is not None:
                raise AccountError(
                    f"too many keys in their rotation grace period: the {plan.name} plan allows {plan.max_keys} "
                    f"live keys; rotate with a grace period of 0, or revoke a key first"
                )
            raise AccountError(
                f"key limit reached: the {plan.name} plan allows {plan.max_keys} live keys (keys in a rotation "
                f"grace period count until it ends); revoke a key first"
            )

    def lookup(self, prefix: str) -> KeyRecord | None:
        with self.session() as s:
            row = s.scalar(select(ApiKey).where(ApiKey.prefix == prefix))
            return self._key_record(row) if row is not None else None

    def find(self, key_or_prefix: str) -> KeyRecord | None:
        prefix = split_key(key_or_prefix) or key_or_prefix
        return self.lookup(prefix)

    def list_keys(self, account: str | None = None) -> list[KeyRecord]:
        with self.session() as s:
            q = select(ApiKey).order_by(ApiKey.id)
            if account:
                q = q.join(Account).where(Account.name == account)
            return [self._key_record(r) for r in s.scalars(q)]

    def revoke(self, key_or_prefix: str) -> bool:
        prefix = split_key(key_or_prefix) or key_or_prefix
        with self.session() as s, s.begin():
            row = s.scalar(select(ApiKey).where(ApiKey.prefix == prefix))
            if row is None:
                return False
            if row.revoked_at is None:
                row.revoked_at = utcnow()
            return True

    def rotate(self, key_or_prefix: str, grace: timedelta) -> IssuedKey:
        """A new key (and secret) with the old key's account, plan, scopes, label and expiry; the
        old key stays valid for ``grace`` (at most :data:`MAX_ROTATION_GRACE`), then expires."""
        if not timedelta(0) <= grace <= MAX_ROTATION_GRACE:
            raise AccountError(f"grace period must be between 0 and {MAX_ROTATION_GRACE.days} days")
        old = self.find(key_or_prefix)
        if old is None:
            raise AccountError("no such key")
        if old.revoked or old.expired():
            raise AccountError("a revoked or expired key cannot be rotated")
        issued = self._issue(
            old.account_name,
            old.plan.name,
            scopes=list(old.scopes) if old.scopes is not None else None,
            expires_at=old.expires_at,
            label=old.label,
            rotation=grace,
        )
        ends = utcnow() + grace
        with self.session() as s, s.begin():
            row = s.scalars(select(ApiKey).where(ApiKey.prefix == old.prefix)).one()
            current = _aware(row.expires_at)
            if current is None or current > ends:
                row.expires_at = ends
        return issued

    # ---------------------------------------------------------------- records
    @staticmethod
    def _plan_record(p: Plan) -> PlanRecord:
        return PlanRecord(
            name=p.name,
            per_minute=p.per_minute or 0,
            per_day=p.per_day or 0,
            per_month=p.per_month or 0,
            services=tuple(p.services or ()),
            description=p.description or "",
            max_keys=p.max_keys or 0,
            max_fence_vertices=p.max_fence_vertices or 0,
            max_matrix_cells=p.max_matrix_cells or 0,
            quota_fail_open=p.quota_fail_open,
        )

    def _key_record(self, row: ApiKey) -> KeyRecord:
        return KeyRecord(
            id=row.id,
            prefix=row.prefix,
            key_hash=row.key_hash,
            secret_hash=row.secret_hash,
            account_id=row.account_id,
            account_name=row.account.name,
            plan=self._plan_record(row.plan),
            scopes=tuple(row.scopes) if row.scopes is not None else None,
            expires_at=_aware(row.expires_at),
            revoked=row.revoked_at is not None,
            label=row.label or "",
            account_disabled=row.account.disabled_at is not None,
            created_at=_aware(row.created_at),
            account_ref=account_ref(row.account_id, _aware(row.account.created_at)),
        )
