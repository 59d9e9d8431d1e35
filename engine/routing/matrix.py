"""Many-to-many contraction-hierarchy searches: the cost from every source to every target.

Bucket algorithm (Knopp, Sanders, Schultes, Schulz, Wagner 2007): one backward search per target
over the downward graph leaves, at every node it settles, a *bucket entry* (target, cost from the
node to the target); one forward search per source over the upward graph, at every node it
settles, scans that node's bucket and keeps, per target, the smallest forward + backward cost.
So an N x M matrix costs N + M one-sided searches, not N x M point-to-point queries. Both
searches stall on demand like :func:`engine.routing.ch._query` (sound: a node on a shortest
up-down path carries its exact cost and is never stalled).

Each search carries along the weight the *duration* and the *length* of its path, so a cell is
the duration and distance of the very path of least weight, the one the point-to-point router
(:meth:`engine.routing.router.Router.leg`) unpacks and sums. The CH arcs keep only weights, so
:data:`ARC_COSTS` gives every upward and downward arc its duration and length: an original turn
arc ``u -> x`` costs ``turn_cost_s(u, x) + edge_duration_s[x]`` and ``edge_length_m[x]``; an
arc into a junction hub (:mod:`engine.routing.hubs`) nothing, an arc out of it the turn cost of
an edge arriving into the hub + ``edge_duration_s[x]`` and ``edge_length_m[x]``; a shortcut the
sum of its two halves, found as the unpacking finds them
(:func:`engine.routing.ch.arc_at`), computed in order of the middle node's rank so the halves
come first. Written into the dataset by the import (``engine.ingest.roads``) like the arcs'
tails, or computed on open.

Seeds follow the router's conventions (:mod:`engine.routing.graph`): a source at fraction ``a``
of edge ``e`` enters each edge ``f`` it may turn onto at ``(1 - a) * w[e] + turn + w[f]`` (the
cheapest start edge per ``f``, as :func:`engine.routing.ch.start_turns`); a target at fraction
``b`` of edge ``t`` is reached from the end of ``t`` at ``-(1 - b) * w[t]``. Legs within one
edge (the router's ``_direct``) are the caller's case (:func:`direct_cells`).

Memory: the buckets hold one entry per (target, settled node), 40 bytes each, and the answer
three float64 matrices of 24 bytes a cell; :meth:`MatrixQuery.row_blocks` computes the answer a
block of sources at a time over buckets built once, so a large matrix (a job) holds one block's
matrices, not the whole (``Limits.matrix_job_chunk_cells``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numba import njit

from engine.arrays import grown, resized
from engine.routing import heap
from engine.routing.ch import ARC_TAILS, arc_at, ch_numbering, node_count, renumbered
from engine.routing.derived import DerivedArrays
from engine.routing.router import Router
from engine.routing.snap import Snap
from engine.routing.turns import turn_cost

INF = np.inf


# ----------------------------------------------------------------------------- arc costs
@njit(cache=True)
def _by_middle_rank(rank, um, dm, order):
    """Fill ``order`` with the upward arcs' indexes then the downward arcs' (offset by the upward
    count), sorted by the rank of their middle node, original arcs (no middle) first, ties in index
    order: a counting sort, the order a stable argsort of those ranks gives, without the int64 keys
    and indexes of an argsort over every arc (at 1M road nodes, 21M arcs: 340 MB)."""
    n_up = um.shape[0]
    start = np.zeros(rank.shape[0] + 2, np.int64)
    for k in range(n_up):
        start[(rank[um[k]] + 1 if um[k] >= 0 else 0) + 1] += 1
    for k in range(dm.shape[0]):
        start[(rank[dm[k]] + 1 if dm[k] >= 0 else 0) + 1] += 1
    for b in range(1, start.shape[0]):
        start[b] += start[b - 1]
    for k in range(n_up):
        b = rank[um[k]] + 1 if um[k] >= 0 else 0
        order[start[b]] = k
        start[b] += 1
    for k in range(dm.shape[0]):
        b = rank[dm[k]] + 1 if dm[k] >= 0 else 0
        order[start[b]] = n_up + k
        start[b] += 1


@njit(cache=True)
def _arc_sums(order, uf, ut, uw, um, up_from, df, dt, dw, dm, dn_from, tfirst, tto, tcost, value, with_turns, hub_edge, ch_edge):  # fmt: skip
    """One cost of every arc (the edges' ``value``, plus the turns' costs when ``with_turns``), in
    ``order`` (:func:`_by_middle_rank`): a shortcut's two halves come before it. ``ch_edge``: the
    road edge or hub of each CH node (empty: the same number)."""
    n_up = ut.shape[0]
    up = np.zeros(n_up, np.float64)
    dn = np.zeros(dt.shape[0], np.float64)
    n_edges = value.shape[0]  # edge numbers from here on are junction hubs
    for i in order:
        if i < n_up:
            u, x, m = up_from[i], ut[i], um[i]
        else:
            k = i - n_up
            u, x, m = dt[k], dn_from[k], dm[k]  # a downward arc stored at x, from u
        if m >= 0:  # a shortcut: the sum of its halves
            k1 = arc_at(df, dt, dw, dm, m, u)  # u -> m, stored at m
            k2 = arc_at(uf, ut, uw, um, m, x)  # m -> x, stored at m
            c = dn[k1] + up[k2]
        else:
            if ch_edge.shape[0]:
                u, x = ch_edge[u], ch_edge[x]
            if x >= n_edges:  # into a junction hub: the turn is paid on the way out
                c = 0.0
            elif u >= n_edges:  # out of a hub onto edge x: the turn of an edge arriving there
                c = turn_cost(tfirst, tto, tcost, hub_edge[u - n_edges], x) + value[x] if with_turns else value[x]
            else:
                c = turn_cost(tfirst, tto, tcost, u, x) + value[x] if with_turns else value[x]
        if i < n_up:
            up[i] = c
        else:
            dn[i - n_up] = c
    return up, dn


def _arc_costs(graph) -> Iterator[tuple[str, np.ndarray]]:
    """The arcs' durations, then their lengths: a caller that writes each array and lets it go
    (:meth:`DerivedArrays.write`) holds two of the four at a time."""
    tails = ARC_TAILS.load(graph)
    n_arcs = graph.ch_up_to.shape[0] + graph.ch_dn_to.shape[0]
    order = np.empty(n_arcs, np.int32 if n_arcs < 2**31 else np.int64)
    _by_middle_rank(np.asarray(graph.ch_rank), np.asarray(graph.ch_up_mid), np.asarray(graph.ch_dn_mid), order)
    arcs = (
        order,
        np.asarray(graph.ch_up_first),
        np.asarray(graph.ch_up_to),
        np.asarray(graph.ch_up_w),
        np.asarray(graph.ch_up_mid),
        tails["up_from"],
        np.asarray(graph.ch_dn_first),
        np.asarray(graph.ch_dn_to),
        np.asarray(graph.ch_dn_w),
        np.asarray(graph.ch_dn_mid),
        tails["dn_from"],
        np.asarray(graph.turn_first_out, np.int64),
        np.asarray(graph.turn_to),
        np.asarray(graph.turn_cost_s),
    )
    hub_edge = np.asarray(getattr(graph, "ch_hub_edge", np.zeros(0, np.int32)), np.int64)  # format 1: no hubs
    for kind, value, with_turns in (
        ("dur", np.asarray(graph.edge_duration_s), True),
        ("len", np.asarray(graph.edge_length_m), False),
    ):
        up, dn = _arc_sums(*arcs, value, with_turns, hub_edge, ch_numbering(graph)[1])
        yield f"up_{kind}", up
        del up
        yield f"dn_{kind}", dn
        del dn


ARC_COSTS = DerivedArrays("ch-arc-costs", 1, ("up_dur", "up_len", "dn_dur", "dn_len"), _arc_costs)


# ----------------------------------------------------------------------------- seeds
@njit(cache=True)
def source_seeds(starts, fracs, w, dur, length, tfirst, tto, tweight, tcost):
    """The CH nodes a source's forward search starts from, with weight, duration and length:
    per edge entered, the cheapest start edge (:func:`engine.routing.ch.start_turns`)."""
    m = 0
    for e in starts:
        m += tfirst[e + 1] - tfirst[e]
    to = np.empty(m, np.int64)
    sw = np.empty(m, np.float64)
    sd = np.empty(m, np.float64)
    sl = np.empty(m, np.float64)
    k = 0
    for i in range(starts.shape[0]):
        e = starts[i]
        rest = 1.0 - fracs[i]
        for t in range(tfirst[e], tfirst[e + 1]):
            f = tto[t]
            c = rest * w[e] + tweight[t] + w[f]
            j = 0
            while j < k and to[j] != f:
                j += 1
            if j == k:
                to[k] = f
                k += 1
            elif c >= sw[j]:
                continue
            sw[j] = c
            sd[j] = rest * dur[e] + tcost[t] + dur[f]
            sl[j] = rest * length[e] + length[f]
    return to[:k], sw[:k], sd[:k], sl[:k]


# ----------------------------------------------------------------------------- searches
@njit(cache=True, nogil=True)
def _search(first, to, wt, ad, al, sfirst, sto, sw, seeds, s_w, s_d, s_l, dist, dd, dl, touched, hk, hv, hp):
    """One full search from ``seeds`` over (first, to, wt) stalling via (sfirst, sto, sw); returns
    the settled, unstalled nodes in order (labels in dist/dd/dl until :func:`_reset`), and the
    number of touched nodes."""
    nt = 0
    size = 0
    for i in range(seeds.shape[0]):
        x = seeds[i]
        if dist[x] == INF:
            touched[nt] = x
            nt += 1
        if s_w[i] < dist[x]:
            dist[x] = s_w[i]
            dd[x] = s_d[i]
            dl[x] = s_l[i]
            size = heap.push(hk, hv, hp, size, s_w[i], x)
    settled = np.empty(64, np.int64)
    ns = 0
    while size > 0:
        d, x, size = heap.pop(hk, hv, hp, size)
        stalled = False
        for k in range(sfirst[x], sfirst[x + 1]):
            if dist[sto[k]] + sw[k] < d:
                stalled = True
                break
        if stalled:
            continue
        if ns >= settled.shape[0]:
            settled = grown(settled, ns)
        settled[ns] = x
        ns += 1
        for k in range(first[x], first[x + 1]):
            y = to[k]
            nd = d + wt[k]
            if nd < dist[y]:
                if dist[y] == INF:
                    touched[nt] = y
                    nt += 1
                dist[y] = nd
                dd[y] = dd[x] + ad[k]
                dl[y] = dl[x] + al[k]
                size = heap.push(hk, hv, hp, size, nd, y)
    return settled[:ns], nt


@njit(cache=True, nogil=True)
def _reset(dist, touched, nt):
    for i in range(nt):
        dist[touched[i]] = INF


@njit(cache=True, nogil=True)
def target_buckets(tgt_first, tgt_nodes, tgt_w, tgt_d, tgt_l, uf, ut, uw, df, dt, dw, dn_dur, dn_len, n_nodes):
    """The backward searches of every target as buckets: CSR by node ``(bfirst, b_tgt, b_w, b_d,
    b_l)``, one entry per (target, node it settled) with the node-to-target weight, duration and
    length. Target j's seeds are ``tgt_nodes[tgt_first[j]:tgt_first[j + 1]]``."""
    n_tgt = tgt_first.shape[0] - 1
    dist = np.full(n_nodes, INF)
    dd = np.zeros(n_nodes)
    dl = np.zeros(n_nodes)
    touched = np.empty(n_nodes + 8, np.int64)
    hk, hv, hp = heap.new_heap(n_nodes)
    cap = 1024
    e_node = np.empty(cap, np.int64)
    e_tgt = np.empty(cap, np.int64)
    e_w = np.empty(cap, np.float64)
    e_d = np.empty(cap, np.float64)
    e_l = np.empty(cap, np.float64)
    ne = 0
    for j in range(n_tgt):
        a, b = tgt_first[j], tgt_first[j + 1]
        settled, nt = _search(
            df, dt, dw, dn_dur, dn_len, uf, ut, uw, tgt_nodes[a:b], tgt_w[a:b], tgt_d[a:b], tgt_l[a:b],
            dist, dd, dl, touched, hk, hv, hp,
        )  # fmt: skip
        if ne + settled.shape[0] > cap:
            cap = max(2 * cap, ne + settled.shape[0])
            e_node, e_tgt = resized(e_node, cap, ne), resized(e_tgt, cap, ne)
            e_w, e_d, e_l = resized(e_w, cap, ne), resized(e_d, cap, ne), resized(e_l, cap, ne)
        for x in settled:
            e_node[ne] = x
            e_tgt[ne] = j
            e_w[ne] = dist[x]
            e_d[ne] = dd[x]
            e_l[ne] = dl[x]
            ne += 1
        _reset(dist, touched, nt)
    bfirst = np.zeros(n_nodes + 1, np.int64)
    for i in range(ne):
        bfirst[e_node[i] + 1] += 1
    for x in range(n_nodes):
        bfirst[x + 1] += bfirst[x]
    fill = bfirst[:-1].copy()
    b_tgt = np.empty(ne, np.int64)
    b_w = np.empty(ne, np.float64)
    b_d = np.empty(ne, np.float64)
    b_l = np.empty(ne, np.float64)
    for i in range(ne):
        p = fill[e_node[i]]
        fill[e_node[i]] += 1
        b_tgt[p] = e_tgt[i]
        b_w[p] = e_w[i]
        b_d[p] = e_d[i]
        b_l[p] = e_l[i]
    return bfirst, b_tgt, b_w, b_d, b_l


