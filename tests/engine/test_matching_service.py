"""Snap to road (engine.services.snaptoroad) on drawn maps and on the Monaco sample."""

from __future__ import annotations

import numpy as np
import pytest

from engine import layout
from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter
from engine.geo import haversine_m
from engine.ingest.pipeline import Stage, import_pbf
from engine.matching.traces import distance_to_polyline, sample_trace, true_route
from engine.services.snaptoroad import SnapParams, run
from tests.engine.osm_grid import OsmGrid

ROADS = (Stage("roads", "engine.ingest.roads:run", (layout.GRAPH_DIR,)),)


def serve(tmp_path, grid: OsmGrid, region: str = "grid") -> DatasetRegistry:
    pbf = grid.write(tmp_path / f"{region}.osm.pbf")
    import_pbf(pbf, tmp_path / "data", region, stages=ROADS)
    return DatasetRegistry(tmp_path / "data")


LADDER = """
    A----------------B
    |                |
    |                |
    C----------------D
"""


def _ladder(tmp_path, upper_oneway: bool):
    g = OsmGrid(LADDER, grid_m=10)
    tags = {"oneway": "yes"} if upper_oneway else {}
    g.way("AB", highway="residential", name="Upper Street", **tags)
    g.way("CD", highway="residential", name="Lower Street")
    g.way("AC", highway="residential", name="West Lane")
    g.way("BD", highway="residential", name="East Lane")
    return g, serve(tmp_path, g)


@pytest.mark.parametrize("oneway", [False, True])
def test_one_way_decides_the_road(tmp_path, oneway):
    """Driving west exactly on the upper street: matched there when it is two-way, on the lower
    street (30 m away) when the upper one is one-way eastbound."""
    g, ds = _ladder(tmp_path, oneway)
    pts = tuple(g.coord_between("B", "A", t) for t in (0.1, 0.3, 0.5, 0.7, 0.9))
    res = run(ds, SnapParams(pts))
    names = {s["name"] for s in res["snapped"]}
    assert names == ({"Lower Street"} if oneway else {"Upper Street"})
    assert [s["original_index"] for s in res["snapped"]] == list(range(5))
    assert res["geometry"]["type"] == "LineString"


def test_disconnected_roads_give_two_segments(tmp_path):
    """Two roads 80 m apart with no connection: no transition between them, two segments."""
    g = OsmGrid(
        """
        A--------------------B



        C--------------------D
    """,
        grid_m=20,
    )
    g.way("AB", highway="residential", name="North Road")
    g.way("CD", highway="residential", name="South Road")
    ds = serve(tmp_path, g)
    pts = [g.coord_between("A", "B", t) for t in (0.1, 0.3, 0.5, 0.7)]
    pts += [g.coord_between("D", "C", t) for t in (0.2, 0.4, 0.6, 0.8)]
    res = run(ds, SnapParams(tuple(pts)))
    assert res["geometry"]["type"] == "MultiLineString"
    assert len(res["geometry"]["coordinates"]) == 2
    names = [s["name"] for s in res["snapped"]]
    assert names == ["North Road"] * 4 + ["South Road"] * 4


def test_interpolate_adds_the_path_between_points(tmp_path):
    g = OsmGrid(
        """
        A---------B
                  |
                  |
                  C---------D
    """,
        grid_m=10,
    )
    g.way("ABCD", highway="residential", name="Zigzag")
    ds = serve(tmp_path, g)
    pts = (g.coord_between("A", "B", 0.5), g.coord_between("C", "D", 0.5))
    plain = run(ds, SnapParams(pts))
    inter = run(ds, SnapParams(pts, interpolate=True))
    assert len(plain["snapped"]) == 2
    extra = [s for s in inter["snapped"] if "original_index" not in s]
    assert [s["original_index"] for s in inter["snapped"] if "original_index" in s] == [0, 1]
    # the corners B and C are on the path between the two points, in order
    corners = [g.coord("B"), g.coord("C")]
    got = [(s["coord"]["lat"], s["coord"]["lng"]) for s in extra]
    assert len(got) >= 2
    for corner in corners:
        assert min(haversine_m(*corner, *p) for p in got) < 0.5
    assert inter["snapped"][0]["original_index"] == 0 and inter["snapped"][-1]["original_index"] == 1
    assert all(s["name"] == "Zigzag" and "distance" not in s for s in extra)


