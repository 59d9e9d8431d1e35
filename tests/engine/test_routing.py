"""Routing on maps drawn in the test (tests/engine/osm_grid.py): profile, restrictions, snapping,
avoid, steps, geometry, errors. Every map is imported through the real "roads" stage."""

from __future__ import annotations

import math

import pytest

from engine import layout, polyline
from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter, NotFound
from engine.geo import haversine_m
from engine.ingest.pipeline import Stage, import_pbf
from engine.routing import profile as P
from engine.routing.build import build_graph
from engine.routing.router import Router
from engine.services.routing import RoutingParams, run
from tests.engine.osm_grid import OsmGrid

ROADS = (Stage("roads", "engine.ingest.roads:run", (layout.GRAPH_DIR,)),)


def serve(tmp_path, grid: OsmGrid, region: str = "grid") -> DatasetRegistry:
    pbf = grid.write(tmp_path / f"{region}.osm.pbf")
    import_pbf(pbf, tmp_path / "data", region, stages=ROADS)
    return DatasetRegistry(tmp_path / "data")


def route(ds, a, b, **kw) -> dict:
    return run(ds, RoutingParams(origin=a, destination=b, **kw))


def passes_near(result: dict, point, tol_m: float = 3.0) -> bool:
    pts = polyline.decode(result["routes"][0]["geometry"])
    return any(haversine_m(lat, lng, *point) < tol_m for lat, lng in pts)


# A square with a shortcut: A-B-C along the top, a detour B-D-E-C below.
SQUARE = """
    A----B----C
         |    |
         D----E
"""


def square(**bc_tags) -> tuple[OsmGrid, dict[str, int]]:
    g = OsmGrid(SQUARE, grid_m=20)
    ways = {
        "AB": g.way("AB", highway="residential", name="West Street"),
        "BC": g.way("BC", highway="residential", name="East Street", **bc_tags),
        "BD": g.way("BD", highway="residential", name="Cross Street"),
        "DE": g.way("DE", highway="residential", name="South Street"),
        "EC": g.way("EC", highway="residential", name="Back Street"),
    }
    return g, ways


def test_straight_route_and_distance(tmp_path):
    g, _ = square()
    ds = serve(tmp_path, g)
    a, c = g.coord_between("A", "B", 0.1), g.coord_between("B", "C", 0.9)
    r = route(ds, a, c)["routes"][0]
    expected = haversine_m(*a, *g.coord("B")) + haversine_m(*g.coord("B"), *c)
    assert r["distance"] == pytest.approx(expected, rel=0.01)
    assert not passes_near({"routes": [r]}, g.coord("D"))
    # duration at the residential default speed (25 km/h), plus at most a turn penalty
    assert expected / (25 / 3.6) - 0.1 <= r["duration"] <= expected / (25 / 3.6) + 8


def test_oneway_forces_detour(tmp_path):
    g, _ = square(oneway="-1")  # East Street drivable only from C to B
    ds = serve(tmp_path, g)
    a, c = g.coord_between("A", "B", 0.1), g.coord_between("B", "C", 0.9)
    res = route(ds, a, c)
    assert passes_near(res, g.coord("D")) and passes_near(res, g.coord("E"))
    back = route(ds, c, a)  # the other way is straight
    assert not passes_near(back, g.coord("D"))
    assert back["routes"][0]["distance"] < res["routes"][0]["distance"]


@pytest.mark.parametrize("kind", ["no_straight_on", "only_right_turn"])
def test_turn_restriction_via_node(tmp_path, kind):
    g, ways = square()
    to = ways["BC"] if kind.startswith("no_") else ways["BD"]
    g.restriction(kind, from_way=ways["AB"], via="B", to_way=to)
    ds = serve(tmp_path, g)
    a, c = g.coord_between("A", "B", 0.1), g.coord_between("B", "C", 0.9)
    res = route(ds, a, c)
    assert passes_near(res, g.coord("E")), "the restriction must force the detour"


def test_restriction_does_not_apply_to_other_approach(tmp_path):
    g, ways = square()
    g.restriction("no_left_turn", from_way=ways["BD"], via="B", to_way=ways["AB"])
    ds = serve(tmp_path, g)
    a, c = g.coord_between("A", "B", 0.1), g.coord_between("B", "C", 0.9)
    assert not passes_near(route(ds, a, c), g.coord("D"))


