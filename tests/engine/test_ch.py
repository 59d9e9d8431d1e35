"""Oracle: contraction-hierarchy answers equal plain Dijkstra's over the turn graph, on random
road networks (one-ways, classes, turn restrictions, barriers) and on the sample regions."""

from __future__ import annotations

import gc
import tempfile
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from engine.routing import build, ch, ch_order
from engine.routing.build import build_graph
from engine.routing.graph import ARRAYS, CH_ARRAYS
from engine.routing.hubs import hubbed_turn_graph
from engine.routing.matrix import MatrixQuery
from engine.routing.router import Router
from tests.engine.osm_grid import OsmGrid

CLASSES = ["primary", "secondary", "tertiary", "residential", "residential", "service", "motorway"]
RESTRICTIONS = [
    "no_left_turn",
    "no_right_turn",
    "no_straight_on",
    "no_u_turn",
    "only_straight_on",
    "only_left_turn",
    "only_right_turn",
]


def random_network(seed: int, n: int = 12) -> OsmGrid:
    rng = np.random.default_rng(seed)
    g = OsmGrid("", grid_m=50)
    lat0, lng0 = 60.17, 24.94
    for i in range(n):
        for j in range(n):
            jitter = rng.normal(0, 0.00008, 2)
            g.add_node(f"n{i}_{j}", lat0 - i * 0.0005 + jitter[0], lng0 + j * 0.0009 + jitter[1])
    ways = []  # (id, a, b)
    for i in range(n):
        for j in range(n):
            for di, dj in ((0, 1), (1, 0), (1, 1)):
                if i + di >= n or j + dj >= n:
                    continue
                if (di, dj) == (1, 1) and rng.random() > 0.15:
                    continue
                if rng.random() < 0.12:
                    continue
                tags = {"highway": str(rng.choice(CLASSES))}
                r = rng.random()
                if r < 0.25:
                    tags["oneway"] = "yes"
                elif r < 0.32:
                    tags["oneway"] = "-1"
                if rng.random() < 0.3:
                    tags["maxspeed"] = str(int(rng.choice([30, 40, 50, 60, 80])))
                a, b = f"n{i}_{j}", f"n{i + di}_{j + dj}"
                if rng.random() < 0.3:  # a bent way with a middle geometry node
                    mid = f"m{i}_{j}_{di}{dj}"
                    la, ga = g.coord(a)
                    lb, gb = g.coord(b)
                    g.add_node(mid, (la + lb) / 2 + rng.normal(0, 0.00005), (ga + gb) / 2)
                    wid = g.way([a, mid, b], **tags)
                else:
                    wid = g.way([a, b], **tags)
                ways.append((wid, a, b))
    by_node: dict[str, list[int]] = {}
    for wid, a, b in ways:
        by_node.setdefault(a, []).append(wid)
        by_node.setdefault(b, []).append(wid)
    nodes = [k for k, v in by_node.items() if len(v) >= 2]
    for _ in range(n * 3):
        via = nodes[int(rng.integers(len(nodes)))]
        frm, to = rng.choice(by_node[via], 2, replace=False)
        g.restriction(str(rng.choice(RESTRICTIONS)), from_way=int(frm), via=via, to_way=int(to))
    for _ in range(3):
        g.node(nodes[int(rng.integers(len(nodes)))], barrier="bollard")
    for _ in range(5):
        g.node(nodes[int(rng.integers(len(nodes)))], highway="traffic_signals")
    return g


def graph_bbox(router: Router) -> tuple[float, float, float, float]:
    lat, lng = np.asarray(router.g.node_lat), np.asarray(router.g.node_lng)
    return lat.min(), lng.min(), lat.max(), lng.max()


