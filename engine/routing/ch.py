"""Contraction hierarchy over the *turn graph* (edge-based), built at import, queried in numba.

Why edge-based: turn restrictions and turn costs live on pairs of edges, so the CH nodes are the
graph's directed edges and the CH arcs are the allowed turns (weight = turn cost + weight of the
edge entered). A restriction is a missing arc, so every CH answer respects it with no special
case in the query (OSRM does the same). The price is a graph about 2-3 times larger than the
node graph, which at city scale is a few tens of thousands of CH nodes.

Why a CH: a query settles a few hundred nodes where a plain Dijkstra over the same turn graph
settles the whole city, so a leg is answered in microseconds and the gap grows with the graph.

Contraction: :mod:`engine.routing.contraction` (rounds of independent local minima of edge
difference + level, refreshing only the dirty nodes of each round's front; witness searches
bounded by ``sim_limit`` settled nodes while estimating and ``settle_limit`` while contracting).
The searches use :mod:`engine.routing.heap` (fixed capacity, never rebound; the query its
variant :mod:`engine.routing.parent_heap`, whose slots live in the parents), the witness search
and the query are compiled without reference counting (``_nrt=False``: they allocate nothing),
and the contraction grows its pools only between nodes: in numba, a loop in which an array
variable may be rebound pays two atomic reference-count updates per iteration.

Limits: a grid city has little hierarchy and a turn cost at every crossing, so there are almost
no witnesses at first (going round a block costs two extra turns): contracting a directed edge
adds its 3 x 3 entry/exit combinations and the top of the hierarchy densifies. The edge-based
blow-up, not the grid, is the cost; a turn-aware node-based CH (Geisberger & Vetter 2011) or a
multi-level overlay would scale further. Where turns cost nothing by angle (the walker's
junctions) the blow-up is avoided already: the approaches of such a junction share one hub node
(:mod:`engine.routing.hubs`). ``core_shortcuts`` bounds the work per node: a node that
would need more shortcuts is never contracted, and when only such nodes remain they form an
uncontracted core, whose arcs go into both graphs and are searched goal-directed, with landmarks
(:mod:`engine.routing.core_alt`). For the car
(:data:`CORE_SHORTCUTS`) it only stops the densest top of very large graphs, if at all. A graph
with junction hubs (the walker's, the cyclist's) gets :data:`HUBBED_CORE_SHORTCUTS`: one speed
everywhere leaves its top without hierarchy, and on a large grid the last few thousand nodes,
each in a near-clique, took most of the contraction (a core of them costs each long query an
A* search of the core instead). Whatever the graph, the contraction also stops once the nodes
left have :data:`CORE_MEAN_DEGREE` arcs each on average: the densest top of a country's grid,
slow to contract and fast to search with landmarks. Real extracts (Monaco, Helsinki) contract
fully with either bound.

The measurements behind these choices (CH against Dijkstra, the contraction variants and their
parameters, the 1M-node city) are in ``docs/engineering-history.md``.

Query: bidirectional Dijkstra on the upward (forward) and downward (backward) graphs, multiple
sources and targets with initial costs (a snapped point sits on up to two directed edges),
stopped when both queue minima reach the best meeting cost, stall-on-demand; the core, if any,
after the upward searches (:func:`_query`). Shortcuts are
unpacked through their middle node (``ch_*_mid``). Tested against plain Dijkstra
(:mod:`engine.routing.search`) in ``tests/engine/test_ch.py``.

Arrays (K = E + H CH nodes: the road graph's directed edges, then the junction hubs of
:mod:`engine.routing.hubs`, stored in :mod:`engine.routing.ch_order`'s order):

* ``ch_node`` int32 [K]: the CH node of road edge ``e`` (and of hub ``E + k``); ``ch_edge`` int32
  [K] the other way. Absent in graphs of format 2 and older, whose CH node ``e`` is edge ``e``.
* ``ch_rank`` int32 [K]: contraction order.
* ``ch_hub_edge`` int32 [H]: an edge arriving into hub E + k (absent in graphs of format 1: no hubs).
* ``ch_up_first`` int32 [K+1] (int64 from 2**31 arcs on, and in graphs an earlier release
  wrote), ``ch_up_to`` int32, ``ch_up_w`` float64, ``ch_up_mid`` int32: arcs u -> x with
  rank[x] > rank[u], stored at u (forward search).
* ``ch_dn_first`` / ``ch_dn_to`` / ``ch_dn_w`` / ``ch_dn_mid``: arcs u -> x with
  rank[u] > rank[x], stored at x pointing to u (backward search).
  ``mid`` is -1 for a turn of the original graph, else the contracted middle CH node.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
from numba import njit
from numpy.typing import DTypeLike

from engine.arrays import grown, index_dtype, narrowed_offsets
from engine.progress import Step
from engine.routing import core_alt, parent_heap
from engine.routing.arc_chunks import ArcChunks
from engine.routing.ch_order import ch_node_positions, storage_order
from engine.routing.contraction import PRIORITY, contract
from engine.routing.derived import DerivedArrays
from engine.routing.hubs import hubbed_turn_graph

INF = np.inf


def node_count(graph) -> int:
    """The CH's nodes: the graph's directed edges, then its junction hubs (:mod:`engine.routing.hubs`)."""
    return int(graph.ch_up_first.shape[0]) - 1


def core_rank(graph) -> int:
    """The lowest rank of the uncontracted core (the last ``ch_core`` ranks); the node count when
    the graph contracted fully. The core's size is the graph meta's ``counts.ch_core`` (written by
    the import); a graph without it counts as fully contracted, which only loses the core's
    goal-directed search (:func:`_query`: its core is searched as part of the hierarchy), never
    an answer."""
    core = int(getattr(graph, "meta", {}).get("counts", {}).get("ch_core", 0))
    return node_count(graph) - core


def query_ranks(graph) -> np.ndarray:
    """The ranks a query reads to tell the core's nodes from the others (:func:`_query`): none
    (an empty array) where the core is the last stored nodes, as :mod:`engine.routing.ch_order`
    stores them (the top of the hierarchy last, a node at the position of its rank), so that a
    node's position says whether it is in the core and the query reads no rank; ``ch_rank``
    otherwise (a graph stored before that order, or a core larger than its top)."""
    rank = np.asarray(graph.ch_rank)
    first_core = core_rank(graph)
    if np.all(rank[first_core:] >= first_core):
        return rank[:0]  # ranks are a permutation: positions >= first_core hold every core rank
    return rank


# the contraction's output arcs (20 bytes each, ~18 per CH node of a car's turn graph: a quarter of
# the import's peak memory at 1M road nodes) spill to disk above this size of turn graph, in chunks
SPILL_MIN_ARCS = 1 << 16
FLUSH_ARCS = 1 << 20

CORE_SHORTCUTS = 4096
HUBBED_CORE_SHORTCUTS = 512
# the contraction stops once the nodes left have this many arcs each on average (in and out): at
# a country's size the car's last ~25,000 CH nodes took a sixth of its contraction, and core-ALT
# searches them in milliseconds; a city's graph never gets near it (docs/engineering-history.md)
CORE_MEAN_DEGREE = 200.0

# rounds that start with fewer than this share of the nodes left update priorities lazily
# (engine.routing.contraction): the car's dense top contracts a node or two a round and
# re-simulated most of the rest each time; a graph with junction hubs contracts dozens a round
# even there, and lazy updates did not speed it up (docs/engineering-history.md)
LAZY_BELOW = 0.2
HUBBED_LAZY_BELOW = 0.0


def build(
    graph,
    *,
    sim_limit: int = 30,
    settle_limit: int = 500,
    core_shortcuts: int | None = None,
    core_degree: float = CORE_MEAN_DEGREE,
    front: float = 0.05,
    lazy_below: float | None = None,
    priority: tuple[float, float, float, float, float] = PRIORITY,
    hubs: bool = True,
    progress: Step | None = None,
    spill: bool | None = None,
    flush_arcs: int = FLUSH_ARCS,
    storage_ordered: bool = True,
) -> dict[str, np.ndarray]:
    """Contract the turn graph, its uniform junctions as hubs (:mod:`engine.routing.hubs`; the
    parameters' measured effect: ``docs/engineering-history.md``); ``progress`` (a step of the
    import's progress) counts the CH nodes contracted.

    A node that would need more than ``core_shortcuts`` shortcuts is not contracted; when only
    such nodes remain, they are the uncontracted *core*, whose arcs go into both the upward and
    the downward graph, and which the query searches goal-directed (:mod:`engine.routing.core_alt`).
    By default :data:`HUBBED_CORE_SHORTCUTS` when the graph has junction hubs, else
    :data:`CORE_SHORTCUTS` (module doc). The nodes left are the core too once they have
    ``core_degree`` arcs each on average (:data:`CORE_MEAN_DEGREE`). Likewise ``lazy_below``: the
    share of nodes left below which a round simulates only the dirty nodes that could be chosen
    (:data:`HUBBED_LAZY_BELOW` or :data:`LAZY_BELOW`).

    ``spill``: the finished arcs go to a temporary directory (``TMPDIR``) in chunks of
    ``flush_arcs`` instead of staying in memory until the end (:mod:`engine.routing.arc_chunks`);
    by default when the turn graph has :data:`SPILL_MIN_ARCS` arcs or more. The hierarchy is the
    same either way.

    ``storage_ordered``: the CH nodes renumbered in :mod:`engine.routing.ch_order`'s order, with
    ``ch_node`` and ``ch_edge`` to map edges and hubs to them and back; without, numbered as the
    edges and hubs (as graphs of format 2 and older store them).
    """
    arcs = hubbed_turn_graph(graph, hubs=hubs)
    hub_edge = arcs.hub_edge
    if core_shortcuts is None:
        core_shortcuts = HUBBED_CORE_SHORTCUTS if hub_edge.shape[0] else CORE_SHORTCUTS
    if lazy_below is None:
        lazy_below = HUBBED_LAZY_BELOW if hub_edge.shape[0] else LAZY_BELOW
    n = arcs.n
    if progress is not None:
        progress.total = n  # the edges and the hubs
    done = np.zeros(1, np.int64)
    if spill is None:
        spill = arcs.to.shape[0] >= SPILL_MIN_ARCS
    turn_graph = [arcs.first, arcs.to, arcs.w]  # contract() lets it go once its pools hold it
    del arcs
    with tempfile.TemporaryDirectory(prefix="meridian-contraction-") if spill else nullcontext(None) as spill_dir:
        directory = Path(spill_dir) if spill_dir is not None else None
        up, down = ArcChunks("up", directory), ArcChunks("down", directory)
        with progress.watch(done) if progress is not None else nullcontext():
            rank, n_core = contract(
                n,
                turn_graph,
                sim_limit,
                settle_limit,
                core_shortcuts,
                np.asarray(priority, np.float64),
                front,
                numba.get_num_threads(),
                done,
                up,
                down,
                flush_arcs if spill else None,
                lazy_below,
                core_degree,
            )
        numbering = {}
        if storage_ordered:
            ch_node, ch_edge = storage_order(rank, *ch_node_positions(graph, hub_edge))
            rank = rank[ch_edge]
            numbering = {"ch_node": ch_node, "ch_edge": ch_edge}
        uf, ut, uw, um = up.csr(n, numbering.get("ch_node"))
        df, dt, dw, dm = down.csr(n, numbering.get("ch_node"))
    return {
        "ch_rank": rank.astype(np.int32),
        **numbering,
        "ch_core": np.asarray([n_core], dtype=np.int64),
        "ch_up_first": narrowed_offsets(uf),
        "ch_up_to": ut,
        "ch_up_w": uw,
        "ch_up_mid": um,
        "ch_dn_first": narrowed_offsets(df),
        "ch_dn_to": dt,
        "ch_dn_w": dw,
        "ch_dn_mid": dm,
        "ch_hub_edge": hub_edge,
    }


# ----------------------------------------------------------------------------- query
@njit(cache=True, inline="always")
def _below_core(node, rank, core_rank):
    """Whether ``node`` is below the core: by its rank, or by its position when ``rank`` is empty
    (:func:`query_ranks`)."""
    return core_alt.core_index(node, rank, core_rank) < 0


@njit(cache=True, inline="always")
def _reach(hk, hv, hpar, par, size, key, node, parent, rank, core_rank, defer):
    """A node labelled with ``key`` and ``parent``: queued, or, when ``defer`` and it is a core
    node, only given its parent, for the core's search once the upward searches are done
    (:func:`engine.routing.core_alt.search`); returns the queue's size."""
    if defer and not _below_core(node, rank, core_rank):
        par[node] = parent
        return size
    return parent_heap.push(hk, hv, hpar, par, size, key, node, parent)


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # _nrt: not in numba's typed signature
def _query(
    uf,
    ut,
    uw,
    df,
    dt,
    dw,
    srcs,
    sd,
    tgts,
    td,
    rank,
    core_rank,
    from_landmark,
    to_landmark,
    slack,
    distf,
    distb,
    parf,
    parb,
    touchedf,
    touchedb,
    hk1,
    hv1,
    hpar1,
    hk2,
    hv2,
    hpar2,
    target_bounds,
    source_bounds,
):
    """Returns (best cost, meeting node, n touched fwd, n touched bwd). parf/parb hold the arc index
    used to reach a node (-1 at a start).

    The CH's stopping rule: a direction is done when its queue's minimum reaches the best meeting
    cost. A graph with an uncontracted core (``rank >= core_rank``, whose arcs lead only to core
    nodes; its landmark distances ``from_landmark``/``to_landmark`` not empty) has the upward
    searches only label the core nodes they reach; once both are done, the core is searched
    goal-directed from those labels (:func:`engine.routing.core_alt.search`). Without a core
    (``core_rank`` = the node count) no node is a core node and only the CH's rule applies."""
    alt = from_landmark.shape[0] > 0
    ntf = 0
    ntb = 0
    s1 = 0
    s2 = 0
    best = INF
    meet = -1
    for i in range(srcs.shape[0]):
        x = srcs[i]
        if distf[x] == INF:
            touchedf[ntf] = x
            ntf += 1
        if sd[i] < distf[x]:
            distf[x] = sd[i]
            s1 = _reach(hk1, hv1, hpar1, parf, s1, sd[i], x, -1, rank, core_rank, alt)
    for i in range(tgts.shape[0]):
        x = tgts[i]
        if distb[x] == INF:
            touchedb[ntb] = x
            ntb += 1
        if td[i] < distb[x]:
            distb[x] = td[i]
            s2 = _reach(hk2, hv2, hpar2, parb, s2, td[i], x, -1, rank, core_rank, alt)
    for i in range(srcs.shape[0]):
        x = srcs[i]
        if distb[x] < INF and distf[x] + distb[x] < best:
            best = distf[x] + distb[x]
            meet = x
    while s1 > 0 or s2 > 0:
        m1 = hk1[0] if s1 > 0 else INF
        m2 = hk2[0] if s2 > 0 else INF
        if m1 >= best and m2 >= best:
            break
        if m1 <= m2:
            d, x, s1 = parent_heap.pop(hk1, hv1, hpar1, parf, s1)
            # stall on demand: a cheaper way into x from a higher node via the down graph
            stalled = False
            for k in range(df[x], df[x + 1]):
                y = dt[k]
                if distf[y] + dw[k] < d:
                    stalled = True
                    break
            if stalled:
                continue
            for k in range(uf[x], uf[x + 1]):
                y = ut[k]
                nd = d + uw[k]
                if nd < distf[y]:
                    if distf[y] == INF:
                        touchedf[ntf] = y
                        ntf += 1
                    distf[y] = nd
                    s1 = _reach(hk1, hv1, hpar1, parf, s1, nd, y, k, rank, core_rank, alt)
                    if distb[y] < INF and nd + distb[y] < best:
                        best = nd + distb[y]
                        meet = y
        else:
            d, x, s2 = parent_heap.pop(hk2, hv2, hpar2, parb, s2)
            stalled = False
            for k in range(uf[x], uf[x + 1]):
                y = ut[k]
                if distb[y] + uw[k] < d:
                    stalled = True
                    break
            if stalled:
                continue
            for k in range(df[x], df[x + 1]):
                y = dt[k]
                nd = d + dw[k]
                if nd < distb[y]:
                    if distb[y] == INF:
                        touchedb[ntb] = y
                        ntb += 1
                    distb[y] = nd
                    s2 = _reach(hk2, hv2, hpar2, parb, s2, nd, y, k, rank, core_rank, alt)
                    if distf[y] < INF and nd + distf[y] < best:
                        best = nd + distf[y]
                        meet = y
    parent_heap.clear(hv1, hpar1, parf, s1)
    parent_heap.clear(hv2, hpar2, parb, s2)
    if alt:
        best, meet, ntf, ntb = core_alt.search(
            uf, ut, uw, df, dt, dw, rank, core_rank, from_landmark, to_landmark, slack, target_bounds, source_bounds,
            best, meet, distf, distb, parf, parb, touchedf, touchedb, ntf, ntb, hk1, hv1, hpar1, hk2, hv2, hpar2,
        )  # fmt: skip
    return best, meet, ntf, ntb


@njit(cache=True)
def arc_at(first, to, w, mid, node, target):
    best = -1
    bw = INF
    for k in range(first[node], first[node + 1]):
        if to[k] == target and w[k] < bw:
            bw = w[k]
            best = k
    return best


@njit(cache=True)
def _unpack_into(out, n_out, u, x, mid, uf, ut, uw, um, df, dt, dw, dm):
    """Append the CH nodes strictly after u up to and including x for arc u->x (mid)."""
    # explicit stack of (a, b, mid)
    sa = np.empty(64, np.int64)
    sb = np.empty(64, np.int64)
    sm = np.empty(64, np.int64)
    sp = 0
    sa[0] = u
    sb[0] = x
    sm[0] = mid
    sp = 1
    while sp > 0:
        sp -= 1
        a = sa[sp]
        b = sb[sp]
        m = sm[sp]
        if m < 0:
            if n_out >= out.shape[0]:
                out = grown(out, n_out)
            out[n_out] = b
            n_out += 1
            continue
        # a -> m is stored in dn[m] (rank a > rank m); m -> b in up[m]
        k1 = arc_at(df, dt, dw, dm, m, a)
        k2 = arc_at(uf, ut, uw, um, m, b)
        if sp + 2 >= sa.shape[0]:
            sa, sb, sm = grown(sa, sp), grown(sb, sp), grown(sm, sp)
        # push second half first so the first half is processed first
        sa[sp] = m
        sb[sp] = b
        sm[sp] = um[k2]
        sp += 1
        sa[sp] = a
        sb[sp] = m
        sm[sp] = dm[k1]
        sp += 1
    return out, n_out


@njit(cache=True)
def _path(meet, parf, parb, uf, ut, uw, um, df, dt, dw, dm, up_from, dn_from):
    """CH nodes from a source to a target through ``meet``, shortcuts unpacked."""
    # forward chain: arcs k (in up arrays) from source to meet
    chain = np.empty(256, np.int64)
    nc = 0
    x = meet
    while parf[x] >= 0:
        k = parf[x]
        if nc >= chain.shape[0]:
            chain = grown(chain, nc)
        chain[nc] = k
        nc += 1
        x = up_from[k]
    start = x
    out = np.empty(256, np.int64)
    out[0] = start
    n_out = 1
    for i in range(nc - 1, -1, -1):
        k = chain[i]
        out, n_out = _unpack_into(out, n_out, up_from[k], ut[k], um[k], uf, ut, uw, um, df, dt, dw, dm)
    # backward chain: from meet toward the target: arc k in dn arrays goes dn_from[k] -> dt[k]
    # in the backward search, i.e. original arc dt[k] -> dn_from[k]
    x = meet
    while parb[x] >= 0:
        k = parb[x]
        nxt = dn_from[k]
        out, n_out = _unpack_into(out, n_out, x, nxt, dm[k], uf, ut, uw, um, df, dt, dw, dm)
        x = nxt
    return out[:n_out]


def _arc_tails(graph) -> dict[str, np.ndarray]:
    """The tail CH node of every upward and downward arc (for walking parents back); int32 as the
    arcs' heads (``ch_up_to``)."""
    n = node_count(graph)
    return {
        "up_from": np.repeat(np.arange(n, dtype=np.int32), np.diff(graph.ch_up_first)),
        "dn_from": np.repeat(np.arange(n, dtype=np.int32), np.diff(graph.ch_dn_first)),
    }


ARC_TAILS = DerivedArrays("ch-arc-tails", 1, ("up_from", "dn_from"), _arc_tails)


def _core_landmarks(graph) -> dict[str, np.ndarray]:
    """The core's landmark distances (:mod:`engine.routing.core_alt`); empty without a core."""
    from_landmark, to_landmark = core_alt.landmark_distances(
        (graph.ch_up_first, graph.ch_up_to, graph.ch_up_w),
        (graph.ch_dn_first, graph.ch_dn_to, graph.ch_dn_w),
        graph.ch_rank,
        core_rank(graph),
    )
    return {"from_landmark": from_landmark, "to_landmark": to_landmark}


CORE_LANDMARKS = DerivedArrays("ch-core-landmarks", 1, ("from_landmark", "to_landmark"), _core_landmarks)


@dataclass
class CHWorkspace:
    """What one query writes, sized to the CH nodes: labels, parents, the touched lists that reset
    them after the query, and the two heaps (:mod:`engine.routing.parent_heap`'s three arrays). Every
    query leaves it as it found it, and reads or writes only the entries of the graph's own nodes,
    so a workspace sized to a larger graph serves a smaller one as well.

    Node ids, arc ids and heap slots are stored as ``index`` (int32 unless a graph has 2**31
    nodes or arcs). The labels and parents, written over the whole graph as queries go, take 24
    bytes a CH node (32 at int64); the heaps keep their slots in the parents, so they add nothing
    a node (:mod:`engine.routing.parent_heap`), and like the touched lists they are written only
    as far as a query fills them."""

    distf: np.ndarray
    distb: np.ndarray
    parf: np.ndarray
    parb: np.ndarray
    touchedf: np.ndarray
    touchedb: np.ndarray
    heap_f: tuple[np.ndarray, np.ndarray, np.ndarray]
    heap_b: tuple[np.ndarray, np.ndarray, np.ndarray]
    target_bounds: np.ndarray  # the core's landmark bounds of a query (engine.routing.core_alt)
    source_bounds: np.ndarray

    @property
    def size(self) -> int:
        return int(self.distf.shape[0])

    @property
    def index(self) -> np.dtype:
        return self.parf.dtype

    @classmethod
    def sized(cls, n: int, index: DTypeLike = np.int32) -> CHWorkspace:
        return cls(
            distf=np.full(n, INF),
            distb=np.full(n, INF),
            parf=np.full(n, -1, index),
            parb=np.full(n, -1, index),
            touchedf=np.empty(n + 8, index),
            touchedb=np.empty(n + 8, index),
            heap_f=parent_heap.new_heap(n, index),
            heap_b=parent_heap.new_heap(n, index),
            target_bounds=np.empty(core_alt.LANDMARKS),
            source_bounds=np.empty(core_alt.LANDMARKS),
        )

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self.distf,
            self.distb,
            self.parf,
            self.parb,
            self.touchedf,
            self.touchedb,
            *self.heap_f,
            *self.heap_b,
            self.target_bounds,
            self.source_bounds,
        )


