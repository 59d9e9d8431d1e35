"""The road graph of a region: numpy arrays in ``<version>/graph/``, memory-mapped read-only.

Written once by the ``roads`` import stage (:mod:`engine.ingest.roads`, built by
:mod:`engine.routing.build`), opened by :meth:`RoadGraph.open` (every array through
``np.load(mmap_mode="r")``, so all web workers share the page cache). The query side never uses
networkx. Other engines (map matching, isochrones) build on this module, :mod:`engine.routing.snap`
(edge snapping) and :mod:`engine.routing.search` (plain Dijkstra over the turn graph).

Model
-----
* **Nodes** are the *graph nodes*: OSM nodes where drivable ways meet, way ends, and nodes with a
  penalty or barrier (signals, gates). The OSM nodes in between are geometry only.
* **Edges** are *directed*: one per drivable direction of a piece of way between two graph nodes.
  A two-way street gives two edges, each other's ``edge_twin``; a one-way gives one
  (``edge_twin == -1``). Edges are sorted by tail node, so ``node_first_out`` is a CSR index.
  Every edge has its own geometry in travel direction (first point = tail node, last = head).
* **Turns** (the edge-based graph): ``turn_*`` lists for each edge ``e`` the edges ``f`` a car may
  take next at ``edge_head[e]``, with the turn's cost in seconds. Turn restrictions (``no_*``,
  ``only_*`` relations, via node), blocking barriers and the no-U-turn rule (U-turns only at dead
  ends; walkers and cyclists turn back anywhere, ``Profile.turns_back``) are applied by *leaving
  forbidden turns out*. Any search that must respect turn restrictions walks this graph (edge to
  edge), not the node CSR.

Cost convention for searches over the turn graph: the cost of *being at the end of edge f* after
edge ``e`` is ``cost(e) + turn_weight[t] + edge_weight[f]`` (pay the edge on entering it). A
point at fraction ``a`` along edge ``e`` starts with ``(1 - a) * edge_weight[e]`` still to pay to
reach its end; a destination at fraction ``b`` along ``f`` is reached at ``cost(pred) + turn +
b * edge_weight[f]``. Pair ``edge_weight`` with ``turn_weight`` (route choice: duration times a
factor >= 1 for parking aisles and narrow roads, plus 3600 to enter a local-access-only road),
``edge_duration_s`` with ``turn_cost_s`` (time, e.g. isochrones), ``edge_length_m`` with zero
turn costs (distance). Reported times always use durations. ``engine.routing.search.dijkstra``
implements exactly this (multi-source, bounded, numba).

Hot loops: index plain ndarrays, not the memmaps (``np.asarray(g.edge_head)`` is a zero-copy
view; ``memmap.__getitem__`` costs ~1 us per scalar access). :class:`engine.routing.router.Router`
(``dataset.router``) holds such views, the :class:`engine.routing.snap.EdgeSnapper` and the
process's CH query: reuse them rather than building your own.

Arrays derived from these for the query side (the snapper's grid, the CH arcs' tails and costs,
the isochrone network's projected geometry) are written by the import under
``derived/`` and memory-mapped too (:mod:`engine.routing.derived`).

Arrays (file ``<name>.npy``; N nodes, E edges, G geometry points, T turns, C components)
--------------------------------------------------------------------------------------------
The query side reads every array at the type it is stored in. An offset column listed as int32
is int64 where its offsets pass 2**31, and in graphs an earlier release wrote.

===================  =========  ====  ============================================================
name                 dtype      len   meaning
===================  =========  ====  ============================================================
node_lat, node_lng   float64    N     WGS84 position of the graph node
node_osm             int64      N     OSM node id
node_first_out       int64      N+1   edges of node v are ``node_first_out[v]:node_first_out[v+1]``
node_first_in        int64      N+1   CSR over ``in_edges`` (edges whose head is v)
in_edges             int32      E     edge ids grouped by head node
node_component       int32      N     strongly connected component (node graph, one-ways
                                      respected, turn restrictions ignored)
component_size       int32      C     number of nodes per component
edge_component       int32      E     strongly connected component of the *turn graph* (true
                                      connectivity: one-ways, restrictions, barriers)
edge_component_size  int32      C'    number of edges per turn-graph component
edge_tail, edge_head int32      E     graph nodes at start / end (in travel direction)
edge_twin            int32      E     the same road piece in the other direction, or -1
edge_length_m        float32    E     length along the geometry, metres
edge_duration_s      float32    E     travel time at the profile speed, seconds
edge_weight          float32    E     routing weight (seconds-like, >= duration)
edge_class           uint8      E     index in :data:`engine.routing.profile.HIGHWAY_CLASSES`
edge_flags           uint8      E     ``profile.FLAG_*`` bits (toll, ferry, motorway, roundabout,
                                      oneway, link, tunnel, restricted = local access only)
edge_way             int64      E     OSM way id
edge_name            int32      E     index into ``names.json`` (0 = unnamed, ``""``)
edge_bearing_start   float32    E     compass bearing (deg, 0 = north) of the first segment
edge_bearing_end     float32    E     bearing of the last segment (arriving at the head)
edge_geom_first      int32      E+1   geometry of e = points ``edge_geom_first[e]:..[e+1]``
geom_lat, geom_lng   float64    G     geometry points (both end points included in each edge)
geom_cum_m           float32    G     distance from the edge's first point to this point, metres
turn_first_out       int32      E+1   turns after edge e = ``turn_first_out[e]:..[e+1]``
turn_to              int32      T     the next edge
turn_cost_s          float32    T     turn duration: angle penalty + signals/gates + U-turn
turn_weight          float32    T     routing weight of the turn: turn_cost_s + 3600 when it
                                      enters a local-access-only road (FLAG_RESTRICTED) from
                                      an ordinary one
ch_*                            ...   contraction hierarchy of the turn graph
                                      (:mod:`engine.routing.ch`, internal)
===================  =========  ====  ============================================================

``names.json``: list of street names (index 0 is ``""``). ``meta.json``: format version, counts,
bbox, build timings.

Typical use::

    g = RoadGraph.open(version_dir / "graph")
    e = 123
    g.edge_geometry(e)          # (lat array, lng array) in travel direction
    g.name(e)                   # "Boulevard Albert 1er"
    g.out_edges(g.edge_head[e]) # edges leaving its head node (ignores turn restrictions)
    g.turns(e)                  # (next edges, turn costs) honouring restrictions
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engine.errors import DatasetError

# 2: the CH may hold junction hubs (CH nodes after the edges, ``ch_hub_edge``); a release that
# reads only 1 refuses such a graph instead of indexing past its edges
# 3: the CH stored in its own node order (``ch_node``, ``ch_edge``: engine.routing.ch_order); a
# release that reads only 1 and 2 refuses such a graph instead of taking CH nodes for edges
GRAPH_FORMAT = 3
READABLE_FORMATS = (1, 2, 3)

ARRAYS: tuple[str, ...] = (
    "node_lat",
    "node_lng",
    "node_osm",
    "node_first_out",
    "node_first_in",
    "in_edges",
    "node_component",
    "component_size",
    "edge_component",
    "edge_component_size",
    "edge_tail",
    "edge_head",
    "edge_twin",
    "edge_length_m",
    "edge_duration_s",
    "edge_weight",
    "edge_class",
    "edge_flags",
    "edge_way",
    "edge_name",
    "edge_bearing_start",
    "edge_bearing_end",
    "edge_geom_first",
    "geom_lat",
    "geom_lng",
    "geom_cum_m",
    "turn_first_out",
    "turn_to",
    "turn_cost_s",
    "turn_weight",
)
CH_ARRAYS: tuple[str, ...] = (
    "ch_rank",
    "ch_up_first",
    "ch_up_to",
    "ch_up_w",
    "ch_up_mid",
    "ch_dn_first",
    "ch_dn_to",
    "ch_dn_w",
    "ch_dn_mid",
)
# absent before format 2: no hubs; before format 3: the CH nodes numbered as the edges and hubs
CH_OPTIONAL_ARRAYS: tuple[str, ...] = ("ch_hub_edge", "ch_node", "ch_edge")


class RoadGraph:
    """Read-only view of the arrays above (attributes of the same names)."""

    node_lat: np.ndarray
    node_lng: np.ndarray
    node_osm: np.ndarray
    node_first_out: np.ndarray
    node_first_in: np.ndarray
    in_edges: np.ndarray
    node_component: np.ndarray
    component_size: np.ndarray
    edge_component: np.ndarray
    edge_component_size: np.ndarray
    edge_tail: np.ndarray
    edge_head: np.ndarray
    edge_twin: np.ndarray
    edge_length_m: np.ndarray
    edge_duration_s: np.ndarray
    edge_weight: np.ndarray
    edge_class: np.ndarray
    edge_flags: np.ndarray
    edge_way: np.ndarray
    edge_name: np.ndarray
    edge_bearing_start: np.ndarray
    edge_bearing_end: np.ndarray
    edge_geom_first: np.ndarray
    geom_lat: np.ndarray
    geom_lng: np.ndarray
    geom_cum_m: np.ndarray
    turn_first_out: np.ndarray
    turn_to: np.ndarray
    turn_cost_s: np.ndarray
    turn_weight: np.ndarray

    def __init__(self, arrays: dict[str, np.ndarray], names: list[str], meta: dict) -> None:
        for key, value in arrays.items():
            setattr(self, key, value)
        self.names = names
        self.meta = meta
        self.path: Path | None = None
        self.has_ch = all(k in arrays for k in CH_ARRAYS)

    @classmethod
    def open(cls, graph_dir: Path, *, mmap: bool = True) -> RoadGraph:
        graph_dir = Path(graph_dir)
        meta_path = graph_dir / "meta.json"
        if not meta_path.exists():
            raise DatasetError(f"no road graph in {graph_dir} (run the roads import stage)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("graph_format") not in READABLE_FORMATS:
            raise DatasetError(
                f"road graph {graph_dir} has format {meta.get('graph_format')}, expected "
                f"{GRAPH_FORMAT}: re-import the region"
            )
        arrays = {}
        for name in ARRAYS + CH_ARRAYS + CH_OPTIONAL_ARRAYS:
            path = graph_dir / f"{name}.npy"
            if path.exists():
                array = np.load(path, mmap_mode="r" if mmap else None)
                # a plain ndarray over the same mapped pages: np.memmap indexes through Python-level
                # __getitem__/__array_finalize__ (about 1 us per scalar read on the query path)
                arrays[name] = array.view(np.ndarray) if mmap else array
            elif name in ARRAYS:
                raise DatasetError(f"road graph {graph_dir} lacks {name}.npy")
        names = json.loads((graph_dir / "names.json").read_text(encoding="utf-8"))
        graph = cls(arrays, names, meta)
        graph.path = graph_dir
        return graph

    def save(self, graph_dir: Path) -> None:
        graph_dir = Path(graph_dir)
        graph_dir.mkdir(parents=True, exist_ok=True)
        ch = CH_ARRAYS + tuple(k for k in CH_OPTIONAL_ARRAYS if hasattr(self, k)) if self.has_ch else ()
        for name in ARRAYS + ch:
            np.save(graph_dir / f"{name}.npy", np.ascontiguousarray(getattr(self, name)))
        (graph_dir / "names.json").write_text(json.dumps(self.names, ensure_ascii=False), "utf-8")
        meta = dict(self.meta, graph_format=GRAPH_FORMAT)
        (graph_dir / "meta.json").write_text(json.dumps(meta, indent=1), "utf-8")

    # -- sizes
    @property
    def n_nodes(self) -> int:
        return int(self.node_lat.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edge_head.shape[0])

    # -- accessors (convenience; hot loops should index the arrays directly)
    def out_edges(self, node: int) -> np.ndarray:
        return np.arange(self.node_first_out[node], self.node_first_out[node + 1])

    def turns(self, edge: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.turn_first_out[edge], self.turn_first_out[edge + 1]
        return self.turn_to[a:b], self.turn_cost_s[a:b]

    def edge_geometry(self, edge: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.edge_geom_first[edge], self.edge_geom_first[edge + 1]
        return self.geom_lat[a:b], self.geom_lng[a:b]

    def name(self, edge: int) -> str:
        return self.names[int(self.edge_name[edge])]

    def point_along(self, edge: int, fraction: float) -> tuple[float, float]:
        """(lat, lng) at ``fraction`` (0..1) of the edge's length."""
        a, b = int(self.edge_geom_first[edge]), int(self.edge_geom_first[edge + 1])
        cum = self.geom_cum_m[a:b]
        target = fraction * float(cum[-1])
        i = int(np.searchsorted(cum, target, side="right")) - 1
        i = min(max(i, 0), b - a - 2)
        seg = float(cum[i + 1] - cum[i])
        t = 0.0 if seg <= 0 else (target - float(cum[i])) / seg
        t = min(max(t, 0.0), 1.0)
        lat = self.geom_lat[a + i] + t * (self.geom_lat[a + i + 1] - self.geom_lat[a + i])
        lng = self.geom_lng[a + i] + t * (self.geom_lng[a + i + 1] - self.geom_lng[a + i])
        return float(lat), float(lng)