def check_router(router: Router, rng, pairs: int, bbox) -> tuple[int, int]:
    lat0, lng0, lat1, lng1 = bbox
    found = compared = 0
    for _ in range(pairs):
        o = router.snap(rng.uniform(lat0, lat1), rng.uniform(lng0, lng1))
        d = router.snap(rng.uniform(lat0, lat1), rng.uniform(lng0, lng1))
        assert o is not None and d is not None  # no distance limit: every point snaps
        fast = router.leg(o, d)
        slow = router.leg_dijkstra(o, d)
        compared += 1
        assert (fast is None) == (slow is None)
        if fast is None:
            continue
        found += 1
        assert slow is not None
        assert fast.weight == pytest.approx(slow.weight, rel=1e-9, abs=1e-6)
        # the CH path is a real path of the turn graph with that weight
        assert router._weight_of(fast) == pytest.approx(fast.weight, rel=1e-9, abs=1e-6)
        for e, f in zip(fast.edges[:-1], fast.edges[1:], strict=True):
            assert f in router.tto[router.tfirst[e] : router.tfirst[e + 1]]
    return found, compared


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_ch_equals_dijkstra_on_random_networks(tmp_path, seed):
    g = random_network(seed)
    graph, counts = build_graph(g.write(tmp_path / f"r{seed}.osm.pbf"))
    assert counts["turn_restrictions"] > 0
    assert graph.meta["restrictions"]["applied_turns_removed"] > 0
    router = Router(graph)
    found, compared = check_router(router, np.random.default_rng(seed), 150, graph_bbox(router))
    assert found > 0.5 * compared


def test_ch_query_pure_turn_graph():
    """The CH over an arbitrary random digraph (no geometry) against Dijkstra, many targets."""
    from engine.routing.search import dijkstra

    rng = np.random.default_rng(7)
    n = 400
    src = rng.integers(0, n, n * 3)
    dst = rng.integers(0, n, n * 3)
    w = rng.uniform(1, 100, n * 3)
    order = np.argsort(src, kind="stable")
    src, dst, w = src[order], dst[order], w[order]
    first = np.zeros(n + 1, np.int64)
    np.add.at(first, src + 1, 1)
    first = np.cumsum(first)

    class G:
        n_edges = n
        turn_first_out = first
        turn_to = dst.astype(np.int32)
        turn_cost_s = w.astype(np.float32)
        turn_weight = turn_cost_s
        edge_weight = np.zeros(n, np.float32)

    arrays = ch.build(G, hubs=False)  # a turn graph without a road graph: no junctions to hub
    for k, v in arrays.items():
        setattr(G, k, v)
    q = ch.CHQuery(G)
    zero = np.zeros(n)
    for s in rng.integers(0, n, 40):
        dist, _ = dijkstra(
            first,
            dst.astype(np.int64),
            np.asarray(G.turn_cost_s, np.float64),
            zero,
            np.array([s], np.int64),
            np.array([0.0]),
            np.inf,
            -1,
        )
        for t in rng.integers(0, n, 20):
            cost, path = q.route(np.array([s], np.int64), np.array([0.0]), np.array([t], np.int64), np.array([0.0]))
            if dist[t] == np.inf:
                assert path is None or cost == np.inf
            else:
                assert cost == pytest.approx(dist[t], rel=1e-5)
                assert path[0] == s and path[-1] == t


@pytest.mark.slow
@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_ch_equals_dijkstra_on_samples(datasets, region):
    router = datasets.get(region).router
    lat = np.asarray(router.g.node_lat)
    lng = np.asarray(router.g.node_lng)
    bbox = (np.percentile(lat, 2), np.percentile(lng, 2), np.percentile(lat, 98), np.percentile(lng, 98))
    found, compared = check_router(router, np.random.default_rng(11), 200, bbox)
    assert found >= 0.9 * compared


def random_snaps(router: Router, n: int, seed: int) -> list:
    """``n`` points drawn in the bounding box of the router's graph, snapped (no distance limit)."""
    rng = np.random.default_rng(seed)
    lat, lng = np.asarray(router.g.node_lat), np.asarray(router.g.node_lng)
    snaps = [router.snap(rng.uniform(lat.min(), lat.max()), rng.uniform(lng.min(), lng.max())) for _ in range(n)]
    assert all(s is not None for s in snaps)
    return snaps


