"""Plain Dijkstra over the turn graph (edge-based, restrictions respected), in numba.

The oracle for the contraction hierarchy, the engine of alternative routes (penalty method) and
a building block for one-to-many searches (isochrones, map-matching transitions).

Labels are per *directed edge* with the convention of :mod:`engine.routing.graph`: ``dist[e]`` is
the cost of reaching the end of edge ``e``; sources start with their remaining cost on their
edge; ``cost(e -> f) = turn_cost[t] + edge_cost[f]``. Pass any per-edge cost vector
(``edge_weight`` for routing, ``edge_duration_s`` for time, ``edge_length_m`` for distance) and
the matching per-turn cost (``turn_weight`` with ``edge_weight``, ``turn_cost_s`` with
``edge_duration_s``, zeros for distance).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.routing import heap

INF = np.inf


@njit(cache=True)
def dijkstra(turn_first, turn_to, turn_cost, edge_cost, srcs, sd, limit, stop_at):
    """One-to-all (bounded by ``limit``) Dijkstra from edges ``srcs`` with initial costs ``sd``.

    Returns (dist float64[E], parent int64[E]: previous edge or -1). Stops early once edge
    ``stop_at`` (>= 0) is settled.
    """
    m = edge_cost.shape[0]
    dist = np.full(m, INF)
    par = np.full(m, -1, np.int64)
    hk, hv, hpos = heap.new_heap(m)
    size = 0
    for i in range(srcs.shape[0]):
        e = srcs[i]
        if sd[i] < dist[e]:
            dist[e] = sd[i]
            size = heap.push(hk, hv, hpos, size, sd[i], e)
    while size > 0:
        d, e, size = heap.pop(hk, hv, hpos, size)
        if d > limit:
            break
        if e == stop_at:
            break
        for t in range(turn_first[e], turn_first[e + 1]):
            f = turn_to[t]
            nd = d + turn_cost[t] + edge_cost[f]
            if nd < dist[f]:
                dist[f] = nd
                par[f] = e
                size = heap.push(hk, hv, hpos, size, nd, f)
    return dist, par


def path_to(par: np.ndarray, edge: int) -> list[int]:
    """Edge sequence ending at ``edge`` from a parent array."""
    out = [edge]
    while par[out[-1]] >= 0:
        out.append(int(par[out[-1]]))
    out.reverse()
    return out
