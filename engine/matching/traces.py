"""Synthetic GPS traces from true routes, to test and benchmark map matching.

A true route is a shortest path (by duration) between two random nodes of a
:class:`~engine.matching.network.RoadNetwork`; points are sampled every ``spacing`` metres along
its polyline, each remembering the edge it lies on, then moved by Gaussian noise (``sigma`` per
axis, metres).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.matching.hmm import _path_edges
from engine.matching.network import RoadNetwork


@dataclass
class Trace:
    x: np.ndarray  # noisy observations
    y: np.ndarray
    true_x: np.ndarray
    true_y: np.ndarray
    true_edge: np.ndarray  # edge under each true point
    path: np.ndarray  # the true polyline (k, 2)
    timestamps: np.ndarray  # seconds, from the edge durations


def true_route(
    net: RoadNetwork, rng: np.random.Generator, min_length: float = 1000.0, tries: int = 50
) -> np.ndarray | None:
    """Edges of a shortest-by-duration path between two random nodes, at least ``min_length``."""
    for _ in range(tries):
        a, b = rng.integers(0, net.node_count, 2)
        edges = _path_edges(net.first_out, net.head, net.tail, net.duration, int(a), int(b), 1e12)
        if edges.size and net.length[edges].sum() >= min_length:
            return edges
    return None


def sample_trace(net: RoadNetwork, edges: np.ndarray, spacing: float, sigma: float, rng: np.random.Generator) -> Trace:
    lengths = net.length[edges]
    starts = np.concatenate([[0.0], np.cumsum(lengths)])
    total = starts[-1]
    at = np.arange(spacing / 2, total, spacing)
    idx = np.clip(np.searchsorted(starts, at, side="right") - 1, 0, edges.size - 1)
    tx, ty = np.empty(at.size), np.empty(at.size)
    for k, (i, s) in enumerate(zip(idx, at, strict=False)):
        tx[k], ty[k] = net.point_at(int(edges[i]), float(s - starts[i]))
    durations = np.asarray(net.duration[edges], np.float64)
    t_starts = np.concatenate([[0.0], np.cumsum(durations)])
    ts = t_starts[idx] + (at - starts[idx]) / lengths[idx] * durations[idx]
    path = np.concatenate([net.edge_polyline(int(e)) for e in edges])
    return Trace(
        x=tx + rng.normal(0, sigma, at.size),
        y=ty + rng.normal(0, sigma, at.size),
        true_x=tx,
        true_y=ty,
        true_edge=edges[idx],
        path=path,
        timestamps=ts,
    )


def same_road(net: RoadNetwork, a: int, b: int) -> bool:
    """Same edge, in either direction (the matched direction is not what 'right road' means)."""
    if a == b:
        return True
    return bool(net.tail[a] == net.head[b] and net.head[a] == net.tail[b] and abs(net.length[a] - net.length[b]) < 0.5)


def distance_to_polyline(px: np.ndarray, py: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Distance of each point to a polyline (vectorised over segments)."""
    ax, ay = poly[:-1, 0], poly[:-1, 1]
    dx, dy = poly[1:, 0] - ax, poly[1:, 1] - ay
    l2 = np.maximum(dx * dx + dy * dy, 1e-12)
    t = np.clip(((px[:, None] - ax) * dx + (py[:, None] - ay) * dy) / l2, 0, 1)
    qx, qy = ax + t * dx, ay + t * dy
    return np.hypot(px[:, None] - qx, py[:, None] - qy).min(axis=1)
