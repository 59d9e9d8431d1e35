"""The CH's storage order (engine.routing.ch_order): which node is stored where, and that a
hierarchy stored renumbered answers every leg and matrix cell as the one numbered by its edges."""

from __future__ import annotations

import numpy as np
import pytest

from engine.routing import ch
from engine.routing.build import build_graph
from engine.routing.ch_order import TOP_FRACTION, morton_codes, storage_order
from engine.routing.matrix import MatrixQuery
from engine.routing.profiles import FOOT
from tests.engine.test_ch import random_network, random_snaps, router_over
from tests.engine.test_hubs import walkers_network


def test_the_top_ranks_are_stored_last_in_rank_order_and_the_rest_by_place():
    rng = np.random.default_rng(3)
    k = 2000
    rank = rng.permutation(k).astype(np.int32)
    lat, lng = rng.uniform(60.0, 60.1, k), rng.uniform(24.0, 24.2, k)
    ch_node, by_position = storage_order(rank, lat, lng)  # by_position: the node stored at each
    assert np.array_equal(np.sort(ch_node), np.arange(k))  # a permutation
    assert np.array_equal(ch_node[by_position], np.arange(k))  # and the other its inverse
    top = int(k * TOP_FRACTION)
    assert np.array_equal(rank[by_position[k - top :]], np.arange(k - top, k))
    low = by_position[: k - top]
    assert (rank[low] < k - top).all()
    assert (np.diff(morton_codes(lat, lng)[low]) >= 0).all()
    # without positions the low nodes keep their order
    plain = storage_order(rank)[1][: k - top]
    assert (np.diff(plain) > 0).all()


def test_z_order_keeps_neighbours_near():
    """Points on a 64 x 64 grid: each Z-order code is distinct, and the 4 x 4 block of the grid's
    corner takes the first 16 codes (a quadrant recursion, not rows)."""
    i, j = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    codes = morton_codes(i.ravel().astype(float), j.ravel().astype(float))
    assert np.unique(codes).shape[0] == 64 * 64
    first16 = np.argsort(codes)[:16]
    assert set(zip(i.ravel()[first16], j.ravel()[first16], strict=True)) == {(a, b) for a in range(4) for b in range(4)}


@pytest.mark.parametrize(("seed", "profile"), [(21, None), (22, FOOT)])
def test_a_hierarchy_stored_renumbered_answers_as_one_numbered_by_its_edges(tmp_path, seed, profile):
    """The same contraction stored both ways (the foot graph with junction hubs among its CH
    nodes): every leg has the same weight and the same road edges, every matrix cell the same
    weight, duration and length."""
    network = walkers_network(seed) if profile is FOOT else random_network(seed)
    path = network.write(tmp_path / f"n{seed}.osm.pbf")
    kwargs = {"profile": profile} if profile is not None else {}
    graphs = [build_graph(path, with_ch=False, **kwargs)[0] for _ in range(2)]
    ordered = ch.build(graphs[0])
    by_edge = ch.build(graphs[1], storage_ordered=False)
    assert not np.array_equal(ordered["ch_edge"], np.arange(ordered["ch_edge"].shape[0]))  # really renumbered
    if profile is FOOT:
        assert ordered["ch_hub_edge"].shape[0] > 0
    routers = [
        router_over(g, arrays, int(arrays.pop("ch_core")[0]))
        for g, arrays in zip(graphs, (ordered, by_edge), strict=True)
    ]
    snaps = random_snaps(routers[0], 16, seed)
    routed = 0
    for o in snaps:
        for d in snaps:
            a, b = (r.leg(o, d) for r in routers)
            assert (a is None) == (b is None)
            if a is not None and b is not None:
                routed += 1
                assert a.weight == b.weight
                assert np.array_equal(a.edges, b.edges)
    assert routed > 0.5 * len(snaps) ** 2
    first, second = (MatrixQuery(r).costs(snaps, snaps) for r in routers)
    for x, y in zip(first, second, strict=True):
        np.testing.assert_array_equal(x, y)
