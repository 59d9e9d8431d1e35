"""Geometry download of admin areas: lookups, validity, holes, simplification in metres."""

from __future__ import annotations

import pytest
import shapely
from shapely.geometry import shape

from engine.errors import NotFound
from engine.services.geometry import GeometryParams, run, simplify_m


def test_by_name_level_is_valid_multipolygon(datasets):
    fc = run(datasets, GeometryParams(name="Monaco", level=8))
    assert fc["type"] == "FeatureCollection" and len(fc["features"]) == 1
    f = fc["features"][0]
    geom = shape(f["geometry"])
    assert geom.geom_type == "MultiPolygon" and geom.is_valid and geom.area > 0
    props = f["properties"]
    assert props["admin_level"] == 8 and props["name"] == "Monaco" and props["country"] == "MCO"
    assert props["osm"]["type"] == "relation"


def test_by_point_lists_the_hierarchy(datasets):
    fc = run(datasets, GeometryParams(lat=43.7311, lng=7.4197))
    levels = [f["properties"]["admin_level"] for f in fc["features"]]
    assert levels == sorted(levels) and 2 in levels and 10 in levels
    pt = shapely.Point(7.4197, 43.7311)
    assert all(shape(f["geometry"]).covers(pt) for f in fc["features"])
    country = next(f for f in fc["features"] if f["properties"]["admin_level"] == 2)
    assert country["properties"]["iso3166_1"] == "MC"


def test_by_osm_id_and_wkt(datasets):
    fc = run(datasets, GeometryParams(lat=43.7311, lng=7.4197, level=10))
    osm_id = fc["features"][0]["properties"]["osm"]["id"]
    out = run(datasets, GeometryParams(osm_id=osm_id, format="wkt"))
    wkt = out["wkt"][0]["wkt"]
    assert wkt.startswith("MULTIPOLYGON") and shapely.from_wkt(wkt).is_valid


@pytest.mark.parametrize("tol", [5.0, 50.0, 500.0])
def test_simplify_keeps_validity_and_shape(datasets, tol):
    full = shape(run(datasets, GeometryParams(name="Monaco", level=8))["features"][0]["geometry"])
    simple = shape(run(datasets, GeometryParams(name="Monaco", level=8, simplify=tol))["features"][0]["geometry"])
    assert simple.is_valid and simple.geom_type == "MultiPolygon"
    assert shapely.get_num_coordinates(simple) <= shapely.get_num_coordinates(full)
    # the boundary moves by about the tolerance, not more (Hausdorff in degrees -> metres)
    assert simple.hausdorff_distance(full) * 111_000 <= tol * 1.6 + 1


def test_simplify_keeps_holes():
    outer = [(0, 0), (0.01, 0), (0.01, 0.01), (0, 0.01), (0, 0)]
    hole = [(0.004, 0.004), (0.006, 0.004), (0.006, 0.006), (0.004, 0.006), (0.004, 0.004)]
    poly = shapely.Polygon(outer, [hole])
    out = simplify_m(poly, 10.0)
    assert out.is_valid and len(out.interiors if out.geom_type == "Polygon" else out.geoms[0].interiors) == 1


def test_unknown_area_is_not_found(datasets):
    with pytest.raises(NotFound):
        run(datasets, GeometryParams(name="Atlantis"))