class SharedWorkspace:
    """The one query workspace of a process, lent under a lock to the CH queries of every graph it
    serves (each travel profile's, each region's) and sized to the largest of them.

    The query kernels hold the GIL, so a process runs one of them at a time whatever its threads
    share: one workspace serves four threads as fast as one each would, and the graphs of three
    profiles as fast as one each would, in a fraction of the memory. The workspace's labels
    and parents, 24 bytes a CH node, are written over the whole graph at once (private memory):
    at a country's size, one per profile and thread would be gigabytes in each web worker."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._workspace: CHWorkspace | None = None

    def at_least(self, n: int, index: DTypeLike = np.int32) -> CHWorkspace:
        """The workspace, at least ``n`` nodes large and its ids at least as wide as ``index``;
        the caller holds :attr:`lock` from this call until its query is done (a plain lock: a
        generator-based context manager would cost a leg of tens of microseconds measurably)."""
        ws, want = self._workspace, np.dtype(index)
        if ws is not None and ws.size >= n and ws.index.itemsize >= want.itemsize:
            return ws
        if ws is not None:  # never smaller or narrower than before: its graphs may come back
            n, want = max(n, ws.size), max(want, ws.index, key=lambda dtype: dtype.itemsize)
        self._workspace = None  # let the smaller one go before the larger is allocated
        self._workspace = CHWorkspace.sized(n, want)
        return self._workspace

    @property
    def size(self) -> int:
        """The node count it is sized to (0 before the first query)."""
        return 0 if self._workspace is None else self._workspace.size


WORKSPACE = SharedWorkspace()


def ch_numbering(graph) -> tuple[np.ndarray, np.ndarray]:
    """(``ch_node``, ``ch_edge``): the CH node of each road edge and hub, and back
    (:mod:`engine.routing.ch_order`); both empty for a graph stored before that order, whose CH
    nodes are its edges and hubs."""
    none = np.zeros(0, np.int32)
    return np.asarray(getattr(graph, "ch_node", none)), np.asarray(getattr(graph, "ch_edge", none))


def query_index(graph) -> np.dtype:
    """The id width a query on ``graph`` needs: int32 unless it has 2**31 CH nodes or arcs."""
    return np.dtype(index_dtype(max(node_count(graph), int(graph.ch_up_first[-1]), int(graph.ch_dn_first[-1]))))


def reserve_workspace(graphs: Iterable) -> None:
    """Size the process's workspace for the largest of ``graphs`` before any of them is queried.

    Grown graph by graph instead (the car's first, then a larger foot graph's), each replaced
    workspace's arrays stay with the allocator as free heap rather than going back to the
    system, private memory of the process for as long as it lives.
    """
    graphs = list(graphs)
    if graphs:
        widest = max((query_index(g) for g in graphs), key=lambda dtype: dtype.itemsize)
        WORKSPACE.at_least(max(node_count(g) for g in graphs), widest)


class CHQuery:
    """The CH of a graph; ``route`` is the hot path. One per graph and process, shared by its
    threads, which borrow the process's workspace for each query (:data:`WORKSPACE`). The graph's
    arrays, the arcs' tails and the core's landmarks are memory-mapped when the dataset has them
    (:data:`ARC_TAILS`, :data:`CORE_LANDMARKS`)."""

    def __init__(self, graph) -> None:
        tails = ARC_TAILS.load(graph)
        landmarks = CORE_LANDMARKS.load(graph)
        self._graph_arrays = (
            np.asarray(graph.ch_up_first),
            np.asarray(graph.ch_up_to),
            np.asarray(graph.ch_up_w),
            np.asarray(graph.ch_up_mid),
            np.asarray(graph.ch_dn_first),
            np.asarray(graph.ch_dn_to),
            np.asarray(graph.ch_dn_w),
            np.asarray(graph.ch_dn_mid),
            tails["up_from"],
            tails["dn_from"],
            query_ranks(graph),
            core_rank(graph),
            landmarks["from_landmark"],
            landmarks["to_landmark"],
            core_alt.slack(landmarks["from_landmark"], landmarks["to_landmark"]),
        )
        self._numbering = ch_numbering(graph)
        self._nodes = node_count(graph)
        self._index = query_index(graph)

    def route(self, srcs, sd, tgts, td) -> tuple[float, np.ndarray | None]:
        """Best cost and the CH-node (= road edge) sequence from one of ``srcs`` to one of ``tgts``.

        ``sd``/``td`` are the initial costs (see :mod:`engine.routing.graph` for the convention).
        """
        ch_node, ch_edge = self._numbering
        srcs, tgts = renumbered(srcs, ch_node), renumbered(tgts, ch_node)
        with WORKSPACE.lock:
            workspace = WORKSPACE.at_least(self._nodes, self._index)
            best, path = _route(srcs, sd, tgts, td, *self._graph_arrays, *workspace.arrays())
        path = renumbered(path, ch_edge)
        return best, (path if path.shape[0] else None)

    def edge_leg(self, starts, start_fracs, ends, end_fracs, w, tfirst, tto, tweight):
        """The best leg from a point on one of the ``starts`` edges (at ``start_fracs`` of them) to
        one on the ``ends`` edges: (cost, road edges from the start edge on, end fraction), or None.
        A leg within a single edge is the caller's case (a CH path has at least one turn)."""
        with WORKSPACE.lock:
            workspace = WORKSPACE.at_least(self._nodes, self._index)
            cost, edges, end_frac = _edge_leg(
                starts,
                start_fracs,
                ends,
                end_fracs,
                w,
                tfirst,
                tto,
                tweight,
                *self._numbering,
                *self._graph_arrays,
                *workspace.arrays(),
            )
        return None if cost == INF else (cost, edges, end_frac)


