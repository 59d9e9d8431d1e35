"""Geofencing engine: fence validation, FenceIndex (inside, distance in metres), service results.

Fences are drawn on small ASCII grids (10 m cells) placed on the map with a local projection, so
every expectation below can be read off the drawing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from shapely.geometry import Point

from engine.errors import InvalidParameter
from engine.geofence.distance import GEOD, circle_bbox
from engine.geofence.index import FenceIndex
from engine.geofence.model import parse_fence
from engine.limits import Limits
from engine.services.geofencing import GeofenceCheckParams, run

CELL_M = 10.0


def grid(text: str, lat0: float, lng0: float) -> dict[str, tuple[float, float]]:
    """Letters of an ASCII grid -> (lat, lng); columns and rows are CELL_M apart on the WGS84
    ellipsoid (local radii of curvature at lat0), row 0 on top, origin at the top-left character.
    Cells are separated by one space, so column = character index / 2."""
    a, f = 6_378_137.0, 1 / 298.257223563
    e2 = f * (2 - f)
    s2 = math.sin(math.radians(lat0)) ** 2
    m_per_deg_lat = math.radians(1) * a * (1 - e2) / (1 - e2 * s2) ** 1.5
    m_per_deg_lng = math.radians(1) * a / math.sqrt(1 - e2 * s2) * math.cos(math.radians(lat0))
    out = {}
    for row, line in enumerate(text.strip("\n").splitlines()):
        for ci, ch in enumerate(line):
            if ch.isalpha():
                assert ci % 2 == 0, f"letter {ch} off the grid"
                out[ch] = (lat0 - row * CELL_M / m_per_deg_lat, lng0 + ci / 2 * CELL_M / m_per_deg_lng)
    return out


def ring(g, letters: str):
    pts = [[g[c][1], g[c][0]] for c in letters]
    return pts + [pts[0]]


def polygon_body(*rings, name=None, **extra):
    return {
        "type": "Feature",
        "geometry": {"type": "Polygon", "coordinates": list(rings)},
        "properties": {"name": name, **extra},
    }


# A square of 90 m x 70 m with a 50 m x 30 m hole; lowercase letters are test points.
YARD = """
A . . . . . . . . B . . p
. a . . . . . . . . . . .
. . E . . . . F . . . . .
. . . . . h . . . . . . .
. . . . . . . . . . . . .
. . H . . . . G . . . . .
. . . . . . . . . . . . .
D . . . e . . . . C . . .
"""


@pytest.fixture(scope="module")
def yard():
    g = grid(YARD, 43.7300, 7.4200)  # Monaco
    fence = parse_fence(polygon_body(ring(g, "ABCD"), ring(g, "EFGH"), name="Yard"), fence_id="yard")
    return g, FenceIndex([fence])


# --- inside / outside / edge / hole ---------------------------------------------------------


@pytest.mark.parametrize(
    "letter, inside, distance",
    [
        ("a", True, 10.0),  # one cell from the outer edges, ~14 m from the hole corner
        ("h", False, 10.0),  # in the hole, one cell below its top edge
        ("e", True, 0.0),  # exactly on the bottom edge: boundary counts as inside
        ("A", True, 0.0),  # a vertex
        ("E", True, 0.0),  # a vertex of the hole
        ("p", False, 30.0),  # three cells east of B
    ],
)
def test_yard_inside_and_distance(yard, letter, inside, distance):
    g, index = yard
    lat, lng = g[letter]
    (status,) = index.check(lat, lng)
    assert status.inside is inside
    assert status.distance == pytest.approx(distance, abs=0.05)
    assert index.containing(lat, lng) == (["yard"] if inside else [])
    assert index.containing_many([lat], [lng]) == [["yard"] if inside else []]


def test_point_on_hole_edge_is_inside(yard):
    g, index = yard
    # halfway between E and F: on the hole's top edge (same latitude as both, exactly)
    lat, lng = g["E"][0], (g["E"][1] + g["F"][1]) / 2
    assert index.containing(lat, lng) == ["yard"]
    (status,) = index.check(lat, lng)
    assert status.inside and status.distance == pytest.approx(0.0, abs=0.01)
    # a hair into the hole: outside
    assert index.containing(lat - 1e-7, lng) == []


def test_multipolygon_with_two_parts():
    g = grid(
        """
