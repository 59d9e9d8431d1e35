"""Import stage "roads": one road graph and contraction hierarchy per travel profile.

Reads the PBF once with pyosmium through :func:`engine.routing.build.build_graphs` (the profiles
of ``ctx.profiles``: car, foot, bicycle; turn restrictions, turn graph, CH) and writes, for each,
the numpy arrays described in :mod:`engine.routing.graph` under its directory (``graph/`` for the
car, ``graph-foot/``, ``graph-bicycle/``: :func:`engine.layout.profile_graph_dir`), then the arrays
the query side derives from them (:data:`DERIVED`, see :mod:`engine.routing.derived`) so that web
and worker processes map them instead of building them. Counts for the manifest: road nodes,
edges, turns, restrictions (the car's as ``road_*``, the others' as ``<profile>_road_*``).
"""

from __future__ import annotations

from pathlib import Path

from engine import layout
from engine.errors import DatasetError
from engine.heap_memory import release_free_memory
from engine.ingest.context import ImportContext
from engine.ingest.contraction_child import contract_apart
from engine.matching.network import NETWORK_ARRAYS
from engine.routing.build import iter_graphs
from engine.routing.ch import ARC_TAILS, CORE_LANDMARKS
from engine.routing.derived import DerivedArrays
from engine.routing.graph import RoadGraph
from engine.routing.matrix import ARC_COSTS
from engine.routing.profiles import PROFILES
from engine.routing.snap import SNAPPER_ARRAYS

# what the router, its CH query, the snapper and the isochrone/matching network read
DERIVED: tuple[DerivedArrays, ...] = (SNAPPER_ARRAYS, NETWORK_ARRAYS)
CH_DERIVED: tuple[DerivedArrays, ...] = (ARC_TAILS, ARC_COSTS, CORE_LANDMARKS)


def run(ctx: ImportContext) -> dict[str, int]:
    """Each profile's graph is written, and let go, before the next one is built: the stage holds
    one profile's graph at a time, and a country's contraction runs in a child process of its own
    (:mod:`engine.ingest.contraction_child`)."""
    profiles = tuple(PROFILES[name] for name in ctx.profiles)
    counts: dict[str, int] = {}
    written: list[Path] = []
    boxes = []
    graphs = iter_graphs(ctx.pbf_path, profiles, log=ctx.log, progress=ctx.progress, contract=contract_apart)
    for name, graph, graph_counts in graphs:
        if graph.n_edges == 0:
            ctx.log.warning("roads: no %s road in %s", PROFILES[name].adjective, ctx.pbf_path.name)
        if graph.meta.get("bbox"):
            boxes.append(graph.meta["bbox"])
        out = ctx.out_dir / layout.profile_graph_dir(name)
        try:
            graph.save(out)
            del graph  # the derived arrays are computed from the written files, mapped
            release_free_memory()
            _write_derived(out)
        except OSError as exc:
            raise DatasetError(f"cannot write the {name} road graph to {out}: {exc}") from exc
        prefix = "" if name == "car" else f"{name}_"
        counts.update({prefix + key: value for key, value in graph_counts.items()})
        written.append(out)
    car = ctx.out_dir / layout.profile_graph_dir("car")
    first = RoadGraph.open(written[0])
    ctx.shared["road_graph"] = RoadGraph.open(car) if car in written else first  # memory-mapped
    if first.n_edges:  # the kernels are the same for every profile: compiling once is enough
        _warm_up(written[0])
    if boxes and not ctx.shared.get("bbox"):  # when no earlier stage set the region's bbox
        ctx.shared["bbox"] = [
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        ]
    return counts


def _write_derived(graph_dir: Path) -> None:
    """The derived arrays, computed from the graph as written (what a process would compute from
    the same files on open). Each group opens the graph afresh: the pages an earlier group read
    leave the process's resident set with its maps."""
    groups = DERIVED + (CH_DERIVED if RoadGraph.open(graph_dir).has_ch else ())
    for group in groups:
        group.write(RoadGraph.open(graph_dir), graph_dir)


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
