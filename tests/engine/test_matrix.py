"""The travel-time matrix (engine.services.matrix): every cell equals /v1/routing's answer for
the pair with the same profile (the oracle, on both samples for car, foot and bicycle, and on a
drawn map with a one-way street and a turn restriction), the profile's ways on a drawn map, and
the limits."""

from __future__ import annotations

import numpy as np
import pytest

from engine.codec import json_bytes
from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter, NotFound
from engine.limits import Limits
from engine.routing import matrix as routing_matrix
from engine.services import matrix, routing
from tests.engine.osm_grid import OsmGrid
from tests.engine.test_routing import serve, square
from tests.engine.test_travel_profiles import serve as serve_profiles

ROUNDING = 0.1 + 1e-9  # both answers round to 0.1; the sums may differ in the last bit


def routed(ds: DatasetRegistry, a, b, profile: str = "car") -> tuple[float, float] | None:
    """(duration, distance) of /v1/routing's route from a to b, None when it has none."""
    try:
        params = routing.RoutingParams(origin=a, destination=b, steps=False, profile=profile)
        route = routing.run(ds, params)["routes"][0]
    except NotFound:
        return None
    return route["duration"], route["distance"]


def assert_cells_equal_routes(ds: DatasetRegistry, sources, destinations, pairs, profile: str = "car") -> dict:
    out = matrix.run(ds, matrix.MatrixParams(tuple(sources), tuple(destinations), profile=profile))
    for i, j in pairs:
        expected = routed(ds, sources[i], destinations[j], profile)
        cell = (out["durations"][i][j], out["distances"][i][j])
        if expected is None:
            assert cell == (None, None), (i, j)
        else:
            assert cell[0] == pytest.approx(expected[0], abs=ROUNDING), (i, j, cell, expected)
            assert cell[1] == pytest.approx(expected[1], abs=ROUNDING), (i, j, cell, expected)
    return out


def snappable_points(dataset, n: int, seed: int, profile: str = "car") -> list[tuple[float, float]]:
    """``n`` random points of the region within the default snap limit of a way of ``profile``."""
    rng = np.random.default_rng(seed)
    b = dataset.bbox
    router = dataset.router_for(profile)
    out: list[tuple[float, float]] = []
    while len(out) < n:
        lat, lng = rng.uniform(b.min_lat, b.max_lat), rng.uniform(b.min_lng, b.max_lng)
        if router.snap(lat, lng, Limits().snap_max_distance_m) is not None:
            out.append((float(lat), float(lng)))
    return out


@pytest.mark.parametrize("profile", ["car", "foot", "bicycle"])
@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_every_sampled_cell_equals_routing(datasets, region, profile):
    dataset = datasets.get(region)
    points = snappable_points(dataset, 70, seed=30, profile=profile)
    sources, destinations = points[:40], points[40:]
    rng = np.random.default_rng(7)
    pairs = {(int(rng.integers(40)), int(rng.integers(30))) for _ in range(150)}
    out = assert_cells_equal_routes(datasets, sources, destinations, sorted(pairs), profile)
    assert len(out["durations"]) == 40 and all(len(row) == 30 for row in out["durations"])
    # the snapped points are the route's waypoints
    first = routing.run(
        datasets,
        routing.RoutingParams(origin=sources[0], destination=destinations[0], steps=False, profile=profile),
    )
    assert out["sources"][0] == {k: first["waypoints"][0][k] for k in ("location", "snap_distance")}
    assert out["destinations"][0] == {k: first["waypoints"][1][k] for k in ("location", "snap_distance")}
    reached = sum(v is not None for row in out["durations"] for v in row)
    assert reached > 0.9 * 40 * 30


def test_destinations_default_to_sources_and_diagonal_is_zero(datasets):
    points = tuple(snappable_points(datasets.get("monaco"), 5, seed=3))
    out = matrix.run(datasets, matrix.MatrixParams(points, annotations=("duration",)))
    assert "distances" not in out and len(out["destinations"]) == 5
    assert [out["durations"][i][i] for i in range(5)] == [0.0] * 5


# A square with a shortcut, drawn: A-B-C along the top, B-D down, D-E-C round; F hangs off E.
SQUARE = """
    A----B----C
         |    |
         D----E----F
"""


