"""Reading a dataset's files into the kernel's page cache ahead of the requests that need them.

The components read their files page by page as requests touch them (numpy arrays memory-mapped,
SQLite through its own reads). On a node whose page cache does not hold the dataset yet (just
started, just pulled a new version, after a reboot), each request of a large region then waits on
the disk for every page it is the first to touch: at country size that multiplied the routes'
and the geocodes' latency for minutes after a start (docs/engineering-history.md, "Page-cache
prefetch").

:func:`prefetch` asks the kernel to read whole files in the background
(``posix_fadvise(POSIX_FADV_WILLNEED)``), in the order given, as long as they fit in a share of
the memory the machine has available: a dataset larger than that gets its first files read
(the routing graph before the search index), not a cache that evicts what it just read. The
kernel reads at most its readahead window per call, so a file is advised in slices no larger
than the smallest window devices use (128 KiB); on pages already cached a call costs
microseconds (about 6 ms a GB).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("meridian.page_cache")

SLICE_BYTES = 128 * 1024  # Linux's default readahead window: a WILLNEED advice reads up to it
BUDGET_SHARE = 0.75  # of the memory available when the prefetch starts
MEMINFO = Path("/proc/meminfo")


def available_bytes(meminfo: Path = MEMINFO) -> int:
    """The memory the kernel could give processes and the page cache now (``MemAvailable``: free
    memory and the cache it can reclaim); 0 where it cannot be read (then nothing is prefetched)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def files_under(paths: Iterable[Path]) -> Iterator[Path]:
    """The regular files of ``paths`` in their order (a directory's files sorted by name)."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            yield path


@dataclass
class Prefetch:
    """What one prefetch advised and left out."""

    budget: int
    advised: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    advised_bytes: int = 0


def advise(path: Path) -> int:
    """Ask the kernel to read ``path`` into the page cache; its size (0 if it is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        for offset in range(0, size, SLICE_BYTES):
            os.posix_fadvise(fd, offset, SLICE_BYTES, os.POSIX_FADV_WILLNEED)
        return size
    finally:
        os.close(fd)


def prefetch(paths: Iterable[Path], budget: int | None = None) -> Prefetch:
    """Advise the files of ``paths`` in order while their sizes add up to at most ``budget``
    bytes (by default :data:`BUDGET_SHARE` of the memory available); a file that would pass it
    is skipped and the next ones still considered."""
    if budget is None:
        budget = int(available_bytes() * BUDGET_SHARE)
    done = Prefetch(budget)
    if not hasattr(os, "posix_fadvise"):  # not Linux: the components read as before
        return done
    for path in files_under(paths):
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if done.advised_bytes + size > budget:
            done.skipped.append(path)
            continue
        done.advised_bytes += advise(path)
        done.advised.append(path)
    return done


def prefetch_in_background(paths: list[Path], what: str) -> threading.Thread:
    """:func:`prefetch` in a daemon thread (the advice calls wait while the device's queue is
    full); logs what it read and what did not fit."""

    def run() -> None:
        done = prefetch(paths)
        log.info(
            "page cache: %s: %d file(s), %.0f MB advised; %d file(s) past the budget of %.0f MB%s",
            what,
            len(done.advised),
            done.advised_bytes / 1e6,
            len(done.skipped),
            done.budget / 1e6,
            f" ({', '.join(p.name for p in done.skipped[:5])})" if done.skipped else "",
        )

    thread = threading.Thread(target=run, name="meridian-prefetch", daemon=True)
    thread.start()
    return thread
