"""The foot and bicycle profiles on maps drawn in the test (tests/engine/osm_grid.py): which ways
each may use, in which direction, how fast, and which turn restrictions hold for it.

Most rules are checked on one line ``A-B-C-D`` whose middle way B-C carries the tags under test:
a route from A-B to C-D travels B-C exactly when the profile may use B-C in that direction, and
its duration tells the speed on B-C (the outer ways are residential at known speeds)."""

from __future__ import annotations

import pytest

from engine import layout, polyline
from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter, NotFound
from engine.geo import haversine_m
from engine.ingest.pipeline import Stage, import_pbf
from engine.routing import bicycle, foot
from engine.services.routing import RoutingParams, run
from tests.engine.osm_grid import OsmGrid

ROADS = (
    Stage("roads", "engine.ingest.roads:run", tuple(layout.profile_graph_dir(p) for p in ("car", "foot", "bicycle"))),
)
LINE = "A----B----C----D"
GRID_M = 20.0  # B-C is 100 m


def serve(tmp_path, grid: OsmGrid, profiles=("car", "foot", "bicycle")) -> DatasetRegistry:
    pbf = grid.write(tmp_path / "grid.osm.pbf")
    import_pbf(pbf, tmp_path / "data", "grid", stages=ROADS, profiles=profiles)
    return DatasetRegistry(tmp_path / "data")


def route(ds, a, b, profile: str, **kw) -> dict | None:
    """The first route, or None when there is none (404)."""
    try:
        return run(ds, RoutingParams(origin=a, destination=b, profile=profile, **kw))["routes"][0]
    except NotFound:
        return None


def passes_near(r: dict, point, tol_m: float = 3.0) -> bool:
    """Whether the route's line comes within ``tol_m`` of the point (segments, not only vertices)."""
    pts = polyline.decode(r["geometry"])
    for (lat1, lng1), (lat2, lng2) in zip(pts, pts[1:], strict=False):
        for t in (i / 20 for i in range(21)):
            if haversine_m(lat1 + t * (lat2 - lat1), lng1 + t * (lng2 - lng1), *point) < tol_m:
                return True
    return False


class Line:
    """``A-B-C-D``: residential outer ways, the tags under test on B-C, and a long residential
    loop A-E-F-D 200 m to the south (so that the network is one piece whatever B-C allows)."""

    def __init__(self, tmp_path, **bc_tags: str) -> None:
        self.g = OsmGrid(LINE, grid_m=GRID_M)
        self.g.add_node("E", *self.g.offset("A", north_m=-200))
        self.g.add_node("F", *self.g.offset("D", north_m=-200))
        self.g.way("AB", highway="residential")
        self.g.way("BC", **bc_tags)
        self.g.way("CD", highway="residential")
        self.g.way("AEFD", highway="residential")
        self.ds = serve(tmp_path, self.g)
        self.west = self.g.coord_between("A", "B", 0.5)
        self.east = self.g.coord_between("C", "D", 0.5)

    def forward(self, profile: str) -> dict | None:
        """The route west to east along B-C, or None (no route, or one that does not travel B-C:
        a point on a piece of road nothing leaves moves to the well-connected network)."""
        return self._along_bc(route(self.ds, self.west, self.east, profile))

    def backward(self, profile: str) -> dict | None:
        return self._along_bc(route(self.ds, self.east, self.west, profile))

    def _along_bc(self, r: dict | None) -> dict | None:
        return r if r is not None and passes_near(r, self.g.coord_between("B", "C")) else None

    def both(self, profile: str) -> tuple[bool, bool]:
        return self.forward(profile) is not None, self.backward(profile) is not None

    def kmh_on_bc(self, profile: str, outer_kmh: float, backward: bool = False) -> float:
        """Speed on B-C from the route's duration (outer halves at ``outer_kmh``, no turn costs on
        a line: every node joins two roads)."""
        r = self.backward(profile) if backward else self.forward(profile)
        assert r is not None
        outer = 2 * (GRID_M * 5 / 2)
        bc_s = r["duration"] - outer / (outer_kmh / 3.6)
        return (GRID_M * 5) / bc_s * 3.6


