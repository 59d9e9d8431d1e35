"""engine/heap_memory.py: the heap's free pages go back to the system."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


FREED_AFTER_LARGE_BLOCKS = """
import sys
import numpy as np
from engine.heap_memory import unmap_large_blocks

def rss_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

if sys.argv[1] == "unmapped":
    assert unmap_large_blocks()
big = np.ones(24 * 2**20 // 8)  # freed, it raises glibc's own mmap threshold to 24 MB
del big
blocks = [np.ones(2**18) for _ in range(100)]  # 2 MB each
keep = np.ones(2**18)  # allocated after them: the heap's top stays in use
before = rss_mb()
del blocks
print(before - rss_mb())
"""


def _freed_mb(mode: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", FREED_AFTER_LARGE_BLOCKS, mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return float(done.stdout)


def test_large_blocks_leave_the_process_as_soon_as_they_are_freed():
    """Once glibc has raised its threshold, 2 MB blocks come from the heap and stay resident when
    freed; after ``unmap_large_blocks`` each has pages of its own, gone with it (in a child process:
    the setting lasts for the rest of a process)."""
    assert _freed_mb("unmapped") > 150
    assert _freed_mb("default") < 50  # what the setting changes
