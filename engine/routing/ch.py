"""Contraction hierarchy over the *turn graph* (edge-based), built at import, queried in numba.

Why edge-based: turn restrictions and turn costs live on pairs of edges, so the CH nodes are the
graph's directed edges and the CH arcs are the allowed turns (weight = turn cost + weight of the
edge entered). A restriction is a missing arc, so every CH answer respects it with no special
case in the query (OSRM does the same). The price is a graph about 2-3 times larger than the
node graph, which at city scale is a few tens of thousands of CH nodes.

Why a CH (numbers, 2026-11-22, 1000 seeded pairs, min of 3 runs, machine shared, load ~4 on
2 cores): a leg (snapped point to snapped point, path unpacked) takes p50/p95 35/78 us on Monaco
and 35/57 us on Helsinki with the CH, against 375/515 us and 113/178 us with plain numba
Dijkstra over the same turn graph. The gap grows with the graph (Dijkstra settles the whole
city, the CH a few hundred nodes).

Contraction. The dynamic graph keeps, per node, out and in lists holding only arcs between
uncontracted nodes: contracting v writes its arcs to the output (upward v -> x, downward u -> v)
and removes them from its neighbours' lists, so witness searches and degrees never walk
contracted nodes. Priority (``PRIORITY``): edge difference (new arcs - removed arcs) + level
(hop depth), recomputed exactly for every neighbour after each contraction and lazily when a
node comes up. Witness searches: ``sim_limit`` settled nodes while estimating a priority,
``settle_limit`` when contracting (a missed witness only adds a shortcut, never a wrong answer).

Measured (2026-11-22, this 2-core machine, shared; ``bench/synthetic.py`` grids; "arcs/node" is
up + down arcs per CH node of a *full* contraction; queries ``CHQuery.route`` between random
edges):

======================================  ======================  ==========================
variant (10k-node city, 11.9k CH nodes)  full contraction        ``core_shortcuts=48``
======================================  ======================  ==========================
previous contractor (lists kept          20.8 s, 15.9 arcs/node  16.9 s, core 2348, 1.88 ms
contracted nodes, lazy prio only)
sim 10 / settle 200, ED+level (default)  16 s, 16.5 arcs/node    4.0 s, core 3352, 2.23 ms
sim 30 / settle 500                      11.7 s, 13.3            10.5 s, core 2245, 1.64 ms
sim 3 / 200; 100 / 1000; 300 / 2000      13 s, 17.7; 20 s, 12.6;
                                         30 s, 12.1
lazy neighbour updates only              23 s, 25 arcs/node
priority ED+deleted+level (Geisberger);  15.7; 15.6; 16.1
quotients as OSRM/RoutingKit; +level     arcs/node (sim 10/200)
order induced by a node-based CH         21-33 arcs/node
======================================  ======================  ==========================

At 1M OSM nodes (1.17M CH nodes, 3.2M turns) the default stops after 245 s with a core of 437k
nodes (CHQuery p50 515 ms; ``bench.scaling``: import 271 s, route p50 401 ms, previously 479 s
and 652 ms); sim 30 / settle 500 did
not fit the 10-minute import (timed out in ``bench.scaling``) and ``core_shortcuts=24`` takes
103 s for a 717k core (564 ms). Monaco: 0.27 s, 7.9k shortcuts (previously 8.5k), leg p50/p95
47/60 us; Helsinki 0.02 s, 2.6k (2.7k), 39/51 us (previously 47/67 and 38/49 us in the same
session): no core, unchanged answers.

Limits (measured): the grid city has little hierarchy and a turn cost at every crossing, so
there are almost no witnesses at first (going round a block costs two extra turns): contracting
a directed edge adds its 3 x 3 entry/exit combinations and the top of the hierarchy densifies.
A full contraction of the 100k-node city (116k CH nodes) takes 250-290 s (15.5 arcs/node,
query p50 0.64 ms), growing ~15x per 10x nodes; with ``core_shortcuts=48`` (sim 30 / settle
500) it takes 48 s and leaves a core of 44k nodes (query p50 29 ms). A node-based CH of the same network (turn costs
ignored) takes 3.7 s with 6.2 arcs/node: the edge-based blow-up, not the grid, is the cost.
The way to scale is a turn-aware node-based CH (Geisberger & Vetter 2011: shortcuts between
intersections labelled with exit/entry points, turn cost tables at nodes) or a multi-level
overlay; both are not done yet.

Query: bidirectional Dijkstra on the upward (forward) and downward (backward) graphs, multiple
sources and targets with initial costs (a snapped point sits on up to two directed edges),
stopped when both queue minima reach the best meeting cost, stall-on-demand. Shortcuts are
unpacked through their middle node (``ch_*_mid``). Tested against plain Dijkstra
(:mod:`engine.routing.search`) in ``tests/engine/test_ch.py``.

Arrays (CH node = directed edge id of the road graph):

* ``ch_rank`` int32 [E]: contraction order.
* ``ch_up_first`` int64 [E+1], ``ch_up_to`` int32, ``ch_up_w`` float64, ``ch_up_mid`` int32:
  arcs u -> x with rank[x] > rank[u], stored at u (forward search).
* ``ch_dn_first`` / ``ch_dn_to`` / ``ch_dn_w`` / ``ch_dn_mid``: arcs u -> x with
  rank[u] > rank[x], stored at x pointing to u (backward search).
  ``mid`` is -1 for a turn of the original graph, else the contracted middle CH node.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.arrays import grown

INF = np.inf


# --- binary heap on parallel arrays (key float64, value int64); lazy deletion by the caller
@njit(cache=True, inline="always")
def _hpush(hk, hv, size, key, val):
    if size >= hk.shape[0]:
        hk, hv = grown(hk, size), grown(hv, size)
    i = size
    hk[i] = key
    hv[i] = val
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] <= hk[i]:
            break
        hk[p], hk[i] = hk[i], hk[p]
        hv[p], hv[i] = hv[i], hv[p]
        i = p
    return hk, hv, size + 1


@njit(cache=True, inline="always")
def _hpop(hk, hv, size):
    key = hk[0]
    val = hv[0]
    size -= 1
    if size > 0:
        hk[0] = hk[size]
        hv[0] = hv[size]
        i = 0
        while True:
            lc = 2 * i + 1
            if lc >= size:
                break
            c = lc
            if lc + 1 < size and hk[lc + 1] < hk[lc]:
                c = lc + 1
            if hk[i] <= hk[c]:
                break
            hk[c], hk[i] = hk[i], hk[c]
            hv[c], hv[i] = hv[i], hv[c]
            i = c
    return key, val, size


# --- the dynamic graph of the contraction: per node an out list and an in list (target, weight,
# middle node, hop count = original arcs represented) in growable pools. A list holds only arcs
# between uncontracted nodes: contracting v moves its arcs to the output and drops them from its
# neighbours' lists, so searches and degree counts never skip contracted nodes.
@njit(cache=True)
def _append(start, length, cap, pto, pw, pmid, phop, used, node, x, wt, mid, hop):
    if length[node] == cap[node]:
        newcap = max(4, cap[node] * 2)
        if used + newcap > pto.shape[0]:
            size = max(pto.shape[0] * 2, used + newcap)
            nto = np.empty(size, np.int32)
            nw = np.empty(size, np.float64)
            nmid = np.empty(size, np.int32)
            nhop = np.empty(size, np.int32)
            nto[:used] = pto[:used]
            nw[:used] = pw[:used]
            nmid[:used] = pmid[:used]
            nhop[:used] = phop[:used]
            pto, pw, pmid, phop = nto, nw, nmid, nhop
        s = start[node]
        for k in range(length[node]):
            pto[used + k] = pto[s + k]
            pw[used + k] = pw[s + k]
            pmid[used + k] = pmid[s + k]
            phop[used + k] = phop[s + k]
        start[node] = used
        cap[node] = newcap
        used += newcap
    i = start[node] + length[node]
    pto[i] = x
    pw[i] = wt
    pmid[i] = mid
    phop[i] = hop
    length[node] += 1
    return pto, pw, pmid, phop, used


@njit(cache=True)
def _remove(start, length, pto, pw, pmid, phop, node, x):
    s = start[node]
    last = s + length[node] - 1
    for k in range(s, last + 1):
        if pto[k] == x:
            pto[k] = pto[last]
            pw[k] = pw[last]
            pmid[k] = pmid[last]
            phop[k] = phop[last]
            length[node] -= 1
            return


@njit(cache=True)
def _set_weight(start, length, pto, pw, pmid, phop, node, x, wt, mid, hop):
    for k in range(start[node], start[node] + length[node]):
        if pto[k] == x:
            pw[k] = wt
            pmid[k] = mid
            phop[k] = hop
            return


@njit(cache=True)
def _witness(u, skip, limit, settle_limit, os_, ol, oto, ow, dist, touched, hk, hv, tmark, stamp,
             n_targets):
    """Dijkstra from u avoiding ``skip``, bounded by cost ``limit`` and ``settle_limit`` settled
    nodes, until the ``n_targets`` nodes with ``tmark == stamp`` are settled; distances stay in
    ``dist`` (the caller resets the ``touched`` ones)."""
    nt = 0
    dist[u] = 0.0
    touched[nt] = u
    nt += 1
    size = 0
    hk, hv, size = _hpush(hk, hv, size, 0.0, u)
    settled = 0
    while size > 0:
        d, x, size = _hpop(hk, hv, size)
        if d > dist[x]:
            continue
        if d > limit:
            break
        settled += 1
        if settled > settle_limit:
            break
        if tmark[x] == stamp:
            n_targets -= 1
            if n_targets <= 0:
                break
        s = os_[x]
        for k in range(s, s + ol[x]):
            y = oto[k]
            if y == skip:
                continue
            nd = d + ow[k]
            if nd < dist[y]:
                if dist[y] == INF:
                    if nt >= touched.shape[0]:
                        touched = grown(touched, nt)
                    touched[nt] = y
                    nt += 1
                dist[y] = nd
                hk, hv, size = _hpush(hk, hv, size, nd, y)
    return nt, touched, hk, hv


@njit(cache=True)
def _shortcuts(v, do_it, settle_limit, os_, ol, oc, oto, ow, omid, ohop, ous,
               is_, il, ic, ito, iw, imid, ihop, ius, dist, touched, hk, hv, tmark, stamp):
    """Shortcuts that contracting v needs: (needed, of which new arcs, their hop count).
    With ``do_it`` they are inserted (or lower the weight of an existing arc)."""
    needed = 0
    new = 0
    hops = 0
    k = 0
    while k < il[v]:
        ka = is_[v] + k
        k += 1
        u = ito[ka]
        w1 = iw[ka]
        h1 = ihop[ka]
        limit = -1.0
        stamp[0] += 1
        n_targets = 0
        so = os_[v]
        for j in range(so, so + ol[v]):
            x = oto[j]
            if x == u:
                continue
            tmark[x] = stamp[0]
            n_targets += 1
            if w1 + ow[j] > limit:
                limit = w1 + ow[j]
        if limit < 0:
            continue
        nt, touched, hk, hv = _witness(u, v, limit, settle_limit, os_, ol, oto, ow, dist, touched,
                                       hk, hv, tmark, stamp[0], n_targets)
        for jj in range(ol[v]):  # v's own lists do not change while shortcuts are added
            j = os_[v] + jj
            x = oto[j]
            if x == u:
                continue
            wt = w1 + ow[j]
            if dist[x] <= wt:
                continue
            hop = h1 + ohop[j]
            needed += 1
            hops += hop
            found = False
            for q in range(os_[u], os_[u] + ol[u]):
                if oto[q] == x:
                    found = True
                    if do_it and wt < ow[q]:
                        ow[q] = wt
                        omid[q] = v
                        ohop[q] = hop
                        _set_weight(is_, il, ito, iw, imid, ihop, x, u, wt, v, hop)
                    break
            if not found:
                new += 1
                if do_it:
                    oto, ow, omid, ohop, ous = _append(os_, ol, oc, oto, ow, omid, ohop, ous, u, x, wt, v, hop)
                    ito, iw, imid, ihop, ius = _append(is_, il, ic, ito, iw, imid, ihop, ius, x, u, wt, v, hop)
        for t in range(nt):
            dist[touched[t]] = INF
    return needed, new, hops, oto, ow, omid, ohop, ous, ito, iw, imid, ihop, ius, touched, hk, hv


# priority weights: edge difference, added/removed arcs, added/removed hops, deleted neighbours,
# level (hop depth); measured alternatives in the module docstring
PRIORITY = (1.0, 0.0, 0.0, 0.0, 1.0)


@njit(cache=True)
def _priority(v, new, hops, ol, oc, ohop, os_, il, ihop, is_, deleted, level, coef):
    removed = ol[v] + il[v]
    removed_hops = 0
    for k in range(os_[v], os_[v] + ol[v]):
        removed_hops += ohop[k]
    for k in range(is_[v], is_[v] + il[v]):
        removed_hops += ihop[k]
    return (coef[0] * (new - removed) + coef[1] * new / max(removed, 1)
            + coef[2] * hops / max(removed_hops, 1) + coef[3] * deleted[v] + coef[4] * level[v])


@njit(cache=True)
def _emit(buf_at, buf_to, buf_w, buf_mid, nb, at, x, wt, mid):
    if nb >= buf_at.shape[0]:
        buf_at, buf_to, buf_w, buf_mid = grown(buf_at, nb), grown(buf_to, nb), grown(buf_w, nb), grown(buf_mid, nb)
    buf_at[nb] = at
    buf_to[nb] = x
    buf_w[nb] = wt
    buf_mid[nb] = mid
    return buf_at, buf_to, buf_w, buf_mid, nb + 1


@njit(cache=True)
def _contract(n, first, to, w, sim_limit, settle_limit, core_shortcuts, coef):
    # the dynamic lists, without self loops and with only the cheapest of parallel arcs
    outdeg = np.zeros(n, np.int64)
    indeg = np.zeros(n, np.int64)
    for u in range(n):
        for k in range(first[u], first[u + 1]):
            if to[k] != u:
                outdeg[u] += 1
                indeg[to[k]] += 1
    os_ = np.zeros(n, np.int64)
    ol = np.zeros(n, np.int64)
    oc = np.zeros(n, np.int64)
    is_ = np.zeros(n, np.int64)
    il = np.zeros(n, np.int64)
    ic = np.zeros(n, np.int64)
    pos = 0
    for u in range(n):
        os_[u] = pos
        oc[u] = outdeg[u] + 2
        pos += oc[u]
    oto = np.empty(pos * 2 + 16, np.int32)
    ow = np.empty(pos * 2 + 16, np.float64)
    omid = np.empty(pos * 2 + 16, np.int32)
    ohop = np.empty(pos * 2 + 16, np.int32)
    ous = pos
    pos = 0
    for u in range(n):
        is_[u] = pos
        ic[u] = indeg[u] + 2
        pos += ic[u]
    ito = np.empty(pos * 2 + 16, np.int32)
    iw = np.empty(pos * 2 + 16, np.float64)
    imid = np.empty(pos * 2 + 16, np.int32)
    ihop = np.empty(pos * 2 + 16, np.int32)
    ius = pos
    for u in range(n):
        for k in range(first[u], first[u + 1]):
            x = to[k]
            if x == u:
                continue
            dup = False
            for q in range(os_[u], os_[u] + ol[u]):
                if oto[q] == x:
                    dup = True
                    if w[k] < ow[q]:
                        ow[q] = w[k]
                        _set_weight(is_, il, ito, iw, imid, ihop, x, u, w[k], -1, 1)
                    break
            if dup:
                continue
            i = os_[u] + ol[u]
            oto[i] = x
            ow[i] = w[k]
            omid[i] = -1
            ohop[i] = 1
            ol[u] += 1
            j = is_[x] + il[x]
            ito[j] = u
            iw[j] = w[k]
            imid[j] = -1
            ihop[j] = 1
            il[x] += 1

    contracted = np.zeros(n, np.bool_)
    tmark = np.full(n, -1, np.int64)
    stamp = np.zeros(1, np.int64)
    dist = np.full(n, INF)
    touched = np.empty(1024, np.int64)
    hk = np.empty(1024, np.float64)
    hv = np.empty(1024, np.int64)
    deleted = np.zeros(n, np.float64)
    level = np.zeros(n, np.float64)
    prio = np.zeros(n, np.float64)
    qk = np.empty(n + 16, np.float64)
    qv = np.empty(n + 16, np.int64)
    qs = 0
    for v in range(n):
        _, new, hops, oto, ow, omid, ohop, ous, ito, iw, imid, ihop, ius, touched, hk, hv = _shortcuts(
            v, False, sim_limit, os_, ol, oc, oto, ow, omid, ohop, ous, is_, il, ic, ito, iw, imid, ihop,
            ius, dist, touched, hk, hv, tmark, stamp)
        prio[v] = _priority(v, new, hops, ol, oc, ohop, os_, il, ihop, is_, deleted, level, coef)
        qk, qv, qs = _hpush(qk, qv, qs, prio[v], v)
    cap0 = 2 * first[n] + 1024
    ua = np.empty(cap0, np.int32)
    ut = np.empty(cap0, np.int32)
    uw = np.empty(cap0, np.float64)
    um = np.empty(cap0, np.int32)
    nu = 0
    da = np.empty(cap0, np.int32)
    dt = np.empty(cap0, np.int32)
    dw = np.empty(cap0, np.float64)
    dm = np.empty(cap0, np.int32)
    nd = 0
    rank = np.full(n, -1, np.int64)
    nbr = np.empty(64, np.int64)
    seen = np.full(n, -1, np.int64)
    r = 0
    while qs > 0:
        p, v, qs = _hpop(qk, qv, qs)
        if contracted[v] or p != prio[v]:
            continue
        needed, new, hops, oto, ow, omid, ohop, ous, ito, iw, imid, ihop, ius, touched, hk, hv = _shortcuts(
            v, False, sim_limit, os_, ol, oc, oto, ow, omid, ohop, ous, is_, il, ic, ito, iw, imid, ihop,
            ius, dist, touched, hk, hv, tmark, stamp)
        newp = _priority(v, new, hops, ol, oc, ohop, os_, il, ihop, is_, deleted, level, coef)
        if qs > 0 and newp > qk[0]:
            prio[v] = newp
            qk, qv, qs = _hpush(qk, qv, qs, newp, v)
            continue
        if needed > core_shortcuts:
            break  # the rest is a dense core: left uncontracted, searched as a plain graph
        _, _, _, oto, ow, omid, ohop, ous, ito, iw, imid, ihop, ius, touched, hk, hv = _shortcuts(
            v, True, settle_limit, os_, ol, oc, oto, ow, omid, ohop, ous, is_, il, ic, ito, iw, imid, ihop,
            ius, dist, touched, hk, hv, tmark, stamp)
        contracted[v] = True
        rank[v] = r
        r += 1
        # v's arcs go to the output (upward: v -> x; downward, stored at v: u -> v) and leave the
        # lists of its neighbours
        nn = 0
        for k in range(os_[v], os_[v] + ol[v]):
            x = oto[k]
            ua, ut, uw, um, nu = _emit(ua, ut, uw, um, nu, v, x, ow[k], omid[k])
            _remove(is_, il, ito, iw, imid, ihop, x, v)
            if nn >= nbr.shape[0]:
                nbr = grown(nbr, nn)
            nbr[nn] = x
            nn += 1
        for k in range(is_[v], is_[v] + il[v]):
            u = ito[k]
            da, dt, dw, dm, nd = _emit(da, dt, dw, dm, nd, v, u, iw[k], imid[k])
            _remove(os_, ol, oto, ow, omid, ohop, u, v)
            if nn >= nbr.shape[0]:
                nbr = grown(nbr, nn)
            nbr[nn] = u
            nn += 1
        ol[v] = 0
        il[v] = 0
        for i in range(nn):
            y = nbr[i]
            if seen[y] == r:
                continue
            seen[y] = r
            deleted[y] += 1.0
            if level[v] + 1.0 > level[y]:
                level[y] = level[v] + 1.0
            _, new, hops, oto, ow, omid, ohop, ous, ito, iw, imid, ihop, ius, touched, hk, hv = _shortcuts(
                y, False, sim_limit, os_, ol, oc, oto, ow, omid, ohop, ous, is_, il, ic, ito, iw, imid,
                ihop, ius, dist, touched, hk, hv, tmark, stamp)
            prio[y] = _priority(y, new, hops, ol, oc, ohop, os_, il, ihop, is_, deleted, level, coef)
            qk, qv, qs = _hpush(qk, qv, qs, prio[y], y)
    # an uncontracted core: its arcs go both ways, ranks above everything contracted
    n_core = 0
    for v in range(n):
        if not contracted[v]:
            rank[v] = r
            r += 1
            n_core += 1
            for k in range(os_[v], os_[v] + ol[v]):
                x = oto[k]
                ua, ut, uw, um, nu = _emit(ua, ut, uw, um, nu, v, x, ow[k], omid[k])
                da, dt, dw, dm, nd = _emit(da, dt, dw, dm, nd, x, v, ow[k], omid[k])
    return (rank, n_core, ua[:nu].copy(), ut[:nu].copy(), uw[:nu].copy(), um[:nu].copy(),
            da[:nd].copy(), dt[:nd].copy(), dw[:nd].copy(), dm[:nd].copy())


def _csr(n, at, to, w, mid):
    order = np.argsort(at, kind="stable")
    first = np.zeros(n + 1, np.int64)
    np.add.at(first, at.astype(np.int64) + 1, 1)
    return np.cumsum(first), to[order], w[order], mid[order]


def turn_arcs(graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The turn graph as CSR with weights ``turn_weight + edge_weight[next]``."""
    first = np.asarray(graph.turn_first_out, dtype=np.int64)
    to = np.asarray(graph.turn_to, dtype=np.int64)
    tw = getattr(graph, "turn_weight", None)
    tw = graph.turn_cost_s if tw is None else tw
    w = np.asarray(tw, dtype=np.float64) + np.asarray(graph.edge_weight, dtype=np.float64)[to]
    return first, to, w


