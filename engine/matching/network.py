"""The road network as map matching and isochrones see it: directed edges with polylines.

:class:`RoadNetwork` is a small set of numpy arrays in a local metric projection:

* nodes ``0..N-1`` with ``node_x``/``node_y`` (metres east/north of the projection origin);
* directed edges in CSR order: the edges leaving node ``u`` are ``first_out[u]:first_out[u+1]``,
  each with ``tail``/``head`` nodes, ``length`` (metres, along the polyline) and ``duration``
  (seconds, car);
* each edge's polyline (including both end nodes) is ``geom_x/geom_y[geom_first[e]:geom_first[e+1]]``
  with ``geom_cum`` the distance from the edge start at each vertex;
* ``way_id`` and ``name_id`` per edge, ``names`` the string table.

It is built either from the routing graph of a dataset (:func:`from_routing_graph`: arrays the
import wrote, memory-mapped) or, in tests and benchmarks, straight from ways and nodes
(:func:`from_ways`). A uniform grid over
the polyline segments (:class:`SegmentGrid`) finds every edge within a radius of a point, with
the projected point and its offset along the edge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numba
import numpy as np

from engine.arrays import index_dtype
from engine.geo import LocalProjection
from engine.routing.derived import DerivedArrays

# default car speeds (km/h) when a network is built from raw ways (tests, synthetic benchmarks)
DEFAULT_SPEEDS_KMH = {
    "motorway": 90.0,
    "trunk": 70.0,
    "primary": 50.0,
    "secondary": 40.0,
    "tertiary": 35.0,
    "unclassified": 30.0,
    "residential": 25.0,
    "living_street": 10.0,
    "service": 15.0,
}


@dataclass
class RoadNetwork:
    proj: LocalProjection
    node_x: np.ndarray
    node_y: np.ndarray
    first_out: np.ndarray  # int64 [N+1]
    tail: np.ndarray  # int32 [E]
    head: np.ndarray  # int32 [E]
    length: np.ndarray  # float64 [E], metres
    duration: np.ndarray  # [E], seconds (a graph's float32 column at its stored width, or float64)
    geom_first: np.ndarray  # [E+1], int32 or int64
    geom_x: np.ndarray
    geom_y: np.ndarray
    geom_cum: np.ndarray
    way_id: np.ndarray  # int64 [E]
    name_id: np.ndarray  # int32 [E], -1 = unnamed
    names: Sequence[str]
    _grid: SegmentGrid | None = field(default=None, repr=False)

    @property
    def node_count(self) -> int:
        return int(self.node_x.size)

    @property
    def edge_count(self) -> int:
        return int(self.head.size)

    def name(self, edge: int) -> str:
        i = int(self.name_id[edge])
        return self.names[i] if i >= 0 else ""

    @property
    def grid(self) -> SegmentGrid:
        if self._grid is None:
            self._grid = SegmentGrid(self)
        return self._grid

    def edge_polyline(self, edge: int, start: float = 0.0, end: float | None = None) -> np.ndarray:
        """The part of an edge's polyline between two offsets (metres from its start), (k, 2)."""
        return _cut_polyline(
            self.geom_x,
            self.geom_y,
            self.geom_cum,
            int(self.geom_first[edge]),
            int(self.geom_first[edge + 1]),
            float(start),
            float(self.length[edge] if end is None else end),
        )

    def point_at(self, edge: int, offset: float) -> tuple[float, float]:
        pts = self.edge_polyline(edge, offset, offset)
        return float(pts[0, 0]), float(pts[0, 1])


@numba.njit(cache=True)
def _interp(gx, gy, gc, a, b, off):
    # point at ``off`` along polyline vertices a..b-1
    if off <= gc[a]:
        return gx[a], gy[a]
    for i in range(a, b - 1):
        if off <= gc[i + 1]:
            seg = gc[i + 1] - gc[i]
            t = (off - gc[i]) / seg if seg > 0 else 0.0
            return gx[i] + t * (gx[i + 1] - gx[i]), gy[i] + t * (gy[i + 1] - gy[i])
    return gx[b - 1], gy[b - 1]


