"""Snap a point onto the nearest drivable edge (projected point on a segment, not the nearest node).

:class:`EdgeSnapper` reads the segments of every road piece (one directed edge per piece; the
twin shares it) in a local metric projection, bucketed in a uniform grid of :data:`CELL_M` metre
cells (CSR: cell -> segments overlapping it), with the tiers below: arrays the import writes into
the dataset (:data:`SNAPPER_ARRAYS`, memory-mapped and shared by every process and by the router's
and the isochrones' snappers) or, for a dataset without them, computes on open.
A query scans rings of cells around the point, projecting it exactly on each segment, and stops
as soon as the best distance is below the distance to the next ring: the exact nearest segment,
in a few microseconds per call (a k-d tree over densified segment points is several times
slower: ``docs/engineering-history.md``).

Well-connected first: ``snap`` prefers road pieces a route can both leave and reach, and falls
back to any edge only when no such piece is within the limit: a point beside an isolated parking
loop, beside a street piece walled off by ``barrier=block`` at both ends, or in a one-way pocket
that cars enter but cannot leave snaps to the street network (OSRM's small-component flag). The
*big* components are the strongly connected components of the turn graph (turn restrictions,
one-ways and barriers count) of at least ``min(BIG_COMPONENT, largest component)`` edges; a piece
is well-connected when one of its directions is reached from a big component and one of them
reaches a big component (:func:`well_connected_pieces`). A route starts and ends on either
direction of a piece, so that is exactly what a trip from or to it needs: a two-way street whose
one direction only leads into such a pocket, and whose other direction can only be entered by a
U-turn, is still a place to start and end (as in OSRM, which joins the two directions of a road
in its component search).
Connector edges (``profile.CONNECTOR_CLASSES``: tracks) are snapped to only when no other road of
the well-connected network is within the limit: a trip starts and ends on a road.

API for other engines (map matching uses ``candidates``)::

    s = EdgeSnapper(graph)
    hit = s.snap(lat, lng, max_distance_m=1000)   # Snap or None
    hit.edge, hit.fraction, hit.lat, hit.lng, hit.distance_m
    s.candidates(lat, lng, radius_m=50, limit=8)   # list[Snap], nearest first, one per road piece

``Snap.edge`` is one directed edge of the piece; its twin (``graph.edge_twin[edge]``, -1 for a
one-way) runs the other way, at fraction ``1 - fraction``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from engine.arrays import grown, ranges
from engine.geo import LocalProjection
from engine.routing.derived import DerivedArrays
from engine.routing.profile import CLASS_CODE, CONNECTOR_CLASSES

CELL_M = 64.0
BIG_COMPONENT = 100


@dataclass(frozen=True)
class Snap:
    edge: int
    fraction: float  # 0 at the edge's tail, 1 at its head
    lat: float
    lng: float
    distance_m: float


@njit(cache=True)
def _grid_fill(x0, y0, x1, y1, minx, miny, cell, nx, ny):
    n = x0.shape[0]
    counts = np.zeros(nx * ny + 1, np.int64)
    for pass_ in range(2):
        if pass_ == 1:
            for i in range(nx * ny):
                counts[i + 1] += counts[i]
            fill = counts[:-1].copy()
            items = np.empty(counts[nx * ny], np.int64)
        for i in range(n):
            ax = int((min(x0[i], x1[i]) - minx) / cell)
            bx = int((max(x0[i], x1[i]) - minx) / cell)
            ay = int((min(y0[i], y1[i]) - miny) / cell)
            by = int((max(y0[i], y1[i]) - miny) / cell)
            for cx in range(ax, bx + 1):
                for cy in range(ay, by + 1):
                    c = cy * nx + cx
                    if pass_ == 0:
                        counts[c + 1] += 1
                    else:
                        items[fill[c]] = i
                        fill[c] += 1
    return counts, items


@njit(cache=True, inline="always")
def _dist(x0, y0, x1, y1, i, x, y):
    dx = x1[i] - x0[i]
    dy = y1[i] - y0[i]
    l2 = dx * dx + dy * dy
    t = 0.0
    if l2 > 0:
        t = ((x - x0[i]) * dx + (y - y0[i]) * dy) / l2
        if t < 0.0:
            t = 0.0
        elif t > 1.0:
            t = 1.0
    px = x0[i] + t * dx
    py = y0[i] + t * dy
    return math.sqrt((px - x) ** 2 + (py - y) ** 2), t


@njit(cache=True)
def _nearest(x0, y0, x1, y1, allowed, first, items, minx, miny, cell, nx, ny, x, y, max_d):
    cx = int(math.floor((x - minx) / cell))
    cy = int(math.floor((y - miny) / cell))
    best = np.inf
    best_i = -1
    best_t = 0.0
    # rings nearer than the grid's border hold no cell: start at the first ring that may
    dxo = max(0.0, minx - x, x - (minx + nx * cell))
    dyo = max(0.0, miny - y, y - (miny + ny * cell))
    r = max(0, int(max(dxo, dyo) / cell) - 1)
    rmax = max(nx, ny) + abs(cx) + abs(cy) + 1
    while r <= rmax:
        # the nearest point of ring r is at least (r - 1) * cell away (point anywhere in its cell;
        # for a point outside the grid this still holds relative to the clamped scan)
        if (r - 1) * cell > min(best, max_d):
            break
        for gx in range(cx - r, cx + r + 1):
            if gx < 0 or gx >= nx:
                continue
            edge_row = gx == cx - r or gx == cx + r
            gy = cy - r
            while gy <= cy + r:
                if 0 <= gy < ny:
                    c = gy * nx + gx
                    for k in range(first[c], first[c + 1]):
                        i = items[k]
                        if not allowed[i]:
                            continue
                        d, t = _dist(x0, y0, x1, y1, i, x, y)
                        if d < best:
                            best = d
                            best_i = i
                            best_t = t
                if edge_row:
                    gy += 1
                else:
                    gy += 2 * r if r > 0 else 1
        r += 1
    if best > max_d:
        return -1, 0.0, np.inf
    return best_i, best_t, best


@njit(cache=True)
def _within(x0, y0, x1, y1, first, items, minx, miny, cell, nx, ny, x, y, radius):
    ax = max(int(math.floor((x - radius - minx) / cell)), 0)
    bx = min(int(math.floor((x + radius - minx) / cell)), nx - 1)
    ay = max(int(math.floor((y - radius - miny) / cell)), 0)
    by = min(int(math.floor((y + radius - miny) / cell)), ny - 1)
    out_i = np.empty(64, np.int64)
    out_t = np.empty(64, np.float64)
    out_d = np.empty(64, np.float64)
    n = 0
    for gx in range(ax, bx + 1):
        for gy in range(ay, by + 1):
            c = gy * nx + gx
            for k in range(first[c], first[c + 1]):
                i = items[k]
                d, t = _dist(x0, y0, x1, y1, i, x, y)
                if d <= radius:
                    if n >= out_i.shape[0]:
                        out_i, out_t, out_d = grown(out_i, n), grown(out_t, n), grown(out_d, n)
                    out_i[n] = i
                    out_t[n] = t
                    out_d[n] = d
                    n += 1
    return out_i[:n], out_t[:n], out_d[:n]


@njit(cache=True)
def _point_on(seg, t, seg_edge, c0, c1, edge_len, x0, y0, x1, y1):
    """The point at ``t`` along road piece ``seg``: its edge, fraction of the edge, planar x/y."""
    e = seg_edge[seg]
    length = edge_len[e]
    frac = (c0[seg] + t * (c1[seg] - c0[seg])) / length if length > 0 else 0.0
    return e, min(max(frac, 0.0), 1.0), x0[seg] + t * (x1[seg] - x0[seg]), y0[seg] + t * (y1[seg] - y0[seg])


def well_connected_pieces(graph) -> np.ndarray:
    """Per directed edge: its road piece can start and end a route (see the module doc)."""
    m = graph.n_edges
    if not m:
        return np.zeros(0, bool)
    size = np.asarray(graph.edge_component_size)
    # the first edge of each big component stands for all of it: they reach each other
    _, first_edge = np.unique(np.asarray(graph.edge_component), return_index=True)
    sources = first_edge[size >= min(BIG_COMPONENT, int(size.max()))]
    turns = csr_matrix(
        (np.ones(len(graph.turn_to), np.int8), np.asarray(graph.turn_to), np.asarray(graph.turn_first_out)),
        shape=(m, m),
    )
    reached = _reachable(turns, sources)
    reaching = _reachable(turns.T.tocsr(), sources)
    twin = np.asarray(graph.edge_twin)
    has_twin = twin >= 0
    for flags in (reached, reaching):  # a piece: either of its directions
        flags[has_twin] |= flags[twin[has_twin]]
    return reached & reaching


def _reachable(turns: csr_matrix, sources: np.ndarray) -> np.ndarray:
    """Per edge: reached from one of ``sources`` along ``turns``."""
    out = np.zeros(turns.shape[0], bool)
    for edge in sources.tolist():
        out[breadth_first_order(turns, edge, directed=True, return_predecessors=False)] = True
    return out


def _segments(graph, proj: LocalProjection) -> dict[str, np.ndarray]:
    """One segment per geometry step of each road piece (its first directed edge), in metres."""
    m = graph.n_edges
    twin = np.asarray(graph.edge_twin)
    rep = np.nonzero((twin < 0) | (np.arange(m) < twin))[0]
    gf = np.asarray(graph.edge_geom_first)
    starts = gf[rep]
    ends = gf[rep + 1]
    counts = ends - starts - 1  # segments per edge
    seg_edge = np.repeat(rep, counts)
    p0 = ranges(starts, counts).astype(np.int64)
    x, y = proj.to_xy(np.asarray(graph.geom_lat), np.asarray(graph.geom_lng))
    cum = np.asarray(graph.geom_cum_m, dtype=np.float64)
    return {
        "x0": x[p0],
        "y0": y[p0],
        "x1": x[p0 + 1],
        "y1": y[p0 + 1],
        "c0": cum[p0],
        "c1": cum[p0 + 1],
        "seg_edge": seg_edge.astype(np.int64),
    }


def _grid(seg: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The CELL_M grid over the segments: its origin, its size in cells, cell -> segments (CSR)."""
    x0, y0, x1, y1 = seg["x0"], seg["y0"], seg["x1"], seg["y1"]
    if len(x0):
        minx = float(min(x0.min(), x1.min()))
        miny = float(min(y0.min(), y1.min()))
        maxx = float(max(x0.max(), x1.max()))
        maxy = float(max(y0.max(), y1.max()))
    else:
        minx = miny = maxx = maxy = 0.0
    nx = int((maxx - minx) / CELL_M) + 1
    ny = int((maxy - miny) / CELL_M) + 1
    first, items = _grid_fill(x0, y0, x1, y1, minx, miny, CELL_M, nx, ny)
    return {
        "grid_origin": np.array([minx, miny]),
        "grid_cells": np.array([nx, ny], np.int64),
        "grid_first": first,
        "grid_items": items,
    }


