"""Growable arrays for numba kernels: the one way a kernel makes room for more items."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def grown(a, n):
    """A copy of ``a`` twice as long, holding its first ``n`` items."""
    return resized(a, a.shape[0] * 2, n)


@njit(cache=True, inline="always")
def resized(a, size, n):
    """A new array of ``size`` items holding the first ``n`` items of ``a``."""
    b = np.empty(size, a.dtype)
    b[:n] = a[:n]
    return b