@numba.njit(cache=True)
def _cut_polyline(gx, gy, gc, a, b, start, end):
    if end < start:
        end = start
    out = np.empty((b - a + 2, 2))
    k = 0
    x, y = _interp(gx, gy, gc, a, b, start)
    out[k, 0] = x
    out[k, 1] = y
    k += 1
    for i in range(a, b):
        if gc[i] > start and gc[i] < end:
            out[k, 0] = gx[i]
            out[k, 1] = gy[i]
            k += 1
    if end > start:
        x, y = _interp(gx, gy, gc, a, b, end)
        out[k, 0] = x
        out[k, 1] = y
        k += 1
    return out[:k]


def _polyline_cum(gx: np.ndarray, gy: np.ndarray, geom_first: np.ndarray) -> np.ndarray:
    seg = np.hypot(np.diff(gx), np.diff(gy))
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    # restart at 0 at every edge start
    starts = geom_first[:-1]
    base = np.repeat(cum[starts], np.diff(geom_first))
    return cum - base


def build_network(
    proj: LocalProjection,
    node_x: np.ndarray,
    node_y: np.ndarray,
    edges: Iterable[tuple[int, int, list[tuple[float, float]], float, int, str]],
) -> RoadNetwork:
    """Assemble a network from directed edges ``(tail, head, polyline xy, speed m/s, way id, name)``
    (the polyline includes both end nodes); edges are sorted into CSR order."""
    rows = list(edges)
    n = int(node_x.size)
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    rows = [rows[i] for i in order]
    tail = np.array([r[0] for r in rows], dtype=np.int32)
    head = np.array([r[1] for r in rows], dtype=np.int32)
    counts = np.bincount(tail, minlength=n)
    first_out = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    sizes = np.array([len(r[2]) for r in rows], dtype=np.int64)
    geom_first = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pts = np.array([p for r in rows for p in r[2]], dtype=np.float64).reshape(-1, 2)
    gx, gy = pts[:, 0].copy(), pts[:, 1].copy()
    cum = _polyline_cum(gx, gy, geom_first)
    length = cum[geom_first[1:] - 1] if len(rows) else np.zeros(0)
    speed = np.array([r[3] for r in rows], dtype=np.float64)
    names: list[str] = []
    name_index: dict[str, int] = {}
    name_id = np.full(len(rows), -1, dtype=np.int32)
    for i, r in enumerate(rows):
        if r[5]:
            name_id[i] = name_index.setdefault(r[5], len(names))
            if name_id[i] == len(names):
                names.append(r[5])
    return RoadNetwork(
        proj=proj,
        node_x=np.asarray(node_x, dtype=np.float64),
        node_y=np.asarray(node_y, dtype=np.float64),
        first_out=first_out,
        tail=tail,
        head=head,
        length=np.ascontiguousarray(length),
        duration=np.ascontiguousarray(length / np.maximum(speed, 0.1)),
        geom_first=geom_first,
        geom_x=gx,
        geom_y=gy,
        geom_cum=cum,
        way_id=np.array([r[4] for r in rows], dtype=np.int64),
        name_id=name_id,
        names=names,
    )


