"""Each profile's contraction hierarchy built in a child process of its own.

At country size the contraction's working set (its pools of arcs, the witness searches' scratch)
is most of the roads stage's memory. Built in the stage's own process, that memory did not always
leave with the contraction: in two of four imports of the 10M-node country a 4.7 GiB resident
mapping outlived the car's contraction and stayed through the walker's and the cyclist's, so the
stage held ~18.5 GiB where the other two runs held ~8.5 (``docs/engineering-history.md``). A child
gives back all of its memory when it exits, whatever kept it alive, so each profile's contraction
starts from what the stage itself holds.

Nothing large travels through the pipe: the child maps the columns the stage parked on disk
(:func:`engine.routing.build.park_columns`), writes the hierarchy's arrays beside them, and the
stage maps those back (clean pages of a file, which saving the graph reads). The child's progress
lines reach the stage's stream (:func:`engine.ingest.child_process.call_in_child`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import numpy as np

from engine.heap_memory import unmap_large_blocks
from engine.ingest.child_process import call_in_child, can_have_children
from engine.progress import ImportProgress
from engine.routing.build import contract_here, parked_graph
from engine.routing.graph import RoadGraph

HIERARCHY_DIR = "hierarchy"  # in the parked directory: the child's arrays


def contract_apart(
    graph: RoadGraph, parked: Path | None, label: str, progress: ImportProgress
) -> dict[str, np.ndarray]:
    """:data:`engine.routing.build.Contraction` in a child process for a parked graph; a graph
    small enough to stay in memory is contracted here (a child's start would cost more than it
    saves), and so is any graph in a process that may not start children."""
    if parked is None or not can_have_children():
        return contract_here(graph, parked, label, progress)
    out = parked / HIERARCHY_DIR
    out.mkdir()
    names = call_in_child(_contract_parked, parked, out, label, progress.live, output=progress.stream)
    return {name: np.load(out / f"{name}.npy", mmap_mode="r") for name in names}


def _contract_parked(parked: Path, out: Path, label: str, live: bool, stream: TextIO | None = None) -> list[str]:
    """In the child: the hierarchy of the parked graph, its arrays written to ``out``; their names."""
    unmap_large_blocks()  # as in the import's process (engine.heap_memory): a spawned child starts without
    progress = ImportProgress.of_child(stream, live)
    arrays = contract_here(parked_graph(parked), parked, label, progress)
    for name, array in arrays.items():
        np.save(out / f"{name}.npy", array)
    return list(arrays)
