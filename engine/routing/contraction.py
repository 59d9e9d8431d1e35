"""Contraction of the turn graph into a contraction hierarchy (the import half of
:mod:`engine.routing.ch`, which documents the arrays it produces).

The dynamic graph keeps, per node, an out list and an in list (target, weight, middle node, hop
count = original arcs represented) in two growable pools; a list holds only arcs between
uncontracted nodes: contracting v moves its arcs to the output (upward v -> x; downward, stored
at v, u -> v) and drops them from its neighbours' lists, so witness searches and degrees never
walk contracted nodes.

Order: in rounds, every node whose priority (``PRIORITY``: edge difference + level) is below all
its neighbours' (hashed tie-break) is contracted. A node next to a contracted one becomes
*dirty*, and only clean nodes may be chosen. A round simulates again only the dirty nodes in its
*front* (priority among the lowest ``front`` share of the remaining nodes, from a sample); the
others keep their last priority until the front reaches them: in the dense upper levels almost
every node is dirty after every round, and re-simulating all of them dominated the build. Once
fewer than ``lazy_below`` of the nodes remain, the updates are *lazy*: a round simulates only
the dirty nodes of its front whose last priority is still below all their neighbours' (the only
ones that could be chosen), and again until it has chosen a node, or none is left to simulate
(then the whole front, as above). At the top of a car's graph a round contracts a node or two
and made most of the rest dirty, so each contracted node had cost dozens of simulations.
Witness searches settle at most ``sim_limit`` nodes while estimating and ``settle_limit`` while
contracting (a missed witness only adds a shortcut, never a wrong answer), and stop as soon as no
target still open can get a witness: a target closes when a path to it is cheap enough, even
before it is settled, and the search's cost bound falls to the largest bound of the targets
still open (the shortcuts are the same as with searches run to the largest bound); a node
reached beyond that bound is never queued.

Threads: the searches only read the graph, so both the priority simulations and the shortcut
searches of a round's nodes run on all threads (one search workspace each); the shortcuts are
then inserted one node after the other. The round's nodes are independent (no two adjacent), and
their witness searches avoid all of them, so a node's shortcuts are right whatever the others
add (a witness through another node of the round could vanish with it); the witnesses so blocked
cost a few percent more arcs.

Calls: :func:`contract` (Python) runs one round per call of the :func:`_contract_round` kernel and
between rounds hands the finished arcs to its outputs (:mod:`engine.routing.arc_chunks`), which
may spill them to disk. The pools and output buffers travel in numba typed lists, so that a round
that grows one frees the old arrays at once (arrays passed as arguments would stay referenced by
the call until it returns).

numba note: no kernel here returns or rebinds an array inside a loop. A loop in which an array
variable may be rebound pays two atomic reference-count updates per iteration for it, even on a
branch never taken, which would dominate the build. Pools and output buffers are therefore grown
by the round loop, before a node is contracted, by the most that contracting it can use; the
witness search uses the indexed heap of :mod:`engine.routing.heap` and is compiled without
reference counting (``_nrt=False``).

The measurements (front size, limits, threads, reference counting) are in
``docs/engineering-history.md``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.typed import List

from engine.arrays import resized
from engine.routing import heap

INF = np.inf

# priority weights: edge difference, added/removed arcs, added/removed hops, deleted neighbours,
# level (hop depth); the alternatives measured are in docs/engineering-history.md
PRIORITY = (1.0, 0.0, 0.0, 0.0, 1.0)


# --- pools: (start, length, cap, to, w, mid, hop, used[2]) per direction; used[0]: the slots
# handed out so far, used[1]: the budget of slots the pool may hand out before it packs or grows.
# The arrays are POOL_RESERVE times the budget: the pages past the slots handed out are never
# touched, so they cost address space, not memory, and a budget that grows within them needs no
# second copy of the pool (which, next to the first, was the contraction's peak).
# Over budget, a pool whose lists fill at most PACK_SHARE of it is packed in place, else its budget
# grows to POOL_GROWTH times their slots (docs/engineering-history.md: the pools were most of the
# contraction's memory, two thirds of it holes left by moved lists).
PACK_SHARE = 0.75
POOL_GROWTH = 1.5
POOL_RESERVE = 4


@njit(cache=True)
def _new_pool(degree):
    n = degree.shape[0]
    start = np.zeros(n, np.int64)
    cap = degree + 2
    pos = 0
    for u in range(n):
        start[u] = pos
        pos += cap[u]
    budget = int(POOL_GROWTH * pos) + 16
    size = POOL_RESERVE * budget
    return (
        start,
        np.zeros(n, np.int64),
        cap,
        np.empty(size, np.int32),
        np.empty(size, np.float64),
        np.empty(size, np.int32),
        np.empty(size, np.int32),
        np.array([pos, budget], np.int64),
    )


@njit(cache=True, inline="always")
def _pool_with_room(pools, i, need):
    """``pools[i]`` with room for ``need`` more slots within its budget. Over budget, it packs its
    lists in place (:func:`_pool_packed`): a list that outgrows its space moves to the end and
    leaves a hole, and the holes soon hold more slots than the lists; when the lists themselves
    fill the budget, the budget grows first. Only a budget beyond the arrays makes a grown pool,
    which replaces the old one in the typed list (and so frees its arrays at once)."""
    pool = pools[i]
    used = pool[7]
    if used[0] + need > used[1]:
        live = _live_slots(pool)
        if live + need > PACK_SHARE * used[1]:
            used[1] = max(int(POOL_GROWTH * live), live + need) + 16
        if used[1] > pool[3].shape[0]:
            pool = _pool_grown(pool)
            pools[i] = pool
        else:
            _pool_packed(pool)
    return pool


@njit(cache=True)
def _live_slots(pool):
    """The slots the lists keep (an empty list gives its space up: it gets new space on its next
    append)."""
    length, cap = pool[1], pool[2]
    live = 0
    for u in range(length.shape[0]):
        if length[u] == 0:
            cap[u] = 0
        live += cap[u]
    return live


@njit(cache=True)
def _pool_packed(pool):
    """The pool's lists packed in place (:func:`_packed_into` its own arrays)."""
    _packed_into(pool, pool[3], pool[4], pool[5], pool[6])