def build(graph, *, sim_limit: int = 10, settle_limit: int = 200, core_shortcuts: int = 48,
          priority: tuple[float, float, float, float, float] = PRIORITY) -> dict[str, np.ndarray]:
    """Contract the turn graph (see the module docstring for the parameters' measured effect).

    ``core_shortcuts`` stops the contraction when the next node would need more shortcuts than
    that: the uncontracted *core*'s arcs then go into both the upward and the downward graph, so
    the query searches it as a plain bidirectional Dijkstra (its stopping rule covers that).
    """
    n = graph.n_edges
    first, to, w = turn_arcs(graph)
    rank, n_core, ua, ut, uw, um, da, dt, dw, dm = _contract(
        n, first, to, w, sim_limit, settle_limit, core_shortcuts, np.asarray(priority, np.float64))
    uf, ut, uw, um = _csr(n, ua, ut, uw, um)
    df, dt, dw, dm = _csr(n, da, dt, dw, dm)
    return {
        "ch_rank": rank.astype(np.int32),
        "ch_core": np.asarray([n_core], dtype=np.int64),
        "ch_up_first": uf, "ch_up_to": ut, "ch_up_w": uw, "ch_up_mid": um,
        "ch_dn_first": df, "ch_dn_to": dt, "ch_dn_w": dw, "ch_dn_mid": dm,
    }