# -- foot: which ways ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "walkable"),
    [
        ({"highway": "footway"}, True),
        ({"highway": "footway", "footway": "sidewalk"}, True),
        ({"highway": "footway", "footway": "crossing"}, True),
        ({"highway": "path"}, True),
        ({"highway": "pedestrian"}, True),
        ({"highway": "steps"}, True),
        ({"highway": "residential"}, True),
        ({"highway": "service"}, True),
        ({"highway": "primary", "sidewalk": "no"}, True),
        ({"highway": "trunk"}, False),
        ({"highway": "trunk", "sidewalk": "both"}, True),
        ({"highway": "trunk", "sidewalk": "right"}, True),
        ({"highway": "trunk", "foot": "yes"}, True),
        ({"highway": "motorway"}, False),
        ({"highway": "motorway", "sidewalk": "both"}, False),
        ({"highway": "residential", "foot": "no"}, False),
        ({"highway": "footway", "access": "private"}, False),
        ({"highway": "footway", "access": "private", "foot": "yes"}, True),
        ({"highway": "cycleway"}, False),
        ({"highway": "cycleway", "foot": "designated"}, True),
        ({"route": "ferry"}, True),
        ({"route": "ferry", "foot": "no"}, False),
    ],
)
def test_foot_uses_the_ways_it_may(tmp_path, tags, walkable):
    line = Line(tmp_path, **tags)
    assert line.both("foot") == (walkable, walkable)


def test_foot_ignores_oneway_but_not_oneway_foot(tmp_path):
    assert Line(tmp_path / "a", highway="residential", oneway="yes").both("foot") == (True, True)
    assert Line(tmp_path / "b", highway="residential", oneway="yes").both("car") == (True, False)
    assert Line(tmp_path / "c", highway="footway", oneway__foot="yes").both("foot") == (True, False)
    assert Line(tmp_path / "d", highway="footway", oneway__foot="-1").both("foot") == (False, True)


def test_foot_walks_at_5_kmh_and_slower_on_steps(tmp_path):
    assert Line(tmp_path / "a", highway="footway").kmh_on_bc("foot", foot.WALK_KMH) == pytest.approx(5.0, rel=0.02)
    steps = Line(tmp_path / "b", highway="steps").kmh_on_bc("foot", foot.WALK_KMH)
    assert steps == pytest.approx(foot.STEPS_KMH, rel=0.02)
    # a road is walked at walking speed, whatever its maxspeed
    assert Line(tmp_path / "c", highway="primary", maxspeed="70").kmh_on_bc("foot", 5.0) == pytest.approx(5.0, rel=0.02)


def test_foot_takes_the_footway_a_car_drives_around(tmp_path):
    g = OsmGrid(
        """
        A----B----C----F
             |    |
             D----E
        """,
        grid_m=20,
    )
    g.way("AB", highway="residential")
    g.way("BC", highway="footway")
    g.way("BDEC", highway="residential")
    g.way("CF", highway="residential")
    ds = serve(tmp_path, g)
    a, f = g.coord_between("A", "B"), g.coord_between("C", "F")
    assert passes_near(route(ds, a, f, "foot"), g.coord_between("B", "C"))
    car = route(ds, a, f, "car")
    assert passes_near(car, g.coord("D")) and not passes_near(car, g.coord_between("B", "C"))


