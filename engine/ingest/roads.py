"""Import stage "roads": the drivable road graph and its contraction hierarchy under ``graph/``.

Reads the PBF with pyosmium through :func:`engine.routing.build.build_graph` (car profile, turn
restrictions, turn graph, CH) and writes the numpy arrays described in
:mod:`engine.routing.graph`, then the arrays the query side derives from them (:data:`DERIVED`,
see :mod:`engine.routing.derived`) so that web and worker processes map them instead of building
them. Counts for the manifest: road nodes, edges, turns, restrictions.
"""

from __future__ import annotations

from pathlib import Path

from engine import layout
from engine.errors import DatasetError
from engine.ingest.context import ImportContext
from engine.matching.network import NETWORK_ARRAYS
from engine.routing.build import build_graph
from engine.routing.ch import ARC_TAILS
from engine.routing.derived import WIDE_COLUMNS, DerivedArrays
from engine.routing.graph import RoadGraph
from engine.routing.matrix import ARC_COSTS
from engine.routing.snap import SNAPPER_ARRAYS

# what the router, its CH query, the snapper and the isochrone/matching network read
DERIVED: tuple[DerivedArrays, ...] = (WIDE_COLUMNS, SNAPPER_ARRAYS, NETWORK_ARRAYS)
CH_DERIVED: tuple[DerivedArrays, ...] = (ARC_TAILS, ARC_COSTS)


def run(ctx: ImportContext) -> dict[str, int]:
    graph, counts = build_graph(ctx.pbf_path, log=ctx.log)
    if graph.n_edges == 0:
        ctx.log.warning("roads: no drivable road in %s", ctx.pbf_path.name)
    out = ctx.out_dir / layout.GRAPH_DIR
    try:
        graph.save(out)
        _write_derived(out)
    except OSError as exc:
        raise DatasetError(f"cannot write the road graph to {out}: {exc}") from exc
    ctx.shared["road_graph"] = graph
    if graph.n_edges:
        _warm_up(out)
    if graph.meta.get("bbox") and not ctx.shared.get("bbox"):
        ctx.shared["bbox"] = graph.meta["bbox"]  # when no earlier stage set the region's bbox
    return counts


def _write_derived(graph_dir: Path) -> None:
    """The derived arrays, computed from the graph as written (what a process would compute from
    the same files on open)."""
    written = RoadGraph.open(graph_dir)
    for group in DERIVED + (CH_DERIVED if written.has_ch else ()):
        group.write(written, graph_dir)


def _warm_up(graph_dir) -> None:
    """Route once on the written graph: numba compiles the query kernels now and caches them
    (``cache=True``), so the first web request does not pay seconds of compilation."""
    from engine.polyline import encode_arrays as encode
    from engine.routing.directions import build_steps
    from engine.routing.router import Router

    router = Router(RoadGraph.open(graph_dir))
    g = router.g
    a = router.snap(float(g.node_lat[0]), float(g.node_lng[0]))
    b = router.snap(float(g.node_lat[-1]), float(g.node_lng[-1]))
    if a is None or b is None:
        return
    router.snapper.candidates(a.lat, a.lng, 20.0)
    leg = router.leg(a, b) or router.leg(a, a)
    if leg is not None:
        router.leg_summary(leg)
        lat, lng = router.leg_geometry(leg)
        encode(lat, lng)
        build_steps(router, leg)
        router.alternatives(a, b, leg, 1)