@njit(cache=True)
def _route(
    srcs,
    sd,
    tgts,
    td,
    uf,
    ut,
    uw,
    um,
    df,
    dt,
    dw,
    dm,
    up_from,
    dn_from,
    rank,
    core_rank,
    from_landmark,
    to_landmark,
    slack,
    distf,
    distb,
    parf,
    parb,
    tf,
    tb,
    hk1,
    hv1,
    hpar1,
    hk2,
    hv2,
    hpar2,
    target_bounds,
    source_bounds,
):
    """Query, path unpacking and workspace reset in one dispatch; an empty path when none."""
    best, meet, ntf, ntb = _query(
        uf,
        ut,
        uw,
        df,
        dt,
        dw,
        srcs,
        sd,
        tgts,
        td,
        rank,
        core_rank,
        from_landmark,
        to_landmark,
        slack,
        distf,
        distb,
        parf,
        parb,
        tf,
        tb,
        hk1,
        hv1,
        hpar1,
        hk2,
        hv2,
        hpar2,
        target_bounds,
        source_bounds,
    )
    if meet >= 0:
        path = _path(meet, parf, parb, uf, ut, uw, um, df, dt, dw, dm, up_from, dn_from)
    else:
        path = np.empty(0, np.int64)
    _reset(distf, parf, tf, ntf)
    _reset(distb, parb, tb, ntb)
    return best, path


