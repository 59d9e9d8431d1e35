"""Isochrones: what is reachable from a point within a time (s) or distance (m) budget.

1. **Search**: one bounded Dijkstra over the *turn graph* (edge to edge, so turn restrictions
   and turn costs count, as in routing) from the origin snapped onto its road (both directions
   of a two-way road), by ``edge_duration_s`` + ``turn_cost_s`` (time) or ``edge_length_m``
   (distance). It yields the cost at which every edge is entered; an edge entered below the
   largest budget is reached up to where the budget runs out.
2. **Raster** (the "buffer and merge" of the reached roads, done on a grid because a vector
   union of thousands of buffered segments costs 300+ ms): points sampled every half cell along
   the reached edges carry their cost (entry cost + fraction of the edge cost); each is stamped
   on a grid in the local metric projection as the minimum cost over the cells within
   ``buffer_m`` (a disk): cell value = cheapest road point within the buffer. Cells are
   ``buffer_m / 2`` (50 m by default), larger when the reached area is wide (at most
   ``max_cells`` across): against Valhalla's polygons (``bench/isochrone.py``) finer cells score
   no better and cost more time (``docs/engineering-history.md``).
3. **Polygons**: for each budget, the region ``cost <= budget`` is traced with contourpy
   (filled contours keep holes where nothing is reachable, holes under ``min_hole_m2`` are
   raster specks and filled), simplified (Douglas-Peucker, 3/4 of a cell) and turned back to
   WGS84 by the caller.

Everything is in one process and one pass for all contours of a request; the hot loops are
numba-compiled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import contourpy
import numba
import numpy as np
import shapely
from numpy.typing import NDArray
from shapely.geometry.base import BaseGeometry

from engine.matching.network import RoadNetwork
from engine.routing.heap import new_heap
from engine.routing.heap import pop as heap_pop
from engine.routing.heap import push as heap_push


@dataclass
class TurnGraph:
    """Edge-to-edge moves: after edge ``e`` a car may take ``turn_to[turn_first_out[e]:..[e+1]]``
    paying ``turn_cost`` seconds (the routing graph's ``turn_*`` arrays)."""

    turn_first_out: np.ndarray
    turn_to: np.ndarray
    turn_cost: np.ndarray


def plain_turns(net: RoadNetwork) -> TurnGraph:
    """Turns for a network without turn data: every edge leaving the head node, no U-turn onto
    the twin except at dead ends, no cost (tests and synthetic networks)."""
    heads = net.head.astype(np.int64)
    starts, ends = net.first_out[heads], net.first_out[heads + 1]
    counts = ends - starts
    to = (
        np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=False)])
        if net.edge_count
        else np.zeros(0, np.int64)
    )
    src = np.repeat(np.arange(net.edge_count), counts)
    u_turn = (
        (net.head[to] == net.tail[src])
        & (net.tail[to] == net.head[src])
        & (np.abs(net.length[to] - net.length[src]) < 0.5)
    )
    keep = ~u_turn | (np.repeat(counts, counts) == 1)
    to, src = to[keep], src[keep]
    first = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=net.edge_count))])
    return TurnGraph(first.astype(np.int64), to.astype(np.int32), np.zeros(to.size, np.float32))


@numba.njit(cache=True)
def _search(turn_first_out, turn_to, turn_cost, use_turn_cost, edge_cost, start_edges, start_entry, limit):
    """Entry cost of every edge (inf if not entered below ``limit``). Start edges are entered at
    ``start_entry`` (negative: the origin lies inside the edge). The queue is the routing
    searches' indexed heap (an edge is in it once, its key lowered): a quarter faster than
    ``heapq`` with stale entries on a 20-minute isochrone."""
    n = edge_cost.size
    entry = np.full(n, np.inf)
    done = np.full(n, np.inf)  # cost at the end of the edge
    hk, hv, pos = new_heap(n)
    size = 0
    for i in range(start_edges.size):
        e = start_edges[i]
        if start_entry[i] < entry[e]:
            entry[e] = start_entry[i]
            end = start_entry[i] + edge_cost[e]
            if end < done[e]:
                done[e] = end
                size = heap_push(hk, hv, pos, size, end, np.int64(e))
    while size > 0:
        d, e, size = heap_pop(hk, hv, pos, size)
        if d >= limit:
            break
        for t in range(turn_first_out[e], turn_first_out[e + 1]):
            f = turn_to[t]
            c_in = d + (turn_cost[t] if use_turn_cost else 0.0)
            if c_in >= limit:
                continue
            if c_in < entry[f]:
                entry[f] = c_in
            end = c_in + edge_cost[f]
            if end < done[f]:
                done[f] = end
                size = heap_push(hk, hv, pos, size, end, np.int64(f))
    return entry


