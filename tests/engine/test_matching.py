"""HMM map matching on synthetic networks (no dataset needed): accuracy, gaps, oracles."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from numba.typed import List
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from bench.synthetic import generate
from engine.matching.hmm import MatchOptions, _bounded_dijkstra, match, segment_polyline
from engine.matching.network import from_ways
from engine.matching.traces import distance_to_polyline, same_road, sample_trace, true_route


@pytest.fixture(scope="module")
def city_net():
    city = generate(6_000, seed=11)
    return from_ways(city.lat, city.lng, city.ways)


def _accuracy(net, sigma, n_traces=12, seed=1):
    rng = np.random.default_rng(seed)
    ok = total = 0
    dists = []
    for _ in range(n_traces):
        edges = true_route(net, rng, 1500)
        tr = sample_trace(net, edges, 100.0, sigma, rng)
        segs = match(net, tr.x, tr.y, tr.timestamps, MatchOptions(sigma=sigma))
        for seg in segs:
            for i, e in zip(seg.index, seg.edge, strict=False):
                ok += same_road(net, int(e), int(tr.true_edge[i]))
            poly = segment_polyline(seg)
            dists.append(distance_to_polyline(poly[:, 0], poly[:, 1], tr.path).mean())
        total += tr.x.size
    return ok / total, float(np.mean(dists))


@pytest.mark.parametrize("sigma,target", [(10.0, 0.95), (20.0, 0.90)])
def test_right_road_share(city_net, sigma, target):
    share, mean_dist = _accuracy(city_net, sigma)
    assert share >= target, share
    assert mean_dist < 5.0, mean_dist  # the matched path lies on the true path


def test_unmatched_far_points_left_out(city_net):
    rng = np.random.default_rng(3)
    tr = sample_trace(city_net, true_route(city_net, rng, 1500), 100.0, 5.0, rng)
    x, y = tr.x.copy(), tr.y.copy()
    x[3] += 5_000.0  # far outside the city
    segs = match(city_net, x, y)
    indices = [i for s in segs for i in s.index.tolist()]
    assert 3 not in indices
    assert len(indices) == x.size - 1


def test_gap_splits_the_chain(city_net):
    """An impossible transition (2 km in 1 s) breaks the chain into two matched segments."""
    rng = np.random.default_rng(4)
    a = sample_trace(city_net, true_route(city_net, rng, 1000), 100.0, 5.0, rng)
    b = sample_trace(city_net, true_route(city_net, rng, 1000), 100.0, 5.0, rng)
    shift = np.hypot(a.x[-1] - b.x[0], a.y[-1] - b.y[0])
    if shift < 600:
        pytest.skip("random routes too close for the test")
    x = np.concatenate([a.x, b.x])
    y = np.concatenate([a.y, b.y])
    ts = np.concatenate([a.timestamps, a.timestamps[-1] + 1.0 + b.timestamps])
    segs = match(city_net, x, y, ts)
    assert [len(s) for s in segs] == [a.x.size, b.x.size]
    # without timestamps the same trace is one chain (a route exists), with a long path
    assert len(match(city_net, x, y)) == 1


def test_bounded_dijkstra_oracle():
    rng = np.random.default_rng(0)
    n, m = 300, 1200
    tail = rng.integers(0, n, m)
    head = rng.integers(0, n, m)
    w = rng.uniform(1, 100, m)
    order = np.argsort(tail, kind="stable")
    tail, head, w = tail[order], head[order], w[order]
    first_out = np.concatenate([[0], np.cumsum(np.bincount(tail, minlength=n))]).astype(np.int64)
    mat = csr_matrix((w, (tail, head)), shape=(n, n))
    # parallel edges: scipy keeps the sum, so drop duplicates by keeping the minimum
    best = {}
    for a, b, c in zip(tail, head, w, strict=False):
        if a != b:
            best[(a, b)] = min(best.get((a, b), np.inf), c)
    keys = list(best)
    mat = csr_matrix(([best[k] for k in keys], ([k[0] for k in keys], [k[1] for k in keys])), shape=(n, n))
    dist = np.full(n, np.inf)
    tmark = np.zeros(n, np.int8)
    touched = List([np.int64(0)])
    targets = np.arange(n, dtype=np.int64)
    for src in rng.integers(0, n, 20):
        ref = dijkstra(mat, indices=int(src))
        bound = float(np.nanpercentile(ref[np.isfinite(ref)], 60))
        got = _bounded_dijkstra(first_out, head.astype(np.int32), w, int(src), bound, targets, dist, tmark, touched)
        expect = np.where(ref <= bound, ref, np.inf)
        assert np.allclose(got, expect), src
        assert np.isinf(dist).all() and not tmark.any()  # workspaces restored


def test_candidates_match_brute_force(city_net):
    net = city_net
    rng = np.random.default_rng(2)
    xs = rng.uniform(net.geom_x.min(), net.geom_x.max(), 40)
    ys = rng.uniform(net.geom_y.min(), net.geom_y.max(), 40)
    cands = net.grid.candidates(xs, ys, 60.0, max_k=1000)
    lines = shapely.linestrings([np.column_stack(net.edge_polyline(e).T) for e in range(net.edge_count)])
    for i in range(xs.size):
        d = shapely.distance(lines, shapely.Point(xs[i], ys[i]))
        expect = set(np.flatnonzero(d <= 60.0))
        sel = cands.point == i
        assert set(cands.edge[sel]) == expect
        # the nearest candidate of each edge is its distance (an edge may give several local
        # minima, each at least as far)
        for e in expect:
            got = cands.distance[sel][cands.edge[sel] == e]
            assert got.min() == pytest.approx(d[e], abs=1e-6)


def test_hairpin_gives_two_candidates_on_one_edge():
    """A U-shaped edge passing a point twice: one candidate per stretch, so the matcher can
    follow the bend (a nearest-segment-per-edge search would keep only one)."""
    from engine.geo import LocalProjection
    from engine.matching.network import build_network

    proj = LocalProjection(10.0, -30.0)
    hairpin = [(0.0, 0.0), (200.0, 0.0), (210.0, 15.0), (200.0, 30.0), (0.0, 30.0)]
    net = build_network(proj, np.array([0.0, 0.0]), np.array([0.0, 30.0]), [(0, 1, hairpin, 10.0, 1, "Hairpin")])
    cands = net.grid.candidates(np.array([100.0]), np.array([12.0]), 40.0)
    assert sorted(np.round(cands.offset).tolist()) == [100.0, 336.0]
    assert sorted(np.round(cands.distance).tolist()) == [12.0, 18.0]


def test_sparse_points(city_net):
    """400 m between points: the route between them is found by the bounded Dijkstra."""
    net = city_net
    rng = np.random.default_rng(8)
    on = total = 0
    for _ in range(8):
        tr = sample_trace(net, true_route(net, rng, 3000), 400.0, 15.0, rng)
        segs = match(net, tr.x, tr.y, tr.timestamps, MatchOptions(sigma=15.0))
        assert len(segs) == 1
        seg = segs[0]
        on += int((distance_to_polyline(seg.x, seg.y, tr.path) < 2.0).sum())
        total += tr.x.size
        # the matched path between sparse points follows the true path
        assert np.median(distance_to_polyline(seg.path_x, seg.path_y, tr.path)) < 1.0
    assert on / total >= 0.9