@njit(cache=True)
def _pool_grown(pool):
    """A new pool of POOL_RESERVE times its budget (``used[1]``), its lists packed into it."""
    size = POOL_RESERVE * pool[7][1]
    nto = np.empty(size, np.int32)
    nw = np.empty(size, np.float64)
    nmid = np.empty(size, np.int32)
    nhop = np.empty(size, np.int32)
    _packed_into(pool, nto, nw, nmid, nhop)
    return pool[0], pool[1], pool[2], nto, nw, nmid, nhop, pool[7]


@njit(cache=True)
def _packed_into(pool, dto, dw, dmid, dhop):
    """Move every list, in the order they lie, to the start of the arrays given (the pool's own or
    larger ones), each keeping its capacity and its order (:func:`_live_slots` ran first). Within
    the pool's own arrays a list only ever moves towards the front, onto slots already read, so
    packing needs no second array. Every list keeps its order, so the contraction does the same
    work wherever its lists lie."""
    start, length, cap, pto, pw, pmid, phop, used = pool
    pos = 0
    for u in np.argsort(start, kind="mergesort"):
        s = start[u]
        for k in range(length[u]):
            dto[pos + k] = pto[s + k]
            dw[pos + k] = pw[s + k]
            dmid[pos + k] = pmid[s + k]
            dhop[pos + k] = phop[s + k]
        start[u] = pos
        pos += cap[u]
    used[0] = pos


@njit(cache=True)
def _append(pool, node, x, wt, mid, hop):
    """Append to node's list; the pool has room (see :func:`_room`)."""
    start, length, cap, pto, pw, pmid, phop, used = pool
    if length[node] == cap[node]:
        newcap = max(4, cap[node] * 2)
        s = start[node]
        u = used[0]
        for k in range(length[node]):
            pto[u + k] = pto[s + k]
            pw[u + k] = pw[s + k]
            pmid[u + k] = pmid[s + k]
            phop[u + k] = phop[s + k]
        start[node] = u
        cap[node] = newcap
        used[0] = u + newcap
    i = start[node] + length[node]
    pto[i] = x
    pw[i] = wt
    pmid[i] = mid
    phop[i] = hop
    length[node] += 1


