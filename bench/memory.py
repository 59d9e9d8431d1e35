"""A process's memory as Linux accounts it (``/proc/<pid>/smaps_rollup``), for the benchmarks.

Anonymous memory (the heap, arrays a process builds) is what each process really pays. A page of
a memory-mapped file counts as *private* while only one process maps it, so a lone web worker's
view of the dataset looks private (USS) until a second worker touches the same pages: a figure of
private memory alone overstates what a worker costs a node.
"""

from __future__ import annotations

from pathlib import Path


def smaps_rollup_mb(pid: int | str = "self") -> dict[str, float]:
    """Every field of the process's smaps rollup that is a size, in MiB (``Rss``, ``Anonymous``,
    ``Private_Clean``, ...)."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="ascii").splitlines()[1:]:
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    return fields


def anonymous_mb(pid: int | str = "self") -> float:
    return round(smaps_rollup_mb(pid).get("Anonymous", 0.0), 1)
