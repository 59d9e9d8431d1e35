"""The indexed heap of the graph searches (engine/routing/heap.py) against a plain reference."""

from __future__ import annotations

import numpy as np

from engine.routing import heap


def test_pops_in_key_order_with_decreases_and_ignored_increases():
    rng = np.random.default_rng(3)
    n = 300
    hk, hv, pos = heap.new_heap(n)
    best = {}  # node -> smallest key pushed so far (the reference)
    size = 0
    for _ in range(2000):
        node = int(rng.integers(n))
        key = float(rng.integers(0, 1000))  # many ties
        size = heap.push(hk, hv, pos, size, key, node)
        best[node] = min(best.get(node, np.inf), key)
        assert size == len(best)  # each node at most once
    popped = []
    while size:
        key, node, size = heap.pop(hk, hv, pos, size)
        assert key == best.pop(node)
        popped.append(key)
        assert pos[node] == -1
    assert not best
    assert popped == sorted(popped)


def test_clear_leaves_an_empty_heap_for_the_next_search():
    hk, hv, pos = heap.new_heap(10)
    size = 0
    for node, key in ((4, 2.0), (7, 1.0), (1, 3.0)):
        size = heap.push(hk, hv, pos, size, key, node)
    _, first, size = heap.pop(hk, hv, pos, size)
    assert first == 7
    size = heap.clear(hv, pos, size)
    assert size == 0 and (pos == -1).all()
    size = heap.push(hk, hv, pos, size, 5.0, 4)  # 4 was left in the heap: it must come back new
    assert size == 1 and pos[4] == 0 and hk[0] == 5.0
