"""Isochrones: the search against an oracle, polygon properties on synthetic networks, and the
service on the Monaco sample."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from bench.synthetic import generate
from engine.errors import InvalidParameter
from engine.isochrone.compute import IsoOptions, TurnGraph, _search, contours, plain_turns, reach
from engine.matching.network import from_ways


@pytest.fixture(scope="module")
def city_net():
    city = generate(4_000, seed=5)
    return from_ways(city.lat, city.lng, city.ways)


def _all_turns(net) -> TurnGraph:
    heads = net.head.astype(np.int64)
    counts = net.first_out[heads + 1] - net.first_out[heads]
    to = np.concatenate([np.arange(net.first_out[h], net.first_out[h + 1]) for h in heads])
    first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return TurnGraph(first, to.astype(np.int32), np.zeros(to.size))


def _node_dist(net, src, cost):
    mat = csr_matrix((cost, (net.tail, net.head)), shape=(net.node_count, net.node_count))
    return dijkstra(mat, indices=src)


def test_search_matches_node_dijkstra(city_net):
    net = city_net
    rng = np.random.default_rng(0)
    turns = _all_turns(net)
    for u in rng.integers(0, net.node_count, 5):
        limit = 400.0
        out = np.arange(net.first_out[u], net.first_out[u + 1])
        entry = _search(
            turns.turn_first_out,
            turns.turn_to,
            turns.turn_cost,
            False,
            net.duration,
            out.astype(np.int64),
            np.zeros(out.size),
            limit,
        )
        ref = _node_dist(net, int(u), net.duration)[net.tail]
        expect = np.where(ref < limit, ref, np.inf)
        assert np.allclose(entry, expect), u


def _origin(net, x, y):
    c = net.grid.candidates(x, y, 300.0, 1)
    e = int(c.edge[0])
    twins = [
        f
        for f in range(net.first_out[net.head[e]], net.first_out[net.head[e] + 1])
        if f != e and net.head[f] == net.tail[e]
    ]
    return e, float(c.offset[0]), (twins[0] if twins else -1)


def test_contours_follow_the_roads(city_net):
    net = city_net
    e, off, twin = _origin(net, net.node_x.mean(), net.node_y.mean())
    budgets = [120.0, 240.0]
    entry = reach(net, plain_turns(net), net.duration, True, e, off, twin, max(budgets))
    small, large = contours(net, entry, net.duration, budgets)
    assert small.is_valid and large.is_valid and 0 < small.area < large.area
    assert small.difference(large).area < 0.01 * small.area  # nested
    # node-level reachability (no turn costs in plain_turns): nodes well inside the budget are
    # inside, nodes well beyond it and far from every reached node are outside
    dist = np.minimum(
        _node_dist(net, int(net.head[e]), net.duration) + (1 - off / net.length[e]) * net.duration[e],
        _node_dist(net, int(net.tail[e]), net.duration) + off / net.length[e] * net.duration[e]
        if twin >= 0
        else np.inf,
    )
    pts = shapely.points(net.node_x, net.node_y)
    for budget, poly in zip(budgets, (small, large), strict=False):
        inside = dist <= 0.9 * budget
        assert shapely.contains(poly, pts[inside]).all()
        reached = np.column_stack([net.node_x[dist <= budget], net.node_y[dist <= budget]])
        far = dist >= 1.2 * budget
        tree = shapely.STRtree(shapely.points(reached))
        idx, d = tree.query_nearest(pts[far], return_distance=True)
        really_far = np.zeros(far.sum(), bool)
        really_far[idx[0]] = d > 200.0
        assert not shapely.intersects(poly, pts[far][really_far]).any()
    # not a circle: the area is far below the disc of the largest straight reach
    assert large.area < 0.8 * np.pi * (max(budgets) * 50 / 3.6) ** 2


def test_holes_where_nothing_is_reachable():
    """A 1 km square ring road with nothing inside: the contour that covers the ring keeps the
    inside as a hole."""
    lat0, lng0, d = 10.0, -30.0, 0.009  # ~1 km
    corners = {1: (lat0, lng0), 2: (lat0, lng0 + d), 3: (lat0 + d, lng0 + d), 4: (lat0 + d, lng0)}
    lat = {k: v[0] for k, v in corners.items()}
    lng = {k: v[1] for k, v in corners.items()}
    ways = [(1, [1, 2, 3, 4, 1], {"highway": "residential", "name": "Ring"})]
    net = from_ways(lat, lng, ways)
    e, off, twin = _origin(net, *map(float, net.proj.to_xy(lat0, lng0 + d / 2)))
    entry = reach(net, plain_turns(net), net.length, False, e, off, twin, 5000.0)
    (poly,) = contours(net, entry, net.length, [5000.0], IsoOptions(buffer_m=50.0))
    assert poly.geom_type == "Polygon" and len(poly.interiors) == 1
    hole = shapely.Polygon(poly.interiors[0])
    assert 0.7e6 < hole.area < 1.0e6  # the inside of the ring, minus the road buffers
    assert 0.35e6 < poly.area < 0.5e6  # a ~1 km x 100 m band along each side


# ------------------------------------------------------------------ service on the samples


def _has_roads():
    from engine.ingest.pipeline import STAGES

    return any(s.name == "roads" for s in STAGES)


needs_roads = pytest.mark.skipif(not _has_roads(), reason="no 'roads' import stage yet")


@needs_roads
def test_service_monaco(datasets):
    from engine.services.isochrone import IsochroneParams, run

    res = run(datasets, IsochroneParams(43.7384, 7.4246, times=(5.0, 10.0, 2.0)))
    assert res["type"] == "FeatureCollection"
    feats = res["features"]
    assert [f["properties"]["contour"] for f in feats] == [10.0, 5.0, 2.0]
    areas = [f["properties"]["area_m2"] for f in feats]
    assert areas[0] >= areas[1] > areas[2] > 10_000
    for f in feats:
        geom = shapely.geometry.shape(f["geometry"])
        assert geom.is_valid and geom.geom_type in ("Polygon", "MultiPolygon")
        lng, lat = geom.representative_point().coords[0]
        assert 43.6 < lat < 43.8 and 7.3 < lng < 7.5
        assert f["properties"]["metric"] == "time"
    res = run(datasets, IsochroneParams(43.7384, 7.4246, distances=(500.0, 1500.0)))
    a, b = (f["properties"]["area_m2"] for f in res["features"])
    assert a > b > 0


@needs_roads
@pytest.mark.parametrize(
    "kwargs,parameter",
    [
        ({}, "time"),
        ({"times": (5.0,), "distances": (100.0,)}, "time"),
        ({"times": (1.0, 2.0, 3.0, 4.0, 5.0)}, "time"),
        ({"times": (61.0,)}, "time"),
        ({"times": (0.0,)}, "time"),
        ({"distances": (60_000.0,)}, "distance"),
        ({"times": (5.0,), "profile": "hovercraft"}, "profile"),
    ],
)
def test_service_validation(datasets, kwargs, parameter):
    from engine.services.isochrone import IsochroneParams, run

    with pytest.raises(InvalidParameter) as err:
        run(datasets, IsochroneParams(43.7384, 7.4246, **kwargs))
    assert err.value.parameter == parameter


@needs_roads
def test_service_outside_coverage(datasets):
    from engine.services.isochrone import IsochroneParams, run

    with pytest.raises(InvalidParameter) as err:
        run(datasets, IsochroneParams(0.0, 0.0, times=(5.0,)))
    assert err.value.parameter == "lat"


# ------------------------------------------------------------------ service on drawn maps


@needs_roads
@pytest.mark.parametrize("oneway", [False, True])
def test_service_one_way_street(tmp_path, oneway):
    """From the middle of a street, a 250 m distance contour reaches 250 m both ways on a two-way
    street and only downstream (east) on a one-way one."""
    from engine import layout
    from engine.dataset import DatasetRegistry
    from engine.ingest.pipeline import Stage, import_pbf
    from engine.services.isochrone import IsochroneParams, run
    from tests.engine.osm_grid import OsmGrid

    g = OsmGrid("A" + "-" * 15 + "B" + "-" * 15 + "C", grid_m=20)
    tags = {"oneway": "yes"} if oneway else {}
    g.way("ABC", highway="residential", name="Main Street", **tags)
    pbf = g.write(tmp_path / "grid.osm.pbf")
    import_pbf(pbf, tmp_path / "data", "grid", stages=(Stage("roads", "engine.ingest.roads:run", (layout.GRAPH_DIR,)),))
    ds = DatasetRegistry(tmp_path / "data")
    res = run(ds, IsochroneParams(*g.coord("B"), distances=(250.0,)))
    poly = shapely.geometry.shape(res["features"][0]["geometry"])
    east = g.offset("B", east_m=230.0)
    west = g.offset("B", east_m=-230.0)
    assert poly.contains(shapely.Point(east[1], east[0]))
    assert poly.contains(shapely.Point(west[1], west[0])) != oneway
    far = g.offset("B", east_m=400.0)
    assert not poly.contains(shapely.Point(far[1], far[0]))
