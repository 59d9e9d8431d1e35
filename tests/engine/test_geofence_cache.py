"""Issue 26, finding 5: one process keeps a bounded number of fence vertices in its indexes.

Every web process builds the index of each account that checks through it; without a bound, an
account with large fences makes every process hold them for good. ``FenceIndexCache`` drops the
least recently used indexes beyond ``max_vertices`` (the ``GEOFENCE_CACHE_VERTICES`` setting).
"""

from __future__ import annotations

import math
from collections import Counter

from config.settings import Settings
from engine.geofence.model import Fence, parse_fence
from engine.geofence.registry import FenceIndexCache


def polygon(fence_id: str, vertices: int) -> Fence:
    n = vertices - 1
    ring = [
        [7.42 + 0.001 * math.cos(2 * math.pi * i / n), 43.73 + 0.001 * math.sin(2 * math.pi * i / n)] for i in range(n)
    ]
    return parse_fence({"type": "Polygon", "coordinates": [ring + [ring[0]]]}, fence_id=fence_id)


SIZES = {"a": 400, "b": 400, "c": 400, "d": 400, "big": 1500}


def cache(max_vertices: int) -> tuple[FenceIndexCache, Counter]:
    loads: Counter = Counter()

    def load(account_id: str) -> list[Fence]:
        loads[account_id] += 1
        return [polygon(f"{account_id}-1", SIZES[account_id])]

    return FenceIndexCache(load, max_vertices=max_vertices), loads


def test_least_recently_used_indexes_go_beyond_the_vertex_bound():
    fences, loads = cache(max_vertices=1000)
    for account in ("a", "b"):
        fences.get(account)
    assert fences.cached() == ["a", "b"] and fences.vertices == 800
    fences.get("a")  # a is now the most recently used
    fences.get("c")  # 1,200 vertices: b goes
    assert fences.cached() == ["a", "c"] and fences.vertices == 800
    fences.get("a")
    assert loads["a"] == 1  # still cached
    fences.get("b")
    assert loads["b"] == 2  # rebuilt after eviction
    assert fences.vertices <= 1000


def test_an_index_over_the_bound_alone_is_served_and_evicts_the_others():
    fences, loads = cache(max_vertices=1000)
    fences.get("a")
    assert fences.get("big").vertices == 1500
    assert fences.cached() == ["big"] and fences.vertices == 1500
    fences.get("d")  # the next account pushes the big one out
    assert fences.cached() == ["d"] and fences.vertices == 400
    fences.get("big")
    assert loads["big"] == 2


def test_no_bound_and_invalidation_keep_the_count():
    fences, _ = cache(max_vertices=0)
    for account in SIZES:
        fences.get(account)
    assert fences.vertices == sum(SIZES.values()) and len(fences.cached()) == len(SIZES)
    fences.invalidate("big")
    assert fences.vertices == 1600
    fences.invalidate()
    assert fences.vertices == 0 and fences.cached() == []


def test_the_setting():
    assert Settings.from_env({}).geofence_cache_vertices == 2_000_000
    assert Settings.from_env({"GEOFENCE_CACHE_VERTICES": "50000"}).geofence_cache_vertices == 50_000