def _tiers(graph, seg_edge: np.ndarray) -> dict[str, np.ndarray]:
    """Which edges and segments each tier of :meth:`EdgeSnapper.snap` may snap to."""
    big_edge = well_connected_pieces(graph)
    # connectors (tracks) join parts of the network but are no place to start or end a car trip;
    # on foot or by bicycle a track is a way like any other (the graph's meta names its profile)
    connector = np.isin(np.asarray(graph.edge_class), [CLASS_CODE[c] for c in CONNECTOR_CLASSES])
    if graph.meta.get("profile", "car") != "car":
        connector[:] = False
    n = len(seg_edge)
    seg_big = big_edge[seg_edge] if n else np.zeros(0, bool)
    return {
        "big_edge": big_edge,
        "connector_edge": connector,
        "seg_big": seg_big,
        "seg_big_road": seg_big & ~connector[seg_edge] if n else np.zeros(0, bool),
        "seg_all": np.ones(n, dtype=np.bool_),
    }


def _projection(graph) -> LocalProjection:
    if not graph.n_edges:
        return LocalProjection(0.0, 0.0)
    return LocalProjection(float(np.mean(graph.node_lat)), float(np.mean(graph.node_lng)))


def snapper_arrays(graph) -> dict[str, np.ndarray]:
    proj = _projection(graph)
    seg = _segments(graph, proj)
    return {
        "projection_origin": np.array([proj.lat0, proj.lng0]),
        **seg,
        **_grid(seg),
        **_tiers(graph, seg["seg_edge"]),
    }