def test_private_road_is_excluded_and_not_snapped(tmp_path):
    g, _ = square(access="private")
    ds = serve(tmp_path, g)
    a, c = g.coord_between("A", "B", 0.1), g.coord_between("B", "C", 0.9)
    res = route(ds, a, c)
    assert passes_near(res, g.coord("D"))
    # a point right beside the private street snaps elsewhere
    near_private = g.offset("B", north_m=2, east_m=20)
    w = route(ds, near_private, a)["waypoints"][0]
    assert w["snap_distance"] > 2.5


def test_motor_vehicle_no_and_destination(tmp_path):
    g, _ = square(motor_vehicle="no")
    ds = serve(tmp_path, g, "mv")
    a, c = g.coord_between("A", "B", 0.1), g.coord_between("B", "C", 0.9)
    assert passes_near(route(ds, a, c), g.coord("D"))
    g2, _ = square(access="destination")
    ds2 = serve(tmp_path / "d", g2, "dest")
    assert not passes_near(route(ds2, a, c), g2.coord("D"))


def detour_map(tmp_path, bc_tags: dict):
    """A straight road A-B-C-F whose middle B-C carries ``bc_tags``, and a detour B-D-E-C."""
    g = OsmGrid(
        """
        A----B----C----F
             |    |
             D----E
    """,
        grid_m=20,
    )
    g.way("BC", **bc_tags)
    for way in ("AB", "CF", "BD", "DE", "EC"):
        g.way(way, highway="residential")
    return g, serve(tmp_path, g)


@pytest.mark.parametrize(
    "bc_tags,avoid",
    [
        ({"highway": "residential", "toll": "yes"}, "tolls"),
        ({"highway": "motorway", "oneway": "no"}, "motorways"),
        ({"route": "ferry", "duration": "00:00:05"}, "ferries"),
    ],
)
def test_avoid(tmp_path, bc_tags, avoid):
    g, ds = detour_map(tmp_path, bc_tags)
    a, f = g.coord_between("A", "B", 0.1), g.coord_between("C", "F", 0.9)
    assert not passes_near(route(ds, a, f), g.coord("D"))
    assert passes_near(route(ds, a, f, avoid=frozenset({avoid})), g.coord("D"))
    # a point on the avoided road itself still routes (it has to start there)
    on_it = route(ds, g.coord_between("B", "C", 0.5), f, avoid=frozenset({avoid}))
    assert on_it["routes"][0]["distance"] > 0


def test_motorway_is_oneway_by_default():
    prof = P.way_profile({"highway": "motorway"})
    assert prof.forward and not prof.backward and prof.flags & P.FLAG_MOTORWAY
    rb = P.way_profile({"highway": "primary", "junction": "roundabout"})
    assert rb.forward and not rb.backward and rb.flags & P.FLAG_ROUNDABOUT
    assert P.way_profile({"highway": "residential", "oneway": "-1"}).backward
    assert not P.way_profile({"highway": "residential", "oneway": "-1"}).forward
    assert P.way_profile({"highway": "residential", "access": "private"}) is None
    assert P.way_profile({"highway": "residential", "motorcar": "no"}) is None
    assert P.way_profile({"highway": "residential", "access": "no", "motorcar": "yes"}) is not None
    assert P.way_profile({"highway": "footway"}) is None
    track = P.way_profile({"highway": "track"})  # a connector: drivable, local access only
    assert track is not None and track.flags & P.FLAG_RESTRICTED
    assert P.way_profile({"highway": "track", "motor_vehicle": "forestry"}) is None


@pytest.mark.parametrize(
    "value,kmh",
    [
        ("50", 50),
        ("30 mph", 48.28),
        ("FI:urban", 50),
        ("FI:rural", 80),
        ("RU:urban", 60),
        ("DE:zone:30", 30),
        ("none", 130),
        ("50;30", 50),
        ("walk", 6),
        ("signals", None),
        ("", None),
    ],
)
def test_maxspeed_parsing(value, kmh):
    got = P.parse_maxspeed(value)
    assert (got is None) if kmh is None else got == pytest.approx(kmh, rel=1e-3)


def test_maxspeed_sets_speed_with_urban_factor():
    prof = P.way_profile({"highway": "primary", "maxspeed": "50"})
    assert prof.speed_fwd_kmh == pytest.approx(50 * P.URBAN_FACTOR)
    assert P.way_profile({"highway": "primary"}).speed_fwd_kmh == P.DEFAULT_SPEED_KMH["primary"]


