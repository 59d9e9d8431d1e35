"""engine/page_cache.py: a dataset's files are read into the page cache ahead of the requests, in
the components' order and within a memory budget (``fincore`` of util-linux reads what is cached)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from engine import layout
from engine.dataset import Dataset
from engine.page_cache import available_bytes, files_under, prefetch
from engine.warmup import warm_dataset

pytestmark = pytest.mark.skipif(
    shutil.which("fincore") is None or not hasattr(os, "posix_fadvise"), reason="needs Linux's fincore"
)


def _resident(path: Path) -> int:
    """Bytes of ``path`` in the page cache."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)], capture_output=True)
    return int(out.stdout.decode().strip())


def _evicted(path: Path) -> Path:
    """``path`` written to disk and dropped from the page cache (skips where the file system
    keeps it in memory whatever is advised, as tmpfs does)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    if _resident(path) > 0:
        pytest.skip(f"{path.parent} keeps its files in memory")
    return path


def _cached_whole(path: Path, timeout_s: float = 10.0) -> bool:
    """Whether all of ``path`` comes into the page cache within ``timeout_s`` (read by the kernel
    in the background after the advice)."""
    deadline = time.monotonic() + timeout_s
    while _resident(path) < path.stat().st_size:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _file(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return path


def test_prefetch_reads_whole_files_into_the_cache(tmp_path: Path) -> None:
    # larger than any readahead window: a single advice for the whole file would read its start
    big = _evicted(_file(tmp_path / "graph" / "arrays.npy", 24 * 2**20))
    done = prefetch([tmp_path / "graph"], budget=2**30)
    assert done.advised == [big] and done.advised_bytes == big.stat().st_size
    assert _cached_whole(big)


def test_files_past_the_budget_are_skipped_and_later_ones_still_read(tmp_path: Path) -> None:
    first = _evicted(_file(tmp_path / "a.bin", 300_000))
    too_big = _evicted(_file(tmp_path / "b.bin", 800_000))
    last = _evicted(_file(tmp_path / "c.bin", 200_000))
    done = prefetch([first, too_big, last], budget=600_000)
    assert done.advised == [first, last] and done.skipped == [too_big]
    assert _cached_whole(last)
    assert _resident(too_big) == 0


def test_files_under_keeps_the_order_given_and_sorts_a_directory(tmp_path: Path) -> None:
    one = _file(tmp_path / "z.sqlite", 10)
    inner = [_file(tmp_path / "graph" / name, 10) for name in ("b.npy", "a.npy", "derived/c.npy")]
    assert list(files_under([one, tmp_path / "graph", tmp_path / "absent"])) == [one, *sorted(inner)]


def test_available_memory_is_read_from_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683868 kB\nMemFree:        22714684 kB\nMemAvailable:   23480012 kB\n")
    assert available_bytes(meminfo) == 23480012 * 1024
    assert available_bytes(tmp_path / "absent") == 0  # unknown: nothing prefetched


def test_a_datasets_files_come_routing_graph_first(tmp_path: Path) -> None:
    version = tmp_path / "v1"
    version.mkdir()
    manifest = {"format_version": layout.FORMAT_VERSION, "region": "r", "version": "v1", "profiles": ["car", "foot"]}
    (version / layout.MANIFEST).write_text(json.dumps(manifest))
    opened = [("admin", "car"), ("search", "car"), ("router", "car"), ("roadnet", "car"), ("router", "foot")]
    assert Dataset(version).files_of(opened) == [
        version / "graph",
        version / "graph-foot",
        version / layout.ADMIN_DB,
        version / layout.SEARCH_DB,
    ]


def test_warming_a_dataset_reads_its_routing_graph_into_the_cache(data_dir: Path, tmp_path: Path) -> None:
    # the warm-up's own routes read a part of the graph's arrays (none of some of them); the
    # prefetch reads all of them. A copy: the samples' files are mapped by other tests' processes
    # and stay in the cache whatever is advised.
    copy = shutil.copytree((data_dir / "regions" / "helsinki" / "current").resolve(), tmp_path / "helsinki")
    ds = Dataset(copy)
    largest = max(files_under([ds.path / "graph"]), key=lambda path: path.stat().st_size)
    _evicted(largest)
    warm_dataset(ds, groups=frozenset({"routing"}))
    assert _cached_whole(largest), f"{largest.name}: {_resident(largest)} of {largest.stat().st_size} bytes"
