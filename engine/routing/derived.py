"""Arrays the query side derives from the road graph, written into the dataset by the import.

The numba kernels read arrays the graph does not store as such: the snapper's segments and grid,
the CH arcs' tail nodes and costs, the isochrone network's projected geometry. (The graph's own
float32/int32 columns they read at their stored width: a float32 widened before it is added or
subtracted gives the float64 a widened copy would, so no such copy is stored.) Built in each
process, they were private memory in every web worker (hundreds of MB for a region of a million
road nodes); written once by the ``roads`` stage, they are memory-mapped like the graph itself,
one copy in the page cache for every process of a node.

A component names what it needs as a :class:`DerivedArrays` group: the function that computes the
arrays from a :class:`~engine.routing.graph.RoadGraph`, and a version to bump whenever that function
changes what it returns. The ``roads`` stage writes every group of :data:`engine.ingest.roads.DERIVED`
under ``graph/derived/<name>-v<version>/`` (one ``.npy`` per array); :meth:`DerivedArrays.load`
maps those files read-only, or, for a graph without them (a dataset imported by an earlier
release, a graph built in memory by a test), computes the arrays in the process as before.
Either way the arrays are identical: the same function made them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from engine.routing.graph import RoadGraph

DERIVED_DIR = "derived"

Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class DerivedArrays:
    name: str
    version: int
    arrays: tuple[str, ...]  # the names ``compute`` returns, each written as <name>.npy
    # the arrays by name, or (name, array) pairs one after the other, so that ``write`` saves each
    # and lets it go before the next is computed
    compute: Callable[[RoadGraph], Arrays | Iterator[tuple[str, np.ndarray]]]

    def directory(self, graph_dir: Path) -> Path:
        return Path(graph_dir) / DERIVED_DIR / f"{self.name}-v{self.version}"

    def load(self, graph: RoadGraph) -> Arrays:
        """The group's arrays: memory-mapped when the import wrote them, else computed now."""
        graph_dir = getattr(graph, "path", None)  # None: a graph built in memory
        written = self._mapped(graph_dir) if graph_dir is not None else None
        return written if written is not None else self.computed(graph)

    def write(self, graph: RoadGraph, graph_dir: Path) -> None:
        directory = self.directory(graph_dir)
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for name, array in self._pairs(graph):
            np.save(directory / f"{name}.npy", np.ascontiguousarray(array))
            written.append(name)
            del array  # before the next one is computed
        self._check(written)

    def computed(self, graph: RoadGraph) -> Arrays:
        """The arrays by name, computed now (what a process does for a graph without them written)."""
        arrays = dict(self._pairs(graph))
        self._check(list(arrays))
        return {name: np.ascontiguousarray(arrays[name]) for name in self.arrays}

    def _pairs(self, graph: RoadGraph) -> Iterator[tuple[str, np.ndarray]]:
        computed = self.compute(graph)
        return iter(computed.items()) if isinstance(computed, dict) else computed

    def _check(self, names: list[str]) -> None:
        if sorted(names) != sorted(self.arrays):
            raise ValueError(f"derived arrays {self.name}: computed {sorted(names)}, declared {sorted(self.arrays)}")

    def _mapped(self, graph_dir: Path) -> Arrays | None:
        """Every array of the group as a plain read-only ndarray over the file's pages (see
        :meth:`engine.routing.graph.RoadGraph.open`), or None when any file is missing."""
        directory = self.directory(graph_dir)
        paths = {name: directory / f"{name}.npy" for name in self.arrays}
        if not all(path.exists() for path in paths.values()):
            return None
        return {name: np.load(path, mmap_mode="r").view(np.ndarray) for name, path in paths.items()}
