"""What Linux's /proc says of a process or of the machine, for the benchmarks: a process's
``stat`` fields (CPU time, page faults), the bytes it has had read from storage, and the
machine's page-fault count."""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command's closing parenthesis (the command may
    hold spaces and parentheses): index 0 is the state, 9 ``majflt``, 11 and 12 user and system
    CPU ticks (proc(5)'s fields 3, 12, 14 and 15). OSError when the process is gone."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def major_faults(pid: int) -> int:
    """Pages the process has read back from disk since it started (``majflt``)."""
    return int(stat_fields(pid)[9])


def storage_read_bytes(pid: int | str = "self") -> int:
    """Bytes the process has had read from storage since it started (``read_bytes`` of
    ``/proc/<pid>/io``: reads the page cache answered do not count)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        name, _, value = line.partition(": ")
        if name == "read_bytes":
            return int(value)
    return 0


def machine_major_faults() -> int:
    """Pages every process of the machine has read back from disk (``pgmajfault`` of /proc/vmstat)."""
    for line in Path("/proc/vmstat").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "pgmajfault":
            return int(value)
    return 0
