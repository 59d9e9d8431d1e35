"""Import progress: stage lines always, live step lines (items, rate, percentage, ETA) only on a
terminal; each stage's peak memory in the manifest."""

from __future__ import annotations

import gc
import io
import os
import re
import subprocess
import sys
import threading
import weakref

import numpy as np

from config.settings import PROJECT_ROOT
from engine.ingest.pipeline import import_pbf
from engine.progress import (
    ImportProgress,
    anon_mb,
    descendants,
    peak_rss_mb,
    reset_peak_rss,
    rss_mb,
    sampled_peaks,
    tree_anon_mb,
)
from tests.engine.osm_grid import OsmGrid


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_live_step_shows_items_rate_percentage_and_eta():
    out, clock = io.StringIO(), Clock()
    progress = ImportProgress(out, live=True, interval=1.0, clock=clock)
    with progress.step("roads: contraction (car)", total=1000, unit="nodes") as step:
        clock.now += 10
        step.advance(250)  # 25 per second: 750 left take 30 s
        first = out.getvalue()
        clock.now += 0.5
        step.advance(10)  # within the interval: not redrawn
        assert out.getvalue() == first
    assert first.startswith("\r") and "250/1,000 nodes" in first
    assert "25%" in first and "25/s" in first and "ETA 0:30" in first
    assert re.search(r"ETA 0:30  mem [1-9][\d,]* MB *$", first)  # this process's memory in use
    assert out.getvalue().endswith("\n")  # the step's last line stays


def test_step_without_total_shows_count_and_rate_only():
    out, clock = io.StringIO(), Clock()
    progress = ImportProgress(out, live=True, interval=0.0, clock=clock)
    with progress.step("roads: reading", unit="tagged objects") as step:
        clock.now += 2
        step.advance(3000)
    text = out.getvalue()
    assert "3,000 tagged objects" in text and "1,500/s" in text
    assert "%" not in text and "ETA" not in text


def test_not_a_terminal_prints_stage_lines_only():
    out = io.StringIO()  # isatty() is False
    progress = ImportProgress(out, interval=0.0)
    progress.stage_started("roads", 3, 4)
    with progress.step("roads: reading", total=10) as step:
        step.advance(10)
    progress.stage_finished("roads", 75.0, 1234.0)
    assert out.getvalue() == "[3/4] roads\n[done] roads in 1:15, peak memory 1,234 MB\n"


def test_not_a_terminal_logs_a_long_step_each_log_interval_and_its_total():
    out, clock = io.StringIO(), Clock()
    held = iter([2048.0, 2560.5])  # the memory in use when each line is written
    progress = ImportProgress(out, interval=0.0, log_interval=60.0, clock=clock, memory=lambda: next(held))
    with progress.step("search: addresses", total=1000, unit="addresses") as step:
        clock.now += 30
        step.advance(100)  # within the first minute: nothing
        assert out.getvalue() == ""
        clock.now += 30
        step.advance(100)
        clock.now += 30
        step.advance(100)  # 30 s after the last line: nothing
        clock.now += 20
    first, last = out.getvalue().splitlines()
    assert first == "  search: addresses  200/1,000 addresses   20%  3/s  ETA 4:00  mem 2,048 MB"
    assert last == "  search: addresses  300/1,000 addresses   30%  3/s  1:50  mem 2,560 MB"  # ended short of its total
    assert "\r" not in out.getvalue()


def test_watch_reads_a_counter_written_elsewhere():
    out = io.StringIO()
    progress = ImportProgress(out, live=True, interval=0.01)
    counter = np.zeros(1, np.int64)
    seen = threading.Event()
    with progress.step("work", total=100) as step, step.watch(counter):
        counter[0] = 40
        for _ in range(500):
            if "40/100" in out.getvalue():
                seen.set()
                break
            threading.Event().wait(0.01)
        counter[0] = 100
    assert seen.is_set()
    assert step.done == 100 and "100/100" in out.getvalue()


def test_peak_rss_window_resets():
    reset_peak_rss()
    big = np.ones(64 * 1024 * 1024, np.uint8)  # 64 MB touched
    during = peak_rss_mb()
    del big
    assert reset_peak_rss()
    assert peak_rss_mb() < during - 32


def test_the_anonymous_peak_counts_arrays_and_not_the_pages_of_a_mapped_file(tmp_path):
    """A 64 MB array made and freed inside the block shows in its anonymous peak; 64 MB of a
    file mapped and read do not (they do in the resident set's peak: ``VmHWM``)."""
    path = tmp_path / "mapped.npy"
    np.save(path, np.ones(64 * 1024 * 1024, np.uint8))
    reset_peak_rss()
    resident = rss_mb()
    with sampled_peaks(interval=0.01) as peaks:
        before = anon_mb()
        mapped = np.load(path, mmap_mode="r")
        assert int(mapped.sum()) == 64 * 1024 * 1024  # every page read
        del mapped
    assert peaks.anon < before + 16
    assert peak_rss_mb() > resident + 48
    with sampled_peaks(interval=0.01) as peaks:
        before = anon_mb()
        big = np.ones(64 * 1024 * 1024, np.uint8)
        for _ in range(500):  # until the sampler has seen it (at most 5 s on a busy machine)
            if peaks.anon > before + 48:
                break
            threading.Event().wait(0.01)
        del big
    assert peaks.anon > before + 48


