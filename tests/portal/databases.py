"""Fresh, empty account databases for a test: SQLite in a temporary directory, or a new
PostgreSQL database (dropped afterwards; skipped with the reason when no server answers)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.fixtures_live import PG_ADMIN_URL


@contextlib.contextmanager
def fresh_database(dialect: str, tmp_path: Path) -> Iterator[str]:
    if dialect == "sqlite":
        yield f"sqlite:///{tmp_path / f'{uuid.uuid4().hex[:8]}.db'}"
        return
    try:
        import psycopg

        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except Exception as exc:  # no server, auth refused
        pytest.skip(f"PostgreSQL not available at {PG_ADMIN_URL}: {exc}")
    name = f"meridian_portal_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(PG_ADMIN_URL)
    try:
        yield urlunsplit(("postgresql+psycopg", parts.netloc, f"/{name}", "", ""))
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