A . B . . . E . F
. a . . x . . b .
D . C . . . H . G
""",
        60.1700,
        24.9400,
    )
    body = {
        "type": "Feature",
        "properties": {"name": "Two"},
        "geometry": {"type": "MultiPolygon", "coordinates": [[ring(g, "ABCD")], [ring(g, "EFGH")]]},
    }
    index = FenceIndex([parse_fence(body, fence_id="two")])
    for letter, inside, dist in (("a", True, 10.0), ("b", True, 10.0), ("x", False, 20.0)):
        (s,) = index.check(*g[letter])
        assert (s.inside, round(s.distance, 1)) == (inside, dist), letter


# --- circles ---------------------------------------------------------------------------------


def test_circle_at_helsinki_has_radius_in_metres():
    lat0, lng0 = 60.1699, 24.9384
    index = FenceIndex(
        [parse_fence({"type": "circle", "center": {"lat": lat0, "lng": lng0}, "radius": 100}, fence_id="c")]
    )
    for az in range(0, 360, 30):
        for dist, inside in ((99.0, True), (101.0, False), (99.9, True), (100.1, False)):
            lng, lat, _ = GEOD.fwd(lng0, lat0, az, dist)
            assert index.containing(lat, lng) == (["c"] if inside else []), (az, dist)
            (s,) = index.check(lat, lng)
            assert s.inside is inside
            assert s.distance == pytest.approx(abs(dist - 100.0), abs=0.01)
    # a naive degree circle (radius/111 km in both axes) is only ~50 m wide east-west at 60N
    lng, lat, _ = GEOD.fwd(lng0, lat0, 90, 75.0)
    assert lng - lng0 > 100 / 111_000  # outside a naive degree circle...
    assert index.containing(lat, lng) == ["c"]  # ...but 75 m from the centre


def test_circle_bbox_contains_circle_everywhere():
    for lat in (0.0, 43.7, 60.17, 78.2, 89.5, -70.0):
        for r in (1.0, 500.0, 100_000.0):
            box = shapely.box(*circle_bbox(lat, 10.0, r))
            for az in range(0, 360, 15):
                lng, plat, _ = GEOD.fwd(10.0, lat, az, r)
                assert box.covers(Point(lng, plat)), (lat, r, az)


# --- oracle: random fences against brute force -----------------------------------------------


def _random_fences(rng, n, bbox):
    min_lng, min_lat, max_lng, max_lat = bbox
    fences, raw = [], []
    for i in range(n):
        cx, cy = rng.uniform(min_lng, max_lng), rng.uniform(min_lat, max_lat)
        if i % 3 == 0:
            r = float(rng.uniform(5, 300))
            fences.append(
                parse_fence({"type": "circle", "center": {"lat": cy, "lng": cx}, "radius": r}, fence_id=f"f{i}")
            )
            raw.append(("circle", (cy, cx, r)))
        else:
            k = int(rng.integers(4, 20))
            ang = np.linspace(0, 2 * np.pi, k, endpoint=False) + rng.uniform(0, 0.9, k) * 2 * np.pi / k
            rad = rng.uniform(0.0003, 0.003, k)
            pts = np.c_[cx + rad * np.cos(ang) * 1.5, cy + rad * np.sin(ang)].tolist()
            rings = [pts + [pts[0]]]
            if i % 3 == 2:  # a small hole around the centre
                h = [
                    [cx - 0.0001, cy - 0.0001],
                    [cx + 0.0001, cy - 0.0001],
                    [cx + 0.0001, cy + 0.0001],
                    [cx - 0.0001, cy + 0.0001],
                    [cx - 0.0001, cy - 0.0001],
                ]
                rings.append(h)
            fences.append(parse_fence(polygon_body(*rings), fence_id=f"f{i}"))
            raw.append(("polygon", shapely.Polygon(rings[0], rings[1:])))
    return fences, raw


def _brute_inside(raw, lat, lng):
    out = []
    for i, (kind, g) in enumerate(raw):
        if kind == "circle":
            if GEOD.inv(g[1], g[0], lng, lat)[2] <= g[2]:
                out.append(f"f{i}")
        elif g.covers(Point(lng, lat)):
            out.append(f"f{i}")
    return out


def _dense_boundary(g):
    """Boundary vertices every ~0.2-0.3 m (lon/lat)."""
    return shapely.get_coordinates(shapely.segmentize(g.boundary, 0.000003))


def _brute_distance(kind, g, lat, lng, dense=None):
    if kind == "circle":
        return abs(GEOD.inv(g[1], g[0], lng, lat)[2] - g[2])
    coords = _dense_boundary(g) if dense is None else dense
    return float(GEOD.inv(np.full(len(coords), lng), np.full(len(coords), lat), coords[:, 0], coords[:, 1])[2].min())


@pytest.mark.parametrize(
    "bbox", [(7.40, 43.72, 7.44, 43.75), (24.93, 60.16, 24.96, 60.18), (18.9, 69.63, 18.99, 69.67)]
)
def test_index_matches_brute_force(bbox):
    rng = np.random.default_rng(8)
    fences, raw = _random_fences(rng, 120, bbox)
    index = FenceIndex(fences)
    lats = rng.uniform(bbox[1], bbox[3], 400)
    lngs = rng.uniform(bbox[0], bbox[2], 400)
    many = index.containing_many(lats, lngs)
    hits = 0
    for lat, lng, got_many in zip(lats, lngs, many, strict=True):
        expected = _brute_inside(raw, lat, lng)
        assert sorted(index.containing(lat, lng)) == sorted(expected)
        assert sorted(got_many) == sorted(expected)
        hits += len(expected)
    assert hits > 50  # the random layout does put points inside fences
    # distances: a few points against every fence, against a densified geodesic brute force
    dense = [_dense_boundary(g) if kind == "polygon" else None for kind, g in raw]
    for lat, lng in zip(lats[:5], lngs[:5], strict=True):
        statuses = {s.id: s for s in index.check(lat, lng)}
        for i, (kind, g) in enumerate(raw):
            expected = _brute_distance(kind, g, lat, lng, dense[i])
            got = statuses[f"f{i}"].distance
            assert got == pytest.approx(expected, abs=0.3, rel=1e-3), (kind, i)


def test_check_order_within_and_subset():
    rng = np.random.default_rng(3)
    bbox = (24.93, 60.16, 24.96, 60.18)
    fences, raw = _random_fences(rng, 60, bbox)
    index = FenceIndex(fences)
    lat, lng = 60.17, 24.945
    full = index.check(lat, lng)
    assert len(full) == 60
    keys = [(not s.inside, s.distance) for s in full]
    assert keys == sorted(keys)
    near = index.check(lat, lng, within_m=400)
    assert [s.id for s in near] == [s.id for s in full if s.inside or s.distance <= 400]
    subset = index.check(lat, lng, ["f5", "f1", "f5"])
    assert [s.id for s in subset] == ["f5", "f1"]
    by_id = {s.id: s for s in full}
    assert subset[0] == by_id["f5"] and subset[1] == by_id["f1"]
    with pytest.raises(InvalidParameter) as err:
        index.check(lat, lng, ["f1", "nope"])
    assert err.value.parameter == "fences" and "nope" in err.value.message


def test_empty_index():
    index = FenceIndex([])
    assert index.containing(43.73, 7.42) == [] and index.check(43.73, 7.42) == []
    assert index.containing_many([43.73], [7.42]) == [[]]


def test_duplicate_ids_refused():
    f = parse_fence({"type": "circle", "center": {"lat": 1, "lng": 1}, "radius": 5}, fence_id="x")
    with pytest.raises(ValueError):
        FenceIndex([f, f])


# --- validation ------------------------------------------------------------------------------

SQUARE = [[7.42, 43.73], [7.43, 43.73], [7.43, 43.74], [7.42, 43.74], [7.42, 43.73]]


def _poly(coords):
    return {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": coords}, "properties": {}}


@pytest.mark.parametrize(
    "body, parameter, words",
    [
        (_poly([SQUARE[:-1]]), "geometry", "not closed"),
        (_poly([[[7.42, 43.73], [7.43, 43.73], [7.42, 43.73]]]), "geometry", "at least 4"),
        (
            _poly([[[7.42, 43.73], [7.43, 43.74], [7.43, 43.73], [7.42, 43.74], [7.42, 43.73]]]),
            "geometry",
            "self-intersecting",
        ),
        (_poly([[[7.42, 43.73], [190.0, 43.73], [7.43, 43.74], [7.42, 43.73]]]), "geometry", "longitude"),
        (_poly([[[7.42, 43.73], [7.43, 95.0], [7.43, 43.74], [7.42, 43.73]]]), "geometry", "latitude"),
        (_poly([SQUARE, [[7.0, 43.0], [7.01, 43.0], [7.01, 43.01], [7.0, 43.0]]]), "geometry", "hole"),
        (_poly([[[7.42, 43.73], ["x", 43.7], [7.43, 43.74], [7.42, 43.73]]]), "geometry", "numbers"),
        (
            {"type": "Feature", "geometry": {"type": "Point", "coordinates": [7.4, 43.7]}},
            "geometry",
            "Polygon or MultiPolygon",
        ),
        ({"type": "circle", "center": {"lat": 43.7, "lng": 7.4}, "radius": 0}, "radius", "> 0"),
        ({"type": "circle", "center": {"lat": 43.7, "lng": 7.4}, "radius": -5}, "radius", "> 0"),
        ({"type": "circle", "center": {"lat": 43.7, "lng": 7.4}, "radius": 100_001}, "radius", "maximum"),
        ({"type": "circle", "center": {"lat": 43.7, "lng": 7.4}, "radius": True}, "radius", "number"),
        ({"type": "circle", "center": {"lat": 91, "lng": 7.4}, "radius": 10}, "center", "latitude"),
        ({"type": "circle", "center": [43.7, 7.4], "radius": 10}, "center", "lat"),
        ({"type": "square"}, "type", "circle"),
        ({"type": "admin", "osm_id": "x"}, "osm_id", "integer"),
        ({"type": "circle", "center": {"lat": 1, "lng": 1}, "radius": 5, "name": 7}, "name", "string"),
        ({"type": "circle", "center": {"lat": 1, "lng": 1}, "radius": 5, "metadata": [1]}, "metadata", "object"),
        (
            {"type": "circle", "center": {"lat": 1, "lng": 1}, "radius": 5, "metadata": {"a": "x" * 5000}},
            "metadata",
            "bytes",
        ),
    ],
)
def test_validation_names_reason_and_parameter(body, parameter, words):
    with pytest.raises(InvalidParameter) as err:
        parse_fence(body)
    assert err.value.parameter == parameter
    assert words in err.value.message


def test_too_many_vertices():
    limits = Limits(geofence_max_vertices=50)
    ang = np.linspace(0, 2 * np.pi, 60, endpoint=False)
    pts = np.c_[7.42 + 0.01 * np.cos(ang), 43.73 + 0.01 * np.sin(ang)].tolist()
    with pytest.raises(InvalidParameter) as err:
        parse_fence(_poly([pts + [pts[0]]]), limits=limits)
    assert err.value.parameter == "geometry" and "vertices" in err.value.message
    parse_fence(_poly([pts[:40] + [pts[0]]]), limits=limits)  # under the limit: fine


def test_round_trip_and_admin_reference():
    body = {
        "type": "circle",
        "center": {"lat": 60.17, "lng": 24.94},
        "radius": 250.5,
        "name": "Kauppatori",
        "metadata": {"zone": 3},
    }
    f = parse_fence(body, fence_id="k")
    again = parse_fence(f.to_body(), fence_id="k")
    assert (again.center, again.radius, again.name, dict(again.metadata)) == (
        (60.17, 24.94),
        250.5,
        "Kauppatori",
        {"zone": 3},
    )
    assert f.to_feature()["geometry"] == {"type": "Point", "coordinates": [24.94, 60.17]}

    square = shapely.Polygon(SQUARE)
    areas = {42: square, 43: {"type": "Polygon", "coordinates": [SQUARE]}}
    admin = parse_fence({"type": "admin", "osm_id": 42, "name": "Area"}, fence_id="a", resolve_admin=areas.get)
    assert admin.kind == "admin" and admin.geometry.equals(square)
    assert parse_fence({"type": "admin", "osm_id": 43}, resolve_admin=areas.get).geometry.equals(square)
    with pytest.raises(InvalidParameter) as err:
        parse_fence({"type": "admin", "osm_id": 7}, resolve_admin=areas.get)
    assert err.value.parameter == "osm_id"
    poly = parse_fence(_poly([SQUARE]) | {"properties": {"name": "Sq", "metadata": {"k": "v"}}})
    assert poly.name == "Sq" and poly.metadata == {"k": "v"}
    assert parse_fence(poly.to_body()).geometry.equals(poly.geometry)
    # the index serves admin fences like polygons
    index = FenceIndex([admin])
    assert index.containing(43.735, 7.425) == ["a"]


# --- service -----------------------------------------------------------------------------------


def test_service_result_shape_and_errors(yard):
    g, index = yard
    out = run(index, GeofenceCheckParams(lat=g["a"][0], lng=g["a"][1]))
    assert out == {
        "fences": [
            {
                "id": "yard",
                "name": "Yard",
                "inside": True,
                "distance": pytest.approx(10.0, abs=0.05),
                "transition": None,
            }
        ]
    }
    with pytest.raises(InvalidParameter) as err:
        run(index, GeofenceCheckParams(lat=43.7, lng=7.4, fence_ids=("other-account-fence",)))
    assert err.value.parameter == "fences"
    with pytest.raises(InvalidParameter) as err:
        run(index, GeofenceCheckParams(lat=43.7, lng=7.4, fence_ids=()))
    assert err.value.parameter == "fences"
    with pytest.raises(InvalidParameter) as err:
        run(index, GeofenceCheckParams(lat=93.0, lng=7.4))
    assert err.value.parameter == "lat"
    with pytest.raises(ValueError):
        run(index, GeofenceCheckParams(lat=43.7, lng=7.4, device="d1"))


def test_large_fence_distance_and_mixed_subset():
    """A fence over the segment-array limit (an admin-like wavy outline of 3000 vertices) is
    measured on its chunks; mixed with small fences the answers still match brute force."""
    ang = np.linspace(0, 2 * np.pi, 3000, endpoint=False)
    r = 0.01 * (1 + 0.05 * np.sin(ang * 40))
    outline = np.c_[24.94 + 2 * r * np.cos(ang), 60.17 + r * np.sin(ang)].tolist()
    big = {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [outline + [outline[0]]]}}
    small = polygon_body([[24.95, 60.17], [24.96, 60.17], [24.96, 60.175], [24.95, 60.17]])
    index = FenceIndex([parse_fence(big, fence_id="big"), parse_fence(small, fence_id="small")])
    raw = {
        "big": ("polygon", shapely.Polygon(outline)),
        "small": ("polygon", shapely.Polygon([[24.95, 60.17], [24.96, 60.17], [24.96, 60.175]])),
    }
    rng = np.random.default_rng(5)
    for lat, lng in zip(rng.uniform(60.15, 60.19, 8), rng.uniform(24.90, 24.98, 8), strict=True):
        for s in index.check(lat, lng, ["small", "big"]):
            kind, g = raw[s.id]
            assert s.inside == g.covers(Point(lng, lat))
            assert s.distance == pytest.approx(_brute_distance(kind, g, lat, lng), abs=0.3, rel=1e-3)


def test_circle_across_the_antimeridian():
    index = FenceIndex(
        [parse_fence({"type": "circle", "center": {"lat": 0.0, "lng": 179.9995}, "radius": 500}, fence_id="dateline")]
    )
    lng, lat, _ = GEOD.fwd(179.9995, 0.0, 90, 300)  # 300 m east: across the line, lng < -179.99
    assert lng < -179.99
    assert index.containing(lat, lng) == ["dateline"]
    lng, lat, _ = GEOD.fwd(179.9995, 0.0, 90, 700)
    assert index.containing(lat, lng) == []


def test_index_shared_between_threads():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(11)
    bbox = (7.40, 43.72, 7.44, 43.75)
    fences, _ = _random_fences(rng, 150, bbox)
    index = FenceIndex(fences)
    pts = list(zip(rng.uniform(bbox[1], bbox[3], 600), rng.uniform(bbox[0], bbox[2], 600), strict=True))
    expected = [index.containing(*p) for p in pts]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda p: index.containing(*p), pts))
    assert got == expected


def test_warm_up_loads_the_distance_kernel():
    from engine.geofence.index import warm_up

    warm_up()  # what a web worker runs at start (config/gunicorn.py): must not raise