@njit(cache=True, nogil=True)
def scan_sources(src_first, src_nodes, src_w, src_d, src_l, n_tgt, bfirst, b_tgt, b_w, b_d, b_l, uf, ut, uw, up_dur, up_len, df, dt, dw, n_nodes):  # fmt: skip
    """One forward search per source, scanning the buckets (:func:`target_buckets`) of the nodes
    it settles: the weight, duration and length matrices, sources by targets (INF: no path)."""
    n_src = src_first.shape[0] - 1
    best = np.full((n_src, n_tgt), INF)
    bdur = np.zeros((n_src, n_tgt))
    blen = np.zeros((n_src, n_tgt))
    dist = np.full(n_nodes, INF)
    dd = np.zeros(n_nodes)
    dl = np.zeros(n_nodes)
    touched = np.empty(n_nodes + 8, np.int64)
    hk, hv, hp = heap.new_heap(n_nodes)
    for i in range(n_src):
        a, b = src_first[i], src_first[i + 1]
        settled, nt = _search(
            uf, ut, uw, up_dur, up_len, df, dt, dw, src_nodes[a:b], src_w[a:b], src_d[a:b], src_l[a:b],
            dist, dd, dl, touched, hk, hv, hp,
        )  # fmt: skip
        for x in settled:
            for p in range(bfirst[x], bfirst[x + 1]):
                j = b_tgt[p]
                c = dist[x] + b_w[p]
                if c < best[i, j]:
                    best[i, j] = c
                    bdur[i, j] = dd[x] + b_d[p]
                    blen[i, j] = dl[x] + b_l[p]
        _reset(dist, touched, nt)
    return best, bdur, blen