def routed_cells(weights, snaps: list, leg_of) -> Iterator[tuple[int, int, Any]]:
    """The matrix ``weights`` cell by cell against ``leg_of(origin, destination)``: a pair without
    a leg must be INF, a routed pair the leg's weight; yields each routed pair's (i, j, leg)."""
    for i, o in enumerate(snaps):
        for j, d in enumerate(snaps):
            leg = leg_of(o, d)
            if leg is None:
                assert weights[i, j] == np.inf
                continue
            assert weights[i, j] == pytest.approx(leg.weight, rel=1e-9, abs=1e-6)
            yield i, j, leg


def router_over(graph, arrays: dict, core: int = 0) -> Router:
    """A router over ``graph`` with the CH ``arrays`` just built (instead of the stored ones);
    ``core``: the size of their uncontracted core, which the import writes into the graph's meta."""
    for k, v in arrays.items():
        setattr(graph, k, v)
    graph.meta.setdefault("counts", {})["ch_core"] = core
    graph.has_ch = True
    return Router(graph)


def check_whole_network(router: Router, seed: int, pairs: int = 120) -> tuple[int, int]:
    lat = np.asarray(router.g.node_lat)
    lng = np.asarray(router.g.node_lng)
    return check_router(router, np.random.default_rng(seed), pairs, (lat.min(), lng.min(), lat.max(), lng.max()))


@pytest.mark.parametrize(
    ("lazy_below", "top_fraction", "by_position"),
    [(0.0, ch_order.TOP_FRACTION, False), (1.0, 0.9, True), (0.0, 0.9, True)],  # the core: 70 % of the graph
)
def test_ch_with_dense_core_equals_dijkstra(tmp_path, monkeypatch, lazy_below, top_fraction, by_position):
    """Stopping the contraction early (a core searched as a plain graph) stays exact, with lazy
    updates too (with them, a round finds the core only after refreshing every node), whether the
    query tells the core's nodes by their rank (a core larger than the top stored in rank order)
    or by their stored position (a core within it, as at a country's size)."""
    monkeypatch.setattr(ch_order, "TOP_FRACTION", top_fraction)
    g = random_network(9)
    graph, _ = build_graph(g.write(tmp_path / "core.osm.pbf"), with_ch=False)
    arrays = ch.build(graph, core_shortcuts=2, lazy_below=lazy_below)
    core = int(arrays.pop("ch_core")[0])
    assert core > 50  # the early stop really left a core
    router = router_over(graph, arrays, core)
    assert ch.query_ranks(graph).shape[0] == (0 if by_position else ch.node_count(graph))
    found, compared = check_whole_network(router, seed=9)
    assert found > 0.5 * compared


def test_a_remainder_this_dense_is_left_as_the_core_and_routes_stay_exact(tmp_path):
    """``core_degree``: the contraction stops once the nodes left have that many arcs each on
    average (here one and a half times the turn graph's own mean, with no bound on shortcuts).
    The core left has at least that mean degree, the routes through it are exact, and without
    the bound the same graph contracts fully."""
    g = random_network(11)
    graph, _ = build_graph(g.write(tmp_path / "dense.osm.pbf"), with_ch=False)
    turns = hubbed_turn_graph(graph)
    bound = 1.5 * 2 * turns.to.shape[0] / turns.n
    assert int(ch.build(graph, core_shortcuts=1 << 30, core_degree=np.inf)["ch_core"][0]) == 0
    arrays = ch.build(graph, core_shortcuts=1 << 30, core_degree=bound)
    core = int(arrays.pop("ch_core")[0])
    n = arrays["ch_rank"].shape[0]
    assert 0 < core < n
    in_core = arrays["ch_rank"] >= n - core  # by stored position, as the arcs are
    tails = np.repeat(np.arange(n), np.diff(arrays["ch_up_first"]))
    core_arcs = int((in_core[tails] & in_core[arrays["ch_up_to"]]).sum())
    assert 2 * core_arcs / core >= bound
    router = router_over(graph, arrays, core)
    found, compared = check_whole_network(router, seed=11)
    assert found > 0.5 * compared


