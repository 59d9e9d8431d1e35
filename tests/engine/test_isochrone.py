"""Isochrones: the search against an oracle, polygon properties on synthetic networks, and the
service on the Monaco sample."""

from __future__ import annotations

import contourpy
import numpy as np
import pytest
import shapely
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from bench.synthetic import generate
from engine.errors import InvalidParameter
from engine.isochrone.compute import (
    IsoOptions,
    TurnGraph,
    _polygons,
    _rasterize,
    _search,
    contours,
    plain_turns,
    reach,
)
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


def _raster_oracle(entry, reached, cost, limit, net, x0, y0, cell, nx, ny, radius_cells):
    """The raster as the module docstring states it, in plain Python: every reached edge sampled
    every half cell from where it is entered to where the budget runs out, each sample's cost
    stamped on its cell, then every cell takes the cheapest sample within the buffer's disk."""
    seed = np.full((ny, nx), np.inf)
    for e in reached:
        c0, w = float(entry[e]), float(cost[e])
        a, b = int(net.geom_first[e]), int(net.geom_first[e + 1])
        total = float(net.geom_cum[b - 1])
        s_from = min(total, -c0 / w * total) if c0 < 0 and w > 0 else 0.0
        s_to = max(s_from, (limit - c0) / w * total) if w > 0 and c0 + w > limit else total
        for i in range(a, b - 1):
            l0, l1 = float(net.geom_cum[i]), float(net.geom_cum[i + 1])
            if l1 < s_from or l0 > s_to:
                continue
            lo, hi = max(l0, s_from), min(l1, s_to)
            k = int((hi - lo) / (cell / 2)) + 1
            for s in np.linspace(lo, hi, k + 1):
                t = (s - l0) / (l1 - l0) if l1 > l0 else 0.0
                px = net.geom_x[i] + t * (net.geom_x[i + 1] - net.geom_x[i])
                py = net.geom_y[i] + t * (net.geom_y[i + 1] - net.geom_y[i])
                cx, cy = int((px - x0) / cell), int((py - y0) / cell)
                if 0 <= cx < nx and 0 <= cy < ny:
                    seed[cy, cx] = min(seed[cy, cx], max(0.0, c0 + s / total * w if total > 0 else c0))
    out = seed.copy()
    for dy in range(-radius_cells, radius_cells + 1):
        for dx in range(-radius_cells, radius_cells + 1):
            if dx * dx + dy * dy > radius_cells * radius_cells:
                continue
            shifted = np.full_like(seed, np.inf)
            shifted[max(dy, 0) : ny + min(dy, 0), max(dx, 0) : nx + min(dx, 0)] = seed[
                max(-dy, 0) : ny + min(-dy, 0), max(-dx, 0) : nx + min(-dx, 0)
            ]
            out = np.minimum(out, shifted)
    return out


def test_raster_matches_its_definition(city_net):
    """The numba raster (which stamps a vertex shared by two segments once) against the plain
    sampling it stands for."""
    net = city_net
    e, off, twin = _origin(net, net.node_x.mean(), net.node_y.mean())
    limit, cell, radius_cells = 240.0, 50.0, 2
    entry = reach(net, plain_turns(net), net.duration, True, e, off, twin, limit)
    reached = np.flatnonzero(entry < limit)
    x0, y0 = float(net.geom_x.min()) - 200, float(net.geom_y.min()) - 200
    nx = int((net.geom_x.max() + 200 - x0) / cell) + 1
    ny = int((net.geom_y.max() + 200 - y0) / cell) + 1
    dy, dx = np.mgrid[-radius_cells : radius_cells + 1, -radius_cells : radius_cells + 1]
    disk = dx * dx + dy * dy <= radius_cells * radius_cells
    args = (net.geom_first, net.geom_x, net.geom_y, net.geom_cum, x0, y0, cell, nx, ny)
    grid = _rasterize(entry, reached, net.duration, limit, *args, dx[disk].astype(np.int64), dy[disk].astype(np.int64))
    expect = _raster_oracle(entry, reached, net.duration, limit, net, x0, y0, cell, nx, ny, radius_cells)
    assert np.isfinite(expect).sum() > 100
    assert np.array_equal(np.isfinite(grid), np.isfinite(expect))
    assert np.allclose(grid[np.isfinite(grid)], expect[np.isfinite(expect)], rtol=0, atol=1e-9)


def test_polygons_match_ring_by_ring_construction():
    """``_polygons`` builds every polygon of a contour in one shapely call; the same rings made
    one polygon at a time, small holes dropped by their shapely area, are the same geometry."""
    rng = np.random.default_rng(3)
    z = np.full((60, 80), 10.0)
    z[5:55, 5:75] = rng.random((50, 70)) * 4  # islands and holes of every size
    z[20:40, 30:50] = 10.0  # one large hole
    gx0, gy0, cell, min_hole = 1000.0, -500.0, 50.0, 10_000.0
    gen = contourpy.contour_generator(z=z, fill_type=contourpy.FillType.OuterOffset)
    built = 0
    for level in (0.5, 2.0, 3.9):
        points, ring_offsets, outer_offsets = contourpy.contour_generator(
            z=z, fill_type=contourpy.FillType.ChunkCombinedOffsetOffset, chunk_size=0
        ).filled(-1.0, level)
        geom = _polygons(points[0], ring_offsets[0], outer_offsets[0], gx0, gy0, cell, min_hole)
        polys = []
        for pts, offs in zip(*gen.filled(-1.0, level), strict=True):
            xy = np.column_stack([gx0 + (pts[:, 0] + 0.5) * cell, gy0 + (pts[:, 1] + 0.5) * cell])
            rings = [xy[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]
            holes = [h for h in rings[1:] if shapely.Polygon(h).area >= min_hole]
            polys.append(shapely.Polygon(rings[0], holes))
        expect = shapely.MultiPolygon(polys) if len(polys) > 1 else polys[0]
        assert geom.geom_type == expect.geom_type
        assert geom.equals_exact(expect, 1e-9), level
        built += len(polys)
    assert built > 3
    assert _polygons(None, None, None, gx0, gy0, cell, min_hole).is_empty


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
