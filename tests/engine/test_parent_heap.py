"""engine/routing/parent_heap.py: the CH query's heap, its slots kept in the parents array, pops
what engine/routing/heap.py's heap pops, in the same order, and gives every node its parent back."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from engine.routing import heap, parent_heap


@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_pops_what_the_indexed_heap_pops_in_the_same_order_and_each_parent_comes_back(index):
    rng = np.random.default_rng(7)
    n = 300
    hk, hv, pos = heap.new_heap(n)
    pk, pv, hpar = parent_heap.new_heap(n, index)
    par = np.full(n, -1, index)
    size = psize = 0
    parent = {}  # node -> the parent pushed with its smallest key so far (the reference)
    for step in range(3000):
        if step % 7 == 6 and size:  # pops between the pushes, as a search does
            expected = heap.pop(hk, hv, pos, size)
            got = parent_heap.pop(pk, pv, hpar, par, psize)
            assert got == expected  # (key, node, size): the same order, ties included
            size, psize = expected[2], got[2]
            assert par[got[1]] == parent.pop(got[1]) and not parent_heap.in_heap(par, got[1])
            continue
        node = int(rng.integers(n))
        key = float(rng.integers(0, 500))  # many ties
        arc = int(rng.integers(-1, 10_000))
        in_before = pos[node] >= 0
        assert parent_heap.in_heap(par, node) == in_before
        if not in_before or key < hk[pos[node]]:
            parent[node] = arc
        size = heap.push(hk, hv, pos, size, key, node)
        psize = parent_heap.push(pk, pv, hpar, par, psize, key, node, arc)
        assert psize == size
    left = {int(hv[i]) for i in range(size)}
    assert parent_heap.clear(pv, hpar, par, psize) == 0
    for node in left:  # cleared: out of the heap, labelled with the parent of its entry
        assert par[node] == parent.pop(node)
    assert not parent and not any(parent_heap.in_heap(par, node) for node in range(n))


def test_a_settled_node_reached_again_enters_the_heap_anew():
    hk, hv, hpar = parent_heap.new_heap(10, np.int32)
    par = np.full(10, -1, np.int32)
    size = parent_heap.push(hk, hv, hpar, par, 0, 2.0, 4, 17)
    size = parent_heap.push(hk, hv, hpar, par, size, 1.0, 7, -1)
    key, node, size = parent_heap.pop(hk, hv, hpar, par, size)
    assert (key, node, size) == (1.0, 7, 1) and par[7] == -1  # a start keeps -1
    size = parent_heap.push(hk, hv, hpar, par, size, 0.5, 7, 3)
    assert size == 2 and parent_heap.in_heap(par, 7)
    assert parent_heap.pop(hk, hv, hpar, par, size) == (0.5, 7, 1) and par[7] == 3


WORKSPACE_MEMORY = """
import numpy as np
from engine.routing import ch

def private_kb():
    with open("/proc/self/smaps_rollup") as rollup:
        return sum(int(line.split()[1]) for line in rollup if line.startswith("Private_"))

n = 4_000_000
before = private_kb()
ws = ch.CHWorkspace.sized(n)
print((private_kb() - before) * 1024 / n)
"""


def test_a_query_workspace_costs_24_bytes_a_ch_node_until_queries_fill_its_heaps():
    """The labels and parents are written at once over the whole graph: private memory of every
    web worker at a country's size. The heaps, the touched lists and their slots add nothing a
    node until a query writes them."""
    out = subprocess.run([sys.executable, "-c", WORKSPACE_MEMORY], capture_output=True, text=True, check=True)
    assert 23.5 < float(out.stdout) < 25.0, out.stdout