def test_matrix_over_a_dense_core_equals_the_router(tmp_path):
    """The many-to-many searches cross an uncontracted core as the router does: every cell is
    the weight of the router's leg, and a plain Dijkstra's, for the same pair."""
    g = random_network(13)
    graph, _ = build_graph(g.write(tmp_path / "core-matrix.osm.pbf"), with_ch=False)
    arrays = ch.build(graph, core_shortcuts=2)
    core = int(arrays.pop("ch_core")[0])
    assert core > 50
    router = router_over(graph, arrays, core)
    snaps = random_snaps(router, 14, seed=13)
    weights, _, _ = MatrixQuery(router).costs(snaps, snaps)
    routed = list(routed_cells(weights, snaps, router.leg_dijkstra))
    assert len(routed) > 0.5 * len(snaps) ** 2


@pytest.mark.parametrize("core_shortcuts", [2, None])
def test_a_contraction_that_spills_its_arcs_to_disk_builds_the_same_hierarchy(tmp_path, monkeypatch, core_shortcuts):
    """Handing the finished arcs over in small chunks on disk, the rounds stopped and resumed at
    each (with a core and without), gives the very arrays of a contraction that keeps them in
    memory; the chunks go to TMPDIR and leave nothing behind."""
    g = random_network(11)
    graph, _ = build_graph(g.write(tmp_path / "spill.osm.pbf"), with_ch=False)
    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill_dir))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    kept = ch.build(graph, core_shortcuts=core_shortcuts, spill=False)
    spilled = ch.build(graph, core_shortcuts=core_shortcuts, spill=True, flush_arcs=32)
    assert kept.keys() == spilled.keys()
    for name, array in kept.items():
        np.testing.assert_array_equal(spilled[name], array, err_msg=name)
        assert spilled[name].dtype == array.dtype, name
    arcs = kept["ch_up_to"].shape[0] + kept["ch_dn_to"].shape[0]
    assert arcs > 20 * 32  # the rounds stopped for the outputs twenty times or more
    assert (int(kept["ch_core"][0]) > 0) is (core_shortcuts == 2)
    assert list(spill_dir.iterdir()) == []


def test_a_graph_parked_on_disk_while_it_is_contracted_is_the_same_graph(tmp_path, monkeypatch):
    """Above PARK_MIN_TURNS turns, the graph's columns wait on disk as read-only maps while the
    contraction runs: every array (the columns read back, the hierarchy built over the maps) equals
    the graph built in memory, and the parked files are gone once the graph is built."""
    path = random_network(12).write(tmp_path / "park.osm.pbf")
    in_memory, _ = build_graph(path)
    park_dir = tmp_path / "tmp"
    park_dir.mkdir()
    monkeypatch.setenv("TMPDIR", str(park_dir))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.setattr(build, "PARK_MIN_TURNS", 0)
    parked, _ = build_graph(path)
    assert isinstance(parked.geom_lat, np.memmap)  # the geometry was never read back into memory
    for name in ARRAYS + CH_ARRAYS:
        np.testing.assert_array_equal(getattr(parked, name), getattr(in_memory, name), err_msg=name)
    assert list(park_dir.iterdir()) == []


def test_parking_frees_the_columns_in_memory_while_the_graph_is_contracted(tmp_path, monkeypatch):
    """Once parked, a column's array in memory has no other holder (the columns' dict, the turn
    table and its wider originals): it is freed before the contraction starts, so the contraction
    runs beside the graph's maps, not beside a second copy of the graph."""
    path = random_network(13).write(tmp_path / "free.osm.pbf")
    monkeypatch.setattr(build, "PARK_MIN_TURNS", 0)
    looked_at = ("turn_to", "turn_first_out", "edge_tail", "geom_lat")
    held_after_parking: dict[str, bool] = {}
    park = build.park_columns

    def park_and_look(graph, directory):
        in_memory = {name: weakref.ref(getattr(graph, name)) for name in looked_at}
        park(graph, directory)
        gc.collect()
        held_after_parking.update({name: ref() is not None for name, ref in in_memory.items()})

    monkeypatch.setattr(build, "park_columns", park_and_look)
    build_graph(path)
    assert held_after_parking == dict.fromkeys(looked_at, False)


