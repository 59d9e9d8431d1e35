"""Array helpers: growable arrays for numba kernels (the one way a kernel makes room for more
items), the index ranges of CSR-style slices, and the narrowest integer type for indexes."""

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


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``starts[i] + 0..counts[i]-1`` for every i, concatenated: the indexes of many slices."""
    shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return shift + np.arange(shift.shape[0])


def narrowed_offsets(first: np.ndarray) -> np.ndarray:
    """A CSR offset array (``first[-1]`` = the item count) at :func:`index_dtype` of its count."""
    return first.astype(index_dtype(int(first[-1])), copy=False)


def index_dtype(count: int) -> np.dtype:
    """int32 for the indexes of ``count`` items when they fit (half the bytes on disk and in the
    page cache), int64 beyond: a kernel indexes with either."""
    return np.dtype(np.int32 if count <= np.iinfo(np.int32).max else np.int64)