@njit(cache=True)
def _remove(pool, node, x):
    start, length, cap, pto, pw, pmid, phop, used = pool
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
def _set_weight(pool, node, x, wt, mid, hop):
    start, length, cap, pto, pw, pmid, phop, used = pool
    for k in range(start[node], start[node] + length[node]):
        if pto[k] == x:
            pw[k] = wt
            pmid[k] = mid
            phop[k] = hop
            return


@njit(cache=True)
def _arc_index(out, u, x):
    for q in range(out[0][u], out[0][u] + out[1][u]):
        if out[3][q] == x:
            return q
    return -1


@njit(cache=True)
def _room(pool, nodes_pool, v):
    """Most slots of ``pool`` that contracting v can use: each neighbour listed in ``nodes_pool``
    at v gets at most as many arcs as v's own list in ``pool`` holds, and a list growing from L
    to L + a by doubling moves to new space of at most 4 (L + a) + 8 slots in all."""
    ns, nl = nodes_pool[0], nodes_pool[1]
    length = pool[1]
    extra = length[v]
    need = 0
    for k in range(ns[v], ns[v] + nl[v]):
        need += 4 * (length[nodes_pool[3][k]] + extra) + 8
    return need


@njit(cache=True)
def _dynamic_graph(n, first, to, w):
    """Out and in pools from a CSR graph, without self loops, keeping the cheapest of parallel
    arcs."""
    outdeg = np.zeros(n, np.int64)
    indeg = np.zeros(n, np.int64)
    for u in range(n):
        for k in range(first[u], first[u + 1]):
            if to[k] != u:
                outdeg[u] += 1
                indeg[to[k]] += 1
    out = _new_pool(outdeg)
    inn = _new_pool(indeg)
    ow = out[4]
    for u in range(n):
        for k in range(first[u], first[u + 1]):
            x = to[k]
            if x == u:
                continue
            q = _arc_index(out, u, x)
            if q < 0:
                _append(out, u, x, w[k], -1, 1)
                _append(inn, x, u, w[k], -1, 1)
            elif w[k] < ow[q]:
                ow[q] = w[k]
                _set_weight(inn, x, u, w[k], -1, 1)
    return out, inn


# --- witness searches
@njit(cache=True)
def _workspaces(t, n):
    """One search workspace per thread (row c of each array): dist, touched, heap (keys, nodes,
    slots), target marks and their stamp. Node ids and heap slots are int32 (the pools' ids are);
    the marks hold stamps, a block of them per witness search of the whole contraction: int64."""
    return (
        np.full((t, n), INF),
        np.empty((t, n), np.int32),
        np.empty((t, n), np.float64),
        np.empty((t, n), np.int32),
        np.full((t, n), -1, np.int32),
        np.full((t, n), -1, np.int64),
        np.zeros((t, 1), np.int64),
    )