# ----------------------------------------------------------------------------- query
@njit(cache=True)
def _query(uf, ut, uw, df, dt, dw, srcs, sd, tgts, td, distf, distb, parf, parb,
           touchedf, touchedb, hk1, hv1, hk2, hv2):
    """Returns (best cost, meeting node, n touched fwd, n touched bwd). parf/parb hold the arc index
    used to reach a node (-1 at a start)."""
    ntf = 0
    ntb = 0
    s1 = 0
    s2 = 0
    best = INF
    meet = -1
    for i in range(srcs.shape[0]):
        x = srcs[i]
        if distf[x] == INF:
            touchedf[ntf] = x
            ntf += 1
        if sd[i] < distf[x]:
            distf[x] = sd[i]
            parf[x] = -1
            hk1, hv1, s1 = _hpush(hk1, hv1, s1, sd[i], x)
    for i in range(tgts.shape[0]):
        x = tgts[i]
        if distb[x] == INF:
            touchedb[ntb] = x
            ntb += 1
        if td[i] < distb[x]:
            distb[x] = td[i]
            parb[x] = -1
            hk2, hv2, s2 = _hpush(hk2, hv2, s2, td[i], x)
    for i in range(srcs.shape[0]):
        x = srcs[i]
        if distb[x] < INF and distf[x] + distb[x] < best:
            best = distf[x] + distb[x]
            meet = x
    while s1 > 0 or s2 > 0:
        m1 = hk1[0] if s1 > 0 else INF
        m2 = hk2[0] if s2 > 0 else INF
        if m1 >= best and m2 >= best:
            break
        if m1 <= m2:
            d, x, s1 = _hpop(hk1, hv1, s1)
            if d > distf[x]:
                continue
            # stall on demand: a cheaper way into x from a higher node via the down graph
            stalled = False
            for k in range(df[x], df[x + 1]):
                y = dt[k]
                if distf[y] + dw[k] < d:
                    stalled = True
                    break
            if stalled:
                continue
            for k in range(uf[x], uf[x + 1]):
                y = ut[k]
                nd = d + uw[k]
                if nd < distf[y]:
                    if distf[y] == INF:
                        touchedf[ntf] = y
                        ntf += 1
                    distf[y] = nd
                    parf[y] = k
                    hk1, hv1, s1 = _hpush(hk1, hv1, s1, nd, y)
                    if distb[y] < INF and nd + distb[y] < best:
                        best = nd + distb[y]
                        meet = y
        else:
            d, x, s2 = _hpop(hk2, hv2, s2)
            if d > distb[x]:
                continue
            stalled = False
            for k in range(uf[x], uf[x + 1]):
                y = ut[k]
                if distb[y] + uw[k] < d:
                    stalled = True
                    break
            if stalled:
                continue
            for k in range(df[x], df[x + 1]):
                y = dt[k]
                nd = d + dw[k]
                if nd < distb[y]:
                    if distb[y] == INF:
                        touchedb[ntb] = y
                        ntb += 1
                    distb[y] = nd
                    parb[y] = k
                    hk2, hv2, s2 = _hpush(hk2, hv2, s2, nd, y)
                    if distf[y] < INF and nd + distf[y] < best:
                        best = nd + distf[y]
                        meet = y
    return best, meet, ntf, ntb, hk1, hv1, hk2, hv2


