"""Goal direction inside the uncontracted core of a CH: landmarks and A* (core-ALT).

A graph whose contraction stopped at a core (:mod:`engine.routing.ch`: the walker's and the
cyclist's graphs of a large grid, where the last nodes each sit in a near-clique) answers a long
query with a plain bidirectional Dijkstra over most of that core once the two upward searches
reach it; at a country's size that core is tens of thousands of nodes and a hundred arcs each.
Core-ALT (Bauer, Delling, Sanders, Schieferdecker, Schultes & Wagner, "Combining hierarchical
and goal-directed speed-up techniques for Dijkstra's algorithm", JEA 2010) searches the core
goal-directed instead, with A* and lower bounds from landmarks (Goldberg & Harrelson 2005):

* At import, a few core nodes are chosen as landmarks (farthest first: each the core node
  farthest from those already chosen) and the distances from every landmark to every core node
  and back are stored (:func:`landmark_distances`; float32, a row of :data:`LANDMARKS` per core
  node, so one cache line holds a node's bounds).
* A query first runs both upward searches below the core to exhaustion, only labelling the core
  nodes they reach (the *entries*). The core is then a search from many sources (the forward
  entries, each at its label) to many targets (the backward ones): for a landmark L, the
  backward search's label at L is ``D_L = min_e d(L, e) + label_b(e)`` over the backward
  entries, and by the triangle inequality ``label_b(v) >= D_L - d(L, v)``, a bound for every
  core node ``v`` (symmetrically ``label_f(v) >= D'_L - d(v, L)`` with
  ``D'_L = min_e label_f(e) + d(e, L)``). The largest over the landmarks is a feasible and
  consistent potential; where ``D_L`` is infinite and ``d(L, v)`` is not, no backward entry is
  reachable from ``v`` and ``v`` is skipped.
* Both directions search the core with A* on their own potential (symmetric bidirectional A*)
  and stop as soon as either queue's smallest key reaches the best meeting cost: every
  better path would keep a node in each queue below that cost.

The bounds read float32 distances; :func:`slack` is subtracted from every potential so that
their rounding never makes a bound exceed the true distance. A node whose label still drops
after it left its queue (a rounding inconsistency) goes back into it, so the search stays exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.arrays import ranges
from engine.routing import parent_heap
from engine.routing.search import dijkstra

INF = np.inf
LANDMARKS = 16
RELATIVE_SLACK = 1e-6  # float32 keeps 2**-24 relative: a bound reads two such values


# ----------------------------------------------------------------------------- at import
def core_arcs(arcs: tuple, rank, first_core: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arcs out of the core's nodes (every one of them leads to a core node) as a CSR over
    core indexes, from the CH's (first, to, w) ``arcs``: a core node's index is its rank minus
    ``first_core``."""
    first, to, w = arcs
    rank = np.asarray(rank)
    core_nodes = np.flatnonzero(rank >= first_core)
    node_of = np.empty(core_nodes.shape[0], np.int64)
    node_of[rank[core_nodes] - first_core] = core_nodes
    first = np.asarray(first)
    starts = first[node_of].astype(np.int64)
    counts = first[node_of + 1].astype(np.int64) - starts
    picked = ranges(starts, counts)
    core_first = np.zeros(node_of.shape[0] + 1, np.int64)
    np.cumsum(counts, out=core_first[1:])
    core_to = (rank[np.asarray(to)[picked]] - first_core).astype(np.int32)
    return core_first, core_to, np.asarray(w)[picked].astype(np.float64)


def _distances(arcs, source: int) -> np.ndarray:
    """Distances from core node ``source`` over a core CSR (:func:`core_arcs`), INF where none."""
    first, to, w = arcs
    dist, _ = dijkstra(first, to, w, np.zeros(first.shape[0] - 1), np.array([source]), np.zeros(1), INF, -1)
    return dist