@njit(cache=True)
def _row(wss, c):
    return wss[0][c], wss[1][c], wss[2][c], wss[3][c], wss[4][c], wss[5][c], wss[6][c]


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def _costliest_open(p, order, vs, oto, tmark, first):
    """From ``p`` on, the first place in ``order`` (positions in v's out list, costliest arc
    first) whose target is still open, i.e. marked ``first`` + its position."""
    while p < order.shape[0] and tmark[oto[vs + order[p]]] != first + order[p]:
        p += 1
    return p


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def _closed(y, n_targets, p, order, vs, oto, ow, w_in, tmark, first):
    """Close target ``y``: (targets still open, the costliest one's place in ``order``, its
    bound; -inf when none is open)."""
    tmark[y] = -1
    n_targets -= 1
    if n_targets == 0:
        return 0, p, -INF
    p = _costliest_open(p, order, vs, oto, tmark, first)
    return n_targets, p, w_in + ow[vs + order[p]]


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def _witness(u, v, w_in, settle_limit, out, ws, first, n_targets, order, on_reach):
    """Dijkstra from u avoiding ``v`` and the nodes whose ``dist`` is -inf, for witnesses to the
    ``n_targets`` open targets: v's out-neighbours x, the one at position j of v's out list marked
    ``first + j`` in ``tmark``, each witnessed by a path of cost ``w_in`` (the arc u -> v) +
    w(v, x) at most (``order``: the positions, costliest arc first). Distances stay in ``dist``
    (the caller resets the ``touched`` ones, whose count is returned).

    A target closes once its distance is final (settled) or low enough already (a tentative
    distance only falls). The search stops when none is open, when its next node costs more than
    any open target's bound (no open target can get a witness then), or after ``settle_limit``
    settled nodes: it answers what a search run to the largest bound would, sooner. A node
    reached beyond the bound is neither recorded nor queued: bounds only fall. Closing a
    target as it is reached (``on_reach``) pays for itself in the shortcut searches; the priority
    simulations, a few dozen settled nodes each, are faster without it."""
    os_, ol, oto, ow = out[0], out[1], out[3], out[4]
    dist, touched, hk, hv, hpos, tmark, _ = ws
    vs, last = os_[v], first + ol[v]
    p = _costliest_open(0, order, vs, oto, tmark, first)
    limit = w_in + ow[vs + order[p]]
    nt = 1
    dist[u] = 0.0
    touched[0] = u
    size = heap.push(hk, hv, hpos, 0, 0.0, u)
    settled = 0
    while size > 0 and n_targets > 0:
        d, x, size = heap.pop(hk, hv, hpos, size)
        if d > limit:
            break
        settled += 1
        if settled > settle_limit:
            break
        if first <= tmark[x] < last:
            n_targets, p, limit = _closed(x, n_targets, p, order, vs, oto, ow, w_in, tmark, first)
            if n_targets == 0:
                break
        for k in range(os_[x], os_[x] + ol[x]):
            y = oto[k]
            if y == v:
                continue
            nd = d + ow[k]
            if nd <= limit and nd < dist[y]:
                if dist[y] == INF:
                    touched[nt] = y
                    nt += 1
                dist[y] = nd
                size = heap.push(hk, hv, hpos, size, nd, y)
                if on_reach and nd <= limit and first <= tmark[y] < last and nd <= w_in + ow[vs + tmark[y] - first]:
                    n_targets, p, limit = _closed(y, n_targets, p, order, vs, oto, ow, w_in, tmark, first)
                    if n_targets == 0:
                        break
    heap.clear(hv, hpos, size)
    return nt


@njit(cache=True, inline="always")
def _mark_targets(u, v, out, tmark, stamp):
    """Mark v's out-neighbours but u as the open targets of u's witness search: a fresh block of
    stamps, the target at position j of v's out list marked ``first`` + j; returns (first, their
    count)."""
    os_, ol, oto = out[0], out[1], out[3]
    first = stamp[0] + 1
    stamp[0] += ol[v]
    n_targets = 0
    for j in range(ol[v]):
        x = oto[os_[v] + j]
        if x != u:
            tmark[x] = first + j
            n_targets += 1
    return first, n_targets


@njit(cache=True)
def _needed(v, settle_limit, out, inn, ws, buf, base, on_reach=True):
    """Write the shortcuts (u, x, weight, hops) that contracting v needs to ``buf`` from slot
    ``base`` (room for in-degree x out-degree of v); returns their count. Reads the graph only."""
    os_, ol, oto, ow, ohop = out[0], out[1], out[3], out[4], out[6]
    is_, il, ito, iw, ihop = inn[0], inn[1], inn[3], inn[4], inn[6]
    dist, touched, tmark, stamp = ws[0], ws[1], ws[5], ws[6]
    bu, bx, bw, bh = buf
    order = np.argsort(-ow[os_[v] : os_[v] + ol[v]])  # v's out arcs, costliest first
    count = 0
    for ka in range(is_[v], is_[v] + il[v]):
        u = ito[ka]
        first, n_targets = _mark_targets(u, v, out, tmark, stamp)
        if n_targets == 0:
            continue
        nt = _witness(u, v, iw[ka], settle_limit, out, ws, first, n_targets, order, on_reach)
        for j in range(os_[v], os_[v] + ol[v]):
            x = oto[j]
            wt = iw[ka] + ow[j]
            if x == u or dist[x] <= wt:
                continue
            i = base + count
            bu[i] = u
            bx[i] = x
            bw[i] = wt
            bh[i] = ihop[ka] + ohop[j]
            count += 1
        for t in range(nt):
            dist[touched[t]] = INF
    return count