@njit(cache=True)
def renumbered(ids, numbering):
    """``ids`` through ``numbering`` (``ch_node`` or ``ch_edge``; empty: the graph's CH nodes are
    its edges and hubs)."""
    if numbering.shape[0] == 0:
        return ids
    out = np.empty(ids.shape[0], np.int64)
    for i in range(ids.shape[0]):
        out[i] = numbering[ids[i]]
    return out


@njit(cache=True)
def start_turns(starts, start_fracs, w, tfirst, tto, tweight):
    """The turns out of the start edges: each edge entered, at its lowest cost (the rest of the
    start edge, the turn, the edge entered), and the start edge it is entered from."""
    m = 0
    for e in starts:
        m += tfirst[e + 1] - tfirst[e]
    to = np.empty(m, np.int64)
    cost = np.empty(m, np.float64)
    origin = np.empty(m, np.int64)
    k = 0
    for i in range(starts.shape[0]):
        e = starts[i]
        base = (1.0 - start_fracs[i]) * w[e]
        for t in range(tfirst[e], tfirst[e + 1]):
            f = tto[t]
            c = base + tweight[t] + w[f]
            j = 0
            while j < k and to[j] != f:
                j += 1
            if j == k:
                to[k] = f
                cost[k] = c
                origin[k] = e
                k += 1
            elif c < cost[j]:
                cost[j] = c
                origin[j] = e
    return to[:k], cost[:k], origin[:k]


