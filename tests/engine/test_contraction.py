"""Kernels of the contraction (engine/routing/contraction.py) against plain references; the whole
build is checked against Dijkstra in test_ch.py."""

from __future__ import annotations

import numpy as np
import pytest

from engine.routing import contraction as C


def random_csr(n: int, seed: int, degree: int = 4):
    rng = np.random.default_rng(seed)
    tails = np.repeat(np.arange(n), degree)
    heads = rng.integers(0, n, tails.size)
    w = rng.uniform(1.0, 10.0, tails.size)
    first = np.zeros(n + 1, np.int64)
    np.add.at(first, tails + 1, 1)
    return np.cumsum(first), heads.astype(np.int64), w


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_estimate_counts_new_arcs_like_a_search_per_shortcut(seed):
    """The marked count of new arcs equals looking each shortcut up in its tail's out list."""
    n = 120
    first, to, w = random_csr(n, seed)
    out, inn = C._dynamic_graph(n, first, to, w)
    ws = C._row(C._workspaces(1, n), 0)
    room = C._largest_product(np.arange(n), n, out, inn)
    buf = C._new_buffer(room)
    checked = 0
    for v in range(n):
        count, new, hops = C._estimate(v, 30, out, inn, ws, buf)
        expected_new = sum(C._arc_index(out, buf[0][i], buf[1][i]) < 0 for i in range(count))
        assert new == expected_new
        assert hops == int(buf[3][:count].sum())
        checked += count
    assert checked > n  # shortcuts were needed, so the comparison meant something


def test_front_limit_is_the_quantile_of_the_remaining_priorities():
    rng = np.random.default_rng(4)
    n = 50_000
    prio = rng.permutation(n).astype(np.float64)
    remaining = rng.permutation(n).astype(np.int64)
    limit = C._front_limit(prio, remaining, n, 0.05)
    share = float((prio <= limit).mean())
    assert 0.04 < share < 0.06  # from a sample of ~4096 of them
    # only the remaining nodes count: the first half of ``remaining``
    half = n // 2
    limit = C._front_limit(prio, remaining, half, 0.5)
    assert 0.45 < float((prio[remaining[:half]] <= limit).mean()) < 0.55


def test_front_limit_is_off_for_few_nodes_or_a_full_front():
    prio = np.arange(1000, dtype=np.float64)
    remaining = np.arange(1000, dtype=np.int64)
    assert C._front_limit(prio, remaining, 255, 0.05) == np.inf
    assert C._front_limit(prio, remaining, 1000, 1.0) == np.inf
    assert C._front_limit(prio, remaining, 1000, 0.05) < 100