@njit(cache=True)
def _estimate(v, sim_limit, out, inn, ws, buf):
    """(shortcuts needed, of which new arcs, their hop count) for contracting v now. The
    shortcuts come grouped by their tail u: u's out-neighbours are marked once per group (with a
    fresh stamp of the target marks), not searched once per shortcut (at the top of a grid
    city's hierarchy a node needs 10k shortcuts between neighbours of degree 250)."""
    count = _needed(v, sim_limit, out, inn, ws, buf, 0, False)
    os_, ol, oto = out[0], out[1], out[3]
    mark, stamp = ws[5], ws[6]
    new = 0
    hops = 0
    tail = -1
    for i in range(count):
        u = buf[0][i]
        if u != tail:
            tail = u
            stamp[0] += 1
            for k in range(os_[u], os_[u] + ol[u]):
                mark[oto[k]] = stamp[0]
        hops += buf[3][i]
        if mark[buf[1][i]] != stamp[0]:
            new += 1
    return count, new, hops


@njit(cache=True)
def _insert(v, buf, base, count, out, inn):
    """Insert v's shortcuts (or lower the weight of an existing arc); the pools must have the room
    :func:`_room` asks for."""
    for i in range(base, base + count):
        u, x, wt, hop = buf[0][i], buf[1][i], buf[2][i], buf[3][i]
        q = _arc_index(out, u, x)
        if q < 0:
            _append(out, u, x, wt, v, hop)
            _append(inn, x, u, wt, v, hop)
        elif wt < out[4][q]:
            out[4][q] = wt
            out[5][q] = v
            out[6][q] = hop
            _set_weight(inn, x, u, wt, v, hop)


@njit(cache=True)
def _new_buffer(size):
    return np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.float64), np.empty(size, np.int64)


@njit(cache=True)
def _priority(v, new, hops, out, inn, deleted, level, coef):
    os_, ol, ohop = out[0], out[1], out[6]
    is_, il, ihop = inn[0], inn[1], inn[6]
    removed = ol[v] + il[v]
    removed_hops = 0
    for k in range(os_[v], os_[v] + ol[v]):
        removed_hops += ohop[k]
    for k in range(is_[v], is_[v] + il[v]):
        removed_hops += ihop[k]
    return (
        coef[0] * (new - removed)
        + coef[1] * new / max(removed, 1)
        + coef[2] * hops / max(removed_hops, 1)
        + coef[3] * deleted[v]
        + coef[4] * level[v]
    )


@njit(cache=True, inline="always")
def _before(p1, v1, p2, v2):
    """Priority order with a hashed tie-break (a plain id tie-break lines up along the grid)."""
    if p1 != p2:
        return p1 < p2
    h1 = (v1 * 2654435761) & 0xFFFFFFFF
    h2 = (v2 * 2654435761) & 0xFFFFFFFF
    return h1 < h2 or (h1 == h2 and v1 < v2)


@njit(cache=True)
def _local_minimum(v, out, inn, prio):
    os_, ol, oto = out[0], out[1], out[3]
    is_, il, ito = inn[0], inn[1], inn[3]
    for k in range(os_[v], os_[v] + ol[v]):
        if not _before(prio[v], v, prio[oto[k]], oto[k]):
            return False
    for k in range(is_[v], is_[v] + il[v]):  # noqa: SIM110 (a generator in all() does not compile in numba)
        if not _before(prio[v], v, prio[ito[k]], ito[k]):
            return False
    return True


# --- output: upward arcs (at, to, w, mid) and downward arcs stored at their lower end
@njit(cache=True)
def _new_output(cap):
    return (
        np.empty(cap, np.int32),
        np.empty(cap, np.int32),
        np.empty(cap, np.float64),
        np.empty(cap, np.int32),
        np.zeros(1, np.int64),
    )


@njit(cache=True, inline="always")
def _output_with_room(outputs, i, need):
    """``outputs[i]`` with room for ``need`` more arcs: when it had not, a grown buffer that
    replaces it in the typed list at once (which frees the old arrays)."""
    buf = outputs[i]
    if buf[4][0] + need > buf[0].shape[0]:
        buf = _output_grown(buf, need)
        outputs[i] = buf
    return buf


