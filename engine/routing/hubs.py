"""Junction hubs: one CH node for the approaches of a junction that turn alike.

The contraction hierarchy (:mod:`engine.routing.ch`) is built over the turn graph, whose nodes are
the road graph's directed edges and whose arcs are the allowed turns. A junction where ``i``
edges arrive and ``o`` leave gives up to ``i x o`` turn arcs, and contracting such a clique
multiplies shortcuts: on a 30k-node grid city the foot graph (turns free, no restrictions) needed
twice the car's shortcuts and 6x its contraction time, 28x the time of the same junctions as hubs.

Approaches that turn alike (each may take every leaving edge, its own U-turn included, and at
the same turn weight and duration onto each as the others) are written as a *hub*: a CH node of
its own, one arc from each of those arriving edges into it (weight 0) and one arc from it to each
leaving edge (that turn's weight plus the leaving edge's weight). That is ``k + o`` arcs instead
of ``k x o`` with the very same paths and costs, and a graph of hubs contracts like a node-based
graph. The costs may depend on the edge left (a cyclist's penalty for getting off to push) and on
a class of the approach: ridden and pushed approaches of one junction make two hubs.

So a hub needs a profile that turns back anywhere at the cost of going on
(:attr:`engine.routing.profiles.Profile.turns_back`) and prices turns without their angle (foot).
A turn priced by its angle (car), the no-U-turn rule, restrictions and barriers keep their
explicit arcs. A hub is used where it saves arcs: two approaches or more, two ways out or more.

The turn graph's nodes are numbered as the road graph's edges ``0..E-1``, then the hubs
``E..E+H-1`` (the CH stores them in an order of its own and maps these numbers to it:
:mod:`engine.routing.ch_order`); ``ch_hub_edge`` [H] gives one edge arriving into each hub, whose
turns price the hub's arcs out. Paths and matrices only ever start and end on edges, so a caller
drops the hubs from an unpacked path (:func:`engine.routing.ch._edge_leg`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.arrays import ranges

_SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


@dataclass(frozen=True)
class HubbedTurnGraph:
    """The graph the CH contracts: ``n`` nodes (edges, then hubs), arcs as CSR."""

    n: int
    first: np.ndarray  # int64 [n + 1]
    to: np.ndarray  # int64
    w: np.ndarray  # float64: turn weight + weight of the edge entered (0 into a hub)
    hub_edge: np.ndarray  # int32 [H]: an edge arriving into hub E + k


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (uint64 arithmetic wraps)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def hub_of_edge(graph) -> np.ndarray:
    """int64 [E]: the hub (0..H-1) each edge arrives into, or -1 (its turns stay explicit).

    An edge qualifies when its turns are every edge leaving its head, in their order. Its *row*
    is the (turn weight, turn duration) of each; edges into one node with equal rows share a hub.
    Rows are grouped by two 64-bit hashes and then compared value by value with their group's
    first edge, so a hash collision can only cost a hub, never give a wrong arc."""
    first = np.asarray(graph.turn_first_out, np.int64)
    tto = np.asarray(graph.turn_to, np.int64)
    head = np.asarray(graph.edge_head, np.int64)
    out_first = np.asarray(graph.node_first_out, np.int64)
    m = head.shape[0]
    hub = np.full(m, -1, np.int64)
    n_turns = np.diff(first)
    turn_from = np.repeat(np.arange(m), n_turns)
    pos = np.arange(tto.shape[0]) - first[turn_from]
    in_order = tto == out_first[head[turn_from]] + pos
    complete = (n_turns == np.diff(out_first)[head]) & (n_turns >= 2)
    np.logical_and.at(complete, turn_from, in_order)
    weight = np.asarray(graph.turn_weight, np.float32).view(np.uint32).astype(np.uint64)
    cost = np.asarray(graph.turn_cost_s, np.float32).view(np.uint32).astype(np.uint64)
    value = (weight << np.uint64(32)) | cost
    hashes = []
    for seed in _SEEDS:
        per_turn = _mix(value ^ _mix(pos.astype(np.uint64) + seed))
        row = np.zeros(m, np.uint64)
        np.add.at(row, turn_from, per_turn)
        hashes.append(row)
    edges = np.flatnonzero(complete)
    if edges.shape[0] == 0:
        return hub
    order = edges[np.lexsort((hashes[1][edges], hashes[0][edges], head[edges]))]
    key = np.stack([head[order].astype(np.uint64), hashes[0][order], hashes[1][order]])
    starts = np.flatnonzero(np.concatenate([[True], (key[:, 1:] != key[:, :-1]).any(axis=0)]))
    group = np.repeat(np.arange(starts.shape[0]), np.diff(np.append(starts, order.shape[0])))
    leader = order[starts][group]  # per edge of ``order``: its group's first edge
    same = np.ones(order.shape[0], bool)  # the rows compared value by value (a group's rows are as long)
    turns = np.repeat(np.arange(order.shape[0]), n_turns[order])
    np.logical_and.at(
        same, turns, value[ranges(first[order], n_turns[order])] == value[ranges(first[leader], n_turns[order])]
    )
    order, group = order[same], group[same]
    size = np.bincount(group, minlength=starts.shape[0])
    k, d = size[group], n_turns[order]
    kept = (k >= 2) & (k * d > k + d)  # fewer arcs: not a plain two-way street's node (2 x 2)
    order, group = order[kept], group[kept]
    _, hub[order] = np.unique(group, return_inverse=True)
    return hub


def hubbed_turn_graph(graph, *, hubs: bool = True) -> HubbedTurnGraph:
    """The turn graph with the approaches of :func:`hub_of_edge` written as hubs (none with
    ``hubs=False``: the turn graph as it is, for a graph given by its turns alone)."""
    first = np.asarray(graph.turn_first_out, np.int64)
    tto = np.asarray(graph.turn_to, np.int64)
    tweight = np.asarray(graph.turn_weight, np.float64)
    ew = np.asarray(graph.edge_weight, np.float64)
    m = int(graph.n_edges)
    hub = hub_of_edge(graph) if hubs else np.full(m, -1, np.int64)
    n_hubs = int(hub.max()) + 1 if m else 0
    into = np.flatnonzero(hub >= 0)
    hub_edge = np.empty(n_hubs, np.int64)
    hub_edge[hub[into][::-1]] = into[::-1]  # each hub's first arriving edge
    turn_from = np.repeat(np.arange(m), np.diff(first))
    kept = hub[turn_from] < 0
    # a hub's arcs out: its first arriving edge's turns, from the hub
    out_turn = ranges(first[hub_edge], np.diff(first)[hub_edge])
    out_hub = np.repeat(np.arange(n_hubs), np.diff(first)[hub_edge]) + m
    at = np.concatenate([turn_from[kept], into, out_hub])
    to = np.concatenate([tto[kept], hub[into] + m, tto[out_turn]])
    w = np.concatenate([tweight[kept] + ew[tto[kept]], np.zeros(into.shape[0]), tweight[out_turn] + ew[tto[out_turn]]])
    n = m + n_hubs
    order = np.argsort(at, kind="stable")
    csr = np.zeros(n + 1, np.int64)
    np.add.at(csr, at + 1, 1)
    return HubbedTurnGraph(n, np.cumsum(csr), to[order], w[order], hub_edge.astype(np.int32))