def test_timestamps_break_an_impossible_jump(tmp_path):
    """Far along a road in one second: no plausible transition, the trace is split."""
    g = OsmGrid("A" + "-" * 58 + "B", grid_m=20)  # 1.2 km
    g.way("AB", highway="residential", name="Long Road")
    ds = serve(tmp_path, g)
    pts = tuple(g.coord_between("A", "B", t) for t in (0.02, 0.05, 0.08, 0.8, 0.83, 0.86))
    slow = run(ds, SnapParams(pts, timestamps=(0, 5, 10, 200, 205, 210)))
    assert slow["geometry"]["type"] == "LineString"
    fast = run(ds, SnapParams(pts, timestamps=(0, 5, 10, 11, 16, 21)))
    assert fast["geometry"]["type"] == "MultiLineString"
    assert len(fast["snapped"]) == 6


# ------------------------------------------------------------------ Monaco


def test_monaco_trace(datasets):
    net = datasets.get("monaco").component("roadnet").network
    rng = np.random.default_rng(21)
    for _ in range(3):
        edges = true_route(net, rng, 2000)
        tr = sample_trace(net, edges, 100.0, 10.0, rng)
        lat, lng = net.proj.to_latlng(tr.x, tr.y)
        res = run(datasets, SnapParams(tuple(zip(lat, lng, strict=False)), timestamps=tuple(tr.timestamps)))
        snapped = res["snapped"]
        assert [s["original_index"] for s in snapped] == list(range(tr.x.size))
        sx, sy = net.proj.to_xy(
            np.array([s["coord"]["lat"] for s in snapped]), np.array([s["coord"]["lng"] for s in snapped])
        )
        on_path = distance_to_polyline(sx, sy, tr.path) < 2.0
        assert on_path.mean() >= 0.9
        for s, la, ln in zip(snapped, lat, lng, strict=False):
            assert isinstance(s["way_id"], int) and s["way_id"] > 0
            d = haversine_m(la, ln, s["coord"]["lat"], s["coord"]["lng"])
            assert abs(d - s["distance"]) < 0.5
        assert res["geometry"]["type"] == "LineString"
        line = np.array(res["geometry"]["coordinates"])
        gx, gy = net.proj.to_xy(line[:, 1], line[:, 0])
        # the matched geometry follows the true path
        assert np.median(distance_to_polyline(gx, gy, tr.path)) < 1.0


def test_single_point_is_nearest_road(datasets):
    res = run(datasets, SnapParams(((43.7384, 7.4246),)))
    (s,) = res["snapped"]
    assert s["original_index"] == 0 and s["name"] and s["distance"] < 50
    assert res["geometry"]["type"] == "Point"
    assert haversine_m(43.7384, 7.4246, s["coord"]["lat"], s["coord"]["lng"]) == pytest.approx(s["distance"], abs=0.2)


@pytest.mark.parametrize(
    "params,parameter",
    [
        (SnapParams(()), "points"),
        (SnapParams(((43.7384, 7.4246),) * 1001), "points"),
        (SnapParams(((43.7384, 7.4246), (43.739, 7.425)), timestamps=(1.0,)), "timestamps"),
        (SnapParams(((43.7384, 7.4246), (43.739, 7.425)), timestamps=(5.0, 1.0)), "timestamps"),
        (SnapParams(((43.7384, 7.4246), (43.739, 7.425)), radius=0.0), "radius"),
        (SnapParams(((43.7384, 7.4246), (43.739, 7.425)), radius=500.0), "radius"),  # > 200
        (SnapParams(((95.0, 7.4246), (43.739, 7.425))), "points"),
        (SnapParams(((0.0, 0.0), (0.001, 0.001))), "points"),
    ],
)
def test_validation(datasets, params, parameter):
    with pytest.raises(InvalidParameter) as err:
        run(datasets, params)
    assert err.value.parameter == parameter