def test_foot_crosses_a_pedestrian_area_straight(tmp_path):
    g = OsmGrid(
        """
        A---B-------C
            |       |
            |       |
            |       |
            E-------D---F
        """,
        grid_m=10,
    )
    g.way("AB", highway="footway")
    g.way("BCDEB", highway="pedestrian", area="yes", name="Market Square")
    g.way("DF", highway="footway")
    ds = serve(tmp_path, g)
    a, f = g.coord_between("A", "B"), g.coord_between("D", "F")
    r = route(ds, a, f, "foot")
    straight = (
        haversine_m(*a, *g.coord("B")) + haversine_m(*g.coord("B"), *g.coord("D")) + haversine_m(*g.coord("D"), *f)
    )
    assert r["distance"] == pytest.approx(straight, rel=0.01)
    assert not passes_near(r, g.coord("C")) and not passes_near(r, g.coord("E"))
    with pytest.raises(InvalidParameter):
        route(ds, a, f, "car")  # a square is no road


def test_foot_walks_around_a_concave_area_where_a_straight_line_would_leave_it(tmp_path):
    # an L-shaped square: the straight line from B to D would cross the missing corner by X
    g = OsmGrid(
        """
        A---B---C
            |   |
            |   |
            |   X---Y
            E-------D---F
        """,
        grid_m=10,
    )
    g.way("AB", highway="footway")
    g.way("BCXYDEB", highway="pedestrian", area="yes")
    g.way("DF", highway="footway")
    ds = serve(tmp_path, g)
    r = route(ds, g.coord_between("A", "B"), g.coord_between("D", "F"), "foot")
    assert r["distance"] == pytest.approx(20 + 120 + 20, rel=0.01)  # along the outline (either side)


# -- bicycle: which ways, which way, how fast -----------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "rideable"),
    [
        ({"highway": "cycleway"}, True),
        ({"highway": "residential"}, True),
        ({"highway": "primary"}, True),
        ({"highway": "track"}, True),
        ({"highway": "path"}, True),
        ({"highway": "footway"}, True),  # pushed
        ({"highway": "footway", "foot": "no"}, False),  # neither ridden nor pushed
        ({"highway": "corridor", "access": "yes"}, True),  # any other highway with a valid access tag
        ({"highway": "construction", "access": "yes"}, False),
        ({"highway": "residential", "cycleway": "separate"}, False),  # ride the separate track
        ({"highway": "residential", "cycleway:right": "separate", "bicycle": "yes"}, True),
        ({"highway": "motorway"}, False),
        ({"highway": "motorway", "bicycle": "yes"}, False),
        ({"highway": "trunk"}, False),
        ({"highway": "trunk", "bicycle": "yes"}, True),
        ({"highway": "residential", "bicycle": "no"}, False),
        ({"highway": "residential", "access": "private"}, False),
        ({"highway": "residential", "access": "no", "bicycle": "designated"}, True),
        ({"highway": "residential", "motorroad": "yes"}, False),
        ({"route": "ferry"}, True),
    ],
)
def test_bicycle_uses_the_ways_it_may(tmp_path, tags, rideable):
    assert Line(tmp_path, **tags).both("bicycle") == (rideable, rideable)


RIDE, PUSH = bicycle.RIDE_KMH["residential"], bicycle.WALK_KMH


@pytest.mark.parametrize(
    ("tags", "forward", "backward"),
    [
        ({}, RIDE, RIDE),
        ({"oneway": "yes"}, RIDE, PUSH),  # the bicycle is pushed against the one-way
        ({"oneway": "-1"}, PUSH, RIDE),
        ({"oneway": "yes", "foot": "no"}, RIDE, None),  # ... unless walking there is forbidden
        ({"oneway": "yes", "oneway:bicycle": "no"}, RIDE, RIDE),
        ({"oneway": "yes", "cycleway": "opposite"}, RIDE, RIDE),
        ({"oneway": "yes", "cycleway": "opposite_lane"}, RIDE, RIDE),
        ({"oneway": "yes", "cycleway:left": "opposite_track"}, RIDE, RIDE),
        ({"oneway:bicycle": "yes"}, RIDE, PUSH),
        ({"junction": "roundabout"}, RIDE, None),  # an implied one-way is not pushed against
    ],
)
def test_bicycle_directions(tmp_path, tags, forward, backward):
    line = Line(tmp_path, highway="residential", **tags)
    for direction, expected in (("forward", forward), ("backward", backward)):
        if expected is None:
            assert getattr(line, direction)("bicycle") is None, direction
        else:
            kmh = line.kmh_on_bc("bicycle", RIDE, backward=direction == "backward")
            assert kmh == pytest.approx(expected, rel=0.02), direction
    assert line.both("car") == ((True, False) if tags.get("oneway") == "yes" else line.both("car"))


