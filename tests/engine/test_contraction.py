"""Kernels of the contraction (engine/routing/contraction.py) against plain references; the whole
build is checked against Dijkstra in test_ch.py."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from numba.typed import List

from engine.routing import contraction as C
from engine.routing.arc_chunks import ArcChunks


def random_csr(n: int, seed: int, degree: int = 4):
    rng = np.random.default_rng(seed)
    tails = np.repeat(np.arange(n), degree)
    heads = rng.integers(0, n, tails.size)
    w = rng.uniform(1.0, 10.0, tails.size)
    first = np.zeros(n + 1, np.int64)
    np.add.at(first, tails + 1, 1)
    return np.cumsum(first), heads.astype(np.int64), w


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_estimate_counts_new_arcs_like_a_search_per_shortcut(seed):
    """The marked count of new arcs equals looking each shortcut up in its tail's out list."""
    n = 120
    first, to, w = random_csr(n, seed)
    out, inn = C._dynamic_graph(n, first, to, w)
    ws = C._row(C._workspaces(1, n), 0)
    room = C._largest_product(np.arange(n), n, out, inn)
    buf = C._new_buffer(room)
    checked = 0
    for v in range(n):
        count, new, hops = C._estimate(v, 30, out, inn, ws, buf)
        expected_new = sum(C._arc_index(out, buf[0][i], buf[1][i]) < 0 for i in range(count))
        assert new == expected_new
        assert hops == int(buf[3][:count].sum())
        checked += count
    assert checked > n  # shortcuts were needed, so the comparison meant something


def _shortest_avoiding(n, lists, source, avoid):
    """Plain Dijkstra over ``lists`` (node -> [(head, w)]) from ``source``, never entering ``avoid``."""
    dist = dict.fromkeys(range(n), np.inf)
    dist[source] = 0.0
    queue = [(0.0, source)]
    while queue:
        d, x = heapq.heappop(queue)
        if d > dist[x]:
            continue
        for y, w in lists[x]:
            if y != avoid and d + w < dist[y]:
                dist[y] = d + w
                heapq.heappush(queue, (d + w, y))
    return dist


def _shortcuts_by_reference(n, first, to, w, v):
    """(u, x, weight) of every arc pair u -> v -> x (x != u) with no path from u to x avoiding v
    that costs as little, in the graph as the contraction holds it (no self loops, the cheapest
    of parallel arcs)."""
    cheapest: dict[tuple[int, int], float] = {}
    for x in range(n):
        for k in range(first[x], first[x + 1]):
            if to[k] != x:
                cheapest[x, int(to[k])] = min(float(w[k]), cheapest.get((x, int(to[k])), np.inf))
    lists: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for (x, y), weight in cheapest.items():
        lists[x].append((y, weight))
    needed = []
    for u in range(n):
        for head, a in lists[u]:
            if head != v:
                continue
            dist = _shortest_avoiding(n, lists, u, v)
            needed += [(u, x, a + b) for x, b in lists[v] if x != u and dist[x] > a + b]
    return sorted(needed)


def _shortcuts_searched(n, first, to, w, v, settle_limit):
    out, inn = C._dynamic_graph(n, first, to, w)
    ws = C._row(C._workspaces(1, n), 0)
    buf = C._new_buffer(C._largest_product(np.arange(n), n, out, inn))
    count = C._needed(v, settle_limit, out, inn, ws, buf, 0)
    assert np.isinf(ws[0]).all() and (ws[4] == -1).all()  # dist and the heap left clean
    return sorted(zip(buf[0][:count].tolist(), buf[1][:count].tolist(), buf[2][:count].tolist(), strict=True))


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_witness_searches_find_exactly_the_shortcuts_a_full_search_needs(seed):
    """With no bound on settled nodes, a node's shortcuts are the arc pairs with no witness as
    cheap (ties are witnesses: whole-number weights make them common), although each search
    stops as soon as no open target can still get one."""
    n = 90
    first, to, w = random_csr(n, seed)
    w = np.floor(w)
    needed = 0
    for v in range(n):
        expected = _shortcuts_by_reference(n, first, to, w, v)
        assert _shortcuts_searched(n, first, to, w, v, settle_limit=n) == expected
        needed += len(expected)
    assert needed > n  # shortcuts were needed, and witnesses spared others


