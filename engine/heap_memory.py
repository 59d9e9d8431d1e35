"""Give the process's freed heap memory back to the system between import steps.

The numba kernels allocate their arrays with the C allocator. glibc keeps freed blocks below its
mmap threshold (which rises to 32 MB as large blocks are freed) in the heap for reuse instead of
returning them, so after a step such as the contraction, hundreds of MB it freed stay resident
and count in every later step's peak. ``malloc_trim(0)`` (glibc's documented call) releases the
free pages of the heap. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_free_memory() -> bool:
    """Return the heap's free pages to the system; whether anything could be done."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
