"""Versioned, in-place upgrades of the account tables, run by every process at start-up
(``AccountStore.create_schema()``): a database made by any earlier release keeps its rows.

The version lives in the one-row table ``meridian_schema``. A database without it is either
empty (the tables are created at the newest version) or was made before versioning, by the
release whose tables are version 1 (plans, accounts, api_keys, geofence tables). Each step is a
function of an Alembic :class:`~alembic.operations.Operations` object (its public, dialect-aware
DDL), run in one transaction with the new version number, under a lock on PostgreSQL so that two
processes starting at once do not both upgrade.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import sqlalchemy as sa

logging.getLogger("alembic").setLevel(logging.WARNING)  # its INFO lines at import say nothing to an operator
from alembic.migration import MigrationContext  # noqa: E402
from alembic.operations import Operations  # noqa: E402
from sqlalchemy.engine import Connection, Engine  # noqa: E402

from accounts.models import Base, SchemaVersion  # noqa: E402

# The version of the tables as accounts/models.py declares them.
LATEST = 4
_PG_LOCK_ID = 0x4D455244  # "MERD": an advisory lock id of our own


def _v2_portal_accounts(op: Operations) -> None:
    """Sign-in for the portal: password, verified e-mail, role, disabled flag, account plan;
    the used single-use tokens."""
    # Plain ADD COLUMN on both SQLite and PostgreSQL: nullable or with a server default, no
    # constraint that would make SQLite copy the table (which api_keys references).
    for column in (
        sa.Column("password_hash", sa.String(256), nullable=True),
        sa.Column("email_verified_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("role", sa.String(16), nullable=False, server_default="user"),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("plan_id", sa.Integer, nullable=True),
    ):
        op.add_column("accounts", column)
    # E-mail addresses were never written before (always NULL): unique from now on.
    op.create_index("uq_accounts_email", "accounts", ["email"], unique=True)
    op.create_table(
        "used_tokens",
        sa.Column("jti", sa.String(64), primary_key=True),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("account_id", sa.Integer, nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=False),
    )


def _v3_abuse_limits(op: Operations) -> None:
    """Per-plan caps (keys per account, fence vertices per account, quota behaviour when Redis is
    down) and the accounts' generation counters that end older mail links and sessions."""
    for column in (
        sa.Column("max_keys", sa.Integer, nullable=False, server_default="0"),
        sa.Column("max_fence_vertices", sa.Integer, nullable=False, server_default="0"),
        sa.Column("quota_fail_open", sa.Boolean, nullable=True),
    ):
        op.add_column("plans", column)
    for column in (
        sa.Column("token_generation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("session_generation", sa.Integer, nullable=False, server_default="0"),
    ):
        op.add_column("accounts", column)


def _v4_matrix_cells(op: Operations) -> None:
    """Per-plan cap on the cells (sources x destinations) of one matrix request; 0: the
    deployment's limit."""
    op.add_column("plans", sa.Column("max_matrix_cells", sa.Integer, nullable=False, server_default="0"))


# version -> the step that reaches it from the previous version
STEPS: dict[int, Callable[[Operations], None]] = {2: _v2_portal_accounts, 3: _v3_abuse_limits, 4: _v4_matrix_cells}


def current_version(conn: Connection) -> int | None:
    """The stored version; 1 for tables made before versioning; None for an empty database."""
    tables = set(sa.inspect(conn).get_table_names())
    if SchemaVersion.__tablename__ in tables:
        version = conn.scalar(sa.select(SchemaVersion.version).where(SchemaVersion.id == 1))
        if version is not None:
            return int(version)
    return 1 if "accounts" in tables else None


def _set_version(conn: Connection, version: int) -> None:
    table = sa.table(SchemaVersion.__tablename__, sa.column("id"), sa.column("version"))
    if conn.execute(sa.update(table).where(table.c.id == 1).values(version=version)).rowcount == 0:
        conn.execute(sa.insert(table).values(id=1, version=version))


def upgrade(engine: Engine) -> tuple[int | None, int]:
    """Bring the tables to :data:`LATEST`; returns (version before, version after).

    Processes starting together (gunicorn workers on a new database) may race on SQLite, which
    has no advisory lock: the loser's DDL or insert fails, and it tries again, then finding the
    tables made and the version set."""
    for attempt in range(5):
        try:
            return _upgrade_once(engine)
        except (sa.exc.IntegrityError, sa.exc.OperationalError, sa.exc.ProgrammingError):
            if attempt == 4:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def _upgrade_once(engine: Engine) -> tuple[int | None, int]:
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": _PG_LOCK_ID})
        before = current_version(conn)
        if before is not None and before > LATEST:
            raise RuntimeError(
                f"the account database is at schema version {before}, newer than this release ({LATEST}): "
                "upgrade Meridian instead"
            )
        if before is not None:
            op = Operations(MigrationContext.configure(conn))
            for version in range(before + 1, LATEST + 1):
                STEPS[version](op)
        # New tables (and a fresh database) come from the models; existing ones are left alone.
        Base.metadata.create_all(conn)
        _set_version(conn, LATEST)
    return before, LATEST
