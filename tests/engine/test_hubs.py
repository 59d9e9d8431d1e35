"""Junction hubs (engine.routing.hubs): the approaches of a walker's junction that turn alike share
one CH node, and every answer stays the plain turn graph's (Dijkstra), the matrix's included."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.errors import DatasetError
from engine.routing import ch
from engine.routing import profile as P
from engine.routing.build import build_graph
from engine.routing.graph import RoadGraph
from engine.routing.hubs import hub_of_edge, hubbed_turn_graph
from engine.routing.matrix import MatrixQuery
from engine.routing.profiles import BICYCLE, CAR, FOOT
from engine.routing.router import Router
from tests.engine.osm_grid import OsmGrid
from tests.engine.test_ch import check_whole_network, random_network, random_snaps, routed_cells, router_over


def walkers_network(seed: int):
    """The random road network of the CH tests (signals, bollards, restrictions for vehicles), with
    what changes a walker's or a cyclist's junctions: foot restrictions (kept as explicit turns),
    walls (blocking) and footways (a cyclist pushes: ridden and pushed approaches differ)."""
    g = random_network(seed)
    rng = np.random.default_rng(seed + 100)
    for _ in range(25):
        i, j = (int(x) for x in rng.integers(0, 11, 2))
        g.way([f"n{i}_{j + 1}", f"n{i + 1}_{j}"], highway="footway")
    junctions = sorted({name for way in g.ways for name in (way[1][0], way[1][-1])})
    for via in map(str, rng.choice(junctions, 6, replace=False)):
        ways = [wid for wid, refs, _ in g.ways if via in (refs[0], refs[-1])]
        if len(ways) >= 2:
            frm, to = rng.choice(ways, 2, replace=False)
            members: list[tuple[str, int | str, str]] = [
                ("w", int(frm), "from"),
                ("n", via, "via"),
                ("w", int(to), "to"),
            ]
            g.relation(members, type="restriction", **{"restriction:foot": "no_right_turn"})
    for name in rng.choice(junctions, 2, replace=False):
        g.node(str(name), barrier="wall")
    return g


@pytest.fixture(scope="module", params=[(21, FOOT), (22, FOOT), (23, FOOT), (24, BICYCLE), (25, BICYCLE)])
def walk_graph(request, tmp_path_factory):
    """A walker's or a cyclist's graph of :func:`walkers_network` (no CH yet)."""
    seed, profile = request.param
    g = walkers_network(seed)
    path = g.write(tmp_path_factory.mktemp("hubs") / f"walk{seed}.osm.pbf")
    graph, _ = build_graph(path, profile=profile, with_ch=False)
    return seed, graph


def expected_hubs(g) -> set[frozenset[int]]:
    """The rule, node by node from the turn table: the arriving edges that may take every leaving
    edge (in order) grouped by their (weight, duration) per turn; the groups whose k approaches
    and d ways out make fewer arcs through a hub (k + d) than turns (k x d)."""
    first = np.asarray(g.turn_first_out)
    rows: dict[tuple, list[int]] = {}
    for e in range(g.n_edges):
        v = int(g.edge_head[e])
        leaving = list(range(int(g.node_first_out[v]), int(g.node_first_out[v + 1])))
        turns = range(int(first[e]), int(first[e + 1]))
        if len(leaving) < 2 or [int(g.turn_to[t]) for t in turns] != leaving:
            continue
        row = tuple((float(g.turn_weight[t]), float(g.turn_cost_s[t])) for t in turns)
        rows.setdefault((v, row), []).append(e)
    return {frozenset(edges) for (_, row), edges in rows.items() if len(edges) * len(row) > len(edges) + len(row)}


def test_hubs_are_the_approaches_that_turn_alike(walk_graph):
    """Checked against the rule written plainly, not with the kernel's hashing."""
    _, g = walk_graph
    hub = hub_of_edge(g)
    found = {frozenset(np.flatnonzero(hub == h).tolist()) for h in range(int(hub.max()) + 1)}
    assert found == expected_hubs(g)
    assert len(found) > 0.3 * g.n_nodes  # most junctions of a walker's network


def test_restricted_and_walled_junctions_keep_their_turns(walk_graph):
    _, g = walk_graph
    hub = hub_of_edge(g)
    assert g.meta["restrictions"]["applied_turns_removed"] > 0
    short = [e for e in range(g.n_edges) if len(g.turns(e)[0]) < g.out_edges(g.edge_head[e]).size]
    assert short and (hub[short] < 0).all()


def test_the_car_has_no_hubs(tmp_path):
    """Car turns cost by angle and never turn back mid-street: no junction qualifies."""
    graph, _ = build_graph(random_network(21).write(tmp_path / "car.osm.pbf"), profile=CAR, with_ch=False)
    assert (hub_of_edge(graph) < 0).all()
    arcs = hubbed_turn_graph(graph)
    assert arcs.n == graph.n_edges and np.array_equal(arcs.first, np.asarray(graph.turn_first_out))