def test_bicycle_speeds_by_class_surface_and_dismount(tmp_path):
    kmh = bicycle.RIDE_KMH["residential"]

    def speed(name: str, **tags: str) -> float:
        return Line(tmp_path / name, **tags).kmh_on_bc("bicycle", kmh)

    assert speed("cycleway", highway="cycleway") == pytest.approx(15.0, rel=0.02)
    assert speed("service", highway="service") == pytest.approx(15.0, rel=0.02)
    assert speed("path", highway="path") == pytest.approx(bicycle.RIDE_KMH["path"], rel=0.02)
    assert speed("asphalt", highway="residential", surface="asphalt") == pytest.approx(15.0, rel=0.02)
    gravel = speed("gravel", highway="residential", surface="gravel")
    cobbles = speed("cobbles", highway="residential", surface="cobblestone")
    assert gravel == pytest.approx(bicycle.SURFACE_KMH["gravel"], rel=0.02) and gravel < 15
    assert cobbles == pytest.approx(bicycle.SURFACE_KMH["cobblestone"], rel=0.02)
    assert speed("maxspeed", highway="residential", maxspeed="10") == pytest.approx(10.0, rel=0.02)
    assert speed("dismount", highway="cycleway", bicycle="dismount") == pytest.approx(bicycle.WALK_KMH, rel=0.02)
    assert speed("footway", highway="footway") == pytest.approx(bicycle.WALK_KMH, rel=0.02)  # pushed
    assert speed("shared", highway="footway", bicycle="designated") == pytest.approx(bicycle.DEFAULT_KMH, rel=0.02)
    assert speed("open", highway="pedestrian", access="yes") == pytest.approx(bicycle.DEFAULT_KMH, rel=0.02)


@pytest.mark.parametrize(("detour_m", "pushes"), [(250.0, True), (150.0, False)])
def test_bicycle_rides_around_a_short_push_unless_the_detour_costs_more(tmp_path, detour_m, pushes):
    """B-C is a footway (100 m pushed: 90 s); B-E-F-C rides around it, E and F ``detour_m`` south
    of B and C. 250 m: 600 m ridden take 144 s + two right turns, more than pushing and the get-off
    penalty (:data:`bicycle.MODE_CHANGE_S`): it pushes; 150 m: 400 m take 96 s + the turns, more
    than pushing alone but less than with the penalty: it rides around."""
    g = OsmGrid(LINE, grid_m=20.0)
    g.add_node("E", *g.offset("B", north_m=-detour_m))
    g.add_node("F", *g.offset("C", north_m=-detour_m))
    g.way("AB", highway="residential")
    g.way("BC", highway="footway")
    g.way("CD", highway="residential")
    g.way("BEFC", highway="residential")
    ds = serve(tmp_path, g, profiles=("car", "bicycle"))
    r = route(ds, g.coord_between("A", "B"), g.coord_between("C", "D"), "bicycle")
    assert r is not None and passes_near(r, g.coord_between("B", "C")) is pushes


CROSS = """
         N
         |
    W----X----E
         |
         S
"""