def _touched_by_witness_search(u, v, out, inn, ws, on_reach):
    """The distances a witness search from u for v's out-neighbours (marked by ``_mark_targets``,
    as ``_needed`` marks them) leaves on the nodes it touched, and its first bound (w(u, v) + the
    costliest w(v, x))."""
    os_, ol, ow = out[0], out[1], out[4]
    w_in = ow[C._arc_index(out, u, v)]
    order = np.argsort(-ow[os_[v] : os_[v] + ol[v]])
    first, n_targets = C._mark_targets(u, v, out, ws[5], ws[6])
    bound = w_in + ow[os_[v] : os_[v] + ol[v]].max()
    if n_targets == 0:
        return np.zeros(0), bound
    nt = C._witness(u, v, w_in, 1000, out, ws, first, n_targets, order, on_reach)
    touched = ws[1][:nt].copy()
    reached = ws[0][touched].copy()
    ws[0][touched] = np.inf
    return reached, bound


@pytest.mark.parametrize("on_reach", [True, False])
def test_a_witness_search_never_touches_a_node_beyond_its_bound(on_reach):
    """A node reached at more than the costliest open target's bound can witness nothing (bounds
    only fall as targets close), so the search neither records nor queues it."""
    n = 90
    first, to, w = random_csr(n, 21, degree=6)
    out, inn = C._dynamic_graph(n, first, to, w)
    ws = C._row(C._workspaces(1, n), 0)
    searches = 0
    for v in range(n):
        for k in range(inn[0][v], inn[0][v] + inn[1][v]):
            reached, bound = _touched_by_witness_search(int(inn[3][k]), v, out, inn, ws, on_reach)
            assert (reached <= bound).all()
            searches += reached.size > 1
    assert searches > n  # the searches went beyond their source


@pytest.mark.parametrize("seed", [14, 15])
def test_bounded_witness_searches_only_add_shortcuts(seed):
    """A search cut short by ``settle_limit`` may miss a witness (one shortcut more), never a
    needed shortcut."""
    n = 90
    first, to, w = random_csr(n, seed)
    extra = 0
    for v in range(n):
        expected = set(_shortcuts_by_reference(n, first, to, w, v))
        found = set(_shortcuts_searched(n, first, to, w, v, settle_limit=2))
        assert expected <= found
        extra += len(found - expected)
    assert extra > 0  # the bound did cut searches short


def test_front_limit_is_the_quantile_of_the_remaining_priorities():
    rng = np.random.default_rng(4)
    n = 50_000
    prio = rng.permutation(n).astype(np.float64)
    remaining = rng.permutation(n).astype(np.int64)
    limit = C._front_limit(prio, remaining, n, 0.05)
    share = float((prio <= limit).mean())
    assert 0.04 < share < 0.06  # from a sample of ~4096 of them
    # only the remaining nodes count: the first half of ``remaining``
    half = n // 2
    limit = C._front_limit(prio, remaining, half, 0.5)
    assert 0.45 < float((prio[remaining[:half]] <= limit).mean()) < 0.55


def test_front_limit_is_off_for_few_nodes_or_a_full_front():
    prio = np.arange(1000, dtype=np.float64)
    remaining = np.arange(1000, dtype=np.int64)
    assert C._front_limit(prio, remaining, 255, 0.05) == np.inf
    assert C._front_limit(prio, remaining, 1000, 1.0) == np.inf
    assert C._front_limit(prio, remaining, 1000, 0.05) < 100


def test_lazy_updates_simulate_only_the_dirty_nodes_of_the_front_that_could_be_chosen():
    """Eager: every dirty node at or below the limit; lazy: of those, only the ones whose last
    priority is below all their neighbours' (the others could not be chosen this round)."""
    n = 400
    first, to, w = random_csr(n, 6)
    out, inn = C._dynamic_graph(n, first, to, w)
    rng = np.random.default_rng(6)
    prio = rng.permutation(n).astype(np.float64)
    dirty = rng.random(n) < 0.5
    remaining = rng.permutation(n).astype(np.int32)
    todo = np.empty(n, np.int32)
    limit = 300.0
    eager = set(todo[: C._due(remaining, n, dirty, limit, False, out, inn, prio, todo)].tolist())
    assert eager == {v for v in range(n) if dirty[v] and prio[v] <= limit}
    lazy = set(todo[: C._due(remaining, n, dirty, limit, True, out, inn, prio, todo)].tolist())
    tails = np.repeat(np.arange(n), np.diff(first))
    neighbours = [(set(to[tails == v].tolist()) | set(tails[to == v].tolist())) - {v} for v in range(n)]
    minima = {v for v in eager if all(prio[v] < prio[x] for x in neighbours[v])}
    assert lazy == minima
    assert 0 < len(lazy) < len(eager)


