"""Tables: plans, accounts, api_keys. SQLite by default, PostgreSQL via DATABASE_URL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Plan(Base):
    __tablename__ = "plans"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, default="")
    per_minute: Mapped[int] = mapped_column(Integer, default=0)  # 0 = unlimited
    per_day: Mapped[int] = mapped_column(Integer, default=0)
    per_month: Mapped[int] = mapped_column(Integer, default=0)
    services: Mapped[list[Any]] = mapped_column(JSON, default=list)  # ["*"] = every service
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # Abuse limits (schema version 3); 0 = no limit.
    max_keys: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    max_fence_vertices: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    # Cells (sources x destinations) of one matrix request (schema version 4); 0 = the deployment's limit.
    max_matrix_cells: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    # What the quota check does when Redis cannot answer: True lets the call through, False
    # refuses it (503), NULL follows the deployment's default for the plan (docs/security.md).
    quota_fail_open: Mapped[bool | None] = mapped_column(Boolean, nullable=True)


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    email: Mapped[str | None] = mapped_column(String(256), nullable=True)  # lower-case, unique index below
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # Portal sign-in (schema version 2, accounts/migrations.py); NULL for CLI-made accounts.
    password_hash: Mapped[str | None] = mapped_column(String(256), nullable=True)  # argon2id
    email_verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    role: Mapped[str] = mapped_column(String(16), default="user", server_default="user", nullable=False)
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    plan_id: Mapped[int | None] = mapped_column(Integer, nullable=True)  # plans.id of keys made in the portal
    # Schema version 3: bumped by every change that must kill older mail links (a verification,
    # a password reset or change, an e-mail change) and carried by each link (accounts/tokens.py).
    token_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    # Bumped by logout and by a password change; a portal session carries the value it was
    # opened with and ends when it differs (app/portal/sessions.py).
    session_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)

    __table_args__ = (Index("uq_accounts_email", "email", unique=True),)

    keys: Mapped[list[ApiKey]] = relationship(back_populates="account")


class ApiKey(Base):
    """An API key. Only hashes are stored: the key itself and its API Secret are shown once.

    The key is ``mrd_<prefix>_<secret part>``; ``prefix`` (unique, indexed) finds the row,
    ``key_hash`` (SHA-256 of the whole key) is compared in constant time.
    """

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    prefix: Mapped[str] = mapped_column(String(16), unique=True, index=True, nullable=False)
    key_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    secret_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    label: Mapped[str] = mapped_column(String(128), default="")
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), nullable=False)
    plan_id: Mapped[int] = mapped_column(ForeignKey("plans.id"), nullable=False)
    scopes: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)  # None = the plan's services
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    account: Mapped[Account] = relationship(back_populates="keys")
    plan: Mapped[Plan] = relationship()


class UsedToken(Base):
    """A single-use mail token (verification, reset, e-mail change) that has been used: its id is
    the primary key, so a second use fails on the unique constraint."""

    __tablename__ = "used_tokens"

    jti: Mapped[str] = mapped_column(String(64), primary_key=True)
    purpose: Mapped[str] = mapped_column(String(16), nullable=False)
    account_id: Mapped[int] = mapped_column(Integer, nullable=False)
    used_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SchemaVersion(Base):
    """One row: the version of these tables (accounts/migrations.py upgrades step by step)."""

    __tablename__ = "meridian_schema"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