@njit(cache=True)
def _arc_at(first, to, w, mid, node, target):
    best = -1
    bw = INF
    for k in range(first[node], first[node + 1]):
        if to[k] == target and w[k] < bw:
            bw = w[k]
            best = k
    return best


@njit(cache=True)
def _unpack_into(out, n_out, u, x, mid, uf, ut, uw, um, df, dt, dw, dm):
    """Append the CH nodes strictly after u up to and including x for arc u->x (mid)."""
    # explicit stack of (a, b, mid)
    sa = np.empty(64, np.int64)
    sb = np.empty(64, np.int64)
    sm = np.empty(64, np.int64)
    sp = 0
    sa[0] = u
    sb[0] = x
    sm[0] = mid
    sp = 1
    while sp > 0:
        sp -= 1
        a = sa[sp]
        b = sb[sp]
        m = sm[sp]
        if m < 0:
            if n_out >= out.shape[0]:
                out = grown(out, n_out)
            out[n_out] = b
            n_out += 1
            continue
        # a -> m is stored in dn[m] (rank a > rank m); m -> b in up[m]
        k1 = _arc_at(df, dt, dw, dm, m, a)
        k2 = _arc_at(uf, ut, uw, um, m, b)
        if sp + 2 >= sa.shape[0]:
            sa, sb, sm = grown(sa, sp), grown(sb, sp), grown(sm, sp)
        # push second half first so the first half is processed first
        sa[sp] = m
        sb[sp] = b
        sm[sp] = um[k2]
        sp += 1
        sa[sp] = a
        sb[sp] = m
        sm[sp] = dm[k1]
        sp += 1
    return out, n_out


