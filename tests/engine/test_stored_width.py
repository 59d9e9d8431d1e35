"""The router reads every graph column at its stored width (int32 ids, float32 costs, lengths,
bearings and cumulative metres; no widened copy is stored). Every answer must be the one the same
router gives with float64/int64 copies of those columns: a kernel that adds or subtracts two
float32 values in float32, or numpy arithmetic that keeps a float32 scalar, would show here
(``router._cut`` and the steps' turn angles widen before they subtract for that reason)."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest

from engine.routing.directions import build_steps
from engine.routing.router import Router


def _widened(router: Router) -> Router:
    wide = copy.copy(router)  # shares the graph, the snapper and the CH; only the columns differ
    for name in ("tfirst", "tto", "twin", "name_ids", "edge_head"):
        setattr(wide, name, np.asarray(getattr(router, name), np.int64))
    for name in ("tcost", "tweight", "gcum", "length", "duration", "weight", "bstart", "bend"):
        setattr(wide, name, np.asarray(getattr(router, name), np.float64))
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
                [(x.weight, x.edges.tolist()) for x in (router.leg_dijkstra(o, d),) if x is not None],
            )
        )
    return out


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
@pytest.mark.parametrize("profile", ["car", "foot", "bicycle"])
def test_answers_at_stored_width_equal_the_widened_ones(datasets, region, profile):
    router = datasets.get(region).router_for(profile)
    assert router.tto.dtype == np.int32 and router.tcost.dtype == np.float32 and router.gcum.dtype == np.float32
    assert router.weight.dtype == np.float32 and router.bstart.dtype == np.float32 and router.twin.dtype == np.int32
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