def landmark_distances(up, down, rank, first_core: int, count: int = LANDMARKS) -> tuple[np.ndarray, np.ndarray]:
    """(``from_landmark``, ``to_landmark``), float32 [core nodes, landmarks]: the distance from
    each landmark to each core node and from each core node to each landmark, INF where there
    is no path; ``up`` and ``down`` are the CH's (first, to, w) arrays, whose core arcs are the
    core's arcs forward and backward. Landmarks farthest first (module doc); empty without a
    core. Deterministic: the same graph gives the same arrays."""
    forward = core_arcs(up, rank, first_core)
    backward = core_arcs(down, rank, first_core)
    n = forward[0].shape[0] - 1
    count = min(count, n)
    from_landmark = np.full((n, count), INF, np.float32)
    to_landmark = np.full((n, count), INF, np.float32)
    if n == 0:
        return from_landmark, to_landmark
    nearest = np.full(n, INF)  # the round trip to the nearest landmark chosen so far
    landmark = _farthest(_distances(forward, 0))
    for i in range(count):
        from_landmark[:, i] = leaving = _distances(forward, landmark)
        to_landmark[:, i] = arriving = _distances(backward, landmark)
        np.minimum(nearest, leaving + arriving, out=nearest)
        landmark = _farthest(nearest)
    return from_landmark, to_landmark


def _farthest(dist: np.ndarray) -> int:
    """The node with the largest finite distance (the lowest index on a tie)."""
    finite = np.where(np.isfinite(dist), dist, -1.0)
    return int(np.argmax(finite))


def slack(from_landmark: np.ndarray, to_landmark: np.ndarray) -> float:
    """What a query subtracts from every potential: :data:`RELATIVE_SLACK` of the largest
    finite landmark distance, more than the float32 rounding of the two values a bound reads."""
    largest = 0.0
    for array in (from_landmark, to_landmark):
        finite = array[np.isfinite(array)]
        if finite.shape[0]:
            largest = max(largest, float(finite.max()))
    return RELATIVE_SLACK * largest


# ----------------------------------------------------------------------------- at query time
@njit(cache=True, inline="always")
def core_index(node, rank, first_core):
    """A core node's row in the landmark arrays: its rank (or its position, where ``rank`` is
    empty: :func:`engine.routing.ch.query_ranks`) less the core's first rank."""
    return (rank[node] if rank.shape[0] else node) - first_core


@njit(cache=True, inline="always")
def potential(distances, row, bounds, slack):
    """The lower bound on what is left from core node ``row`` (0 or more; INF: nothing left
    is reachable), from the landmarks' ``distances`` to or from it and the query's ``bounds``."""
    p = 0.0
    for i in range(distances.shape[1]):
        d = distances[row, i]
        if d < INF and bounds[i] - d > p:
            p = bounds[i] - d
    return p - slack if p > slack else 0.0


@njit(cache=True, inline="always")
def _entry_row(node, dist, best, rank, first_core):
    """The core index of an entry (a core node a search labelled below ``best``), else -1."""
    row = core_index(node, rank, first_core)
    return row if row >= 0 and dist[node] < best else -1


@njit(cache=True, inline="always")
def _entry_bounds(touched, nt, dist, best, landmark, rank, first_core, bounds):
    """``bounds[i]``: the least ``dist[e] + landmark[e, i]`` over the core nodes ``e`` a search
    labelled below ``best`` (its entries), INF without any; returns how many entries."""
    bounds[:] = INF
    entries = 0
    for j in range(nt):
        e = touched[j]
        row = _entry_row(e, dist, best, rank, first_core)
        if row < 0:
            continue
        entries += 1
        for i in range(landmark.shape[1]):
            c = dist[e] + landmark[row, i]
            if c < bounds[i]:
                bounds[i] = c
    return entries


@njit(cache=True, inline="always")
def _queue_entries(touched, nt, dist, par, best, hk, hv, hpar, landmark, rank, first_core, bounds, slack):
    """Each entry into the search's queue, its key its label plus its potential; returns the
    queue's size."""
    size = 0
    for j in range(nt):
        e = touched[j]
        row = _entry_row(e, dist, best, rank, first_core)
        if row < 0:
            continue
        key = dist[e] + potential(landmark, row, bounds, slack)
        if key < INF:
            size = parent_heap.push(hk, hv, hpar, par, size, key, e, par[e])
    return size