@njit(cache=True)
def _output_grown(buf, need):
    at, to, w, mid, used = buf
    size = max(2 * at.shape[0], used[0] + need)
    u = used[0]
    return resized(at, size, u), resized(to, size, u), resized(w, size, u), resized(mid, size, u), used


@njit(cache=True)
def _emit(buf, at, x, wt, mid):
    i = buf[4][0]
    buf[0][i] = at
    buf[1][i] = x
    buf[2][i] = wt
    buf[3][i] = mid
    buf[4][0] = i + 1


@njit(cache=True)
def _retire(v, out, inn, up, down, nbr):
    """Move contracted v's arcs to the output and out of its neighbours' lists; the neighbours
    are written to ``nbr`` and their count returned."""
    os_, ol, oto, ow, omid = out[0], out[1], out[3], out[4], out[5]
    is_, il, ito, iw, imid = inn[0], inn[1], inn[3], inn[4], inn[5]
    nn = 0
    for k in range(os_[v], os_[v] + ol[v]):
        _emit(up, v, oto[k], ow[k], omid[k])
        _remove(inn, oto[k], v)
        nbr[nn] = oto[k]
        nn += 1
    for k in range(is_[v], is_[v] + il[v]):
        _emit(down, v, ito[k], iw[k], imid[k])
        _remove(out, ito[k], v)
        nbr[nn] = ito[k]
        nn += 1
    ol[v] = 0
    il[v] = 0
    return nn


@njit(cache=True)
def _largest_product(remaining, n_rem, out, inn):
    most = 1
    for i in range(n_rem):
        v = remaining[i]
        most = max(most, out[1][v] * inn[1][v])
    return most


