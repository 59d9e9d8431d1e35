"""Give the process's freed heap memory back to the system during an import.

The numba kernels allocate their arrays with the C allocator. glibc keeps freed blocks below its
mmap threshold (which rises to 32 MB as large blocks are freed) in the heap for reuse instead of
returning them, so after a step such as the contraction, hundreds of MB it freed stay resident
and count in every later step's peak; within the contraction, the blocks its rounds free pile up
the same way. Two documented glibc calls:

* :func:`unmap_large_blocks` (``mallopt(M_MMAP_THRESHOLD)``): blocks of ``LARGE_BLOCK`` bytes or
  more get pages of their own, returned to the system as soon as they are freed. It fixes the
  threshold for the rest of the process (glibc no longer raises it), so the import sets it, not
  the serving processes;
* :func:`release_free_memory` (``malloc_trim(0)``): the free pages of the heap, between steps.

Elsewhere than glibc both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
LARGE_BLOCK = 1 << 20  # the import's arrays are MBs: the numba kernels' scratch, chunks, buffers


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


def release_free_memory() -> bool:
    """Return the heap's free pages to the system; whether anything could be done."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def unmap_large_blocks(threshold: int = LARGE_BLOCK) -> bool:
    """Blocks of ``threshold`` bytes or more from their own pages, given back when freed, for the
    rest of the process; whether glibc took it."""
    libc = _libc()
    return libc is not None and libc.mallopt(M_MMAP_THRESHOLD, threshold) == 1