def test_snap_projects_onto_the_edge(tmp_path):
    g, _ = square()
    ds = serve(tmp_path, g)
    # 6 m north of the middle of A-B: the snap is on A-B at the foot of the perpendicular
    mid = g.coord_between("A", "B", 0.5)
    p = g.offset("A", north_m=6, east_m=50)
    w = route(ds, p, g.coord("C"))["waypoints"][0]
    assert w["snap_distance"] == pytest.approx(6.0, abs=0.3)
    assert haversine_m(w["location"]["lat"], w["location"]["lng"], *g.offset("A", east_m=50)) < 0.5
    assert haversine_m(w["location"]["lat"], w["location"]["lng"], *mid) < 1.0
    assert w["name"] == "West Street"


def test_a_point_on_a_junction_may_leave_and_arrive_by_any_road(tmp_path):
    """A point exactly on a junction is snapped onto one of its roads (any of them is nearest).
    Whichever, a route may start out of, or end into, the junction by every road: here starting
    on the one-way B->C (a dead end) would make A unreachable."""
    from engine.routing.snap import Snap

    g = OsmGrid(
        """
        A----B----C
             |
             D
    """,
        grid_m=20,
    )
    g.way("AB", highway="residential", name="West Street")
    g.way("BC", highway="residential", name="East Street", oneway="yes")
    g.way("BD", highway="residential", name="South Street")
    ds = serve(tmp_path, g)
    router = ds.get("grid").component("router")
    graph = router.g
    b_lat, b_lng = g.coord("B")
    node_b = min(range(graph.n_nodes), key=lambda v: haversine_m(graph.node_lat[v], graph.node_lng[v], b_lat, b_lng))
    a = router.snap(*g.coord_between("A", "B", 0.5))
    expected = haversine_m(*g.coord_between("A", "B", 0.5), b_lat, b_lng)
    at_b = [
        Snap(int(e), 0.0, b_lat, b_lng, 0.0)
        for e in range(int(graph.node_first_out[node_b]), int(graph.node_first_out[node_b + 1]))
    ]
    at_b += [
        Snap(int(e), 1.0, b_lat, b_lng, 0.0)
        for e in graph.in_edges[int(graph.node_first_in[node_b]) : int(graph.node_first_in[node_b + 1])]
    ]
    assert len(at_b) == 5  # out: B->A, B->C, B->D; in: A->B, D->B
    for snap in at_b:
        there, back = router.leg(snap, a), router.leg(a, snap)
        assert there is not None and back is not None, snap
        for leg in (there, back):
            assert route_length(router, leg) == pytest.approx(expected, rel=0.02), snap


def route_length(router, leg) -> float:
    """Metres along a leg: its edges, minus what lies before the start and after the end."""
    lengths = [float(router.length[e]) for e in leg.edges]
    return sum(lengths) - leg.start * lengths[0] - (1.0 - leg.end) * lengths[-1]


def test_far_point_is_invalid_parameter(tmp_path):
    g, _ = square()
    ds = serve(tmp_path, g)
    far = g.offset("C", north_m=3000)
    with pytest.raises(InvalidParameter) as exc:
        route(ds, g.coord("A"), far)
    assert exc.value.parameter == "destination"
    with pytest.raises(InvalidParameter) as exc:
        run(ds, RoutingParams(origin=g.coord("A"), destination=g.coord("C"), waypoints=(far,)))
    assert exc.value.parameter == "waypoints"


def test_no_route_is_not_found(tmp_path):
    g = OsmGrid(
        """
        A----B
        |    |
        C----D
    """,
        grid_m=20,
    )
    g.way("ABDCA", highway="residential")
    # an island 2 km east: beyond the snap limit from the main network, so it snaps to itself
    x = g.add_node("X", *g.offset("B", east_m=2000))
    y = g.add_node("Y", *g.offset("B", east_m=2100))
    del x, y
    g.way(["X", "Y"], highway="residential")
    ds = serve(tmp_path, g)
    with pytest.raises(NotFound) as exc:
        route(ds, g.coord("A"), g.coord_between("X", "Y"))
    assert "no drivable route" in exc.value.message


ROUNDABOUT = """
              N
              |
              P
           /     \\
    W----Q         R----E
           \\     /
              S
              |
              T
"""


