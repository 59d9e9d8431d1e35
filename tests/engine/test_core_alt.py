"""The core's landmarks (engine/routing/core_alt.py): their distances are the core's shortest
distances, and the bounds a query builds from them never exceed a true distance, float32
rounding included. The query over a core that reads them is checked against plain Dijkstra in
tests/engine/test_ch.py (test_ch_with_dense_core_equals_dijkstra)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import csgraph_from_dense, shortest_path

from engine.routing import ch, core_alt
from engine.routing.build import build_graph
from tests.engine.test_ch import random_network


@pytest.fixture(scope="module")
def cored_graph(tmp_path_factory):
    """A random network contracted with a core of a few hundred CH nodes."""
    g = random_network(9)
    graph, _ = build_graph(g.write(tmp_path_factory.mktemp("core") / "core.osm.pbf"), with_ch=False)
    arrays = ch.build(graph, core_shortcuts=2)
    core = int(arrays.pop("ch_core")[0])
    assert core > 50
    for name, array in arrays.items():
        setattr(graph, name, array)
    graph.meta.setdefault("counts", {})["ch_core"] = core
    return graph


def _up(graph):
    return graph.ch_up_first, graph.ch_up_to, graph.ch_up_w


def _down(graph):
    return graph.ch_dn_first, graph.ch_dn_to, graph.ch_dn_w


@pytest.fixture(scope="module")
def core_distances(cored_graph) -> np.ndarray:
    """All-pairs shortest distances over the core's arcs (scipy), by core index."""
    first, to, w = core_alt.core_arcs(_up(cored_graph), cored_graph.ch_rank, ch.core_rank(cored_graph))
    n = first.shape[0] - 1
    dense = np.full((n, n), np.inf)
    np.minimum.at(dense, (np.repeat(np.arange(n), np.diff(first)), to), w)
    return shortest_path(csgraph_from_dense(dense, null_value=np.inf), method="D")


@pytest.fixture(scope="module")
def landmarks(cored_graph) -> tuple[np.ndarray, np.ndarray]:
    return core_alt.landmark_distances(
        _up(cored_graph), _down(cored_graph), cored_graph.ch_rank, ch.core_rank(cored_graph)
    )


def test_landmark_distances_are_the_cores_shortest_distances(landmarks, core_distances) -> None:
    """Each landmark's column holds the distances from one core node (its row of the oracle) and
    to it (its column), computed over the upward and downward arcs respectively; the landmarks
    are distinct core nodes."""
    from_landmark, to_landmark = landmarks
    n = core_distances.shape[0]
    assert from_landmark.shape == to_landmark.shape == (n, core_alt.LANDMARKS)
    chosen = []
    for i in range(core_alt.LANDMARKS):
        matches = [
            node
            for node in range(n)
            if np.array_equal(from_landmark[:, i], core_distances[node].astype(np.float32))
            and np.array_equal(to_landmark[:, i], core_distances[:, node].astype(np.float32))
        ]
        assert matches, f"landmark {i}: no core node has these distances"
        chosen.append(matches[0])
    assert len(set(chosen)) == core_alt.LANDMARKS


def test_landmarks_are_deterministic(cored_graph, landmarks) -> None:
    again = core_alt.landmark_distances(
        _up(cored_graph), _down(cored_graph), cored_graph.ch_rank, ch.core_rank(cored_graph)
    )
    for first, second in zip(landmarks, again, strict=True):
        np.testing.assert_array_equal(first, second)


def test_potentials_never_exceed_a_true_distance(landmarks, core_distances) -> None:
    """The forward potential toward a target t, built as a query builds it (the bound of landmark
    L is d(L, t)), and the backward one toward a source s (d(s, L)), are at most the true
    distances d(v, t) and d(s, v) for every core node v: rounding the distances to float32 would
    overshoot without the slack. A target no landmark reaches prunes only what cannot reach it."""
    from_landmark, to_landmark = landmarks
    slack = core_alt.slack(from_landmark, to_landmark)
    n = core_distances.shape[0]
    forward = np.array(
        [
            [core_alt.potential(from_landmark, v, from_landmark[t].astype(np.float64), slack) for t in range(n)]
            for v in range(n)
        ]
    )
    backward = np.array(
        [
            [core_alt.potential(to_landmark, v, to_landmark[s].astype(np.float64), slack) for v in range(n)]
            for s in range(n)
        ]
    )
    assert np.all(forward <= core_distances)
    assert np.all(backward <= core_distances)
    # the bounds are worth having: on average they cover most of the true distance
    finite = np.isfinite(core_distances) & (core_distances > 0)
    assert np.mean(forward[finite] / core_distances[finite]) > 0.5


def test_a_fully_contracted_graph_has_no_landmarks(tmp_path) -> None:
    graph, _ = build_graph(random_network(3).write(tmp_path / "full.osm.pbf"))
    assert ch.core_rank(graph) == ch.node_count(graph)
    from_landmark, to_landmark = ch.CORE_LANDMARKS.computed(graph).values()
    assert from_landmark.shape[0] == to_landmark.shape[0] == 0