SNAPPER_ARRAYS = DerivedArrays(
    "snapper",
    1,
    (
        "projection_origin",
        "x0",
        "y0",
        "x1",
        "y1",
        "c0",
        "c1",
        "seg_edge",
        "grid_origin",
        "grid_cells",
        "grid_first",
        "grid_items",
        "big_edge",
        "connector_edge",
        "seg_big",
        "seg_big_road",
        "seg_all",
    ),
    snapper_arrays,
)


class EdgeSnapper:
    def __init__(self, graph) -> None:
        self.g = graph
        a = SNAPPER_ARRAYS.load(graph)
        self.proj = LocalProjection(float(a["projection_origin"][0]), float(a["projection_origin"][1]))
        self.x0, self.y0, self.x1, self.y1 = a["x0"], a["y0"], a["x1"], a["y1"]
        self.c0, self.c1 = a["c0"], a["c1"]
        self.seg_edge = a["seg_edge"]
        self.edge_len = np.asarray(graph.edge_length_m)  # float32: divided in float64
        self.minx, self.miny = (float(v) for v in a["grid_origin"])
        self.nx, self.ny = (int(v) for v in a["grid_cells"])
        self.first, self.items = a["grid_first"], a["grid_items"]
        self.big_edge = a["big_edge"]
        self.connector_edge = a["connector_edge"]
        self.seg_big, self.seg_big_road, self.seg_all = a["seg_big"], a["seg_big_road"], a["seg_all"]

    def _make(self, seg: int, t: float, d: float) -> Snap:
        e, frac, px, py = _point_on(
            seg, t, self.seg_edge, self.c0, self.c1, self.edge_len, self.x0, self.y0, self.x1, self.y1
        )
        lat, lng = self.proj.point_latlng(px, py)
        return Snap(int(e), float(frac), lat, lng, float(d))

    def snap(self, lat: float, lng: float, max_distance_m: float = math.inf) -> Snap | None:
        """Nearest road (not a connector) of the well-connected network within the limit, else its
        nearest connector, else the nearest edge of any component."""
        return self._first_nearest(lat, lng, max_distance_m, (self.seg_big_road, self.seg_big, self.seg_all))

    def snap_big(self, lat: float, lng: float, max_distance_m: float) -> Snap | None:
        """Nearest road (else connector) of the well-connected network within the limit, or None."""
        return self._first_nearest(lat, lng, max_distance_m, (self.seg_big_road, self.seg_big))

    def _first_nearest(
        self, lat: float, lng: float, max_distance_m: float, tiers: tuple[np.ndarray, ...]
    ) -> Snap | None:
        """The nearest segment within the limit among those the first tier allows, else the
        second's, and so on (each tier a boolean mask over the segments)."""
        if not len(self.seg_edge):
            return None
        x, y = self.proj.point_xy(lat, lng)
        for allowed in tiers:
            i, t, d = _nearest(
                self.x0,
                self.y0,
                self.x1,
                self.y1,
                allowed,
                self.first,
                self.items,
                self.minx,
                self.miny,
                CELL_M,
                self.nx,
                self.ny,
                x,
                y,
                float(max_distance_m),
            )
            if i >= 0:
                return self._make(int(i), float(t), float(d))
        return None

    def candidates(self, lat: float, lng: float, radius_m: float, limit: int = 8) -> list[Snap]:
        """Every road piece within ``radius_m``, its nearest point each, nearest first."""
        if not len(self.seg_edge):
            return []
        x, y = self.proj.point_xy(lat, lng)
        ii, tt, dd = _within(
            self.x0,
            self.y0,
            self.x1,
            self.y1,
            self.first,
            self.items,
            self.minx,
            self.miny,
            CELL_M,
            self.nx,
            self.ny,
            x,
            y,
            float(radius_m),
        )
        order = np.argsort(dd, kind="stable")
        out: list[Snap] = []
        seen: set[int] = set()
        for j in order.tolist():
            e = int(self.seg_edge[ii[j]])
            if e in seen:
                continue
            seen.add(e)
            out.append(self._make(int(ii[j]), float(tt[j]), float(dd[j])))
            if len(out) >= limit:
                break
        return out
