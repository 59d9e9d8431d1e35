"""engine/heap_memory.py: the heap's free pages go back to the system."""

from __future__ import annotations

import numpy as np

from engine.heap_memory import release_free_memory


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def test_freed_small_blocks_leave_the_process_when_released():
    """Blocks under the allocator's mmap threshold stay resident once freed (a block kept at the
    heap's top stops the allocator's own trimming) until ``release_free_memory`` returns them."""
    blocks = [np.ones(8_000) for _ in range(3_000)]  # 64 KB each: from the heap, ~190 MB
    keep = np.ones(8_000)
    del blocks
    before = _rss_mb()
    assert release_free_memory()
    after = _rss_mb()
    assert before - after > 100, (before, after)
    assert keep.sum() == 8_000