@numba.njit(cache=True)
def _reached_bbox(reached, geom_first, gx, gy):
    x0, y0, x1, y1 = np.inf, np.inf, -np.inf, -np.inf
    for e in reached:
        for i in range(geom_first[e], geom_first[e + 1]):
            x0 = min(x0, gx[i])
            x1 = max(x1, gx[i])
            y0 = min(y0, gy[i])
            y1 = max(y1, gy[i])
    return x0, y0, x1, y1


@numba.njit(cache=True)
def _rasterize(entry, reached, edge_cost, limit, geom_first, gx, gy, gcum, x0, y0, cell, nx, ny, disk_dx, disk_dy):
    """Grid (ny, nx) of the cheapest road point within the disk of every cell."""
    seed = np.full((ny, nx), np.inf)
    step = cell * 0.5
    inv_cell = 1.0 / cell
    for e in reached:
        c0 = entry[e]
        if not c0 < limit:
            continue
        a, b = geom_first[e], geom_first[e + 1]
        total = gcum[b - 1]
        w = edge_cost[e]
        # start of the reachable part: negative entry = the origin lies inside the edge
        s_from = 0.0
        if c0 < 0 and w > 0:
            s_from = min(total, -c0 / w * total)
        # end of the reachable part within the largest budget
        s_to = total
        if w > 0 and c0 + w > limit:
            s_to = max(s_from, (limit - c0) / w * total)
        per_m = w / total if total > 0 else 0.0
        last = -1.0  # where the previous segment's last sample lay (a shared vertex is stamped once)
        for i in range(a, b - 1):
            l0, l1 = gcum[i], gcum[i + 1]
            if l1 < s_from or l0 > s_to:
                continue
            seg = l1 - l0
            lo = max(l0, s_from)
            hi = min(l1, s_to)
            k = int((hi - lo) / step) + 1
            ax, ay = gx[i], gy[i]
            dx, dy = gx[i + 1] - ax, gy[i + 1] - ay
            inv_seg = 1.0 / seg if seg > 0 else 0.0
            ds = (hi - lo) / k
            for j in range(1 if lo == last else 0, k + 1):
                s = lo + ds * j
                t = (s - l0) * inv_seg
                cost = c0 + s * per_m
                if cost < 0:
                    cost = 0.0
                cx = int((ax + t * dx - x0) * inv_cell)
                cy = int((ay + t * dy - y0) * inv_cell)
                if 0 <= cx < nx and 0 <= cy < ny and cost < seed[cy, cx]:
                    seed[cy, cx] = cost
            last = hi
    out = seed.copy()
    for cy in range(ny):
        for cx in range(nx):
            v = seed[cy, cx]
            if v == np.inf:
                continue
            for q in range(disk_dx.size):
                yy = cy + disk_dy[q]
                xx = cx + disk_dx[q]
                if 0 <= yy < ny and 0 <= xx < nx and v < out[yy, xx]:
                    out[yy, xx] = v
    return out


@dataclass(frozen=True)
class IsoOptions:
    # road buffer radius: 100 m makes the polygons comparable to Valhalla's filled surfaces
    # (IoU >= 0.7 on Monaco, bench/isochrone.py); 50 m gives ~0.5, polygons half the area
    buffer_m: float = 100.0
    min_hole_m2: float = 10_000.0  # holes smaller than this (raster specks) are filled
    cells_per_buffer: float = 2.0  # raster cell = buffer / this (or larger, see max_cells)
    max_cells: int = 450  # raster side at most this many cells (the cell grows beyond)
    simplify_cells: float = 0.75  # Douglas-Peucker tolerance, in cells


def reach(
    net: RoadNetwork,
    turns: TurnGraph,
    edge_cost: np.ndarray,
    use_turn_cost: bool,
    origin_edge: int,
    origin_offset: float,
    twin: int,
    limit: float,
) -> np.ndarray:
    """Entry cost of every edge from a point at ``origin_offset`` metres along ``origin_edge``
    (and along its ``twin``, -1 if none)."""
    starts, entries = [], []
    for e, off in ((origin_edge, origin_offset), (twin, None)):
        if e < 0:
            continue
        if off is None:
            off = float(net.length[e]) - origin_offset
        frac = off / float(net.length[e]) if net.length[e] > 0 else 0.0
        starts.append(e)
        entries.append(-frac * float(edge_cost[e]))
    return _search(
        turns.turn_first_out,
        turns.turn_to,
        turns.turn_cost,
        use_turn_cost,
        edge_cost,
        np.array(starts, np.int64),
        np.array(entries),
        float(limit),
    )