@njit(cache=True)
def _edge_leg(
    starts,
    start_fracs,
    ends,
    end_fracs,
    w,
    tfirst,
    tto,
    tweight,
    ch_node,
    ch_edge,
    uf,
    ut,
    uw,
    um,
    df,
    dt,
    dw,
    dm,
    up_from,
    dn_from,
    rank,
    core_rank,
    from_landmark,
    to_landmark,
    slack,
    distf,
    distb,
    parf,
    parb,
    tf,
    tb,
    hk1,
    hv1,
    hpar1,
    hk2,
    hv2,
    hpar2,
    target_bounds,
    source_bounds,
):
    srcs, sd, origin = start_turns(starts, start_fracs, w, tfirst, tto, tweight)
    none = np.empty(0, np.int64)
    if srcs.shape[0] == 0:
        return INF, none, 0.0
    rem = np.empty(ends.shape[0], np.float64)
    for i in range(ends.shape[0]):
        rem[i] = (1.0 - end_fracs[i]) * w[ends[i]]
    k_max = rem.max()
    best, path = _route(
        renumbered(srcs, ch_node),
        sd,
        renumbered(ends, ch_node),
        k_max - rem,
        uf,
        ut,
        uw,
        um,
        df,
        dt,
        dw,
        dm,
        up_from,
        dn_from,
        rank,
        core_rank,
        from_landmark,
        to_landmark,
        slack,
        distf,
        distb,
        parf,
        parb,
        tf,
        tb,
        hk1,
        hv1,
        hpar1,
        hk2,
        hv2,
        hpar2,
        target_bounds,
        source_bounds,
    )
    if path.shape[0] == 0 or best - k_max >= INF:
        return INF, none, 0.0
    path = renumbered(path, ch_edge)
    path = path[path < w.shape[0]]  # the road edges: a junction hub is no step of the route
    j = 0
    while srcs[j] != path[0]:
        j += 1
    last = path[path.shape[0] - 1]
    end_frac = 0.0
    most = -1.0
    for i in range(ends.shape[0]):  # the entry the search started from: the most left to pay
        if ends[i] == last and rem[i] > most:
            most = rem[i]
            end_frac = end_fracs[i]
    edges = np.empty(path.shape[0] + 1, np.int64)
    edges[0] = origin[j]
    edges[1:] = path
    return best - k_max, edges, end_frac


@njit(cache=True)
def _reset(dist, par, touched, nt):
    for i in range(nt):
        dist[touched[i]] = INF
        par[touched[i]] = -1