def test_roundabout_exit_and_instructions(tmp_path):
    g = OsmGrid(ROUNDABOUT, grid_m=8)
    g.way("QSRPQ", highway="primary", junction="roundabout", name="Place Ronde")
    g.way("WQ", highway="primary", name="West Road")
    g.way("RE", highway="primary", name="East Road")
    g.way("PN", highway="secondary", name="North Road")
    g.way("ST", highway="secondary", name="South Road")
    ds = serve(tmp_path, g)
    res = route(ds, g.coord_between("W", "Q", 0.2), g.coord_between("R", "E", 0.8))
    steps = res["routes"][0]["legs"][0]["steps"]
    kinds = [s["maneuver"]["type"] for s in steps]
    assert kinds == ["depart", "roundabout", "arrive"], steps
    rb = steps[1]
    assert rb["maneuver"]["exit"] == 2
    assert rb["instruction"] == "Enter the roundabout and take the 2nd exit onto East Road"
    assert steps[0]["instruction"] == "Head east on West Road"
    assert steps[-1]["instruction"] == "You have arrived at your destination"
    # step distances add up to the route distance
    total = sum(s["distance"] for s in steps)
    assert total == pytest.approx(res["routes"][0]["distance"], abs=0.5)
    n3 = route(ds, g.coord_between("W", "Q", 0.2), g.coord_between("P", "N", 0.8))
    assert n3["routes"][0]["legs"][0]["steps"][1]["maneuver"]["exit"] == 3


CROSS = """
            N
            |
    W-------B-------E
            |
            S
"""


@pytest.mark.parametrize(
    "angle,modifier",
    [
        (0, "straight"),
        (-15, "straight"),
        (16, "slight right"),
        (-50, "slight left"),
        (51, "right"),
        (-130, "left"),
        (131, "sharp right"),
        (-170, "sharp left"),
        (171, "uturn"),
        (-179, "uturn"),
    ],
)
def test_modifier_thresholds(angle, modifier):
    """Signed turn angle (positive to the right) to OSRM's modifier vocabulary, at each threshold."""
    from engine.routing.directions import _MODIFIERS, _modifier_code

    assert _MODIFIERS[_modifier_code(float(angle))] == modifier


@pytest.mark.parametrize("target,modifier", [("N", "left"), ("S", "right")])
def test_turn_instruction(tmp_path, target, modifier):
    g = OsmGrid(CROSS, grid_m=10)
    g.way("WBE", highway="secondary", name="Boulevard Albert 1er")
    g.way("NBS", highway="residential", name="Rue Grimaldi")
    ds = serve(tmp_path, g)
    res = route(ds, g.coord_between("W", "B", 0.2), g.coord_between("B", target, 0.8))
    steps = res["routes"][0]["legs"][0]["steps"]
    assert [s["maneuver"]["type"] for s in steps] == ["depart", "turn", "arrive"]
    assert steps[1]["maneuver"]["modifier"] == modifier
    assert steps[1]["instruction"] == f"Turn {modifier} onto Rue Grimaldi"
    assert steps[1]["name"] == "Rue Grimaldi"
    loc = steps[1]["location"]
    assert haversine_m(loc["lat"], loc["lng"], *g.coord("B")) < 0.5
    assert 60 <= steps[1]["maneuver"]["bearing_before"] <= 120  # heading east


def test_geometry_formats_agree(tmp_path):
    g, _ = square()
    ds = serve(tmp_path, g)
    a, c = g.coord_between("A", "B", 0.1), g.coord("E")
    p5 = route(ds, a, c)["routes"][0]["geometry"]
    p6 = route(ds, a, c, geometry="polyline6")["routes"][0]["geometry"]
    gj = route(ds, a, c, geometry="geojson")["routes"][0]["geometry"]
    assert gj["type"] == "LineString"
    pts6 = polyline.decode(p6, 6)
    pts5 = polyline.decode(p5, 5)
    assert len(pts6) == len(gj["coordinates"]) == len(pts5)
    for (lat, lng), (x, y) in zip(pts6, gj["coordinates"], strict=True):
        assert abs(lat - y) < 1e-6 and abs(lng - x) < 1e-6
    # starts at the snapped origin, ends at the snapped destination
    res = route(ds, a, c, geometry="geojson")
    w0 = res["waypoints"][0]["location"]
    assert abs(gj["coordinates"][0][1] - w0["lat"]) < 1e-6


