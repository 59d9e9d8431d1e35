"""Import progress on the terminal, and each stage's peak memory.

``meridian import`` of a country runs for tens of minutes: the user sees which stage runs
(``[3/4] roads``), and on a terminal one live line per long step with its items, rate and, when
the step knows its total, percentage and ETA::

    [3/4] roads
      roads: contraction (car)  412,000/1,167,848 turn nodes  35%  2,310/s  ETA 5:27  mem 2,604 MB

The live line is redrawn in place at most every ``interval`` seconds and ends with a newline
when the step ends. Written to something that is not a terminal (a log file, CI, a container's
log), the stage lines appear (start, then seconds and peak memory) and, for a step that runs
longer than ``log_interval`` (a minute), one line each ``log_interval`` and one with its total
when it ends: a country's import logs a line a minute, a city's only its stage lines. Each step
line ends with the process's anonymous memory at that moment (``mem``, see below), so a log shows
which step holds the most (the import's processes together).

A step's count is either advanced by the Python loop that does the work (``Step.advance``), or,
for a numba kernel that runs for minutes without coming back, read from a one-element array the
kernel writes (``Step.watch``), polled by a thread while the kernel (``nogil``) runs.

Peak memory per stage: the process's peak resident set (``VmHWM`` of ``/proc/self/status``) is
reset at each stage's start (``/proc/self/clear_refs``, value 5) and read at its end, so a stage's
figure is the process's peak while that stage ran (what earlier stages still hold included).
Where the kernel lacks these files, the figure is the process's peak so far (``ru_maxrss``). The
reset also restarts what ``getrusage`` (``ru_maxrss``) and ``/usr/bin/time`` report for the
process: after an import they show the last stage's peak only; the import's own peak is the
manifest's ``peak_rss_mb``, the largest of its stages'. That peak counts the pages of the files
the stage maps (graphs written and mapped back, spilled arcs), which stay resident on an idle
machine and which the kernel drops under pressure; so each stage also reports its peak anonymous
memory (``RssAnon``: heap and arrays, what the machine must really hold), sampled by a thread
(:func:`sampled_peaks`). A stage that runs work in child processes (the search stage's writer,
each profile's contraction) holds their memory too: the sampled figures, and the ``mem`` of the
step lines, are the sums over the process and the processes it started (:func:`tree_anon_mb`).
"""

from __future__ import annotations

import os
import re
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TextIO

import numpy as np

_PROC = Path("/proc")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_HWM = re.compile(r"^VmHWM:\s+(\d+) kB", re.MULTILINE)
_RSS = re.compile(r"^VmRSS:\s+(\d+) kB", re.MULTILINE)
_ANON = re.compile(r"^RssAnon:\s+(\d+) kB", re.MULTILINE)
ANON_SAMPLE_S = 0.5


def reset_peak_rss() -> bool:
    """Start a new peak-RSS window for this process; False when the kernel cannot."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def _status_mbs(fields: tuple[re.Pattern[str], ...], pid: int | str = "self") -> list[float | None]:
    """Fields of ``/proc/<pid>/status`` in MB, the file read once; None for each where the kernel
    lacks the file or the field (or the process has ended)."""
    try:
        text = (_PROC / str(pid) / "status").read_text()
    except OSError:
        return [None] * len(fields)
    found = [field.search(text) for field in fields]
    return [int(f.group(1)) / 1024 if f is not None else None for f in found]


def _status_mb(field: re.Pattern[str]) -> float | None:
    """A field of this process's ``/proc/self/status`` in MB (see :func:`_status_mbs`)."""
    return _status_mbs((field,))[0]


def rss_mb() -> float:
    """This process's resident set in MB now (0 where the kernel lacks ``/proc/self/status``)."""
    return _status_mb(_RSS) or 0.0


def anon_mb() -> float:
    """This process's anonymous resident memory in MB now (0 where the kernel does not say)."""
    return _status_mb(_ANON) or 0.0


def descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and those they started, by the parent each names in
    ``/proc/<pid>/stat`` (``/proc/<pid>/task/<tid>/children`` is missing from many kernels)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [entry.name for entry in os.scandir(_PROC) if entry.name.isdigit()]
    except OSError:
        return []
    for name in entries:
        try:
            stat = (_PROC / name / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        parent = int(stat.rpartition(")")[2].split()[1])  # after the command's name, which may hold spaces
        children.setdefault(parent, []).append(int(name))
    found, frontier = [], [pid]
    while frontier:
        below = [child for parent in frontier for child in children.get(parent, ())]
        found += below
        frontier = below
    return found


def _tree_mbs(fields: tuple[re.Pattern[str], ...], pid: int | None = None) -> list[float]:
    """Fields of ``/proc/<pid>/status`` in MB summed over process ``pid`` (this one by default)
    and the processes it started: one scan of ``/proc``, each status file read once."""
    pid = os.getpid() if pid is None else pid
    rows = [_status_mbs(fields, p) for p in (pid, *descendants(pid))]
    return [sum(row[i] or 0.0 for row in rows) for i in range(len(fields))]


def tree_anon_mb(pid: int | None = None) -> float:
    """The anonymous resident memory in MB of process ``pid`` (this one by default) and of the
    processes it started: what an import that runs steps in child processes holds in all."""
    return _tree_mbs((_ANON,), pid)[0]


@contextmanager
def _calling_every(interval: float, fn: Callable[[], None], name: str) -> Iterator[None]:
    """``fn()`` every ``interval`` seconds in a thread (``name``) while the block runs, and once
    more when it ends."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            fn()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        fn()


@dataclass
class Peaks:
    """The largest memory seen (MB): anonymous resident, and resident in all."""

    anon: float
    rss: float


@contextmanager
def sampled_peaks(interval: float = ANON_SAMPLE_S, *, tree: bool = False) -> Iterator[Peaks]:
    """The largest anonymous and resident memory seen while the block runs, in the yielded
    :class:`Peaks` once it ends: this process's, or with ``tree`` the sum over this process and
    the ones it started (:func:`tree_anon_mb`); sampled every ``interval`` seconds by a thread,
    and at the block's start and end (a peak shorter than ``interval`` may be missed)."""

    def now() -> Peaks:
        anon, rss = _tree_mbs((_ANON, _RSS)) if tree else [mb or 0.0 for mb in _status_mbs((_ANON, _RSS))]
        return Peaks(anon, rss)

    peaks = now()

    def sample() -> None:
        seen = now()
        peaks.anon, peaks.rss = max(peaks.anon, seen.anon), max(peaks.rss, seen.rss)

    with _calling_every(interval, sample, "import-memory"):
        yield peaks


@contextmanager
def stage_peaks(interval: float = ANON_SAMPLE_S) -> Iterator[Peaks]:
    """A stage's peaks, in the yielded :class:`Peaks` once the block ends: the anonymous and
    resident memory of this process and the ones it started (:func:`sampled_peaks` with
    ``tree``), the resident peak at least this process's own ``VmHWM`` since the block began
    (exact where sampling may miss a short peak)."""
    reset_peak_rss()
    with sampled_peaks(interval, tree=True) as peaks:
        yield peaks
    peaks.rss = max(peaks.rss, peak_rss_mb())


def peak_rss_mb() -> float:
    """This process's peak resident set in MB since the last :func:`reset_peak_rss` (or its start)."""
    peak = _status_mb(_HWM)
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _count(n: float) -> str:
    return f"{n:,.0f}"


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Step:
    """One long step of a stage: a count of items done, out of ``total`` when known."""

    def __init__(
        self, progress: ImportProgress, label: str, total: int | None, unit: str, started: float | None = None
    ) -> None:
        self._progress = progress
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        now = progress.clock()
        self.started = now if started is None else started
        self._shown = now

    def advance(self, n: int = 1) -> None:
        self.done += n
        progress = self._progress
        now = progress.clock()
        if now - self._shown >= (progress.interval if progress.live else progress.log_interval):
            self._shown = now
            progress.show(self.line(now))

    def set(self, done: int) -> None:
        self.advance(done - self.done)

    def line(self, now: float, ended: bool = False) -> str:
        """Items, rate, and while it runs its percentage and ETA; once ``ended``, its time."""
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        parts = [f"  {self.label}  {_count(self.done)}"]
        if self.total:
            parts[0] += f"/{_count(self.total)}"
        parts[0] += f" {self.unit}"
        if self.total:
            parts.append(f"{min(100.0, 100.0 * self.done / self.total):3.0f}%")
        parts.append(f"{_count(rate)}/s")
        if ended or not self.total or self.done >= self.total:
            parts.append(_duration(elapsed))
        elif rate > 0:
            parts.append(f"ETA {_duration((self.total - self.done) / rate)}")
        return "  ".join(parts)

    @contextmanager
    def watch(self, counter: np.ndarray) -> Iterator[None]:
        """Poll ``counter[0]`` (items done, written by a kernel that releases the GIL) while the
        block runs."""
        with _calling_every(self._progress.interval, lambda: self.set(int(counter[0])), "import-progress"):
            yield


class ImportProgress:
    """Stage lines always; live step lines only when ``live`` (default: the stream is a terminal).
    ``ImportProgress.silent()`` writes nothing (imports run by tests and benchmarks). Off a
    terminal, a step longer than ``log_interval`` seconds logs a line each ``log_interval``.
    ``memory`` gives the MB a step line shows (the anonymous resident memory of the process and
    of the ones it started; in a child of the import, the import's: :meth:`of_child`)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        live: bool | None = None,
        interval: float = 0.5,
        log_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        memory: Callable[[], float] = tree_anon_mb,
    ) -> None:
        self.stream = stream
        self.live = bool(stream is not None and (stream.isatty() if live is None else live))
        self.interval = interval
        self.log_interval = log_interval
        self.clock = clock
        self.memory = memory
        self._width = 0

    @classmethod
    def silent(cls) -> ImportProgress:
        return cls(None)

    @classmethod
    def terminal(cls) -> ImportProgress:
        return cls(sys.stderr)

    @classmethod
    def of_child(cls, stream: TextIO | None, live: bool) -> ImportProgress:
        """The progress of a child process the import started, its lines to ``stream`` (forwarded
        to the parent's): their ``mem`` is the parent's with all its children, the import's."""
        return cls(stream, live=live, memory=partial(tree_anon_mb, os.getppid()))

    def _write(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()

    def show(self, line: str) -> None:
        """Redraw the live line; off a terminal, write it as a line of its own. Either ends with the
        memory in use."""
        line += f"  mem {self.memory():,.0f} MB"
        if self.live:
            self._write("\r" + line.ljust(self._width))
            self._width = len(line)
        else:
            self._write(line + "\n")

    def _end_line(self) -> None:
        if self._width:
            self._write("\n")
            self._width = 0

    def stage_started(self, name: str, number: int, count: int) -> None:
        self._end_line()
        self._write(f"[{number}/{count}] {name}\n")

    def stage_finished(self, name: str, seconds: float, peak_mb: float, anon_mb: float | None = None) -> None:
        self._end_line()
        anon = f" ({anon_mb:,.0f} MB of it anonymous)" if anon_mb is not None else ""
        self._write(f"[done] {name} in {_duration(seconds)}, peak memory {peak_mb:,.0f} MB{anon}\n")

    @contextmanager
    def step(
        self, label: str, total: int | None = None, unit: str = "items", started: float | None = None
    ) -> Iterator[Step]:
        """A long step: advance (or watch) the yielded :class:`Step`; its last line stays. ``started``
        (this progress's clock) when its work began before this call, else now."""
        step = Step(self, label, total, unit, started)
        try:
            yield step
        finally:
            now = self.clock()
            if step.done and (self.live or now - step.started >= self.log_interval):
                self.show(step.line(now, ended=True))
            self._end_line()