def from_ways(
    node_lat: dict[int, float] | np.ndarray,
    node_lng: dict[int, float] | np.ndarray,
    ways: Iterable[tuple[int, list[int], dict[str, str]]],
    speeds_kmh: dict[str, float] | None = None,
) -> RoadNetwork:
    """A network straight from OSM-like ways (tests, synthetic benchmarks): every drivable way
    becomes edges between consecutive *junction or end* nodes, honouring ``oneway``.

    ``node_lat``/``node_lng`` are indexed by OSM node id (a dict, or an array where id ``i`` is at
    ``i - 1``)."""
    speeds = speeds_kmh or DEFAULT_SPEEDS_KMH
    ways = [w for w in ways if w[2].get("highway") in speeds]
    use: dict[int, int] = {}
    for _wid, refs, _tags in ways:
        for i, ref in enumerate(refs):
            end = i in (0, len(refs) - 1)
            use[ref] = use.get(ref, 0) + (2 if end else 1)
    junctions = {ref for ref, u in use.items() if u >= 2}

    def coord(ref: int) -> tuple[float, float]:
        if isinstance(node_lat, dict):
            return node_lat[ref], node_lng[ref]
        return float(node_lat[ref - 1]), float(node_lng[ref - 1])

    ids = sorted(junctions)
    index = {ref: i for i, ref in enumerate(ids)}
    lat = np.array([coord(r)[0] for r in ids])
    lng = np.array([coord(r)[1] for r in ids])
    proj = LocalProjection(float(lat.mean()), float(lng.mean()))
    nx, ny = proj.to_xy(lat, lng)
    edges: list[tuple[int, int, list[tuple[float, float]], float, int, str]] = []
    for wid, refs, tags in ways:
        speed = speeds[tags["highway"]] / 3.6
        if tags.get("maxspeed", "").isdigit():
            speed = float(tags["maxspeed"]) / 3.6
        oneway = tags.get("oneway")
        fwd, bwd = oneway != "-1", oneway not in ("yes", "true", "1")
        start = 0
        for i in range(1, len(refs)):
            if refs[i] not in junctions:
                continue
            chunk = refs[start : i + 1]
            pts = [(float(x), float(y)) for x, y in (proj.to_xy(*coord(r)) for r in chunk)]
            a, b = index[chunk[0]], index[chunk[-1]]
            if fwd:
                edges.append((a, b, pts, speed, wid, tags.get("name", "")))
            if bwd:
                edges.append((b, a, pts[::-1], speed, wid, tags.get("name", "")))
            start = i
    return build_network(proj, nx, ny, edges)


# --------------------------------------------------------------------------- spatial index


@numba.njit(cache=True)
def _grid_fill(gx, gy, geom_first, seg_edge, x0, y0, cell, nx, ny, counts_only, cell_first, out):
    pos = cell_first.copy()
    for e in range(geom_first.size - 1):
        for i in range(geom_first[e], geom_first[e + 1] - 1):
            ax = min(gx[i], gx[i + 1])
            bx = max(gx[i], gx[i + 1])
            ay = min(gy[i], gy[i + 1])
            by = max(gy[i], gy[i + 1])
            cx0 = max(0, int((ax - x0) / cell))
            cx1 = min(nx - 1, int((bx - x0) / cell))
            cy0 = max(0, int((ay - y0) / cell))
            cy1 = min(ny - 1, int((by - y0) / cell))
            for cy in range(cy0, cy1 + 1):
                for cx in range(cx0, cx1 + 1):
                    c = cy * nx + cx
                    if counts_only:
                        out[c] += 1
                    else:
                        out[pos[c]] = i
                        pos[c] += 1


