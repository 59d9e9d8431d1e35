"""HMM map matching (Newson & Krumm 2009) over a :class:`~engine.matching.network.RoadNetwork`.

* **States**: for each GPS point, the directed edges within the search radius, each with the
  point projected on it (``offset`` metres from the edge start).
* **Emission**: Gaussian in the point-to-road distance, ``log p = -0.5 (d / sigma)^2``.
* **Transition**: exponential in ``|route distance - great-circle distance|`` between two
  consecutive points, ``log p = -|dr - dg| / beta``. Route distances come from a Dijkstra bounded
  by the longest plausible route (``max_route``, from the straight distance and, when timestamps
  are given, a maximum speed), run once per distinct source node of a step, on plain edge
  lengths; a small backward move on the same edge (GPS jitter while slow) costs nothing.
* **Viterbi** over the steps. When no transition is possible into a step (a gap: no route within
  the bound, e.g. a tunnel, a ferry, a jump), the chain is broken and restarted there: the result
  has several matched segments. Points with no road within the radius are left out.

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

NEG_INF = -np.inf


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
def _step(first_out, head, tail, length, a0, a1, b0, b1, c_edge, c_off, emit, score, back, gc,
          max_route, beta, back_tol, dist, tmark, touched):
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
            src_res[k] = _bounded_dijkstra(first_out, head, length, u, max_route - rest,
                                           targets, dist, tmark, touched)
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
def _viterbi(first_out, head, tail, length, cand_first, c_edge, c_off, c_dist, px, py, ts,
             has_ts, sigma, beta0, radius, max_speed, back_tol, max_skip):
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
        ok = _step(first_out, head, tail, length, cand_first[last], cand_first[last + 1],
                   cand_first[t], cand_first[t + 1], c_edge, c_off, emit, score, back, gc,
                   max_route, beta, back_tol, dist, tmark, touched)
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


@dataclass
class MatchedPoint:
    index: int  # index of the input point
    edge: int
    offset: float
    distance: float  # metres from the input point to its snapped position
    x: float
    y: float


@dataclass
class MatchedSegment:
    points: list[MatchedPoint]
    # the matched path as polyline pieces: (edge, xy array) in travel order
    pieces: list[tuple[int, np.ndarray]]
    # for each matched point, the index in ``pieces`` where the path leaving it starts
    piece_at_point: list[int]


@dataclass(frozen=True)
class MatchOptions:
    sigma: float = 10.0  # GPS accuracy (m)
    search_radius: float | None = None  # default max(40, 4 sigma)
    beta: float = 5.0  # transition scale (m) at 100 m spacing, scaled with the distance
    max_candidates: int = 16
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
        net.first_out, net.head, net.tail, net.length, cand_first, cands.edge, cands.offset,
        cands.distance, x[kept], y[kept], ts, has_ts, float(options.sigma), float(options.beta),
        float(radius), float(options.max_speed_ms), float(back_tol), int(options.max_skip),
    )
    segments: list[MatchedSegment] = []
    starts = list(np.flatnonzero(chain_start)) + [kept.size]
    for s, e in zip(starts[:-1], starts[1:]):
        members = [i for i in range(s, e) if not skipped[i]]
        end = members[-1]
        last = cand_first[end] + int(np.argmax(score[cand_first[end] : cand_first[end + 1]]))
        chosen = [last]
        while back[chosen[-1]] >= 0:
            chosen.append(int(back[chosen[-1]]))
        chosen.reverse()
        assert len(chosen) == len(members)
        points = [
            MatchedPoint(int(cands.point[c]), int(cands.edge[c]), float(cands.offset[c]),
                         float(cands.distance[c]), float(cands.x[c]), float(cands.y[c]))
            for c in chosen
        ]
        segments.append(_assemble(net, points, back_tol, radius))
    return segments


def _assemble(net: RoadNetwork, points: list[MatchedPoint], back_tol: float,
              radius: float) -> MatchedSegment:
    pieces: list[tuple[int, np.ndarray]] = []
    at: list[int] = []
    for i, p in enumerate(points):
        at.append(len(pieces))
        if i + 1 == len(points):
            break
        q = points[i + 1]
        if q.edge == p.edge and q.offset >= p.offset - back_tol:
            if q.offset > p.offset:
                pieces.append((p.edge, net.edge_polyline(p.edge, p.offset, q.offset)))
            continue
        pieces.append((p.edge, net.edge_polyline(p.edge, p.offset)))
        src, dst = int(net.head[p.edge]), int(net.tail[q.edge])
        gc = math.hypot(q.x - p.x, q.y - p.y)
        bound = 2.0 * gc + 2.0 * radius + 101.0
        for edge in _path_edges(net.first_out, net.head, net.tail, net.length, src, dst, bound):
            pieces.append((int(edge), net.edge_polyline(int(edge))))
        pieces.append((q.edge, net.edge_polyline(q.edge, 0.0, q.offset)))
    return MatchedSegment(points, pieces, at)


def segment_polyline(seg: MatchedSegment) -> np.ndarray:
    """The matched path of a segment as one (k, 2) array without repeated vertices."""
    if not seg.pieces:
        p = seg.points[0]
        return np.array([[p.x, p.y]])
    pts = np.concatenate([pc for _, pc in seg.pieces])
    keep = np.ones(len(pts), dtype=bool)
    keep[1:] = np.any(np.abs(np.diff(pts, axis=0)) > 1e-6, axis=1)
    return pts[keep]


def route_length(seg: MatchedSegment) -> float:
    poly = segment_polyline(seg)
    return float(np.hypot(*np.diff(poly, axis=0).T).sum()) if len(poly) > 1 else 0.0