HOLD_64_MB = "import sys; held = bytearray(64 * 1024 * 1024); held[::4096] = b'x' * len(held[::4096]); print(flush=True); sys.stdin.read()"


def test_the_memory_of_the_processes_an_import_starts_counts_in_its_sums():
    """A child holding 64 MB of anonymous memory (as a profile's contraction does in its child)
    shows in the tree's sum and in a tree-sampled peak, not in this process's own figure; once
    it has exited, the tree's sum is back where it was."""
    with sampled_peaks(interval=0.01, tree=True) as peaks:
        alone, own = tree_anon_mb(), anon_mb()
        child = subprocess.Popen([sys.executable, "-c", HOLD_64_MB], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            child.stdout.readline()  # its 64 MB are touched
            assert child.pid in descendants(os.getpid())
            holding = tree_anon_mb()
            for _ in range(500):  # until the sampler has seen it
                if peaks.anon > alone + 48:
                    break
                threading.Event().wait(0.01)
        finally:
            child.communicate(b"")
    assert holding > alone + 48
    assert anon_mb() < own + 16
    assert peaks.anon > alone + 48
    assert tree_anon_mb() < alone + 16


def _town(tmp_path):
    m = OsmGrid(
        """
        A----B----C----D
        |    |    |    |
        E----F----G----H
        """,
        grid_m=50,
    )
    m.way("ABCD", highway="residential", name="Main Street")
    m.way("EFGH", highway="residential", name="Side Street")
    for col in ("AE", "BF", "CG", "DH"):
        m.way(col, highway="residential")
    m.node("F", **{"addr:housenumber": "5", "addr:street": "Side Street"})
    return m.write(tmp_path / "town.osm.pbf")


def test_import_reports_each_stage_and_the_contraction(tmp_path):
    out = io.StringIO()
    result = import_pbf(
        _town(tmp_path),
        tmp_path / "data",
        "town",
        profiles=("car",),
        progress=ImportProgress(out, live=True, interval=0),
    )
    text = out.getvalue()
    for number, stage in enumerate(("admin", "search", "roads", "layers"), 1):
        assert f"[{number}/4] {stage}\n" in text
        assert f"[done] {stage} in " in text
        assert result.manifest["stages"][stage]["peak_rss_mb"] > 10
        assert 10 < result.manifest["stages"][stage]["peak_anon_mb"] <= result.manifest["stages"][stage]["peak_rss_mb"]
    assert result.manifest["peak_rss_mb"] == max(s["peak_rss_mb"] for s in result.manifest["stages"].values())
    n = result.manifest["counts"]["road_edges"]
    assert f"roads: contraction (car)  {n}/{n} CH nodes  100%" in text  # the car has no hubs
    assert "search: reading" in text and "roads: reading" in text


def test_cli_import_off_a_terminal_prints_stage_lines(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "import", str(_town(tmp_path)), "--profiles", "car"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={"DATA_DIR": str(tmp_path / "d"), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in lines] == [
        "[1/4]",
        "[done]",
        "[2/4]",
        "[done]",
        "[3/4]",
        "[done]",
        "[4/4]",
        "[done]",
    ]
    assert "\r" not in proc.stderr and "ETA" not in proc.stderr


def test_roads_stage_builds_profiles_one_at_a_time_and_keeps_only_mapped_graphs(tmp_path):
    from engine import layout
    from engine.ingest import roads
    from engine.ingest.context import ImportContext
    from engine.routing.build import iter_graphs
    from engine.routing.profiles import PROFILES

    pbf = _town(tmp_path)
    built = iter_graphs(pbf, (PROFILES["car"], PROFILES["foot"]))
    name, graph, _ = next(built)  # the car's graph, written and dropped by the caller before the next
    assert name == "car" and graph.n_edges > 0
    # the suspended generator holds no reference: a graph its caller lets go is freed at once (the
    # stage computes the derived arrays from the written files without the built arrays in memory)
    given = weakref.ref(graph)
    del graph
    gc.collect()
    assert given() is None

    out = tmp_path / "version"
    out.mkdir()
    ctx = ImportContext(pbf_path=pbf, region="town", out_dir=out, profiles=("car", "foot"))
    counts = roads.run(ctx)
    assert counts["road_edges"] > 0 and counts["foot_road_edges"] > 0
    for profile in ("car", "foot"):
        assert (out / layout.profile_graph_dir(profile) / "meta.json").exists()
    kept = ctx.shared["road_graph"]  # what later stages may read: the written car graph, mapped
    assert kept.path == out / layout.profile_graph_dir("car")
    assert not kept.edge_weight.flags.writeable
