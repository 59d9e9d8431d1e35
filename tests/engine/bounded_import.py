"""Import a PBF with every bounded-memory path of a country-size import taken, however small the
file: the graph parked and contracted in a child, the contraction's arcs spilled to disk, and
every chunked step (edges' geometry, turns, search rows, admin parts, contexts, address rows,
street pieces) in chunks far smaller than the file. Run by tests/engine/test_bounded_import.py.

    python tests/engine/bounded_import.py PBF DATA_DIR REGION

The limits are set at module level, not under ``__main__``: the contraction's spawned child
imports this file again (as ``__mp_main__``) and so runs with them too. Prints, as JSON, the
limits the child saw.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.ingest import search, search_addresses
from engine.routing import build, ch
from engine.search import street_parts

ch.SPILL_MIN_ARCS = 0
ch.FLUSH_ARCS = 1 << 10
build.PARK_MIN_TURNS = 0
build.EDGE_CHUNK = 1 << 10
build.TURN_CHUNK_EDGES = 1 << 10
search.FLUSH_ROWS = 500
search.PARTS_CACHE_MAX = 1_000
search.CONTEXTS_MAX = 1_000
search_addresses.CHUNK = 1_000
street_parts.WRITE_ROWS = 500


def limits() -> dict[str, int]:
    return {"spill_min_arcs": ch.SPILL_MIN_ARCS, "park_min_turns": build.PARK_MIN_TURNS}


if __name__ == "__main__":
    from engine.ingest.child_process import call_in_child
    from engine.ingest.pipeline import import_pbf

    pbf, data_dir, region = sys.argv[1:4]
    import_pbf(Path(pbf), Path(data_dir), region, force=True)
    print(json.dumps({"child": call_in_child(limits)}))
