"""Import stage "roads": the drivable road graph and its contraction hierarchy under ``graph/``.

Reads the PBF with pyosmium through :func:`engine.routing.build.build_graph` (car profile, turn
restrictions, turn graph, CH) and writes the numpy arrays described in
:mod:`engine.routing.graph`. Counts for the manifest: road nodes, edges, turns, restrictions.
"""

from __future__ import annotations

from engine import layout
from engine.errors import DatasetError
from engine.ingest.context import ImportContext
from engine.routing.build import build_graph


def run(ctx: ImportContext) -> dict[str, int]:
    graph, counts = build_graph(ctx.pbf_path, log=ctx.log)
    if graph.n_edges == 0:
        ctx.log.warning("roads: no drivable road in %s", ctx.pbf_path.name)
    out = ctx.out_dir / layout.GRAPH_DIR
    try:
        graph.save(out)
    except OSError as exc:
        raise DatasetError(f"cannot write the road graph to {out}: {exc}") from exc
    ctx.shared["road_graph"] = graph
    if graph.meta.get("bbox") and not ctx.shared.get("bbox"):
        ctx.shared["bbox"] = graph.meta["bbox"]  # when no earlier stage set the region's bbox
    return counts