def test_oneway_and_turn_restriction_on_a_drawn_map(tmp_path):
    g = OsmGrid(SQUARE, grid_m=20)
    ab = g.way("AB", highway="residential", name="West Street")
    g.way("BC", highway="residential", name="East Street", oneway="yes")  # only B -> C
    bd = g.way("BD", highway="residential", name="Cross Street")
    g.way("DE", highway="residential", name="South Street")
    g.way("EC", highway="residential", name="Back Street")
    g.way("EF", highway="residential", name="Tail Street")
    g.restriction("no_right_turn", from_way=ab, via="B", to_way=bd)  # eastbound at B: not down
    ds = serve(tmp_path, g)
    points = [
        g.coord_between("A", "B", 0.2),
        g.coord_between("B", "C", 0.8),
        g.coord_between("D", "E", 0.5),
        g.coord_between("E", "F", 0.7),
    ]
    out = assert_cells_equal_routes(ds, points, points, [(i, j) for i in range(4) for j in range(4)])
    assert [s["snap_distance"] for s in out["sources"]] == [0.0] * 4
    distances = out["distances"]
    # the one-way: A's side -> C's side straight along it (80 + 80 m); back, round by E and D
    assert distances[0][1] == pytest.approx(160.0, abs=1.0)
    assert distances[1][0] == pytest.approx(20 + 40 + 100 + 40 + 80, abs=1.0)
    # the restriction: A's side -> the foot of the square not down Cross Street but round by C
    assert distances[0][2] == pytest.approx(80 + 100 + 40 + 50, abs=1.0)
    assert distances[2][0] == pytest.approx(50 + 40 + 80, abs=1.0)  # up Cross Street: allowed


def test_the_profile_picks_its_ways_and_the_region_must_have_it(tmp_path):
    """A-B-C-D with a footway B-C and a residential loop A-E-F-D 200 m south; a motorway G-H 3 km
    east. Walkers cross B-C, cars drive round; the region is imported without bicycle."""
    g = OsmGrid("A----B----C----D", grid_m=20)
    g.add_node("E", *g.offset("A", north_m=-200))
    g.add_node("F", *g.offset("D", north_m=-200))
    g.add_node("G", *g.offset("D", east_m=3000))
    g.add_node("H", *g.offset("D", east_m=3400))
    g.way("AB", highway="residential")
    g.way("BC", highway="footway")
    g.way("CD", highway="residential")
    g.way("AEFD", highway="residential")
    g.way("GH", highway="motorway")
    ds = serve_profiles(tmp_path, g, profiles=("car", "foot"))
    points = [g.coord_between("A", "B"), g.coord_between("C", "D")]
    pairs = [(i, j) for i in range(2) for j in range(2)]
    walked = assert_cells_equal_routes(ds, points, points, pairs, "foot")
    driven = assert_cells_equal_routes(ds, points, points, pairs, "car")
    assert walked["distances"][0][1] == pytest.approx(50 + 100 + 50, abs=1.0)  # across the footway
    assert driven["distances"][0][1] > 400  # round the loop
    assert walked["durations"][0][1] > 200 / (6 / 3.6)  # at a walker's pace
    assert matrix.run(ds, matrix.MatrixParams(tuple(points), profile="walking")) == walked
    for profile, named in (("hovercraft", "car, foot, bicycle"), ("cycling", "its profiles: car, foot")):
        with pytest.raises(InvalidParameter) as err:
            matrix.run(ds, matrix.MatrixParams(tuple(points), profile=profile))
        assert err.value.parameter == "profile" and named in str(err.value), str(err.value)
    motorway = g.coord_between("G", "H")
    matrix.run(ds, matrix.MatrixParams((points[0],), (motorway,)))  # a car snaps to the motorway
    with pytest.raises(InvalidParameter) as far:
        matrix.run(ds, matrix.MatrixParams((points[0],), (motorway,), profile="foot"))
    assert far.value.parameter == "destinations" and "walkable" in str(far.value)


# The square again, and a road of its own 2 km east: farther than a point on it may be moved
# to reach the square (FRAGMENT_ESCAPE), so no route joins the two.
ISLAND = """
    A----B                    X-Y
    |    |
    D----C
"""