def test_waypoints_make_legs(tmp_path):
    g, _ = square()
    ds = serve(tmp_path, g)
    a, d, c = g.coord_between("A", "B", 0.1), g.coord_between("D", "E", 0.5), g.coord_between("B", "C", 0.9)
    res = run(ds, RoutingParams(origin=a, destination=c, waypoints=(d,)))
    r = res["routes"][0]
    assert len(r["legs"]) == 2 and len(res["waypoints"]) == 3
    assert r["distance"] == pytest.approx(sum(leg["distance"] for leg in r["legs"]), abs=0.2)
    assert passes_near(res, g.coord("D"))
    assert r["legs"][0]["steps"][-1]["instruction"] == "You have arrived at your waypoint"


def test_same_edge_behind_origin_goes_round(tmp_path):
    # one-way loop: a destination just behind the origin needs the whole loop
    g = OsmGrid(
        """
        A----B
        |    |
        D----C
    """,
        grid_m=20,
    )
    g.way("ABCDA", highway="residential", oneway="yes")
    ds = serve(tmp_path, g)
    ahead = route(ds, g.coord_between("A", "B", 0.5), g.coord_between("A", "B", 0.7))
    behind = route(ds, g.coord_between("A", "B", 0.5), g.coord_between("A", "B", 0.3))
    assert ahead["routes"][0]["distance"] == pytest.approx(0.2 * 100, abs=0.5)
    perimeter = 2 * 100 + 2 * 40  # 5 cells across, 2 rows down, 20 m each
    assert behind["routes"][0]["distance"] == pytest.approx(perimeter - 0.2 * 100, abs=1.0)


def test_alternatives(tmp_path):
    g = OsmGrid(
        """
        A----B----C
        |         |
        D----E----F
        |         |
        G----H----I
    """,
        grid_m=30,
    )
    g.way("ABC", highway="residential")
    g.way("ADG", highway="residential")
    g.way("CFI", highway="residential")
    g.way("DEF", highway="residential")
    g.way("GHI", highway="residential")
    ds = serve(tmp_path, g)
    res = route(ds, g.coord_between("A", "D", 0.5), g.coord_between("C", "F", 0.5), alternatives=1)
    assert len(res["routes"]) == 2
    best, alt = res["routes"]
    assert best["geometry"] != alt["geometry"]
    assert best["duration"] <= alt["duration"] <= 1.6 * best["duration"]


def test_invalid_params(tmp_path):
    g, _ = square()
    ds = serve(tmp_path, g)
    with pytest.raises(InvalidParameter) as exc:
        route(ds, g.coord("A"), g.coord("C"), avoid=frozenset({"bridges"}))
    assert exc.value.parameter == "avoid"
    with pytest.raises(InvalidParameter) as exc:
        route(ds, g.coord("A"), g.coord("C"), alternatives=99)
    assert exc.value.parameter == "alternatives"


def test_traffic_signals_and_barrier(tmp_path):
    g, ways = square()
    g.node("B", barrier="bollard")
    graph, _ = build_graph(g.write(tmp_path / "b.osm.pbf"))
    r = Router(graph)
    a = r.snap(*g.coord_between("A", "B", 0.1), max_distance_m=5)
    c = r.snap(*g.coord_between("B", "C", 0.9), max_distance_m=5)
    assert r.leg(a, c) is None  # B blocks every way through it
    # without a tight limit, the point on the walled-off piece snaps to the connected network
    a2 = r.snap(*g.coord_between("A", "B", 0.1))
    assert a2.distance_m > 5 and r.leg(a2, c) is not None
    g2, _ = square()
    g2.node("B", highway="traffic_signals")
    graph2, _ = build_graph(g2.write(tmp_path / "s.osm.pbf"))
    r2 = Router(graph2)
    leg = r2.leg(r2.snap(*g2.coord_between("A", "B", 0.1)), r2.snap(*g2.coord_between("B", "C", 0.9)))
    _, dur = r2.leg_summary(leg)
    assert dur == pytest.approx(leg_len(r2, leg) / (25 / 3.6) + P.TRAFFIC_SIGNAL_S, abs=1.5)
    assert math.isfinite(dur)