@numba.njit(cache=True)
def _candidates(
    px,
    py,
    radius,
    max_k,
    gx,
    gy,
    gc,
    seg_edge,
    x0,
    y0,
    cell,
    nx,
    ny,
    cell_first,
    cell_seg,
):
    """For each point: up to max_k candidates within radius, nearest first. A candidate is a
    local minimum of the distance along one edge (so a winding edge that passes the point twice,
    a hairpin or a spiral ramp, gives two). Returns flat arrays (point, edge, offset, distance,
    projected x, projected y), grouped by point."""
    n = px.size
    cap = n * max_k
    o_pt = np.empty(cap, np.int64)
    o_edge = np.empty(cap, np.int64)
    o_off = np.empty(cap)
    o_dist = np.empty(cap)
    o_x = np.empty(cap)
    o_y = np.empty(cap)
    k = 0
    size = 8192
    h_seg = np.empty(size, np.int64)
    h_off = np.empty(size)
    h_dist = np.empty(size)
    h_x = np.empty(size)
    h_y = np.empty(size)
    is_min = np.empty(size, np.bool_)
    for p in range(n):
        x = px[p]
        y = py[p]
        m = 0
        cx0 = max(0, int((x - radius - x0) / cell))
        cx1 = min(nx - 1, int((x + radius - x0) / cell))
        cy0 = max(0, int((y - radius - y0) / cell))
        cy1 = min(ny - 1, int((y + radius - y0) / cell))
        for cy in range(cy0, cy1 + 1):
            for cx in range(cx0, cx1 + 1):
                c = cy * nx + cx
                for j in range(cell_first[c], cell_first[c + 1]):
                    i = cell_seg[j]
                    dx = gx[i + 1] - gx[i]
                    dy = gy[i + 1] - gy[i]
                    l2 = dx * dx + dy * dy
                    t = 0.0
                    if l2 > 0:
                        t = ((x - gx[i]) * dx + (y - gy[i]) * dy) / l2
                        t = min(1.0, max(0.0, t))
                    qx = gx[i] + t * dx
                    qy = gy[i] + t * dy
                    d = math.hypot(x - qx, y - qy)
                    if d > radius or m >= size:
                        continue
                    h_seg[m] = i
                    h_off[m] = gc[i] + t * math.sqrt(l2)
                    h_dist[m] = d
                    h_x[m] = qx
                    h_y[m] = qy
                    m += 1
        if m == 0:
            continue
        order = np.argsort(h_seg[:m])  # same edge = consecutive, in offset order
        nm = 0
        sel = np.empty(m, np.int64)
        prev_seg = -2
        for q in range(m):
            h = order[q]
            if h_seg[h] == prev_seg:  # the same segment seen from another cell
                continue
            prev_seg = h_seg[h]
            sel[nm] = h
            nm += 1
        for q in range(nm):
            h = sel[q]
            e = seg_edge[h_seg[h]]
            ok = True
            if q > 0:
                g = sel[q - 1]
                if seg_edge[h_seg[g]] == e and h_seg[g] == h_seg[h] - 1 and h_dist[g] <= h_dist[h]:
                    ok = False
            if ok and q + 1 < nm:
                g = sel[q + 1]
                if seg_edge[h_seg[g]] == e and h_seg[g] == h_seg[h] + 1 and h_dist[g] < h_dist[h]:
                    ok = False
            is_min[q] = ok
        cnt = 0
        for q in range(nm):
            if is_min[q]:
                cnt += 1
        mins = np.empty(cnt, np.int64)
        dists = np.empty(cnt)
        cnt = 0
        for q in range(nm):
            if is_min[q]:
                mins[cnt] = sel[q]
                dists[cnt] = h_dist[sel[q]]
                cnt += 1
        best = np.argsort(dists)
        for q in best[:max_k]:
            h = mins[q]
            o_pt[k] = p
            o_edge[k] = seg_edge[h_seg[h]]
            o_off[k] = h_off[h]
            o_dist[k] = h_dist[h]
            o_x[k] = h_x[h]
            o_y[k] = h_y[h]
            k += 1
    return o_pt[:k], o_edge[:k], o_off[:k], o_dist[:k], o_x[:k], o_y[:k]


@dataclass
class Candidates:
    point: np.ndarray  # index of the query point
    edge: np.ndarray
    offset: np.ndarray  # metres from the edge start
    distance: np.ndarray  # metres from the query point
    x: np.ndarray
    y: np.ndarray


def segment_grid_arrays(
    gx: np.ndarray, gy: np.ndarray, geom_first: np.ndarray, cell: float | None = None
) -> dict[str, np.ndarray]:
    """A uniform grid over every polyline segment: its origin, cell size and size in cells, the
    edge of each vertex, and cell -> segments (CSR; segment i goes from vertex i to i + 1)."""
    x0 = float(gx.min()) - 1.0 if gx.size else 0.0
    y0 = float(gy.min()) - 1.0 if gy.size else 0.0
    span = max(float(gx.max()) - x0, float(gy.max()) - y0, 1.0) if gx.size else 1.0
    # ~100 m cells, at most ~4M cells
    cell = cell or max(100.0, span / 2000.0)
    nx = int((float(gx.max()) - x0) / cell) + 2 if gx.size else 1
    ny = int((float(gy.max()) - y0) / cell) + 2 if gx.size else 1
    n_edges = geom_first.size - 1
    seg_edge = np.repeat(np.arange(n_edges, dtype=index_dtype(n_edges)), np.diff(geom_first))
    counts = np.zeros(nx * ny, dtype=np.int64)
    dummy = np.zeros(nx * ny + 1, dtype=np.int64)
    _grid_fill(gx, gy, geom_first, seg_edge, x0, y0, cell, nx, ny, True, dummy, counts)
    cell_first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cell_seg = np.empty(int(cell_first[-1]), dtype=index_dtype(gx.size))
    _grid_fill(gx, gy, geom_first, seg_edge, x0, y0, cell, nx, ny, False, cell_first, cell_seg)
    return {
        "grid_origin": np.array([x0, y0]),
        "grid_cell": np.array([cell]),
        "grid_cells": np.array([nx, ny], np.int64),
        "seg_edge": seg_edge,
        "cell_first": cell_first,
        "cell_seg": cell_seg,
    }


