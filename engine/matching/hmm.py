"""HMM map matching (Newson & Krumm 2009) over a :class:`~engine.matching.network.RoadNetwork`.

* **States**: for each GPS point, up to ``max_candidates`` directed edges within the search
  radius, each with the point projected on it (``offset`` metres from the edge start; a winding
  edge passing the point twice gives two states, see :func:`engine.matching.network._candidates`).
* **Emission**: Gaussian in the point-to-road distance, ``log p = -0.5 (d / sigma)^2``.
* **Transition**: exponential in ``|route distance - great-circle distance|`` between two
  consecutive points, ``log p = -|dr - dg| / beta`` (``beta`` grows with the distance between the
  points). Route distances come from a Dijkstra on edge lengths bounded by the longest plausible
  route (``2 dg + 2 radius + 100`` m and, when timestamps are given, ``max_speed * dt``), run
  once per distinct source node of a step (the per-request cache); a backward move of up to
  ``2 sigma`` on the same edge (GPS jitter while slow) costs nothing.
* **Viterbi** over the steps. A point into which no transition is possible is treated as an
  outlier and skipped (up to ``max_skip`` in a row); when the following points cannot be reached
  either (a gap: no route within the bound, a tunnel, a ferry, a jump), the chain is broken and
  restarted at the first unreachable point: the result has several matched segments. Points with
  no road within the radius are left out.

Everything hot is numba-compiled (``cache=True``): candidate search, the Viterbi loop with its
Dijkstras, and the path reconstruction.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numba
import numpy as np

from engine.matching.network import RoadNetwork


@numba.njit(cache=True)
def _bounded_dijkstra(first_out, head, length, src, bound, targets, dist, tmark, touched):
    """Distances from ``src`` to each node of ``targets`` (inf beyond ``bound``).

    ``dist`` (inf-filled) and ``tmark`` (zero-filled) are workspaces of node size, restored on
    return; ``touched`` is a scratch list."""
    out = np.full(targets.size, np.inf)
    remaining = 0
    for t in targets:
        if tmark[t] == 0:
            tmark[t] = 1
            remaining += 1
    touched.clear()
    dist[src] = 0.0
    touched.append(src)
    heap = [(0.0, np.int64(src))]
    while heap and remaining > 0:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        if d > bound:
            break
        if tmark[u] == 1:
            tmark[u] = 2
            remaining -= 1
        for e in range(first_out[u], first_out[u + 1]):
            v = np.int64(head[e])
            nd = d + length[e]
            if nd < dist[v] and nd <= bound:
                if dist[v] == np.inf:
                    touched.append(v)
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    for i in range(targets.size):
        t = targets[i]
        if tmark[t] == 2:
            out[i] = dist[t]
    for t in targets:
        tmark[t] = 0
    for v in touched:
        dist[v] = np.inf
    return out


@numba.njit(cache=True)
def _step(
    first_out,
    head,
    tail,
    length,
    a0,
    a1,
    b0,
    b1,
    c_edge,
    c_off,
    emit,
    score,
    back,
    gc,
    max_route,
    beta,
    back_tol,
    dist,
    tmark,
    touched,
):
    """Viterbi transition from candidates a0:a1 into b0:b1 (scores written into ``score``);
    False when no transition is possible."""
    targets = np.empty(b1 - b0, np.int64)
    for j in range(b0, b1):
        targets[j - b0] = tail[c_edge[j]]
        score[j] = -np.inf
        back[j] = -1
    src_nodes = np.empty(a1 - a0, np.int64)
    src_res = np.empty((a1 - a0, b1 - b0))
    n_src = 0
    ok = False
    for i in range(a0, a1):
        if score[i] == -np.inf:
            continue
        ea = c_edge[i]
        rest = length[ea] - c_off[i]
        u = head[ea]
        k = -1
        for q in range(n_src):
            if src_nodes[q] == u:
                k = q
                break
        if k < 0:
            k = n_src
            src_nodes[k] = u
            src_res[k] = _bounded_dijkstra(first_out, head, length, u, max_route - rest, targets, dist, tmark, touched)
            n_src += 1
        for j in range(b0, b1):
            eb = c_edge[j]
            if eb == ea and c_off[j] >= c_off[i] - back_tol:
                r = max(0.0, c_off[j] - c_off[i])
            else:
                r = rest + src_res[k, j - b0] + c_off[j]
            if r > max_route:
                continue
            s = score[i] - abs(r - gc) / beta + emit[j]
            if s > score[j]:
                score[j] = s
                back[j] = i
                ok = True
    return ok


@numba.njit(cache=True)
def _viterbi(
    first_out,
    head,
    tail,
    length,
    cand_first,
    c_edge,
    c_off,
    c_dist,
    px,
    py,
    ts,
    has_ts,
    sigma,
    beta0,
    radius,
    max_speed,
    back_tol,
    max_skip,
):
    """Viterbi over the points (``cand_first`` is a CSR of their candidates). A point into which
    no transition is possible is skipped (an outlier) up to ``max_skip`` times in a row; beyond,
    the chain is broken and restarted at the first skipped point."""
    n_pts = cand_first.size - 1
    n_c = c_edge.size
    emit = -0.5 * (c_dist / sigma) ** 2
    score = np.full(n_c, -np.inf)
    back = np.full(n_c, -1, np.int64)
    chain_start = np.zeros(n_pts, np.bool_)
    skipped = np.zeros(n_pts, np.bool_)
    n_nodes = first_out.size - 1
    dist = np.full(n_nodes, np.inf)
    tmark = np.zeros(n_nodes, np.int8)
    touched = [np.int64(0)]
    for c in range(cand_first[0], cand_first[1]):
        score[c] = emit[c]
    chain_start[0] = True
    last = 0
    t = 1
    pending = 0
    first_skip = -1
    while t < n_pts:
        gc = math.hypot(px[t] - px[last], py[t] - py[last])
        max_route = 2.0 * gc + 2.0 * radius + 100.0
        if has_ts and ts[t] > ts[last]:
            max_route = min(max_route, max_speed * (ts[t] - ts[last]) + 2.0 * radius)
        beta = beta0 * max(1.0, gc / 100.0)
        ok = _step(
            first_out,
            head,
            tail,
            length,
            cand_first[last],
            cand_first[last + 1],
            cand_first[t],
            cand_first[t + 1],
            c_edge,
            c_off,
            emit,
            score,
            back,
            gc,
            max_route,
            beta,
            back_tol,
            dist,
            tmark,
            touched,
        )
        if ok:
            last = t
            pending = 0
            t += 1
        elif pending < max_skip:
            if pending == 0:
                first_skip = t
            skipped[t] = True
            for j in range(cand_first[t], cand_first[t + 1]):
                score[j] = -np.inf
            pending += 1
            t += 1
        else:
            restart = first_skip if pending > 0 else t
            for q in range(restart, t + 1):
                skipped[q] = False
            chain_start[restart] = True
            for j in range(cand_first[restart], cand_first[restart + 1]):
                score[j] = emit[j]
                back[j] = -1
            last = restart
            pending = 0
            t = restart + 1
    return score, back, chain_start, skipped


@numba.njit(cache=True)
def _path_edges(first_out, head, tail, length, src, dst, bound):
    """Edges of a shortest path src -> dst within ``bound`` (empty if src == dst or none)."""
    if src == dst:
        return np.empty(0, np.int64)
    dist = {src: 0.0}
    pred = {src: np.int64(-1)}
    heap = [(0.0, np.int64(src))]
    found = False
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        if u == dst:
            found = True
            break
        if d > bound:
            break
        for e in range(first_out[u], first_out[u + 1]):
            v = np.int64(head[e])
            nd = d + length[e]
            if v not in dist or nd < dist[v]:
                dist[v] = nd
                pred[v] = e
                heapq.heappush(heap, (nd, v))
    if not found:
        return np.empty(0, np.int64)
    out = []
    v = dst
    while v != src:
        e = pred[v]
        out.append(e)
        v = np.int64(tail[e])
    res = np.empty(len(out), np.int64)
    for i in range(len(out)):
        res[i] = out[len(out) - 1 - i]
    return res


@numba.njit(cache=True)
def _push(buf_x, buf_y, buf_e, n, x, y, e):
    if n > 0 and abs(buf_x[n - 1] - x) < 1e-6 and abs(buf_y[n - 1] - y) < 1e-6:
        return n
    buf_x[n] = x
    buf_y[n] = y
    buf_e[n] = e
    return n + 1


@numba.njit(cache=True)
def _grow(buf_x, buf_y, buf_e, n, need):
    if n + need <= buf_x.size:
        return buf_x, buf_y, buf_e
    size = max(2 * buf_x.size, n + need)
    nx = np.empty(size)
    ny = np.empty(size)
    ne = np.empty(size, np.int64)
    nx[:n] = buf_x[:n]
    ny[:n] = buf_y[:n]
    ne[:n] = buf_e[:n]
    return nx, ny, ne


@numba.njit(cache=True)
def _assemble(first_out, head, tail, length, geom_first, gx, gy, gcum, edges, offs, pxs, pys, back_tol, radius):
    """The matched path of one segment: vertices (x, y), the edge each vertex was reached on,
    and for each matched point the index of its vertex."""
    n = edges.size
    buf_x = np.empty(256)
    buf_y = np.empty(256)
    buf_e = np.empty(256, np.int64)
    at = np.empty(n, np.int64)
    k = _push(buf_x, buf_y, buf_e, 0, pxs[0], pys[0], edges[0])
    at[0] = 0
    for i in range(n - 1):
        ep, op, eq, oq = edges[i], offs[i], edges[i + 1], offs[i + 1]
        if ep == eq and oq >= op - back_tol:
            a, b = geom_first[ep], geom_first[ep + 1]
            buf_x, buf_y, buf_e = _grow(buf_x, buf_y, buf_e, k, b - a + 1)
            for v in range(a, b):
                if gcum[v] > op and gcum[v] < oq:
                    k = _push(buf_x, buf_y, buf_e, k, gx[v], gy[v], ep)
        else:
            a, b = geom_first[ep], geom_first[ep + 1]
            buf_x, buf_y, buf_e = _grow(buf_x, buf_y, buf_e, k, b - a)
            for v in range(a, b):
                if gcum[v] > op:
                    k = _push(buf_x, buf_y, buf_e, k, gx[v], gy[v], ep)
            gc = math.hypot(pxs[i + 1] - pxs[i], pys[i + 1] - pys[i])
            path = _path_edges(
                first_out, head, tail, length, np.int64(head[ep]), np.int64(tail[eq]), 2.0 * gc + 2.0 * radius + 101.0
            )
            for e in path:
                a, b = geom_first[e], geom_first[e + 1]
                buf_x, buf_y, buf_e = _grow(buf_x, buf_y, buf_e, k, b - a)
                for v in range(a + 1, b):
                    k = _push(buf_x, buf_y, buf_e, k, gx[v], gy[v], e)
            a, b = geom_first[eq], geom_first[eq + 1]
            buf_x, buf_y, buf_e = _grow(buf_x, buf_y, buf_e, k, b - a)
            for v in range(a + 1, b):
                if gcum[v] < oq:
                    k = _push(buf_x, buf_y, buf_e, k, gx[v], gy[v], eq)
        buf_x, buf_y, buf_e = _grow(buf_x, buf_y, buf_e, k, 1)
        k = _push(buf_x, buf_y, buf_e, k, pxs[i + 1], pys[i + 1], eq)
        at[i + 1] = k - 1
    return buf_x[:k].copy(), buf_y[:k].copy(), buf_e[:k].copy(), at


@dataclass
class MatchedSegment:
    """One matched chain: its points (arrays, one entry per matched input point) and path."""

    index: np.ndarray  # input point index
    edge: np.ndarray
    offset: np.ndarray  # metres from the edge start
    distance: np.ndarray  # metres from the input point to its snapped position
    x: np.ndarray  # snapped position
    y: np.ndarray
    path_x: np.ndarray  # the matched path, vertices in travel order
    path_y: np.ndarray
    path_edge: np.ndarray  # edge each vertex lies on
    point_vertex: np.ndarray  # vertex of each matched point in the path

    def __len__(self) -> int:
        return int(self.index.size)


@dataclass(frozen=True)
class MatchOptions:
    sigma: float = 10.0  # GPS accuracy (m)
    search_radius: float | None = None  # default max(40, 4 sigma)
    beta: float = 5.0  # transition scale (m) at 100 m spacing, scaled with the distance
    # states per point: in a dense centre a noisy point (sigma 20 m, search radius 80 m) has more
    # than 8 roads (16 directed edges) nearer than its true road, which a smaller cap cuts off
    max_candidates: int = 48
    max_speed_ms: float = 60.0  # with timestamps: no transition faster than this (+ slack)
    back_tolerance: float | None = None  # default 2 sigma
    max_skip: int = 2  # outliers skipped in a row before the chain is broken

    @property
    def radius(self) -> float:
        return self.search_radius if self.search_radius is not None else max(40.0, 4.0 * self.sigma)


def match(
    net: RoadNetwork,
    x: np.ndarray,
    y: np.ndarray,
    timestamps: np.ndarray | None = None,
    options: MatchOptions = MatchOptions(),
) -> list[MatchedSegment]:
    """Match a trace given in the network's metric projection; returns the matched segments
    (several when the chain had to be broken), each with its points and path."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    radius = options.radius
    cands = net.grid.candidates(x, y, radius, options.max_candidates)
    kept = np.unique(cands.point)
    if kept.size == 0:
        return []
    # candidates are grouped by point in order: CSR over kept points
    counts = np.bincount(cands.point, minlength=x.size)[kept]
    cand_first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    has_ts = timestamps is not None
    ts = np.asarray(timestamps, dtype=np.float64)[kept] if has_ts else np.zeros(kept.size)
    back_tol = options.back_tolerance if options.back_tolerance is not None else 2.0 * options.sigma
    score, back, chain_start, skipped = _viterbi(
        net.first_out,
        net.head,
        net.tail,
        net.length,
        cand_first,
        cands.edge,
        cands.offset,
        cands.distance,
        x[kept],
        y[kept],
        ts,
        has_ts,
        float(options.sigma),
        float(options.beta),
        float(radius),
        float(options.max_speed_ms),
        float(back_tol),
        int(options.max_skip),
    )
    segments: list[MatchedSegment] = []
    starts = list(np.flatnonzero(chain_start)) + [kept.size]
    for s, e in zip(starts[:-1], starts[1:], strict=False):
        end = s + int(np.flatnonzero(~skipped[s:e])[-1])
        c = cand_first[end] + int(np.argmax(score[cand_first[end] : cand_first[end + 1]]))
        chosen = [c]
        while back[chosen[-1]] >= 0:
            chosen.append(int(back[chosen[-1]]))
        sel = np.array(chosen[::-1], dtype=np.int64)
        px, py, pe, at = _assemble(
            net.first_out,
            net.head,
            net.tail,
            net.length,
            net.geom_first,
            net.geom_x,
            net.geom_y,
            net.geom_cum,
            cands.edge[sel],
            cands.offset[sel],
            cands.x[sel],
            cands.y[sel],
            float(back_tol),
            float(radius),
        )
        segments.append(
            MatchedSegment(
                cands.point[sel],
                cands.edge[sel],
                cands.offset[sel],
                cands.distance[sel],
                cands.x[sel],
                cands.y[sel],
                px,
                py,
                pe,
                at,
            )
        )
    return segments


def segment_polyline(seg: MatchedSegment) -> np.ndarray:
    """The matched path of a segment as a (k, 2) array."""
    return np.column_stack([seg.path_x, seg.path_y])
