"""The order the contraction hierarchy's nodes are stored in: near in memory what a query reads together.

A CH query's time on a large graph is memory latency: every arc it relaxes reads the label and
the parent (which holds the heap slot) of the node it leads to, arrays as long as the graph.
Numbered as the road graph numbers its edges, the nodes of the top of the hierarchy, which every
long query settles, lie scattered over those arrays, one cache line (and often one page) each. So
the CH is stored renumbered (:func:`storage_order`):

* the top :data:`TOP_FRACTION` of the nodes by rank, last and in rank order: the few hundred
  thousand nodes of a country's top share a few MB of each array, and a node of the top is
  stored at the position of its rank, so a query tells an uncontracted core's nodes (the last
  ranks) by their position and reads no rank (:func:`engine.routing.ch.query_ranks`);
* the other nodes first, in Z-order (Morton) of their position: the low nodes a query settles
  round its two ends lie in a few places of the map, so in a few runs of the arrays. A grid's
  row-major numbering is as good; the order of OSM ids a real extract's edges follow is not.

Measured in ``docs/engineering-history.md`` (the synthetic country, 1M and 3M road nodes).

The road graph keeps its numbering: the routers and the matrix map a road edge (or junction hub,
:mod:`engine.routing.hubs`) to its CH node through ``ch_node`` and back through ``ch_edge``
(:mod:`engine.routing.ch`). A graph stored before this order (format 2 and older) has neither
array: its CH nodes are its edges and hubs.
"""

from __future__ import annotations

import numpy as np

TOP_FRACTION = 0.05  # of the CH nodes, by rank; 1-10 % measured alike at 1M road nodes
_GRID = 1 << 16  # cells of the Z-order's grid per side


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """The 16 low bits of ``v`` (uint64) moved to the even bit positions."""
    v = (v | (v << np.uint64(8))) & np.uint64(0x00FF00FF)
    v = (v | (v << np.uint64(4))) & np.uint64(0x0F0F0F0F)
    v = (v | (v << np.uint64(2))) & np.uint64(0x33333333)
    return (v | (v << np.uint64(1))) & np.uint64(0x55555555)


def morton_codes(lat: np.ndarray, lng: np.ndarray) -> np.ndarray:
    """Z-order codes (int64) of the points on a 2^16 x 2^16 grid over their bounding box."""

    def cells(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float64)
        lo, span = float(v.min()), float(np.ptp(v))
        return np.minimum((v - lo) * (_GRID / span) if span > 0 else np.zeros_like(v), _GRID - 1).astype(np.uint64)

    return (_spread_bits(cells(lng)) | (_spread_bits(cells(lat)) << np.uint64(1))).astype(np.int64)


def storage_order(
    rank: np.ndarray, lat: np.ndarray | None = None, lng: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(``ch_node``, ``ch_edge``): the stored position of each CH node, and the node stored at each
    position (int32 permutations of ``0..K-1``, each the other's inverse), given the nodes' ``rank``
    and position (``lat``/``lng`` per CH node; without them the low nodes keep their order)."""
    k = rank.shape[0]
    top = rank.astype(np.int64) >= np.sort(rank)[k - max(1, int(k * TOP_FRACTION))] if k else np.zeros(0, bool)
    if lat is not None and lng is not None and lat.shape[0]:
        low_key = morton_codes(lat, lng)
    else:
        low_key = np.arange(k, dtype=np.int64)
    key = np.where(top, np.int64(1 << 40) + rank, low_key)  # Morton codes are below 2^32
    ch_edge = np.argsort(key, kind="stable").astype(np.int32)
    del key, low_key, top
    ch_node = np.empty(k, np.int32)
    ch_node[ch_edge] = np.arange(k, dtype=np.int32)
    return ch_node, ch_edge


def ch_node_positions(graph, hub_edge: np.ndarray) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """Where each CH node is: an edge at its tail node, a hub at the node its edges arrive at;
    (None, None) for a turn graph without a road graph's geometry."""
    tail, head = getattr(graph, "edge_tail", None), getattr(graph, "edge_head", None)
    if tail is None or head is None:
        return None, None
    node = np.concatenate([np.asarray(tail, np.int64), np.asarray(head, np.int64)[np.asarray(hub_edge, np.int64)]])
    return np.asarray(graph.node_lat)[node], np.asarray(graph.node_lng)[node]