@pytest.mark.parametrize(
    ("front", "lazy_below"), [(1.0, 0.0), (0.05, 0.0), (0.002, 0.0), (1.0, 1.0), (0.05, 1.0), (0.002, 0.5)]
)
def test_ch_full_contraction_equals_dijkstra_and_arcs_point_upward(tmp_path, front, lazy_below):
    """No core at all (every node contracted, however many shortcuts it needs): still exact, and
    the stored graphs are a hierarchy: both store an arc at its lower-ranked end (upward arcs
    x -> higher, downward arcs higher -> x kept at x). Whatever share of the dirty nodes a round
    refreshes (``front``: 1.0 = all of them; 0.002 = only those at the lowest priority), and
    whether it refreshes only those that could be chosen (``lazy_below``: from the start, or
    once half the nodes are contracted)."""
    g = random_network(5)
    graph, _ = build_graph(g.write(tmp_path / "full.osm.pbf"), with_ch=False)
    assert graph.n_edges > 256  # the front applies while 256 nodes or more remain
    arrays = ch.build(graph, core_shortcuts=1 << 30, sim_limit=1, settle_limit=5, front=front, lazy_below=lazy_below)
    assert int(arrays.pop("ch_core")[0]) == 0
    rank = arrays["ch_rank"].astype(np.int64)
    assert np.array_equal(np.sort(rank), np.arange(graph.n_edges))
    for side in ("up", "dn"):
        owner = np.repeat(np.arange(graph.n_edges), np.diff(arrays[f"ch_{side}_first"]))
        assert (rank[arrays[f"ch_{side}_to"].astype(np.int64)] > rank[owner]).all()
    found, compared = check_whole_network(router_over(graph, arrays), seed=5)
    assert found > 0.5 * compared


def test_graphs_of_different_sizes_share_one_workspace_and_each_equals_dijkstra(tmp_path, monkeypatch):
    """The routers of a large and a small network, queried in turns, borrow the process's one
    workspace: it grows to the larger graph, and what a query on one leaves behind never changes
    an answer on the other."""
    monkeypatch.setattr(ch, "WORKSPACE", ch.SharedWorkspace())
    small_graph, _ = build_graph(random_network(5, n=6).write(tmp_path / "small.osm.pbf"))
    large_graph, _ = build_graph(random_network(6, n=14).write(tmp_path / "large.osm.pbf"))
    routers = [Router(small_graph), Router(large_graph)]
    rng = np.random.default_rng(5)
    found = 0
    for turn in range(6):  # the small graph first (the workspace grows), then alternately
        router = routers[turn % 2]
        found += check_router(router, rng, 25, graph_bbox(router))[0]
    assert found > 50
    assert ch.WORKSPACE.size == max(ch.node_count(small_graph), ch.node_count(large_graph))
    assert ch.WORKSPACE.size < ch.node_count(small_graph) + ch.node_count(large_graph)
    ch.WORKSPACE.at_least(1, np.int64)  # as a graph of 2**31 arcs would: the kernels at int64 ids
    for router in routers:
        assert check_router(router, rng, 10, graph_bbox(router))[0] > 0


def test_the_shared_workspace_widens_its_ids_for_a_graph_that_needs_it():
    shared = ch.SharedWorkspace()
    ws = shared.at_least(100)
    assert ws.size == 100 and ws.index == np.int32
    assert ws.parf.nbytes == 400
    assert shared.at_least(60) is ws  # a smaller graph borrows it as it is
    ws = shared.at_least(50, np.int64)  # a graph of 2**31 arcs, in miniature
    assert ws.size == 100 and ws.index == np.int64
    ws = shared.at_least(200)  # never narrower again: the wide graph may come back
    assert ws.size == 200 and ws.index == np.int64
    assert np.all(ws.distf == np.inf) and np.all(ws.parf == -1) and np.all(ws.parb == -1)
