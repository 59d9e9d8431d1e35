"""Look-ups in the turn table (``turn_first_out`` / ``turn_to`` / a per-turn cost array, see
:mod:`engine.routing.graph`), for the numba kernels and for Python callers alike."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def turn_cost(tfirst, tto, tcost, e, f):
    """The cost of turning from road edge ``e`` onto ``f``; 0 when the table has no such turn."""
    for t in range(tfirst[e], tfirst[e + 1]):
        if tto[t] == f:
            return tcost[t]
    return 0.0


@njit(cache=True)
def leg_turn_costs(edges, tfirst, tto, tcost):
    """The cost of each turn along ``edges``: n - 1 values, junction by junction."""
    out = np.zeros(max(edges.shape[0] - 1, 0), np.float64)
    for i in range(edges.shape[0] - 1):
        out[i] = turn_cost(tfirst, tto, tcost, edges[i], edges[i + 1])
    return out