def test_no_route_cells_are_null_in_rows_with_routes(tmp_path):
    g = OsmGrid(ISLAND, grid_m=100)
    for way in ("AB", "BC", "CD", "DA", "XY"):
        g.way(way, highway="residential")
    ds = serve(tmp_path, g)
    points = [g.coord_between("A", "B", 0.3), g.coord_between("C", "D", 0.6), g.coord_between("X", "Y", 0.5)]
    out = assert_cells_equal_routes(ds, points, points, [(i, j) for i in range(3) for j in range(3)])
    for values in (out["durations"], out["distances"]):
        assert [[v is None for v in row] for row in values] == [
            [False, False, True],
            [False, False, True],
            [True, True, False],
        ]
        assert all(isinstance(v, float) for row in values for v in row if v is not None)
    arrays = matrix.run_arrays(ds, matrix.MatrixParams(tuple(points)))
    assert np.isnan(arrays["durations"]).tolist() == [[v is None for v in row] for row in out["durations"]]
    assert json_bytes(arrays) == json_bytes(out)  # what the worker stores: the same document


def test_points_on_a_cut_off_fragment_start_on_the_network_cell_by_cell(tmp_path):
    """Roads cut off 1.2 km east of the square: a cell from or to a point on them is the route
    between the points moved to the square, as /v1/routing answers it; a cell between two points
    on them stays on them. Sources and destinations on either side, some moved, some not."""
    g, _ = square()
    g.add_node("X", *g.offset("C", east_m=1200))
    g.add_node("Y", *g.offset("C", east_m=1300))
    g.way(["X", "Y"], highway="residential")
    ds = serve(tmp_path, g)
    on_square = [g.coord_between("A", "B", 0.3), g.coord_between("D", "E", 0.6), g.coord_between("E", "C", 0.5)]
    on_fragment = [g.coord_between("X", "Y", 0.2), g.coord_between("X", "Y", 0.7)]
    cases = [
        (on_square + on_fragment, on_square + on_fragment),
        (on_fragment + on_square[:1], on_square[1:]),  # moved sources only
        (on_square, on_fragment[::-1]),  # moved destinations only
    ]
    for sources, destinations in cases:
        pairs = [(i, j) for i in range(len(sources)) for j in range(len(destinations))]
        out = assert_cells_equal_routes(ds, sources, destinations, pairs)
        assert all(v is not None for row in out["distances"] for v in row)  # none left unrouted


def test_limits_name_the_parameter(datasets):
    point = snappable_points(datasets.get("monaco"), 1, seed=1)[0]
    small = Limits(matrix_locations=3, matrix_cells=6)
    cases = [
        (matrix.MatrixParams((point,) * 4), "sources"),
        (matrix.MatrixParams((point,), (point,) * 4), "destinations"),
        (matrix.MatrixParams((point,) * 3, (point,) * 3), "destinations"),
        (matrix.MatrixParams(()), "sources"),
        (matrix.MatrixParams((point,), profile="bike"), "profile"),
        (matrix.MatrixParams((point,), annotations=("speed",)), "annotations"),
        (matrix.MatrixParams((point, (0.0, 0.0))), "sources"),
    ]
    for params, name in cases:
        with pytest.raises(InvalidParameter) as err:
            matrix.run(datasets, params, small)
        assert err.value.parameter == name, params


@pytest.mark.parametrize("seed", [1, 2])
def test_arcs_come_in_the_order_of_a_stable_sort_by_middle_rank(seed):
    """The arc costs' order (a counting sort) is a stable argsort of the middle nodes' ranks,
    original arcs (no middle node) first, upward arcs before downward ones among equals."""
    rng = np.random.default_rng(seed)
    n = 500
    rank = rng.permutation(n).astype(np.int32)
    up_mid = np.where(rng.random(3_000) < 0.4, -1, rng.integers(0, n, 3_000)).astype(np.int32)
    dn_mid = np.where(rng.random(2_000) < 0.4, -1, rng.integers(0, n, 2_000)).astype(np.int32)
    mid = np.concatenate((up_mid, dn_mid))
    key = np.where(mid >= 0, rank[mid], -1)
    order = np.empty(mid.shape[0], np.int32)
    routing_matrix._by_middle_rank(rank, up_mid, dn_mid, order)
    np.testing.assert_array_equal(order, np.argsort(key, kind="stable"))