@njit(cache=True)
def _front_limit(prio, remaining, n_rem, front):
    """The priority below which lie about ``front`` of the remaining nodes (from a sample of at
    most ~4096 of them); inf when few nodes remain."""
    if front >= 1.0 or n_rem < 256:
        return INF
    stride = max(1, n_rem // 4096)
    sample = np.empty(n_rem // stride, np.float64)
    for i in range(sample.shape[0]):
        sample[i] = prio[remaining[i * stride]]
    sample.sort()
    return sample[int(front * (sample.shape[0] - 1))]


@njit(cache=True)
def _due(remaining, n_rem, dirty, limit, lazy, out, inn, prio, todo):
    """Write to ``todo`` the dirty nodes whose last priority is at most ``limit`` and, when
    ``lazy``, below all their neighbours' (the only ones that could be chosen now); returns their
    count. Read before any of them is simulated, so the set does not depend on the threads."""
    n_due = 0
    for i in range(n_rem):
        v = remaining[i]
        if dirty[v] and prio[v] <= limit and (not lazy or _local_minimum(v, out, inn, prio)):
            todo[n_due] = v
            n_due += 1
    return n_due


@njit(cache=True, parallel=True)
def _simulate(todo, n_due, sim_limit, out, inn, wss, need, prio, dirty, deleted, level, coef):
    """Priorities of the nodes of ``todo``, one thread per workspace (searches only read the
    graph)."""
    t = wss[0].shape[0]
    room = _largest_product(todo, n_due, out, inn)
    for c in prange(t):
        ws = _row(wss, c)
        buf = _new_buffer(room)
        for i in range(c, n_due, t):
            v = todo[i]
            dirty[v] = False
            needed, new, hops = _estimate(v, sim_limit, out, inn, ws, buf)
            need[v] = needed
            prio[v] = _priority(v, new, hops, out, inn, deleted, level, coef)


@njit(cache=True, parallel=True)
def _collect(chosen, n_chosen, settle_limit, out, inn, wss, buf, base, count):
    """The shortcuts of every node chosen this round, searched in parallel. Witnesses avoid all
    of the round's nodes (their ``dist`` is -inf meanwhile: never improved, never touched), so
    each node's shortcuts stay right whatever the others add."""
    t = wss[0].shape[0]
    for c in prange(t):
        ws = _row(wss, c)
        dist = ws[0]
        for i in range(n_chosen):
            dist[chosen[i]] = -INF
        for i in range(c, n_chosen, t):
            count[i] = _needed(chosen[i], settle_limit, out, inn, ws, buf, base[i])
        for i in range(n_chosen):
            dist[chosen[i]] = INF


@njit(cache=True)
def _mean_degree(remaining, n_rem, out, inn):
    """Arcs per remaining node, in and out: how dense what is left has become."""
    total = 0
    for i in range(n_rem):
        v = remaining[i]
        total += out[1][v] + inn[1][v]
    return total / n_rem


@njit(cache=True)
def _choose(remaining, n_rem, need, core_shortcuts, out, inn, prio, dirty, chosen):
    n_chosen = 0
    for i in range(n_rem):
        v = remaining[i]
        if not dirty[v] and need[v] <= core_shortcuts and _local_minimum(v, out, inn, prio):
            chosen[n_chosen] = v
            n_chosen += 1
    return n_chosen


@njit(cache=True)
def _after(v, nbr, nn, deleted, level, dirty):
    for j in range(nn):
        y = nbr[j]
        deleted[y] += 1.0
        level[y] = max(level[y], level[v] + 1.0)
        dirty[y] = True


@njit(cache=True)
def _still_remaining(remaining, n_rem, rank):
    kept = 0
    for i in range(n_rem):
        v = remaining[i]
        if rank[v] < 0:
            remaining[kept] = v
            kept += 1
    return kept


@njit(cache=True)
def _contraction_state(n, first, to, w, threads):
    """What the rounds carry from one call of :func:`_contract_round` to the next: the pools, each
    node's rank, ``counters`` (remaining count, next rank, finished), the search workspaces, per
    node deleted neighbours, level, priority, shortcut need and dirty flag, the remaining nodes and
    a round's scratch (chosen nodes, their shortcut buffer offsets and counts, neighbours). The
    pools are given apart (:func:`contract` keeps them in a typed list).

    Node ids and ranks are int32 like the pools' ids; deleted neighbours and levels are whole
    numbers, exact in float32 and widened to float64 where the priority is computed; shortcut
    counts (products of degrees) and their offsets stay int64."""
    out, inn = _dynamic_graph(n, first, to, w)
    return (
        out,
        inn,
        np.full(n, -1, np.int32),
        np.array([n, 0, 0], np.int64),
        _workspaces(threads, n),
        np.zeros(n, np.float32),
        np.zeros(n, np.float32),
        np.zeros(n, np.float64),
        np.zeros(n, np.int64),
        np.ones(n, np.bool_),
        np.arange(n).astype(np.int32),
        np.empty(n, np.int32),
        np.zeros(n + 1, np.int64),
        np.zeros(n, np.int64),
        np.empty(2 * n + 2, np.int32),
    )


@njit(cache=True, nogil=True)
def _contract_round(
    pools,
    outputs,
    rank,
    counters,
    wss,
    deleted,
    level,
    prio,
    need,
    dirty,
    remaining,
    chosen,
    base,
    count,
    nbr,
    sim_limit,
    settle_limit,
    core_shortcuts,
    core_degree,
    coef,
    front,
    lazy_below,
    done,
):
    """One round: every node whose priority is below its neighbours' is contracted. When only
    nodes that would need more than ``core_shortcuts`` shortcuts remain, or when the remaining
    nodes have ``core_degree`` arcs each on average, they form the core instead: ranked last,
    their arcs in both outputs; then, or when no node remains, ``counters[2]`` is set and
    ``counters[0]`` is the core's size.

    ``pools`` (out, in) and ``outputs`` (up, down) are typed lists: a pool or buffer grown here
    replaces its old arrays in the list at once, which frees them (had the caller passed the
    arrays themselves, its references would keep every replaced generation until the round ends)."""
    out, inn = pools[0], pools[1]
    up, down = outputs[0], outputs[1]
    n_rem = counters[0]
    r = counters[1]
    n_chosen = 0
    if n_rem > 0 and _mean_degree(remaining, n_rem, out, inn) < core_degree:
        limit = _front_limit(prio, remaining, n_rem, front)
        todo = nbr  # scratch until the insertions
        lazy = n_rem < lazy_below * rank.shape[0]
        while True:
            n_due = _due(remaining, n_rem, dirty, limit, lazy, out, inn, prio, todo)
            _simulate(todo, n_due, sim_limit, out, inn, wss, need, prio, dirty, deleted, level, coef)
            n_chosen = _choose(remaining, n_rem, need, core_shortcuts, out, inn, prio, dirty, chosen)
            if n_chosen > 0 or (limit == INF and not lazy):
                break
            if lazy and n_due > 0:
                continue  # the nodes simulated rose above a neighbour: try those now below
            # the lowest node at or below the limit is a local minimum: simulated when dirty,
            # chosen when clean unless it needs too many shortcuts. So a lazy pass had nothing
            # to simulate, or an eager one chose nothing, only when every node of the front rose
            # above the limit or is bound for the core: refresh the whole front, then every
            # node; if none can be chosen then, the rest is the core
            if lazy:
                lazy = False
            else:
                limit = INF
    if n_chosen == 0:
        for i in range(n_rem):  # the core
            v = remaining[i]
            rank[v] = r
            r += 1
            deg = out[1][v]
            up = _output_with_room(outputs, 0, deg)
            down = _output_with_room(outputs, 1, deg)
            for k in range(out[0][v], out[0][v] + deg):
                _emit(up, v, out[3][k], out[4][k], out[5][k])
                _emit(down, out[3][k], v, out[4][k], out[5][k])
        counters[2] = 1
    else:
        for i in range(n_chosen):
            v = chosen[i]
            base[i + 1] = base[i] + out[1][v] * inn[1][v]
        buf = _new_buffer(base[n_chosen])
        _collect(chosen, n_chosen, settle_limit, out, inn, wss, buf, base, count)
        for i in range(n_chosen):
            v = chosen[i]
            out = _pool_with_room(pools, 0, _room(out, inn, v))
            inn = _pool_with_room(pools, 1, _room(inn, out, v))
            _insert(v, buf, base[i], count[i], out, inn)
            rank[v] = r
            r += 1
            up = _output_with_room(outputs, 0, out[1][v])
            down = _output_with_room(outputs, 1, inn[1][v])
            nn = _retire(v, out, inn, up, down, nbr)
            _after(v, nbr, nn, deleted, level, dirty)
        n_rem = _still_remaining(remaining, n_rem, rank)
        counters[2] = n_rem == 0
    done[0] = r
    counters[0] = n_rem
    counters[1] = r


def contract(
    n,
    csr,
    sim_limit,
    settle_limit,
    core_shortcuts,
    coef,
    front,
    threads,
    done,
    up,
    down,
    flush_at=None,
    lazy_below=0.0,
    core_degree=np.inf,
):
    """Contract the graph ``csr`` (a list: first, to, w), emptied once the pools hold the graph so
    that the caller's arrays can go for the rest of the contraction; returns (rank, core size).
    The arcs go to ``up`` and ``down``
    (:class:`engine.routing.arc_chunks.ArcChunks`: upward arcs ``at -> to`` and downward arcs stored
    at their lower end), handed over whenever the two hold ``flush_at`` arcs (None: once, at the
    end), so that a contraction whose outputs spill to disk never holds more of them than that.
    ``done[0]`` counts the nodes contracted so far (read by the import's progress line while a
    round runs without the GIL). Rounds that start with fewer than ``lazy_below`` (a share) of the
    ``n`` nodes left update priorities lazily (module doc). The rest is the core once every node
    left would need more than ``core_shortcuts`` shortcuts or once they have ``core_degree`` arcs
    each on average (:func:`_contract_round`)."""
    out, inn, rank, counters, *rest = _contraction_state(n, *csr, threads)
    n_arcs = int(csr[0][n])
    csr.clear()
    pools = List([out, inn])
    del out, inn  # in the list only: a round that grows a pool frees the old one
    outputs = List([_new_output(2 * n_arcs + 1024), _new_output(2 * n_arcs + 1024)])
    settings = (sim_limit, settle_limit, core_shortcuts, float(core_degree), coef, front, lazy_below)
    while not counters[2]:
        _contract_round(pools, outputs, rank, counters, *rest, *settings, done)
        held = outputs[0][4][0] + outputs[1][4][0]
        if counters[2] or (flush_at is not None and held >= flush_at):
            up.take(outputs[0])
            down.take(outputs[1])
    return rank, int(counters[0])