def test_ch_with_hubs_equals_dijkstra_and_paths_hold_only_edges(walk_graph):
    """Exact against the turn graph's Dijkstra; consecutive route edges are real turns (a hub id
    left in a path would fail that); the hubs make fewer shortcuts than the plain turn graph."""
    seed, g = walk_graph
    with_hubs = ch.build(g)
    without = ch.build(g, hubs=False)
    assert with_hubs["ch_hub_edge"].size > 0 and without["ch_hub_edge"].size == 0
    shortcuts = [int((a["ch_up_mid"] >= 0).sum() + (a["ch_dn_mid"] >= 0).sum()) for a in (with_hubs, without)]
    assert shortcuts[0] < shortcuts[1], shortcuts
    with_hubs.pop("ch_core")
    found, compared = check_whole_network(router_over(g, with_hubs), seed=seed, pairs=150)
    assert found > 0.5 * compared


def test_a_hubbed_graph_gets_the_hubbed_core_bound_and_a_car_graph_the_car_bound(walk_graph, tmp_path, monkeypatch):
    """``ch.build``'s default core bound follows the graph: a graph with junction hubs stops at
    ``HUBBED_CORE_SHORTCUTS``, a car's at ``CORE_SHORTCUTS`` (each lowered here so that the bound
    it reads shows as a core)."""
    _, walk = walk_graph
    car, _ = build_graph(random_network(21).write(tmp_path / "car.osm.pbf"), profile=CAR, with_ch=False)
    monkeypatch.setattr(ch, "HUBBED_CORE_SHORTCUTS", 2)
    assert int(ch.build(walk)["ch_core"][0]) > 0
    assert int(ch.build(car)["ch_core"][0]) == 0
    monkeypatch.setattr(ch, "HUBBED_CORE_SHORTCUTS", 1 << 30)
    monkeypatch.setattr(ch, "CORE_SHORTCUTS", 2)
    assert int(ch.build(walk)["ch_core"][0]) == 0
    assert int(ch.build(car)["ch_core"][0]) > 0


def test_matrix_cells_equal_legs_with_hubs(walk_graph):
    """The matrix's arc costs know the hubs: every cell's weight, duration and length are the
    router's leg for the pair."""
    seed, g = walk_graph
    arrays = ch.build(g)
    arrays.pop("ch_core")
    router = router_over(g, arrays)
    assert isinstance(router, Router)
    snaps = random_snaps(router, 12, seed)
    w, dur, length = MatrixQuery(router).costs(snaps, snaps)
    routed = 0
    for i, j, leg in routed_cells(w, snaps, router.leg):
        routed += 1
        distance, duration = router.leg_summary(leg)
        assert dur[i, j] == pytest.approx(duration, rel=1e-6, abs=1e-3)
        assert length[i, j] == pytest.approx(distance, rel=1e-6, abs=1e-3)
    assert routed > 0.5 * len(snaps) ** 2


CROSS = """
         N
         |
    W----X----E
         |
         S
"""


def test_ridden_and_pushed_approaches_make_two_hubs(tmp_path):
    """Turning from a ridden way onto a pushed one weighs more: the ridden approaches (W, E) and
    the pushed ones (the footway from S and N) turn differently, so X has two hubs."""
    g = OsmGrid(CROSS, grid_m=20.0)
    g.way("SXN", highway="footway")
    g.way("WXE", highway="residential")
    graph, _ = build_graph(g.write(tmp_path / "cross.osm.pbf"), profile=BICYCLE, with_ch=False)
    hub = hub_of_edge(graph)
    pushed = np.isin(np.asarray(graph.edge_class), [P.HIGHWAY_CLASSES.index("footway")])
    assert int(hub.max()) + 1 == 2
    assert len(set(hub[pushed & (hub >= 0)])) == 1 and len(set(hub[~pushed & (hub >= 0)])) == 1
    assert set(hub[pushed & (hub >= 0)]).isdisjoint(hub[~pushed & (hub >= 0)])


def test_a_graph_of_format_1_still_opens_and_format_4_is_refused(tmp_path, walk_graph):
    """A graph written before hubs (format 1: no ``ch_hub_edge``, every CH node an edge) opens and
    routes as the turn graph's Dijkstra does; a format this release does not know is refused."""
    seed, _ = walk_graph
    g, _ = build_graph(walkers_network(seed).write(tmp_path / "old.osm.pbf"), profile=FOOT, with_ch=False)
    arrays = ch.build(g, hubs=False, storage_ordered=False)
    arrays.pop("ch_core")
    arrays.pop("ch_hub_edge")
    for k, v in arrays.items():
        setattr(g, k, v)
    g.has_ch = True
    saved = tmp_path / "graph"
    g.save(saved)
    meta = json.loads((saved / "meta.json").read_text())
    (saved / "meta.json").write_text(json.dumps({**meta, "graph_format": 1}))
    old = RoadGraph.open(saved)
    assert not hasattr(old, "ch_hub_edge") and old.has_ch
    found, compared = check_whole_network(Router(old), seed=seed, pairs=60)
    assert found > 0.5 * compared
    (saved / "meta.json").write_text(json.dumps({**meta, "graph_format": 4}))
    with pytest.raises(DatasetError, match="re-import"):
        RoadGraph.open(saved)