@pytest.mark.parametrize(("gate_tags", "penalty"), [({}, P.GATE_S), ({"motorcar": "yes"}, 0.0)])
def test_a_gate_open_to_cars_costs_nothing(tmp_path, gate_tags, penalty):
    """Issue 20: a lift gate tagged motorcar=yes stands open for cars (as in OSRM); one without
    access tags costs GATE_S."""
    g, _ = square()
    g.node("B", barrier="lift_gate", **gate_tags)
    r = Router(build_graph(g.write(tmp_path / "gate.osm.pbf"))[0])
    leg = r.leg(r.snap(*g.coord_between("A", "B", 0.1)), r.snap(*g.coord_between("B", "C", 0.9)))
    assert r.leg_summary(leg)[1] == pytest.approx(leg_len(r, leg) / (25 / 3.6) + penalty, abs=1.5)


def leg_len(router, leg) -> float:
    return router.leg_summary(leg)[0]


def test_destination_only_road_is_not_a_through_route(tmp_path):
    g, ds = detour_map(tmp_path, {"highway": "residential", "motor_vehicle": "destination"})
    a, f = g.coord_between("A", "B", 0.1), g.coord_between("C", "F", 0.9)
    through = route(ds, a, f)
    assert passes_near(through, g.coord("D"))
    # ... but it is reachable as a destination, and the reported time has no penalty in it
    inside = route(ds, a, g.coord_between("B", "C", 0.5))["routes"][0]
    assert inside["distance"] == pytest.approx(90 + 50, abs=1.0)
    assert inside["duration"] < 60


def test_osm_grid_writes_xml_too(tmp_path):
    g, ways = square()
    g.node("B", highway="traffic_signals")
    g.restriction("no_left_turn", from_way=ways["AB"], via="B", to_way=ways["BD"])
    xml = g.write(tmp_path / "square.osm")
    text = xml.read_text()
    assert "<osm" in text and 'k="highway"' in text and 'v="no_left_turn"' in text
    graph_xml, counts_xml = build_graph(xml)
    graph_pbf, counts_pbf = build_graph(g.write(tmp_path / "square.osm.pbf"))
    assert counts_xml == counts_pbf
    assert graph_xml.n_edges == graph_pbf.n_edges == 10


def test_roundabout_does_not_count_service_exits(tmp_path):
    g = OsmGrid(ROUNDABOUT, grid_m=8)
    g.way("QSRPQ", highway="primary", junction="roundabout")
    g.way("WQ", highway="primary", name="West Road")
    g.way("RE", highway="primary", name="East Road")
    g.way("PN", highway="secondary", name="North Road")
    g.way("ST", highway="service", service="driveway")
    ds = serve(tmp_path, g)
    res = route(ds, g.coord_between("W", "Q", 0.2), g.coord_between("R", "E", 0.8))
    rb = res["routes"][0]["legs"][0]["steps"][1]
    assert rb["maneuver"] == {**rb["maneuver"], "type": "roundabout", "exit": 1}
    assert rb["instruction"] == "Enter the roundabout and take the 1st exit onto East Road"


# Issue 20: a group of roads that reaches the rest of the extract only by a track (its paved
# continuation lies outside the extract), as in the hills west of Monaco.
HILLS = """
    H----I                J----K
         |                |    |
         T----------------U    |
         |                |    |
         L                M----N----P
"""


def hills_map(track_tags: dict | None = None) -> OsmGrid:
    g = OsmGrid(HILLS, grid_m=20)
    g.way("HITL", highway="residential", name="Hill Road")
    g.way("JKNMUJ", highway="residential", name="Town Loop")
    g.way("NP", highway="residential", name="Town Spur")  # a dead end: the loop's U-turn
    g.way("TU", highway="track", **(track_tags or {}))
    return g


def test_a_track_joins_roads_nothing_else_joins(tmp_path):
    g = hills_map()
    ds = serve(tmp_path, g)
    res = route(ds, g.coord_between("H", "I"), g.coord_between("K", "N"))
    assert passes_near(res, g.coord("T")) and passes_near(res, g.coord("U"))
    w = res["waypoints"]
    assert w[0]["snap_distance"] < 1 and w[1]["snap_distance"] < 1
    # its duration is driven at the track's speed; the hour that keeps through traffic off
    # tracks is routing weight only
    assert res["routes"][0]["duration"] < 600