GRID_ARRAYS = ("grid_origin", "grid_cell", "grid_cells", "seg_edge", "cell_first", "cell_seg")


class SegmentGrid:
    """Uniform grid over every polyline segment of the network: from ``arrays``
    (:func:`segment_grid_arrays`, e.g. memory-mapped from a dataset) or built now."""

    def __init__(
        self, net: RoadNetwork, cell: float | None = None, arrays: dict[str, np.ndarray] | None = None
    ) -> None:
        if arrays is None:
            arrays = segment_grid_arrays(net.geom_x, net.geom_y, net.geom_first, cell)
        self.x0, self.y0 = (float(v) for v in arrays["grid_origin"])
        self.cell = float(arrays["grid_cell"][0])
        self.nx, self.ny = (int(v) for v in arrays["grid_cells"])
        self.seg_edge = arrays["seg_edge"]
        self.cell_first = arrays["cell_first"]
        self.cell_seg = arrays["cell_seg"]
        self.net = net

    def candidates(self, x, y, radius: float, max_k: int = 8) -> Candidates:
        net = self.net
        res = _candidates(
            np.atleast_1d(np.asarray(x, dtype=np.float64)),
            np.atleast_1d(np.asarray(y, dtype=np.float64)),
            float(radius),
            int(max_k),
            net.geom_x,
            net.geom_y,
            net.geom_cum,
            self.seg_edge,
            self.x0,
            self.y0,
            self.cell,
            self.nx,
            self.ny,
            self.cell_first,
            self.cell_seg,
        )
        return Candidates(*res)


# --------------------------------------------------------------------------- from a dataset


def _network_arrays(graph) -> dict[str, np.ndarray]:
    """The routing graph's geometry re-projected to local metres (origin at the middle of its
    bounding box), the lengths measured on it, and the segment grid over it."""
    lat, lng = np.asarray(graph.geom_lat), np.asarray(graph.geom_lng)
    if lat.size:
        proj = LocalProjection(float((lat.min() + lat.max()) / 2), float((lng.min() + lng.max()) / 2))
    else:
        proj = LocalProjection(0.0, 0.0)
    gx, gy = proj.to_xy(lat, lng)
    gx, gy = np.ascontiguousarray(gx, dtype=np.float64), np.ascontiguousarray(gy, dtype=np.float64)
    geom_first = np.ascontiguousarray(graph.edge_geom_first, dtype=np.int64)
    cum = _polyline_cum(gx, gy, geom_first) if gx.size else np.zeros(0)
    length = cum[geom_first[1:] - 1] if geom_first.size > 1 else np.zeros(0)
    nx, ny = proj.to_xy(np.asarray(graph.node_lat), np.asarray(graph.node_lng))
    return {
        "projection_origin": np.array([proj.lat0, proj.lng0]),
        "node_x": np.asarray(nx, dtype=np.float64),
        "node_y": np.asarray(ny, dtype=np.float64),
        "geom_x": gx,
        "geom_y": gy,
        "geom_cum": cum,
        "length": np.asarray(length, dtype=np.float64),
        **segment_grid_arrays(gx, gy, geom_first),
    }


