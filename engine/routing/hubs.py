"""Junction hubs: one CH node for a junction where every turn costs the same.

The contraction hierarchy (:mod:`engine.routing.ch`) is built over the turn graph, whose nodes are
the road graph's directed edges and whose arcs are the allowed turns. A junction where ``i``
edges arrive and ``o`` leave gives up to ``i x o`` turn arcs, and contracting such a clique
multiplies shortcuts: on a grid city the foot graph (turns free, no restrictions) needed 7x the
car's shortcuts and 6x its contraction time.

Where the turns cannot tell one approach from another (every arriving edge may turn onto every
leaving edge, its own U-turn included, at one turn weight and one turn duration), the junction is
written as a *hub*: a CH node of its own, one arc from each arriving edge into it (weight 0) and
one arc from it to each leaving edge (the turn weight plus the leaving edge's weight). That is
``i + o`` arcs instead of ``i x o`` with the very same paths and costs, and a graph of hubs
contracts like a node-based graph.

A hub is used where it saves arcs (``i x o`` turns against ``i + o``): at the junctions of three or
more ways of a profile that turns back anywhere at no extra cost (foot,
:attr:`engine.routing.profiles.Profile.turns_back`). Turns that depend on the angle (car,
bicycle), the no-U-turn rule, restrictions and barriers keep their explicit arcs.

CH node ids: the road graph's edges ``0..E-1``, then the hubs ``E..E+H-1``; ``ch_hub_node``
[H] gives each hub's road-graph node. Paths and matrices only ever start and end on edges, so
a caller drops the hub ids from an unpacked path (:func:`engine.routing.ch._edge_leg`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HubbedTurnGraph:
    """The graph the CH contracts: ``n`` nodes (edges, then hubs), arcs as CSR."""

    n: int
    first: np.ndarray  # int64 [n + 1]
    to: np.ndarray  # int64
    w: np.ndarray  # float64: turn weight + weight of the edge entered (0 into a hub)
    hub_node: np.ndarray  # int32 [H]: the road-graph node of hub E + k


def hub_nodes(graph) -> np.ndarray:
    """The road-graph nodes to write as hubs (bool per node); see the module's rule."""
    first = np.asarray(graph.turn_first_out, np.int64)
    head = np.asarray(graph.edge_head, np.int64)
    n_nodes = int(graph.n_nodes)
    outdeg = np.diff(np.asarray(graph.node_first_out, np.int64))
    indeg = np.bincount(head, minlength=n_nodes)
    n_turns = np.diff(first)
    turn_from = np.repeat(np.arange(head.shape[0]), n_turns)
    turn_node = head[turn_from]
    hub = np.ones(n_nodes, bool)  # every arriving edge takes every leaving edge (turns are distinct)
    np.logical_and.at(hub, head, n_turns == outdeg[head])
    for costs in (graph.turn_weight, graph.turn_cost_s):  # both the same at every turn of the node
        c = np.asarray(costs, np.float64)
        low, high = np.full(n_nodes, np.inf), np.full(n_nodes, -np.inf)
        np.minimum.at(low, turn_node, c)
        np.maximum.at(high, turn_node, c)
        hub &= low == high
    turns_at = np.bincount(turn_node, minlength=n_nodes)
    return hub & (turns_at > 0) & (turns_at >= indeg + outdeg)


def hubbed_turn_graph(graph, *, hubs: bool = True) -> HubbedTurnGraph:
    """The turn graph with every :func:`hub_nodes` junction written as a hub (none with
    ``hubs=False``: the turn graph as it is, for a graph given by its turns alone)."""
    first = np.asarray(graph.turn_first_out, np.int64)
    tto = np.asarray(graph.turn_to, np.int64)
    tweight = np.asarray(graph.turn_weight, np.float64)
    ew = np.asarray(graph.edge_weight, np.float64)
    if not hubs:
        return HubbedTurnGraph(int(graph.n_edges), first, tto, tweight + ew[tto], np.zeros(0, np.int32))
    head = np.asarray(graph.edge_head, np.int64)
    tail = np.asarray(graph.edge_tail, np.int64)
    m = head.shape[0]
    hub = hub_nodes(graph)
    nodes = np.flatnonzero(hub)
    hub_id = np.full(hub.shape[0], -1, np.int64)
    hub_id[nodes] = m + np.arange(nodes.shape[0])
    hub_weight = np.zeros(hub.shape[0])  # the node's one turn weight
    turn_from = np.repeat(np.arange(m), np.diff(first))
    hub_weight[head[turn_from]] = tweight  # every turn at a hub writes the same value
    kept = ~hub[head[turn_from]]
    into = np.flatnonzero(hub[head])
    out_of = np.flatnonzero(hub[tail])
    at = np.concatenate([turn_from[kept], into, hub_id[tail[out_of]]])
    to = np.concatenate([tto[kept], hub_id[head[into]], out_of])
    w = np.concatenate([tweight[kept] + ew[tto[kept]], np.zeros(into.shape[0]), hub_weight[tail[out_of]] + ew[out_of]])
    n = m + nodes.shape[0]
    order = np.argsort(at, kind="stable")
    csr = np.zeros(n + 1, np.int64)
    np.add.at(csr, at + 1, 1)
    return HubbedTurnGraph(n, np.cumsum(csr), to[order], w[order], nodes.astype(np.int32))


def hub_turn_cost_s(graph, hub_node: np.ndarray) -> np.ndarray:
    """Each hub's turn duration (the same for every turn at its node): read off the first turn of
    an edge arriving there."""
    first_in = np.asarray(graph.node_first_in, np.int64)[hub_node]
    arriving = np.asarray(graph.in_edges, np.int64)[first_in]
    return np.asarray(graph.turn_cost_s, np.float64)[np.asarray(graph.turn_first_out, np.int64)[arriving]]
