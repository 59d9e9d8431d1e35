"""The router reads the turn table and the geometry's cumulative metres at their stored width
(int32, float32: ``engine.routing.derived.WIDE_TYPES`` leaves them out). Every answer must be the
one the same router gives with float64/int64 copies of those columns: a kernel that adds or
subtracts two float32 values in float32 would show here (``router._cut`` widens before it
subtracts for that reason)."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest

from engine.routing.directions import build_steps
from engine.routing.router import Router


def _widened(router: Router) -> Router:
    wide = copy.copy(router)  # shares the graph, the snapper and the CH; only the four columns differ
    wide.tto = np.asarray(router.tto, np.int64)
    wide.tcost = np.asarray(router.tcost, np.float64)
    wide.tweight = np.asarray(router.tweight, np.float64)
    wide.gcum = np.asarray(router.gcum, np.float64)
    return wide


def _answers(router: Router, pairs) -> list[Any]:
    out: list[Any] = []
    for o, d in pairs:
        leg = router.leg(o, d)
        if leg is None:
            out.append(None)
            continue
        lat, lng = router.leg_geometry(leg)
        out.append(
            (
                leg.weight,
                router.leg_summary(leg),
                lat.tolist(),
                lng.tolist(),
                build_steps(router, leg),
                [(a.weight, router.leg_summary(a)) for a in router.alternatives(o, d, leg, 1)],
            )
        )
    return out


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
@pytest.mark.parametrize("profile", ["car", "foot", "bicycle"])
def test_answers_at_stored_width_equal_the_widened_ones(datasets, region, profile):
    router = datasets.get(region).router_for(profile)
    assert router.tto.dtype == np.int32 and router.tcost.dtype == np.float32 and router.gcum.dtype == np.float32
    g = router.g
    rnd = random.Random(5)
    edges = [rnd.randrange(g.n_edges) for _ in range(60)]
    # points a third of the way along random edges: the legs start and end inside an edge, where
    # the geometry is cut by the cumulative metres
    snaps = [router.snap(*g.point_along(e, 0.37)) for e in edges]
    pairs = [(a, b) for a, b in zip(snaps[::2], snaps[1::2], strict=True) if a is not None and b is not None]
    assert len(pairs) >= 25
    narrow = _answers(router, pairs)
    assert sum(a is not None for a in narrow) >= 20
    assert narrow == _answers(_widened(router), pairs)