def test_a_point_beside_a_track_starts_on_a_road(tmp_path):
    g = hills_map()
    ds = serve(tmp_path, g)
    beside_track = g.offset("T", north_m=-3, east_m=150)  # 3 m from the track, 50+ m from roads
    w = route(ds, beside_track, g.coord_between("K", "N"))["waypoints"][0]
    assert w["snap_distance"] > 40


def test_a_track_closed_to_cars_joins_nothing(tmp_path):
    g = hills_map({"motor_vehicle": "agricultural"})
    ds = serve(tmp_path, g)
    res = route(ds, g.coord_between("H", "I"), g.coord_between("K", "N"))
    # no way out of the hill roads: the origin moves to the town's roads, and says so
    assert not passes_near(res, g.coord("T"))
    assert res["waypoints"][0]["snap_distance"] > 300
    assert res["waypoints"][0]["name"] == "Town Loop"


def test_a_road_shorter_by_a_track_is_still_driven_by_road(tmp_path):
    g = OsmGrid(
        """
        A---------B
        |         |
        C---------D
    """,
        grid_m=30,
    )
    g.way("ACDB", highway="residential")
    g.way("AB", highway="track")
    ds = serve(tmp_path, g)
    res = route(ds, g.offset("A", north_m=-10), g.offset("B", north_m=-10))
    assert passes_near(res, g.coord("C")) and passes_near(res, g.coord("D"))


def test_a_point_on_a_cut_off_fragment_starts_on_the_network(tmp_path):
    """Roads cut off at the extract's edge, 1.2 km from the rest: no route leaves them, so the
    point starts on the nearest road of the network (as OSRM and Valhalla do) and says how far."""
    g, _ = square()
    g.add_node("X", *g.offset("C", east_m=1200))
    g.add_node("Y", *g.offset("C", east_m=1300))
    g.way(["X", "Y"], highway="residential")
    ds = serve(tmp_path, g)
    res = route(ds, g.coord_between("X", "Y"), g.coord("A"))
    assert 1240 < res["waypoints"][0]["snap_distance"] < 1260
    assert res["waypoints"][0]["name"] == "East Street"
    # both ends on the fragment: the route stays on it
    inside = route(ds, g.coord_between("X", "Y", 0.2), g.coord_between("X", "Y", 0.8))
    assert inside["waypoints"][0]["snap_distance"] < 1
    assert 55 < inside["routes"][0]["distance"] < 65


def pocket_map() -> OsmGrid:
    """A town of two blocks; Harbour Road, two-way, leads from it to a one-way quay (G->H) that
    ends in a dead end: cars enter the quay and cannot leave it. Driving out along Harbour Road
    needs a U-turn where no road ends, so its two directions are two separate components of the
    turn graph, neither of them the town's."""
    g = OsmGrid(
        """
        A-----B-----C
        |     |     |
        D-----E-----F-----------G-----H-----I
    """,
        grid_m=20,
    )
    for ways in ("ABC", "DEF", "AD", "BE", "CF"):
        g.way(ways, highway="residential", name="Town Street")
    g.way("FG", highway="residential", name="Harbour Road")
    g.way("GH", highway="residential", name="Quay Lane", oneway="yes")
    g.way("HI", highway="residential", name="Quay End")
    return g


def test_a_two_way_road_into_a_one_way_pocket_starts_and_ends_routes(tmp_path):
    """Issue 20: a point on Harbour Road snaps onto it, not 120 m away onto the town's streets: a
    route leaves it towards the town and reaches it from the town, one direction each."""
    g = pocket_map()
    ds = serve(tmp_path, g)
    on_road = g.coord_between("F", "G")
    out = route(ds, on_road, g.coord("A"))
    back = route(ds, g.coord("A"), on_road)
    assert out["waypoints"][0]["snap_distance"] < 1 and back["waypoints"][1]["snap_distance"] < 1
    assert out["waypoints"][0]["name"] == "Harbour Road"
    for res in (out, back):
        assert res["routes"][0]["distance"] == pytest.approx(120 + 40 + 240, abs=3)


def test_a_point_in_a_one_way_pocket_starts_where_a_route_leaves(tmp_path):
    g = pocket_map()
    ds = serve(tmp_path, g)
    w = route(ds, g.coord_between("H", "I"), g.coord("A"))["waypoints"][0]
    assert w["name"] == "Harbour Road"
    assert w["snap_distance"] == pytest.approx(180, abs=2)
