"""An import stage's SQLite statements, run in the order given by a process of their own.

A stage that makes its rows in Python and inserts them (the search index: tens of millions of
addresses into a table and an R*Tree) spends about a quarter of its time in SQLite. In a second
process, SQLite inserts one batch on one core while the stage makes the next on the other. (A
thread would not do: ``sqlite3`` holds the interpreter lock while it binds each row, and handing
the lock back and forth cost more than the inserts.)

A job is an importable function and its picklable arguments, called as ``fn(conn, *args)``; the
jobs run one after the other on one connection in the order given, so the database holds what
it would had they run inline. Sending a job waits until the writer has taken the one before, so
at most one batch is being written and one is on its way. A process that may not have children
(a daemonic one) runs the jobs inline as they are given.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import Any

from engine.errors import DatasetError
from engine.ingest.child_process import SPAWN, can_have_children, portable, start_child

Job = Callable[..., object]


class SqliteWriter:
    """Jobs for the database at ``path``; a context manager: leaving it waits for every job and
    raises the writer's failure, if any (leaving on an exception stops the writer)."""

    def __init__(self, path: Path) -> None:
        self._conn: sqlite3.Connection | None = None
        self._jobs: Connection | None = None
        if not can_have_children():
            self._conn = sqlite3.connect(path)
            return
        receiver, self._jobs = SPAWN.Pipe(duplex=False)
        self._answers, sender = SPAWN.Pipe(duplex=False)
        self._process = start_child(_serve, (str(path), receiver, sender), "meridian-sqlite-writer")
        receiver.close()
        sender.close()

    def submit(self, fn: Job, *args: Any) -> None:
        """``fn(conn, *args)`` after the jobs given before."""
        if self._conn is not None:
            fn(self._conn, *args)
            return
        assert self._jobs is not None
        try:
            self._jobs.send((fn, args))
        except OSError:  # the writer is gone: its failure says why
            self._raise_failure()
            raise

    def close(self) -> None:
        """Wait until every job has run, then end the writer; its failure raised here."""
        if self._conn is not None:
            self._conn.close()
            return
        assert self._jobs is not None
        with contextlib.suppress(OSError):  # a writer gone already: its failure is read below
            self._jobs.send(None)
        self._jobs.close()
        try:
            self._raise_failure()
        finally:
            self._answers.close()

    def _raise_failure(self) -> None:
        try:
            ok, failure = self._answers.recv()
        except EOFError:
            self._process.join()
            raise DatasetError(
                f"the import's SQLite writer exited with code {self._process.exitcode} before it finished"
            ) from None
        self._process.join()
        if not ok:
            raise failure

    def __enter__(self) -> SqliteWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None or self._conn is not None:
            self.close()
        else:
            assert self._jobs is not None
            self._process.terminate()
            self._process.join()
            self._jobs.close()
            self._answers.close()


def _serve(path: str, jobs: Connection, answers: Connection) -> None:
    """The writer process: run each job as it comes; answer (True, None) once told to stop, or
    (False, the exception) at the first failure. A stage that went away (no stop) ends it too,
    at once if it ended (:func:`~engine.ingest.child_process.start_child`)."""
    conn = sqlite3.connect(path)
    try:
        while (job := jobs.recv()) is not None:
            fn, args = job
            fn(conn, *args)
        conn.close()
        answers.send((True, None))
    except EOFError:
        return
    except Exception as exc:  # noqa: BLE001 - handed to the stage, which raises it
        answers.send((False, portable(exc)))