NETWORK_ARRAYS = DerivedArrays(
    "network",
    2,
    ("projection_origin", "node_x", "node_y", "geom_x", "geom_y", "geom_cum", "length", *GRID_ARRAYS),
    _network_arrays,
)


def from_routing_graph(graph) -> RoadNetwork:
    """View an :class:`engine.routing.graph.RoadGraph` as a :class:`RoadNetwork` (same node and
    edge ids; geometry re-projected to local metres, lengths measured on it), with its segment
    grid: arrays of the dataset (:data:`NETWORK_ARRAYS`), computed when it lacks them."""
    a = NETWORK_ARRAYS.load(graph)
    origin = a["projection_origin"]
    net = RoadNetwork(
        proj=LocalProjection(float(origin[0]), float(origin[1])),
        node_x=a["node_x"],
        node_y=a["node_y"],
        first_out=np.ascontiguousarray(graph.node_first_out, dtype=np.int64),
        tail=np.ascontiguousarray(graph.edge_tail, dtype=np.int32),
        head=np.ascontiguousarray(graph.edge_head, dtype=np.int32),
        length=a["length"],
        duration=np.asarray(graph.edge_duration_s),
        geom_first=np.asarray(graph.edge_geom_first),
        geom_x=a["geom_x"],
        geom_y=a["geom_y"],
        geom_cum=a["geom_cum"],
        way_id=np.asarray(graph.edge_way),
        name_id=np.asarray(graph.edge_name),
        names=graph.names,
    )
    net._grid = SegmentGrid(net, arrays={name: a[name] for name in GRID_ARRAYS})
    return net


class MatchingComponent:
    """Dataset component ``roadnet``: the road graph as a :class:`RoadNetwork` with its segment
    grid, mapped from ``<version>/graph`` and its derived arrays (:data:`NETWORK_ARRAYS`), once
    per process."""

    def __init__(self, graph, network: RoadNetwork) -> None:
        import threading

        self.graph = graph
        self.network = network
        self._snapper = None
        self._turns = None
        self._lock = threading.Lock()

    @property
    def turns(self):
        """The turn graph (:class:`engine.isochrone.compute.TurnGraph`) for isochrone searches."""
        if self._turns is None:
            from engine.isochrone.compute import TurnGraph

            g = self.graph
            self._turns = TurnGraph(
                np.asarray(g.turn_first_out),
                np.ascontiguousarray(g.turn_to, dtype=np.int32),
                np.asarray(g.turn_cost_s),  # float32, added to float64 sums
            )
        return self._turns

    @property
    def snapper(self):
        """The routing engine's edge snapper (well-connected components first), built lazily."""
        if self._snapper is None:
            with self._lock:
                if self._snapper is None:
                    from engine.routing.snap import EdgeSnapper

                    self._snapper = EdgeSnapper(self.graph)
        return self._snapper

    @property
    def twin(self) -> np.ndarray:
        return self.graph.edge_twin

    @classmethod
    def open(cls, version_dir, profile: str = "car") -> MatchingComponent:
        """The component over one travel profile's graph (``graph/`` for the car)."""
        from pathlib import Path

        from engine import layout
        from engine.routing.graph import RoadGraph

        graph = RoadGraph.open(Path(version_dir) / layout.profile_graph_dir(profile))
        net = from_routing_graph(graph)
        _ = net.grid  # build the spatial index now, not on the first request
        comp = cls(graph, net)
        comp.warm_up()
        return comp

    def warm_up(self) -> None:
        """Load the numba-compiled functions (from numba's on-disk cache, compiled on a miss) with
        a tiny match and isochrone, so the first request does not pay for it."""
        net = self.network
        if net.edge_count == 0:
            return
        from engine.isochrone.compute import contours, reach
        from engine.matching.hmm import match

        e = int(np.argmax(net.length))
        (x0, y0), (x1, y1) = net.point_at(e, 0.0), net.point_at(e, float(net.length[e]))
        match(net, np.array([x0, x1]), np.array([y0, y1]), np.array([0.0, 60.0]))
        entry = reach(net, self.turns, net.duration, True, e, 0.0, -1, 30.0)
        _ = self.snapper
        contours(net, entry, net.duration, [30.0])