@pytest.mark.parametrize("on_disk", [False, True])
def test_arc_chunks_make_the_csr_of_a_stable_sort_by_node(tmp_path, on_disk):
    """The CSR of arcs handed over in several chunks (on disk or in memory) equals the stable
    argsort by ``at`` over all of them, also for arcs emitted out of node order (the core's
    downward arcs) and for nodes with no arc; only the used part of each buffer counts, and a taken
    buffer is empty."""
    rng = np.random.default_rng(5)
    n, cap = 300, 3_000
    taken = []
    chunks = ArcChunks("up", tmp_path if on_disk else None)
    for m in (2_500, 0, 1_700, 3_000):
        buffer = (
            rng.integers(0, n - 20, cap).astype(np.int32),  # the last 20 nodes have no arc
            rng.integers(0, n, cap).astype(np.int32),
            rng.uniform(0.0, 100.0, cap),
            rng.integers(-1, n, cap).astype(np.int32),
            np.array([m], np.int64),
        )
        taken.append(tuple(column[:m].copy() for column in buffer[:4]))
        chunks.take(buffer)
        assert buffer[4][0] == 0
    assert (len(list(tmp_path.iterdir())) == 3) is on_disk  # the empty buffer wrote nothing
    at, to, w, mid = (np.concatenate(column) for column in zip(*taken, strict=True))
    first, out_to, out_w, out_mid = chunks.csr(n)

    order = np.argsort(at, kind="stable")
    np.testing.assert_array_equal(first, np.concatenate([[0], np.cumsum(np.bincount(at, minlength=n))]))
    np.testing.assert_array_equal(out_to, to[order])
    np.testing.assert_array_equal(out_w, w[order])
    np.testing.assert_array_equal(out_mid, mid[order])
    assert (out_to.dtype, out_w.dtype, out_mid.dtype) == (np.int32, np.float64, np.int32)
    assert list(tmp_path.iterdir()) == []  # each chunk's files go once placed


def _lists(pool) -> list[list[tuple]]:
    """Every node's list as (to, w, mid, hop) tuples, in list order."""
    start, length = pool[0], pool[1]
    return [[tuple(column[s + k] for column in pool[3:7]) for k in range(length[u])] for u, s in enumerate(start)]


def _pool_with_holes():
    """An out pool whose growing lists moved to its end (leaving holes) and some of whose lists
    were emptied, in a typed list as the contraction keeps it."""
    n = 200
    first, to, w = random_csr(n, 7, degree=3)
    out, _ = C._dynamic_graph(n, first, to, w)
    pools = List([out])
    for node in range(10):
        for x in range(60):
            C._append(C._pool_with_room(pools, 0, 64), node, x, float(x), -1, 1)
    pool = pools[0]
    for node in range(100, 120):
        for y in [pool[3][pool[0][node] + k] for k in range(pool[1][node])]:
            C._remove(pool, node, y)
    return pools


def test_packing_a_pool_in_place_keeps_every_list_and_gives_the_holes_back():
    pools = _pool_with_holes()
    pool = pools[0]
    before, arrays = _lists(pool), pool[3]
    live = C._live_slots(pool)
    assert pool[7][0] > live + 200  # holes, and emptied lists' space, to give back
    C._pool_packed(pool)
    assert np.shares_memory(pool[3], arrays)  # no second array
    assert pool[7][0] == live == int(pool[2].sum())
    assert _lists(pool) == before


def test_a_pool_whose_lists_fill_its_budget_raises_it_within_its_arrays():
    """Over budget with lists that fill it, the budget grows to POOL_GROWTH times their slots and
    the lists are packed: within the arrays reserved, no second copy of the pool is made."""
    pools = _pool_with_holes()
    pool = pools[0]
    before, arrays, budget = _lists(pool), pool[3], int(pool[7][1])
    need = budget - int(pool[7][0]) + 1  # just over the budget
    live = C._live_slots(pool)
    assert live + need > C.PACK_SHARE * budget  # too full to pack within the budget
    pool = C._pool_with_room(pools, 0, need)
    assert np.shares_memory(pool[3], arrays)
    assert pool[7][1] == max(int(C.POOL_GROWTH * live), live + need) + 16
    assert pool[7][0] == live
    assert _lists(pool) == before


def test_a_budget_beyond_the_arrays_makes_a_grown_pool_with_every_list_kept():
    pools = _pool_with_holes()
    pool = pools[0]
    before, size = _lists(pool), pool[3].shape[0]
    live = C._live_slots(pool)
    grown = C._pool_with_room(pools, 0, size)
    assert np.shares_memory(pools[0][3], grown[3])  # the grown pool replaced the old one
    assert not np.shares_memory(grown[3], pool[3])
    assert grown[7][1] == live + size + 16
    assert grown[3].shape[0] == C.POOL_RESERVE * grown[7][1]
    assert grown[7][0] == live
    assert _lists(grown) == before