# ----------------------------------------------------------------------------- the Python side
class MatrixQuery:
    """The CH arrays, arc costs and per-point seeds of one router, for :meth:`costs` and
    :meth:`row_blocks`.

    Holds no workspace: the kernels allocate their labels per call (a few arrays of the CH's
    size), so threads and processes need no lock and the kernels run without the GIL."""

    def __init__(self, router: Router) -> None:
        g: Any = router.g  # the CH arrays are present when the import built a CH
        self.router = router
        costs = ARC_COSTS.load(g)
        self._up = (np.asarray(g.ch_up_first), np.asarray(g.ch_up_to), np.asarray(g.ch_up_w))
        self._dn = (np.asarray(g.ch_dn_first), np.asarray(g.ch_dn_to), np.asarray(g.ch_dn_w))
        self._up_costs = (costs["up_dur"], costs["up_len"])
        self._dn_costs = (costs["dn_dur"], costs["dn_len"])
        self._n_nodes = node_count(g)
        self._ch_node = ch_numbering(g)[0]

    def _sources(self, snaps: list[Snap]) -> tuple[np.ndarray, ...]:
        r = self.router
        parts = []
        for s in snaps:
            starts = r.starts(s)
            edges = np.array([e for e, _ in starts], np.int64)
            fracs = np.array([f for _, f in starts], np.float64)
            parts.append(
                source_seeds(edges, fracs, r.weight, r.duration, r.length, r.tfirst, r.tto, r.tweight, r.tcost)
            )
        return self._on_ch_nodes(_packed(parts))

    def _targets(self, snaps: list[Snap]) -> tuple[np.ndarray, ...]:
        r = self.router
        parts = []
        for s in snaps:
            ends = r.ends(s)
            edges = np.array([e for e, _ in ends], np.int64)
            rest = 1.0 - np.array([b for _, b in ends], np.float64)
            parts.append((edges, -rest * r.weight[edges], -rest * r.duration[edges], -rest * r.length[edges]))
        return self._on_ch_nodes(_packed(parts))

    def _on_ch_nodes(self, seeds: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """Seeds (:func:`_packed`) on the edges' CH nodes (:mod:`engine.routing.ch_order`)."""
        first, edges, *costs = seeds
        return (first, renumbered(edges, self._ch_node), *costs)

    def costs(self, sources: list[Snap], targets: list[Snap]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(weight, duration s, length m) matrices, sources by targets; weight INF: no route.

        Each cell is the router's leg for the pair (:meth:`Router.leg`): the least-weight CH path,
        or a leg within one edge when that is no heavier (the router prefers it on a tie)."""
        return next(self.row_blocks(sources, targets, max(1, len(sources))))[1]

    def row_blocks(
        self, sources: list[Snap], targets: list[Snap], rows: int
    ) -> Iterator[tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """:meth:`costs` in blocks of ``rows`` sources: ``(first row, matrices)`` in order. The
        targets' buckets are built once; only one block's matrices live at a time."""
        buckets = target_buckets(*self._targets(targets), *self._up, *self._dn, *self._dn_costs, self._n_nodes)  # type: ignore[call-arg]  # numba stubs type Dispatcher.__call__ narrowly
        for start in range(0, len(sources), rows):
            block = sources[start : start + rows]
            w, dur, length = scan_sources(  # type: ignore[call-arg]
                *self._sources(block), len(targets), *buckets, *self._up, *self._up_costs, *self._dn, self._n_nodes
            )
            self._direct(block, targets, w, dur, length)
            yield start, (w, dur, length)

    def _direct(self, sources: list[Snap], targets: list[Snap], w, dur, length) -> None:
        """Legs within one edge (:func:`engine.routing.router._direct`) into the matrices."""
        r = self.router
        ends_on: dict[int, list[tuple[int, float]]] = {}
        for j, s in enumerate(targets):
            for e, b in r.ends(s):
                ends_on.setdefault(e, []).append((j, b))
        for i, s in enumerate(sources):
            for e, a in r.starts(s):
                for j, b in ends_on.get(e, ()):
                    c = (b - a) * float(r.weight[e])
                    if b >= a and c <= w[i, j]:
                        w[i, j] = c
                        dur[i, j] = (b - a) * float(r.duration[e])
                        length[i, j] = (b - a) * float(r.length[e])


def _packed(parts: Sequence[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Per-point seed arrays as one CSR: (first, nodes, weight, duration, length)."""
    first = np.zeros(len(parts) + 1, np.int64)
    first[1:] = np.cumsum([p[0].shape[0] for p in parts])
    return (first, *(np.concatenate([p[k] for p in parts]) for k in range(4)))


_QUERIES: weakref.WeakKeyDictionary[Router, MatrixQuery] = weakref.WeakKeyDictionary()
_QUERIES_LOCK = threading.Lock()


def matrix_query(router: Router) -> MatrixQuery:
    """The process's :class:`MatrixQuery` of ``router`` (built once; gone with the router)."""
    with _QUERIES_LOCK:
        query = _QUERIES.get(router)
        if query is None:
            query = _QUERIES[router] = MatrixQuery(router)
        return query