def test_bicycle_turns_cost_nothing_by_their_angle_and_junctions_are_hubs(tmp_path):
    """Left and right at a crossing take the same time (no angle price), and the crossing's
    approaches share one CH hub."""
    g = OsmGrid(CROSS, grid_m=20.0)
    g.way("SXN", highway="residential")
    g.way("WXE", highway="residential")
    ds = serve(tmp_path, g, profiles=("car", "bicycle"))
    start = g.coord_between("S", "X")
    left = route(ds, start, g.coord_between("X", "W"), "bicycle")
    right = route(ds, start, g.coord_between("X", "E"), "bicycle")
    assert left is not None and right is not None
    assert left["duration"] == pytest.approx(right["duration"], abs=0.05)
    graph = ds.require("grid").router_for("bicycle").g
    assert graph.ch_hub_edge.shape[0] == 1  # X: four approaches, four ways out
    car = ds.require("grid").router_for("car").g
    assert car.ch_hub_edge.shape[0] == 0  # the car's turns are priced by their angle


# -- turn restrictions per profile -----------------------------------------------------------------

TEE = """
    A----B----C
         |
         D
"""


@pytest.mark.parametrize(
    ("tags", "restricted"),
    [
        ({"restriction": "no_straight_on"}, {"car": True, "bicycle": True, "foot": False}),
        ({"restriction": "no_straight_on", "except": "bicycle"}, {"car": True, "bicycle": False, "foot": False}),
        ({"restriction:bicycle": "no_straight_on"}, {"car": False, "bicycle": True, "foot": False}),
        ({"restriction:foot": "no_straight_on"}, {"car": False, "bicycle": False, "foot": True}),
        ({"restriction": "only_right_turn"}, {"car": True, "bicycle": True, "foot": False}),
    ],
)
def test_turn_restrictions_apply_to_the_profiles_they_name(tmp_path, tags, restricted):
    g = OsmGrid(TEE, grid_m=20)
    ab = g.way("AB", highway="residential")
    bc = g.way("BC", highway="residential")
    bd = g.way("BD", highway="residential")
    kind = next(v for k, v in tags.items() if k.startswith("restriction"))
    to = bd if kind.startswith("only_") else bc
    members = [("w", ab, "from"), ("n", "B", "via"), ("w", to, "to")]
    g.relation(members, type="restriction", **{k.replace(":", "__"): v for k, v in tags.items()})
    ds = serve(tmp_path, g)
    a, c = g.coord_between("A", "B"), g.coord_between("B", "C")
    for profile, expected in restricted.items():
        r = route(ds, a, c, profile)
        # a restricted turn is made by turning round at the dead end D
        assert passes_near(r, g.coord("D")) is expected, profile


# -- the service: profile names, regions without a profile, no way in reach --------------------------


def test_aliases_unknown_and_missing_profiles(tmp_path):
    g = OsmGrid(LINE, grid_m=GRID_M)
    g.way("ABCD", highway="residential")
    ds = serve(tmp_path, g, profiles=("car", "foot"))
    a, d = g.coord_between("A", "B"), g.coord_between("C", "D")
    assert route(ds, a, d, "walking")["duration"] == route(ds, a, d, "foot")["duration"]
    assert route(ds, a, d, "driving")["duration"] == route(ds, a, d, "car")["duration"]
    with pytest.raises(InvalidParameter) as unknown:
        route(ds, a, d, "hovercraft")
    assert unknown.value.parameter == "profile" and "car, foot, bicycle" in str(unknown.value)
    with pytest.raises(InvalidParameter) as missing:
        route(ds, a, d, "cycling")
    assert missing.value.parameter == "profile"
    assert "bicycle" in str(missing.value) and "car, foot" in str(missing.value)
    assert ds.get("grid").profiles == ("car", "foot")


def test_a_point_far_from_any_walkable_way_names_the_parameter(tmp_path):
    g = OsmGrid("A----B----C----D", grid_m=300)  # the middle of C-D is 2 km from B
    g.way("AB", highway="footway")
    g.way("CD", highway="motorway")
    ds = serve(tmp_path, g)
    with pytest.raises(InvalidParameter) as far:
        route(ds, g.coord_between("A", "B"), g.coord_between("C", "D"), "foot")
    assert far.value.parameter == "destination" and "walkable" in str(far.value)


