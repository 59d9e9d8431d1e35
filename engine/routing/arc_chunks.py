"""The arcs one side of a contraction emits (upward or downward), kept as chunks until they become
the hierarchy's CSR arrays.

The contraction (:func:`engine.routing.contraction.contract`) writes its finished arcs (``at``,
``to``, ``w``, ``mid`` each) into a growable buffer and hands the buffer over whenever it holds
``flush_at`` arcs. :class:`ArcChunks` copies the buffer's arcs out, to ``.npy`` files in a
directory when it has one (the arcs then take disk, not memory, while the contraction goes on: they
are the largest thing it makes, ~20 bytes per arc and 18 arcs per node for a car's turn graph),
else in memory. :meth:`ArcChunks.csr` turns them into CSR over the arcs' ``at`` node in two passes
over the chunks (count, then place), each node's arcs in the order they were emitted: what a
stable sort by ``at`` gives, without an index array over all arcs. Given the hierarchy's storage
order (:mod:`engine.routing.ch_order`), it renumbers the nodes on the way: ``at``, ``to`` and
``mid`` become the nodes' stored positions.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from numba import njit

COLUMNS = ("at", "to", "w", "mid")

Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # at, to, w, mid
Buffer = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # ... and used[1]


@njit(cache=True, inline="always")
def _renumbered(node, position):
    """``node``'s stored position (``position`` empty: its own number; -1 stays -1)."""
    if node < 0 or position.shape[0] == 0:
        return node
    return position[node]


@njit(cache=True)
def _count(first, at, position):
    """Add each arc to its node's count (``first[at + 1]``, ``at`` renumbered)."""
    for i in range(at.shape[0]):
        first[_renumbered(at[i], position) + 1] += 1


@njit(cache=True)
def _place(cursor, at, to, w, mid, out_to, out_w, out_mid, position):
    """Write each arc at its node's next free slot (``cursor[at]``), in the chunk's order, its
    nodes renumbered."""
    for i in range(at.shape[0]):
        a = _renumbered(at[i], position)
        j = cursor[a]
        cursor[a] = j + 1
        out_to[j] = _renumbered(to[i], position)
        out_w[j] = w[i]
        out_mid[j] = _renumbered(mid[i], position)


class ArcChunks:
    """One output of the contraction: chunks of arcs in emission order, on disk under
    ``directory`` (the caller's: it must exist; each chunk's files go once :meth:`csr` has placed
    them) or in memory when it is None."""

    def __init__(self, name: str, directory: Path | None = None) -> None:
        self.name = name
        self.directory = directory
        self._chunks: list[Chunk | Path] = []
        self.count = 0

    def take(self, buffer: Buffer) -> None:
        """Copy out the buffer's ``used[0]`` arcs and empty it (the contraction refills it)."""
        used = buffer[4]
        m = int(used[0])
        if m == 0:
            return
        columns = tuple(column[:m] for column in buffer[:4])
        if self.directory is None:
            self._chunks.append(tuple(column.copy() for column in columns))  # type: ignore[arg-type]
        else:
            path = self.directory / f"{self.name}-{len(self._chunks):05d}"
            path.mkdir()
            for column, values in zip(COLUMNS, columns, strict=True):
                np.save(path / f"{column}.npy", values)
            self._chunks.append(path)
        self.count += m
        used[0] = 0

    def csr(self, n: int, position: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(first [n+1] int64, to, w, mid) over the ``n`` nodes, each node's arcs in emission order;
        with ``position`` (each node's stored position), over the nodes renumbered so.
        Consumes the chunks: each goes (its files too) once its arcs are placed."""
        position = np.zeros(0, np.int32) if position is None else position
        first = np.zeros(n + 1, np.int64)
        dtypes = (np.dtype(np.int32), np.dtype(np.float64), np.dtype(np.int32))
        for chunk in self._chunks:
            at, to, w, mid = _load(chunk)
            _count(first, at, position)
            dtypes = (to.dtype, w.dtype, mid.dtype)
        np.cumsum(first, out=first)
        out_to = np.empty(self.count, dtypes[0])
        out_w = np.empty(self.count, dtypes[1])
        out_mid = np.empty(self.count, dtypes[2])
        cursor = first[:n].copy()
        while self._chunks:
            chunk = self._chunks.pop(0)
            _place(cursor, *_load(chunk), out_to, out_w, out_mid, position)
            if isinstance(chunk, Path):
                shutil.rmtree(chunk)
        self.count = 0
        return first, out_to, out_w, out_mid


def _load(chunk: Chunk | Path) -> Chunk:
    if isinstance(chunk, Path):
        return tuple(np.load(chunk / f"{column}.npy") for column in COLUMNS)
    return chunk