@njit(cache=True)
def _path(meet, parf, parb, uf, ut, uw, um, df, dt, dw, dm, up_from, dn_from):
    """CH nodes from a source to a target through ``meet``, shortcuts unpacked."""
    # forward chain: arcs k (in up arrays) from source to meet
    chain = np.empty(256, np.int64)
    nc = 0
    x = meet
    while parf[x] >= 0:
        k = parf[x]
        if nc >= chain.shape[0]:
            chain = grown(chain, nc)
        chain[nc] = k
        nc += 1
        x = up_from[k]
    start = x
    out = np.empty(256, np.int64)
    out[0] = start
    n_out = 1
    for i in range(nc - 1, -1, -1):
        k = chain[i]
        out, n_out = _unpack_into(out, n_out, up_from[k], ut[k], um[k], uf, ut, uw, um, df, dt, dw, dm)
    # backward chain: from meet toward the target: arc k in dn arrays goes dn_from[k] -> dt[k]
    # in the backward search, i.e. original arc dt[k] -> dn_from[k]
    x = meet
    while parb[x] >= 0:
        k = parb[x]
        nxt = dn_from[k]
        out, n_out = _unpack_into(out, n_out, x, nxt, dm[k], uf, ut, uw, um, df, dt, dw, dm)
        x = nxt
    return out[:n_out]