# -- isochrones per profile ---------------------------------------------------------------------------


def test_isochrones_follow_the_profile(tmp_path):
    from engine.services.isochrone import IsochroneParams
    from engine.services.isochrone import run as isochrone

    g = OsmGrid(
        """
        A-----B-----C-----D-----E
                    |
                    F
        """,
        grid_m=100,
    )
    g.way("ABC", highway="residential")
    g.way("CDE", highway="footway")  # only walkers go east of C
    g.way("CF", highway="residential")
    ds = serve(tmp_path, g, profiles=("car", "foot"))
    origin = g.coord_between("B", "C")

    def area(profile: str, times: tuple[float, ...] = (), distances: tuple[float, ...] = ()) -> float:
        fc = isochrone(ds, IsochroneParams(origin[0], origin[1], times=times, distances=distances, profile=profile))
        return fc["features"][0]["properties"]["area_m2"]

    # 2 minutes: a car covers the whole road (25 km/h: 830 m), a walker about 170 m of it
    assert area("foot", times=(2.0,)) < area("car", times=(2.0,)) / 2
    # 350 m of distance: the walker also goes east along the footway the car may not use
    assert area("walking", distances=(350.0,)) > area("car", distances=(350.0,))
    with pytest.raises(InvalidParameter) as missing:
        area("bicycle", times=(2.0,))
    assert missing.value.parameter == "profile" and "car, foot" in str(missing.value)


# -- the import command -----------------------------------------------------------------------------


def test_import_command_builds_the_chosen_profiles(tmp_path):
    from click.testing import CliRunner

    from cli.main import main

    g = OsmGrid(LINE, grid_m=GRID_M)
    g.way("ABCD", highway="residential", name="Main Street")
    pbf = g.write(tmp_path / "grid.osm.pbf")
    env = {"DATA_DIR": str(tmp_path / "data")}
    bad = CliRunner().invoke(main, ["import", str(pbf), "--profiles", "car,hovercraft"], env=env)
    assert bad.exit_code != 0 and "hovercraft" in bad.output and "car, foot, bicycle" in bad.output
    done = CliRunner().invoke(main, ["import", str(pbf), "--profiles", "walking"], env=env)
    assert done.exit_code == 0, done.output
    assert "profiles             foot" in done.output
    version = layout.current_link(tmp_path / "data", "grid").resolve()
    assert (version / "graph-foot").is_dir() and not (version / "graph").exists()
    assert DatasetRegistry(tmp_path / "data").get("grid").profiles == ("foot",)


def test_shared_flag_bits_match_the_car_profile():
    from engine.routing import profile, way_tags

    for name in ("FLAG_FERRY", "FLAG_ROUNDABOUT", "FLAG_ONEWAY", "FLAG_TUNNEL"):
        assert getattr(way_tags, name) == getattr(profile, name)


def test_snap_to_road_follows_the_profile(tmp_path):
    from engine.services.snaptoroad import SnapParams
    from engine.services.snaptoroad import run as snap

    g = OsmGrid(
        """
        A----------B
        C----------D
        """,
        grid_m=20,
    )
    g.way("AB", highway="residential", name="Road")
    g.way("CD", highway="footway", name="Walk")
    ds = serve(tmp_path, g, profiles=("car", "foot"))
    trace = tuple(g.offset("C", north_m=3, east_m=e) for e in (20, 60, 100, 140))  # on the footway
    assert {s["name"] for s in snap(ds, SnapParams(trace, profile="foot"))["snapped"]} == {"Walk"}
    assert {s["name"] for s in snap(ds, SnapParams(trace))["snapped"]} == {"Road"}
    with pytest.raises(InvalidParameter) as missing:
        snap(ds, SnapParams(trace, profile="bicycle"))
    assert missing.value.parameter == "profile"