def contours(
    net: RoadNetwork, entry: np.ndarray, edge_cost: np.ndarray, budgets: list[float], options: IsoOptions = IsoOptions()
) -> list[BaseGeometry]:
    """One (Multi)Polygon in local metres per budget (same order); empty when nothing reached."""
    limit = max(budgets)
    reached = np.flatnonzero(entry < limit)
    x0, y0, x1, y1 = _reached_bbox(reached, net.geom_first, net.geom_x, net.geom_y)
    if not math.isfinite(x0):
        return [shapely.Polygon() for _ in budgets]
    r = options.buffer_m
    extent = max(x1 - x0, y1 - y0) + 2 * r
    cell = max(r / options.cells_per_buffer, extent / options.max_cells)
    margin = r + 2 * cell
    gx0, gy0 = x0 - margin, y0 - margin
    nx = int((x1 - x0 + 2 * margin) / cell) + 1
    ny = int((y1 - y0 + 2 * margin) / cell) + 1
    rc = int(math.ceil(r / cell))
    dy, dx = np.mgrid[-rc : rc + 1, -rc : rc + 1]
    inside = (dx * dx + dy * dy) * cell * cell <= r * r
    grid = _rasterize(
        entry,
        reached,
        edge_cost,
        limit,
        net.geom_first,
        net.geom_x,
        net.geom_y,
        net.geom_cum,
        gx0,
        gy0,
        cell,
        nx,
        ny,
        dx[inside].astype(np.int64),
        dy[inside].astype(np.int64),
    )
    big = limit * 2.0 + 1.0
    z = np.minimum(grid, big)
    gen = contourpy.contour_generator(z=z, fill_type=contourpy.FillType.ChunkCombinedOffsetOffset, chunk_size=0)
    out = []
    for budget in budgets:
        # one chunk: every ring's points, the ring offsets, and the offsets of each polygon's rings
        points, ring_offsets, outer_offsets = cast(
            "tuple[list[NDArray[np.float64] | None], list[NDArray[np.uint32] | None], list[NDArray[np.uint32] | None]]",
            gen.filled(-1.0, budget),
        )
        geom = _polygons(points[0], ring_offsets[0], outer_offsets[0], gx0, gy0, cell, options.min_hole_m2)
        simple = shapely.simplify(geom, cell * options.simplify_cells, preserve_topology=False)
        if not simple.is_valid or simple.is_empty != geom.is_empty:
            simple = shapely.make_valid(simple) if not simple.is_empty else geom
        out.append(simple)
    return out


def _ring_areas(xy: NDArray[np.float64], ring_offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Area of every closed ring ``xy[ring_offsets[i]:ring_offsets[i + 1]]`` (shoelace, all rings
    in one pass; grid units keep the sums small)."""
    x, y = xy[:, 0], xy[:, 1]
    cross = np.concatenate([[0.0], np.cumsum(x[:-1] * y[1:] - x[1:] * y[:-1])])
    # a ring's terms run from its first point to its last (closing) one, not into the next ring
    return np.abs(cross[ring_offsets[1:] - 1] - cross[ring_offsets[:-1]]) * 0.5


def _polygons(
    points: NDArray[np.float64] | None,
    ring_offsets: NDArray[np.uint32] | None,
    outer_offsets: NDArray[np.uint32] | None,
    gx0: float,
    gy0: float,
    cell: float,
    min_hole_m2: float,
) -> BaseGeometry:
    """contourpy's filled rings (grid indices; every polygon's outer ring, then its holes) as one
    (Multi)Polygon in local metres, holes under ``min_hole_m2`` left out, built in one shapely call."""
    if points is None or ring_offsets is None or outer_offsets is None or len(outer_offsets) < 2:
        return shapely.Polygon()
    # grid indices -> local metres (cell centres)
    xy = np.column_stack([gx0 + (points[:, 0] + 0.5) * cell, gy0 + (points[:, 1] + 0.5) * cell])
    rings = ring_offsets.astype(np.int64)
    outers = outer_offsets.astype(np.int64)
    keep = np.ones(rings.size - 1, dtype=bool)
    if min_hole_m2 > 0:
        keep = _ring_areas(points, rings) * (cell * cell) >= min_hole_m2
        keep[outers[:-1]] = True  # outer rings stay whatever their size
    lengths = np.diff(rings)
    if not keep.all():
        xy = xy[np.repeat(keep, lengths)]
        lengths = lengths[keep]
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    ring_ends = np.concatenate([[0], np.cumsum(lengths)])
    polygon_ends = kept_before[outers]
    count = outers.size - 1
    if count == 1:
        return cast(
            BaseGeometry, shapely.from_ragged_array(shapely.GeometryType.POLYGON, xy, (ring_ends, polygon_ends))[0]
        )
    multi = shapely.from_ragged_array(
        shapely.GeometryType.MULTIPOLYGON, xy, (ring_ends, polygon_ends, np.array([0, count]))
    )
    return cast(BaseGeometry, multi[0])
