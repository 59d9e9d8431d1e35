"""The routing component of a dataset: snapping + CH queries + leg assembly.

``Router.open(version_dir)`` is the dataset component (``COMPONENTS["router"]``): it memory-maps
``graph/`` and the arrays the import derived from it (:mod:`engine.routing.derived`), and keeps
the edge snapper and one CH query (:class:`engine.routing.ch.CHQuery`) for all its threads. A *leg* is the
best path between two snapped points: a list of road edges, the fraction where it starts on the
first and ends on the last, and its weight; :meth:`Router.leg_summary` and
:meth:`Router.leg_geometry` turn it into metres, seconds and points. Avoided classes (tolls,
ferries, motorways) and alternatives use plain Dijkstra over the turn graph
(:mod:`engine.routing.search`); the CH answers everything else.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numba import njit

from engine import layout
from engine.routing import profile as P
from engine.routing.ch import CHQuery, start_turns
from engine.routing.graph import RoadGraph
from engine.routing.search import dijkstra, path_to
from engine.routing.snap import EdgeSnapper, Snap
from engine.routing.turns import turn_cost

INF = math.inf
AT_NODE_M = 0.05  # a snapped point this close to an end of its edge is on the junction


@dataclass
class Leg:
    edges: np.ndarray  # int64 road edge ids, in order
    start: float  # fraction along edges[0] where the leg starts
    end: float  # fraction along edges[-1] where it ends
    weight: float
    origin: Snap | None = None
    destination: Snap | None = None
    meta: dict = field(default_factory=dict)


@njit(cache=True)
def _summary(edges, a, b, length, duration, tfirst, tto, tcost):
    n = edges.shape[0]
    if n == 1:
        return (b - a) * length[edges[0]], (b - a) * duration[edges[0]]
    dist = (1.0 - a) * length[edges[0]] + b * length[edges[n - 1]]
    dur = (1.0 - a) * duration[edges[0]] + b * duration[edges[n - 1]]
    for i in range(1, n - 1):
        dist += length[edges[i]]
        dur += duration[edges[i]]
    for i in range(n - 1):
        dur += turn_cost(tfirst, tto, tcost, edges[i], edges[i + 1])
    return dist, dur


@njit(cache=True)
def _cut(gf, glat, glng, gcum, e, frac, lat_out, lng_out):
    """Interpolated point at ``frac`` of edge e and the index of the segment it falls on."""
    s = gf[e]
    t = gf[e + 1]
    total = gcum[t - 1]
    target = frac * total
    i = s
    while i < t - 2 and gcum[i + 1] < target:
        i += 1
    before = np.float64(gcum[i])  # float32 in the graph: the difference is taken in float64
    seg = np.float64(gcum[i + 1]) - before
    u = 0.0 if seg <= 0 else (target - before) / seg
    if u < 0.0:
        u = 0.0
    if u > 1.0:
        u = 1.0
    lat_out[0] = glat[i] + u * (glat[i + 1] - glat[i])
    lng_out[0] = glng[i] + u * (glng[i + 1] - glng[i])
    return i


@njit(cache=True)
def _geometry(edges, a, b, gf, glat, glng, gcum):
    total = 0
    for e in edges:
        total += gf[e + 1] - gf[e]
    lat = np.empty(total + 2, np.float64)
    lng = np.empty(total + 2, np.float64)
    p1 = np.empty(1, np.float64)
    p2 = np.empty(1, np.float64)
    n = edges.shape[0]
    k = 0
    for idx in range(n):
        e = edges[idx]
        s = gf[e]
        t = gf[e + 1]
        lo = s
        hi = t - 1  # inclusive
        if idx == 0:
            i = _cut(gf, glat, glng, gcum, e, a, p1, p2)
            lat[k] = p1[0]
            lng[k] = p2[0]
            k += 1
            lo = i + 1
        if idx == n - 1:
            j = _cut(gf, glat, glng, gcum, e, b, p1, p2)
            hi = j
        for q in range(lo, hi + 1):
            if k > 0 and lat[k - 1] == glat[q] and lng[k - 1] == glng[q]:
                continue
            lat[k] = glat[q]
            lng[k] = glng[q]
            k += 1
        if idx == n - 1 and not (lat[k - 1] == p1[0] and lng[k - 1] == p2[0]):
            lat[k] = p1[0]
            lng[k] = p2[0]
            k += 1
    if k == 1:
        lat[1] = lat[0]
        lng[1] = lng[0]
        k = 2
    return lat[:k], lng[:k]


class Router:
    def __init__(self, graph: RoadGraph) -> None:
        self.g = graph
        self.snapper = EdgeSnapper(graph)
        g = graph
        # every column at its stored width (float32 costs, int32 ids): the kernels widen a float32
        # before they add or subtract it, which gives the float64 a widened copy would
        self.length = np.asarray(g.edge_length_m)
        self.duration = np.asarray(g.edge_duration_s)
        self.weight = np.asarray(g.edge_weight)
        self.twin = np.asarray(g.edge_twin)
        self.tfirst = np.asarray(g.turn_first_out)
        self.tto = np.asarray(g.turn_to)
        self.tcost = np.asarray(g.turn_cost_s)  # seconds (reported time)
        self.tweight = np.asarray(g.turn_weight)  # routing weight
        self.flags = np.asarray(g.edge_flags)
        self.cls = np.asarray(g.edge_class)
        self.gf = np.asarray(g.edge_geom_first)
        self.glat = np.asarray(g.geom_lat)
        self.glng = np.asarray(g.geom_lng)
        self.gcum = np.asarray(g.geom_cum_m)  # float32: _cut widens before it subtracts
        self.name_ids = np.asarray(g.edge_name)
        self.edge_head = np.asarray(g.edge_head)
        self.node_lat = np.asarray(g.node_lat, dtype=np.float64)
        self.node_lng = np.asarray(g.node_lng, dtype=np.float64)
        self.bstart = np.asarray(g.edge_bearing_start)
        self.bend = np.asarray(g.edge_bearing_end)
        self._ch_query: CHQuery | None = None
        self._ch_lock = threading.Lock()

    @classmethod
    def open(cls, version_dir: Path, profile: str = "car") -> Router:
        """The router of one travel profile's graph (``graph/`` for the car, ``graph-<profile>/``)."""
        return cls(RoadGraph.open(Path(version_dir) / layout.profile_graph_dir(profile)))

    def close(self) -> None:
        pass

    @property
    def _ch(self) -> CHQuery:
        """The process's CH query (built on the first leg; shared by every thread)."""
        if self._ch_query is None:
            with self._ch_lock:
                if self._ch_query is None:
                    self._ch_query = CHQuery(self.g)
        return self._ch_query

    # -- snapping
    def snap(self, lat: float, lng: float, max_distance_m: float = INF) -> Snap | None:
        return self.snapper.snap(lat, lng, max_distance_m)

    def _directed(self, s: Snap) -> list[tuple[int, float]]:
        out = [(s.edge, s.fraction)]
        tw = int(self.twin[s.edge])
        if tw >= 0:
            out.append((tw, 1.0 - s.fraction))
        return out

    def _node_at(self, s: Snap) -> int:
        """The graph node a snapped point lies on (within AT_NODE_M), else -1."""
        along = s.fraction * float(self.length[s.edge])
        if along <= AT_NODE_M:
            return int(self.g.edge_tail[s.edge])
        if float(self.length[s.edge]) - along <= AT_NODE_M:
            return int(self.edge_head[s.edge])
        return -1

    def starts(self, s: Snap) -> list[tuple[int, float]]:
        """Where a route from ``s`` may begin: its edge (both ways); on a junction, every road
        leaving the junction too (a point on a node has no approach to restrict its turns)."""
        out = self._directed(s)
        node = self._node_at(s)
        if node >= 0:
            first = self.g.node_first_out
            out += [(e, 0.0) for e in range(int(first[node]), int(first[node + 1])) if (e, 0.0) not in out]
        return out

    def ends(self, s: Snap) -> list[tuple[int, float]]:
        """Where a route to ``s`` may end: its edge (both ways); on a junction, every road
        entering the junction too."""
        out = self._directed(s)
        node = self._node_at(s)
        if node >= 0:
            first, into = self.g.node_first_in, self.g.in_edges
            out += [(int(e), 1.0) for e in into[int(first[node]) : int(first[node + 1])] if (int(e), 1.0) not in out]
        return out

    # -- legs
    def leg(self, o: Snap, d: Snap, avoid_mask: int = 0) -> Leg | None:
        w = self.weight
        starts, ends = self.starts(o), self.ends(d)
        best: Leg | None = None
        for c, e, a, b in _direct(starts, ends, w):
            if best is None or c < best.weight:
                best = Leg(np.array([e], np.int64), a, b, c, o, d)
        found = self._ch.edge_leg(*_arrays(starts), *_arrays(ends), w, self.tfirst, self.tto, self.tweight)
        if found is not None and (best is None or found[0] < best.weight):
            cost, edges, end_frac = found
            best = Leg(edges, self._frac_of(o, int(edges[0])), end_frac, cost, o, d)
        if best is not None and avoid_mask and (self.flags[best.edges] & avoid_mask).any():
            return self.leg_dijkstra(o, d, avoid_mask)
        return best

    def _frac_of(self, s: Snap, edge: int) -> float:
        if edge == s.edge:
            return s.fraction
        return 1.0 - s.fraction if edge == int(self.twin[s.edge]) else 0.0  # else: leaving a junction

    def leg_dijkstra(self, o: Snap, d: Snap, avoid_mask: int = 0, weight: np.ndarray | None = None) -> Leg | None:
        """Reference search (plain Dijkstra); ``weight`` overrides edge weights (penalties)."""
        w = self.weight if weight is None else weight
        if avoid_mask:
            # avoided edges are closed, except the ones the points themselves are on
            keep = [e for s in (o, d) for e, _ in self._directed(s)]
            kept = w[keep]
            w = np.where(self.flags & avoid_mask, INF, w)
            w[keep] = kept
        starts, ends = self.starts(o), self.ends(d)
        best: Leg | None = None
        for c, e, a, b in _direct(starts, ends, w):
            if c < INF and (best is None or c < best.weight):
                best = Leg(np.array([e], np.int64), a, b, c, o, d)
        srcs, sd, origin = start_turns(*_arrays(starts), w, self.tfirst, self.tto, self.tweight)
        if not srcs.shape[0]:
            return best
        origin_of = dict(zip(srcs.tolist(), origin.tolist(), strict=True))
        dist, par = dijkstra(self.tfirst, self.tto, self.tweight, w, srcs, sd, INF, -1)
        for t, b in ends:
            if dist[t] == INF:
                continue
            c = dist[t] - (1.0 - b) * float(w[t])
            if best is None or c < best.weight:
                path = path_to(par, t)
                origin_edge = origin_of[path[0]]
                best = Leg(np.array([origin_edge] + path, np.int64), self._frac_of(o, origin_edge), b, c, o, d)
        return best

    def alternatives(self, o: Snap, d: Snap, best: Leg, count: int, avoid_mask: int = 0) -> list[Leg]:
        """Penalty method: re-route with the weights of used edges raised, keep routes that are
        at most 40 % longer (in weight) and share at most 70 % of their length with any route
        already kept."""
        if count <= 0:
            return []
        w = np.array(self.weight, dtype=np.float64)  # raised by factors: in float64, not float32
        found: list[Leg] = []
        last = best
        for _ in range(count * 4):
            w[last.edges] *= 1.6
            cand = self.leg_dijkstra(o, d, avoid_mask, w)
            if cand is None:
                break
            true_w = self._weight_of(cand)
            if true_w > 1.4 * best.weight + 30:
                break
            cand.weight = true_w
            last = cand
            if all(self._shared(cand, other) <= 0.7 for other in [best, *found]):
                found.append(cand)
                if len(found) >= count:
                    break
        return found

    def _weight_of(self, leg: Leg) -> float:
        return float(
            _summary(leg.edges, leg.start, leg.end, self.weight, self.weight, self.tfirst, self.tto, self.tweight)[1]
        )

    def _shared(self, a: Leg, b: Leg) -> float:
        sb = set(b.edges.tolist()) | set(int(x) for x in self.twin[b.edges] if x >= 0)
        la = float(np.asarray(self.length[a.edges], np.float64).sum()) or 1.0
        shared = sum(float(self.length[e]) for e in a.edges.tolist() if e in sb)
        return shared / la

    def leg_summary(self, leg: Leg) -> tuple[float, float]:
        """(distance m, duration s) of a leg."""
        return _summary(leg.edges, leg.start, leg.end, self.length, self.duration, self.tfirst, self.tto, self.tcost)

    def leg_geometry(self, leg: Leg) -> tuple[np.ndarray, np.ndarray]:
        return _geometry(leg.edges, leg.start, leg.end, self.gf, self.glat, self.glng, self.gcum)


def avoid_mask(avoid) -> int:
    mask = 0
    for name in avoid:
        mask |= P.AVOID_FLAGS[name]
    return mask


def _direct(starts, ends, w) -> list[tuple[float, int, float, float]]:
    """Legs within one edge: (cost, edge, start fraction, end fraction) where a start and an end
    lie on the same directed edge in driving order."""
    return [((b - a) * float(w[e]), e, a, b) for e, a in starts for f, b in ends if e == f and b >= a]


def _arrays(pairs: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(edge, fraction) pairs as the edge and fraction arrays the numba searches take."""
    return np.array([e for e, _ in pairs], np.int64), np.array([f for _, f in pairs], np.float64)
