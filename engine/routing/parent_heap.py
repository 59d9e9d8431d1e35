"""The CH query's heap: :mod:`engine.routing.heap`'s indexed binary min-heap, with each node's
slot kept in the search's parents array instead of an array of its own.

A search labels every node it reaches with a parent (the arc it was reached by, -1 at a start),
and an indexed heap needs the slot of every node in it; both are arrays of the graph's size,
filled before the first search and written all over the graph as searches go, so at a country's
size they are private memory of every process that queries (4 bytes a node each, per direction).
A node needs its slot only while it is in the heap, and its parent only once it leaves it (the
path is read from settled nodes, :func:`clear` settles the rest). So while a node is in the heap,
its parent waits in its heap entry (``hpar``, by slot, beside the key and the node) and ``par``
holds its slot as ``-2 - slot``; :func:`pop` and :func:`clear` put the parent back. A node is in
the heap exactly when ``par[node] <= -2``.

The operations are :mod:`engine.routing.heap`'s, comparison for comparison, so a search pops its
nodes in the same order as over that heap and finds the same paths. The arrays are made by
:func:`new_heap` (keys, nodes and parents by slot, none filled: a search writes only the slots it
uses) and never grow: each node is in the heap at most once.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import DTypeLike

from engine.routing.heap import smaller_child

OUT = -2  # par[node] > OUT: not in the heap; par[node] = OUT - slot: in the heap at slot


def new_heap(n: int, index: DTypeLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys, nodes and parents for ``n`` slots, nodes and parents as ``index``."""
    return np.empty(n, np.float64), np.empty(n, index), np.empty(n, index)


@njit(cache=True, inline="always")
def in_heap(par, node):
    return par[node] <= OUT


@njit(cache=True, inline="always")
def _put(hk, hv, hpar, par, i, key, node, parent):
    """Slot ``i`` holds ``node`` with ``key`` and ``parent``."""
    hk[i] = key
    hv[i] = node
    hpar[i] = parent
    par[node] = OUT - i


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def push(hk, hv, hpar, par, size, key, node, parent):
    """Insert ``node`` with ``key`` and ``parent``, or lower its key and take ``parent`` if ``key``
    is lower than its own; returns the new size."""
    if par[node] > OUT:
        i = size
        size += 1
    else:
        i = OUT - par[node]
        if hk[i] <= key:
            return size
    while i > 0:  # up from slot i
        p = (i - 1) >> 1
        if hk[p] <= key:
            break
        _put(hk, hv, hpar, par, i, hk[p], hv[p], hpar[p])
        i = p
    _put(hk, hv, hpar, par, i, key, node, parent)
    return size


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def pop(hk, hv, hpar, par, size):
    """Remove the smallest entry, its node labelled with its parent again; returns (key, node,
    new size)."""
    key = hk[0]
    node = hv[0]
    par[node] = hpar[0]
    size -= 1
    if size > 0:  # the last entry, down from the root
        lk, lv, lp = hk[size], hv[size], hpar[size]
        i = 0
        while True:
            c = smaller_child(hk, i, size)
            if c < 0 or lk <= hk[c]:
                break
            _put(hk, hv, hpar, par, i, hk[c], hv[c], hpar[c])
            i = c
        _put(hk, hv, hpar, par, i, lk, lv, lp)
    return key, node, size


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def clear(hv, hpar, par, size):
    """Empty the heap, each node in it labelled with its parent again; returns 0."""
    for i in range(size):
        par[hv[i]] = hpar[i]
    return 0