class CHQuery:
    """Per-thread workspace over the CH arrays of a graph; ``route`` is the hot path."""

    def __init__(self, graph) -> None:
        n = graph.n_edges
        self.uf = np.asarray(graph.ch_up_first)
        self.ut = np.asarray(graph.ch_up_to)
        self.uw = np.asarray(graph.ch_up_w)
        self.um = np.asarray(graph.ch_up_mid)
        self.df = np.asarray(graph.ch_dn_first)
        self.dt = np.asarray(graph.ch_dn_to)
        self.dw = np.asarray(graph.ch_dn_w)
        self.dm = np.asarray(graph.ch_dn_mid)
        # the tail CH node of each arc (for walking parents)
        self.up_from = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.uf))
        self.dn_from = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.df))
        self.distf = np.full(n, INF)
        self.distb = np.full(n, INF)
        self.parf = np.full(n, -1, np.int64)
        self.parb = np.full(n, -1, np.int64)
        self.tf = np.empty(n + 8, np.int64)
        self.tb = np.empty(n + 8, np.int64)
        self.hk1 = np.empty(1024, np.float64)
        self.hv1 = np.empty(1024, np.int64)
        self.hk2 = np.empty(1024, np.float64)
        self.hv2 = np.empty(1024, np.int64)

    def route(self, srcs, sd, tgts, td) -> tuple[float, np.ndarray | None]:
        """Best cost and the CH-node (= road edge) sequence from one of ``srcs`` to one of ``tgts``.

        ``sd``/``td`` are the initial costs (see :mod:`engine.routing.graph` for the convention).
        """
        best, meet, ntf, ntb, self.hk1, self.hv1, self.hk2, self.hv2 = _query(
            self.uf, self.ut, self.uw, self.df, self.dt, self.dw, srcs, sd, tgts, td,
            self.distf, self.distb, self.parf, self.parb, self.tf, self.tb,
            self.hk1, self.hv1, self.hk2, self.hv2)
        path = None
        if meet >= 0:
            path = _path(meet, self.parf, self.parb, self.uf, self.ut, self.uw, self.um,
                         self.df, self.dt, self.dw, self.dm, self.up_from, self.dn_from)
        _reset(self.distf, self.parf, self.tf, ntf)
        _reset(self.distb, self.parb, self.tb, ntb)
        return best, path


@njit(cache=True)
def _reset(dist, par, touched, nt):
    for i in range(nt):
        dist[touched[i]] = INF
        par[touched[i]] = -1
