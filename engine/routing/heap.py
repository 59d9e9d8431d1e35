"""Indexed binary min-heap over node ids for the numba graph searches.

Each node is in the heap at most once (``push`` lowers the key of a node already there), so
arrays of the graph's size always have room: the search loops never grow or rebind an array.
That matters in numba: a loop that may rebind an array variable pays two atomic reference-count
updates per iteration, which would dominate the contraction's time (measured:
``docs/engineering-history.md``).

A heap is three arrays made by :func:`new_heap`: keys and nodes by heap slot, and ``pos``, the
slot of each node or -1. A search that stops early calls :func:`clear` so the next one starts
with an empty heap.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def new_heap(n):
    return np.empty(n, np.float64), np.empty(n, np.int64), np.full(n, -1, np.int64)


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def push(hk, hv, pos, size, key, node):
    """Insert ``node`` with ``key``, or lower its key; returns the new size."""
    i = pos[node]
    if i < 0:
        i = size
        size += 1
    elif hk[i] <= key:
        return size
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] <= key:
            break
        hk[i] = hk[p]
        hv[i] = hv[p]
        pos[hv[i]] = i
        i = p
    hk[i] = key
    hv[i] = node
    pos[node] = i
    return size


@njit(cache=True, inline="always")
def smaller_child(hk, i, size):
    """The slot of slot ``i``'s child with the smaller key (the left one on a tie), or -1 when
    slot ``i`` has no child in a heap of ``size``."""
    c = 2 * i + 1
    if c >= size:
        return -1
    if c + 1 < size and hk[c + 1] < hk[c]:
        c += 1
    return c


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def pop(hk, hv, pos, size):
    """Remove the smallest entry; returns (key, node, new size)."""
    key = hk[0]
    node = hv[0]
    pos[node] = -1
    size -= 1
    if size > 0:
        lk = hk[size]
        lv = hv[size]
        i = 0
        while True:
            c = smaller_child(hk, i, size)
            if c < 0 or lk <= hk[c]:
                break
            hk[i] = hk[c]
            hv[i] = hv[c]
            pos[hv[i]] = i
            i = c
        hk[i] = lk
        hv[i] = lv
        pos[lv] = i
    return key, node, size


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def clear(hv, pos, size):
    for i in range(size):
        pos[hv[i]] = -1
    return 0