@njit(cache=True, inline="always")
def _relax(
    x,
    first,
    to,
    w,
    dist,
    par,
    touched,
    nt,
    other,
    hk,
    hv,
    hpar,
    size,
    landmark,
    rank,
    first_core,
    bounds,
    slack,
    best,
    meet,
):
    """The arcs out of ``x`` for one direction; returns (queue size, touched count, best, meet)."""
    d = dist[x]
    for k in range(first[x], first[x + 1]):
        y = to[k]
        nd = d + w[k]
        if nd >= dist[y]:
            continue
        if other[y] < INF and nd + other[y] < best:
            best = nd + other[y]
            meet = y
        key = nd + potential(landmark, core_index(y, rank, first_core), bounds, slack)
        if key == INF:
            continue  # no entry of the other side is reachable from y
        if dist[y] == INF:
            touched[nt] = y
            nt += 1
        dist[y] = nd
        size = parent_heap.push(hk, hv, hpar, par, size, key, y, k)
    return size, nt, best, meet


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def search(
    uf,
    ut,
    uw,
    df,
    dt,
    dw,
    rank,
    first_core,
    from_landmark,
    to_landmark,
    slack,
    target_bounds,
    source_bounds,
    best,
    meet,
    distf,
    distb,
    parf,
    parb,
    touchedf,
    touchedb,
    ntf,
    ntb,
    hk1,
    hv1,
    hpar1,
    hk2,
    hv2,
    hpar2,
):
    """The core's search after both upward searches are done (empty queues; the core nodes they
    reached labelled in ``distf``/``distb``, with their arcs in ``parf``/``parb``, and listed
    among the touched nodes); ``best``/``meet`` the best meeting so far. ``target_bounds`` and
    ``source_bounds`` (:data:`LANDMARKS` each) take the bounds of the forward search's potential
    (from the backward entries) and of the backward one's. Returns (best, meet, ntf, ntb), the
    queues left empty."""
    toward_target, toward_source = target_bounds, source_bounds
    if _entry_bounds(touchedb, ntb, distb, best, from_landmark, rank, first_core, toward_target) == 0:
        return best, meet, ntf, ntb
    if _entry_bounds(touchedf, ntf, distf, best, to_landmark, rank, first_core, toward_source) == 0:
        return best, meet, ntf, ntb
    s1 = _queue_entries(
        touchedf, ntf, distf, parf, best, hk1, hv1, hpar1, from_landmark, rank, first_core, toward_target, slack
    )
    s2 = _queue_entries(
        touchedb, ntb, distb, parb, best, hk2, hv2, hpar2, to_landmark, rank, first_core, toward_source, slack
    )
    while s1 > 0 and s2 > 0 and hk1[0] < best and hk2[0] < best:
        if hk1[0] <= hk2[0]:
            _, x, s1 = parent_heap.pop(hk1, hv1, hpar1, parf, s1)
            s1, ntf, best, meet = _relax(
                x, uf, ut, uw, distf, parf, touchedf, ntf, distb, hk1, hv1, hpar1, s1,
                from_landmark, rank, first_core, toward_target, slack, best, meet,
            )  # fmt: skip
        else:
            _, x, s2 = parent_heap.pop(hk2, hv2, hpar2, parb, s2)
            s2, ntb, best, meet = _relax(
                x, df, dt, dw, distb, parb, touchedb, ntb, distf, hk2, hv2, hpar2, s2,
                to_landmark, rank, first_core, toward_source, slack, best, meet,
            )  # fmt: skip
    parent_heap.clear(hv1, hpar1, parf, s1)
    parent_heap.clear(hv2, hpar2, parb, s2)
    return best, meet, ntf, ntb
