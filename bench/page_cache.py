"""The page cache's hold on a dataset, for benchmarks that start a node as if after a reboot.

A dataset stores files of equal content once, under several names (hard links,
:mod:`engine.identical_files`): each file is asked about once, not once per name."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from engine.identical_files import distinct_files


def evict(directory: Path) -> int:
    """Drop the cached pages of every file under ``directory`` (``POSIX_FADV_DONTNEED``, which
    leaves dirty pages and those a process maps: each file is written back first); the bytes of
    the files asked."""
    return sum(evict_file(path) for path in distinct_files(directory))


def evict_file(path: Path) -> int:
    """Drop the cached pages of one file (written back first); its size in bytes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def resident_bytes(directory: Path) -> int:
    """The bytes of the files under ``directory`` held in the page cache (util-linux's fincore)."""
    files = [str(path) for path in distinct_files(directory)]
    if not files:
        return 0
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", *files], capture_output=True, text=True, check=True
    )
    return sum(int(line) for line in out.stdout.split())
