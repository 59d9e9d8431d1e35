"""engine/ingest/sqlite_writer.py: an import stage's statements run in a process of their own, in
order, with the same database as inline; a failure or a dead writer is raised, never a hang."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest

from config.settings import PROJECT_ROOT
from engine.errors import DatasetError
from engine.ingest import admin, search, sqlite_writer
from engine.ingest.context import ImportContext
from engine.ingest.sqlite_writer import SqliteWriter


def _create(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE t (i INTEGER, pid INTEGER)")


def _insert(conn: sqlite3.Connection, values: list[int]) -> None:
    conn.executemany("INSERT INTO t VALUES (?, ?)", ((v, os.getpid()) for v in values))


def _commit(conn: sqlite3.Connection) -> None:
    conn.commit()


def _fail(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO no_such_table VALUES (1)")


def _exit(conn: sqlite3.Connection) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _tables(path) -> dict[str, list[str]]:
    """Every table's rows (virtual tables' shadow tables too), sorted: the content, not the pages."""
    with sqlite3.connect(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"'))) for name in names}


def _rows(path) -> list[tuple[int, int]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT i, pid FROM t ORDER BY rowid").fetchall()


def test_jobs_run_in_order_in_another_process(tmp_path):
    path = tmp_path / "t.sqlite"
    with SqliteWriter(path) as writer:
        writer.submit(_create)
        for start in range(0, 3_000, 250):
            writer.submit(_insert, list(range(start, start + 250)))
        writer.submit(_commit)
    rows = _rows(path)
    assert [i for i, _ in rows] == list(range(3_000))
    assert {pid for _, pid in rows} != {os.getpid()}


def test_a_process_that_may_not_have_children_runs_the_jobs_inline(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_writer, "can_have_children", lambda: False)
    path = tmp_path / "t.sqlite"
    with SqliteWriter(path) as writer:
        writer.submit(_create)
        writer.submit(_insert, [1, 2, 3])
        writer.submit(_commit)
    assert _rows(path) == [(1, os.getpid()), (2, os.getpid()), (3, os.getpid())]


def test_a_failing_job_is_raised_to_the_stage_and_the_jobs_after_it_do_not_run(tmp_path):
    path = tmp_path / "t.sqlite"
    with pytest.raises(sqlite3.OperationalError, match="no_such_table"), SqliteWriter(path) as writer:
        writer.submit(_create)
        writer.submit(_commit)
        writer.submit(_fail)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the writer has stopped: a submit finds it gone
            writer.submit(_insert, list(range(10_000)))
    assert _rows(path) == []


def test_a_writer_that_dies_is_a_dataset_error_not_a_hang(tmp_path):
    with (
        pytest.raises(DatasetError, match="SQLite writer exited with code -9"),
        SqliteWriter(tmp_path / "t.sqlite") as writer,
    ):
        writer.submit(_exit)


def test_the_search_index_is_the_same_written_inline_or_by_the_writer(tmp_path, monkeypatch):
    """The search stage on a sample, its writes in the writer process and inline: every table
    holds the same rows."""
    built = {}
    for where in ("process", "inline"):
        if where == "inline":
            monkeypatch.setattr(sqlite_writer, "can_have_children", lambda: False)
        out = tmp_path / where
        out.mkdir()
        ctx = ImportContext(PROJECT_ROOT / "data" / "samples" / "monaco.osm.pbf", "monaco", out)
        admin.run(ctx)  # the admin areas the search stage reads
        search.run(ctx)
        built[where] = _tables(out / "search.sqlite")
    assert built["process"]["features"] and built["process"]["points_rtree"]
    assert built["process"] == built["inline"]
