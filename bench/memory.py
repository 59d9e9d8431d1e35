"""A process's memory as Linux accounts it (``/proc/<pid>/smaps_rollup``), for the benchmarks.

What a process costs a node on its own is the memory it wrote and nobody else maps: its private
dirty pages (its heap, the arrays it built). Two other figures overstate it:

- private memory (USS) also counts the clean pages of a memory-mapped file while only this process
  maps them: a lone web worker's view of the dataset looks private until a second worker touches
  the same pages;
- anonymous memory also counts the pages a forked process still shares, copy-on-write, with its
  parent (gunicorn's workers, Celery's pool processes): summed over the processes of one parent,
  it counts those pages once per process.

A fresh process that forked from nothing (a benchmark's child) has the three close together.
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


def own_mb(pid: int | str = "self") -> float:
    """The process's private dirty pages, MiB: what it alone costs (module doc)."""
    return round(smaps_rollup_mb(pid).get("Private_Dirty", 0.0), 1)
