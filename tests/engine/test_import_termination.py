"""An import stopped from outside leaves nothing behind: no child process still working, no
partial version on disk (engine/ingest/child_process.py, engine/ingest/pipeline.py, cli/main.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil  # type: ignore[import-untyped]

from config.settings import PROJECT_ROOT
from engine import layout
from engine.ingest.pipeline import BUILDING, import_pbf, remove_abandoned_builds

MONACO = PROJECT_ROOT / "data" / "samples" / "monaco.osm.pbf"

# a process that starts a child which sleeps for a minute, prints the child's pid, then waits
PARENT = """
import time
from engine.ingest.child_process import start_child
child = start_child(time.sleep, (60,), "sleeper")
print(child.pid, flush=True)
time.sleep(60)
"""


def _gone(pids: list[int], timeout: float) -> list[int]:
    """The processes of ``pids`` still running after ``timeout`` seconds."""
    alive = [psutil.Process(p) for p in pids if psutil.pid_exists(p)]
    _ended, still = psutil.wait_procs(alive, timeout=timeout)
    return [p.pid for p in still if p.status() != psutil.STATUS_ZOMBIE]


def test_a_child_of_the_import_dies_with_its_parent_however_the_parent_ends():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        child = int(parent.stdout.readline())
        assert psutil.pid_exists(child)
        parent.kill()  # SIGKILL: no handler, no finally block runs
        parent.wait(10)
        assert _gone([child], timeout=10) == []
    finally:
        parent.kill()
        if child and psutil.pid_exists(child):
            os.kill(child, signal.SIGKILL)


def test_an_import_stopped_by_sigterm_removes_its_partial_version_and_stops_its_children(tmp_path):
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "import", str(MONACO), "--name", "monaco"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATA_DIR": str(data)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for line in proc.stdout:  # the search stage runs in a child, and that child has its own
            if line.startswith("[2/4] search"):
                break
        versions = layout.versions_dir(data, "monaco")
        deadline = time.monotonic() + 60
        while not psutil.Process(proc.pid).children(recursive=True) and time.monotonic() < deadline:
            time.sleep(0.05)
        children = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        assert children and list(versions.glob(f"{BUILDING}*"))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 128 + signal.SIGTERM
        assert list(versions.glob(f"{BUILDING}*")) == []
        assert _gone(children, timeout=10) == []
    finally:
        proc.kill()
        proc.wait()


def test_a_later_import_removes_what_a_killed_import_was_building_but_not_a_running_ones(tmp_path):
    dead_pid = subprocess.Popen(["true"])
    dead_pid.wait()
    abandoned = tmp_path / f"{BUILDING}20261201T000000-abcd1234-{dead_pid.pid}"
    running = tmp_path / f"{BUILDING}20261201T000001-abcd1234-{os.getpid()}"
    finished = tmp_path / "20261201T000002-abcd1234"
    for path in (abandoned, running, finished):
        (path / "graph").mkdir(parents=True)
    assert remove_abandoned_builds(tmp_path) == [abandoned]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running.name, finished.name])


def test_a_new_import_clears_an_abandoned_build_of_its_region(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    versions = layout.versions_dir(tmp_path, "monaco")
    abandoned = versions / f"{BUILDING}20261201T000000-abcd1234-{dead.pid}"
    abandoned.mkdir(parents=True)
    import_pbf(MONACO, tmp_path, "monaco", profiles=("car",))
    assert not abandoned.exists()
    assert not list(versions.glob(f"{BUILDING}*"))
