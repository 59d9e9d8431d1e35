"""engine/ingest/child_process.py: a stage in a child process gives its memory back, and answers
like a call."""

from __future__ import annotations

import io
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.errors import DatasetError
from engine.ingest.child_process import ChildCall, call_in_child


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


_KEPT: list[str] = []  # long-lived objects, as the stage's string pools and indexes


def _fragmenting(n: int) -> int:
    """What the search stage does to the small-object allocator: millions of short-lived objects
    with a long-lived one here and there, so that no arena is ever empty again."""
    objects = [str(i) * 3 for i in range(n)]
    _KEPT.extend(objects[::500])
    return len(_KEPT)


def test_the_result_comes_back_and_the_childs_memory_goes_with_it():
    before = _rss_mb()
    assert call_in_child(_fragmenting, 3_000_000) == 6_000
    assert _KEPT == []  # the child's objects stayed in the child
    assert _rss_mb() - before < 20  # ~250 MB in the child, its arenas pinned by the kept strings


class _Unpicklable(Exception):
    def __init__(self, message: str, handle) -> None:
        super().__init__(message)
        self.handle = handle


def _fails(kind: str) -> None:
    if kind == "dataset":
        raise DatasetError("no roads in this file")
    if kind == "unpicklable":
        raise _Unpicklable("broken geometry", lambda: None)
    os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's out-of-memory killer does


def test_an_exception_in_the_child_is_raised_here():
    with pytest.raises(DatasetError, match="no roads in this file"):
        call_in_child(_fails, "dataset")
    with pytest.raises(RuntimeError, match="_Unpicklable: broken geometry"):
        call_in_child(_fails, "unpicklable")


def test_a_child_killed_before_it_answers_is_a_dataset_error_naming_its_exit_code():
    with pytest.raises(DatasetError, match="exited with code -9"):
        call_in_child(_fails, "killed")


def _writes(lines: int, stream) -> int:
    for i in range(lines):
        stream.write(f"line {i}\n")
    stream.flush()
    return lines


def test_what_the_child_writes_reaches_the_parents_stream_in_order():
    out = io.StringIO()  # no file descriptor a child could write to itself
    assert call_in_child(_writes, 500, output=out) == 500
    assert out.getvalue() == "".join(f"line {i}\n" for i in range(500))


def _in_child_of_daemon(queue) -> None:
    queue.put(call_in_child(os.getpid))


def test_a_daemonic_process_runs_the_call_itself():
    """A pool's worker (daemonic) may not have children: the call runs in it instead."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    daemon = context.Process(target=_in_child_of_daemon, args=(queue,), daemon=True)
    daemon.start()
    pid = queue.get(timeout=30)
    daemon.join(timeout=30)
    assert pid == daemon.pid


def _reads_a_pbf(path: str) -> int:
    import osmium  # noqa: PLC0415

    return sum(1 for _ in osmium.FileProcessor(path).with_locations())


def test_a_child_reads_with_osmium_after_this_process_did(tmp_path):
    """osmium's reading threads, started here, are not there in a forked child: a child that read
    a PBF then waited for them forever. A spawned child starts its own."""
    from tests.engine.osm_grid import OsmGrid  # noqa: PLC0415

    grid = OsmGrid("A-B-C\n|   |\nD-E-F")
    grid.way("ABCFEDA", highway="residential")
    path = str(grid.write(tmp_path / "grid.osm.pbf"))
    here = _reads_a_pbf(path)
    assert here > 0
    assert call_in_child(_reads_a_pbf, path) == here


UNGUARDED_MAIN = """
import os
from engine.ingest.child_process import ChildCall, call_in_child

print(call_in_child(os.getpid))  # no __main__ guard: the spawned child runs this line again
"""


def test_a_child_that_dies_before_it_takes_its_end_of_the_pipe_is_an_error_not_a_hang(tmp_path):
    """A script without the ``__main__`` guard: the spawned child runs it again and dies while it
    starts, before it has taken its end of the pipe (which the parent's resource sharer keeps open,
    so no end-of-file comes); the parent sees the child gone and raises."""
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED_MAIN)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode != 0
    assert "exited with code" in done.stderr


def _sleeps_after_writing_its_pid(path: str) -> None:
    Path(path).write_text(str(os.getpid()))
    time.sleep(120)


def test_a_call_runs_beside_this_process_and_leaving_it_stops_the_child(tmp_path):
    """A ChildCall whose result is never taken (the stage failed meanwhile) leaves no child."""
    pid_file = tmp_path / "pid"
    with ChildCall(_sleeps_after_writing_its_pid, str(pid_file)):
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        os.kill(pid, 0)  # running while this process goes on
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with ChildCall(os.getpid) as call:
        assert call.result() != os.getpid()
