"""The "layers" import stage and its read side (LayerStore)."""

from __future__ import annotations

import numpy as np
import pytest
import shapely

from engine.ingest.layers import assemble_sea, classify_area, classify_line
from engine.render.mercator import Viewport, to_mercator

MONACO = (43.7384, 7.4246)


def test_classify_area():
    assert classify_area({"building": "yes"}) == ("building", "building")
    assert classify_area({"building": "no", "landuse": "grass"}) == ("landuse", "park")
    assert classify_area({"natural": "water"}) == ("water", "water")
    assert classify_area({"waterway": "riverbank"}) == ("water", "water")
    assert classify_area({"leisure": "park", "name": "x"}) == ("landuse", "park")
    assert classify_area({"natural": "wood"}) == ("landuse", "wood")
    assert classify_area({"natural": "beach"}) == ("landuse", "beach")
    assert classify_area({"leisure": "pitch"}) == ("landuse", "pitch")
    assert classify_area({"highway": "pedestrian", "area": "yes"}) == ("landuse", "pedestrian")
    assert classify_area({"highway": "residential"}) is None
    assert classify_area({"natural": "coastline"}) is None


def test_classify_line():
    assert classify_line({"highway": "primary_link"}) == ("road", "primary", 0)
    assert classify_line({"highway": "residential", "tunnel": "yes"}) == ("road", "residential", 1)
    assert classify_line({"highway": "footway", "bridge": "yes"}) == ("road", "footway", 2)
    assert classify_line({"highway": "footway", "indoor": "yes"}) is None
    assert classify_line({"highway": "footway", "footway": "sidewalk"}) == ("road", "sidewalk", 0)
    assert classify_line({"highway": "pedestrian", "area": "yes"}) is None
    assert classify_line({"highway": "bus_stop"}) is None
    assert classify_line({"railway": "tram"}) == ("rail", "tram", 0)
    assert classify_line({"waterway": "stream"}) == ("waterway", "stream", 0)
    assert classify_line({"waterway": "stream", "tunnel": "culvert"}) is None
    assert classify_line({"building": "yes"}) is None


def test_sea_is_on_the_right_of_the_coastline():
    bbox = (0.0, 0.0, 10.0, 10.0)
    eastward = shapely.LineString([(-1, 5), (4, 5.5), (11, 5)])  # land north (left), sea south
    sea = assemble_sea([eastward], bbox)
    assert sea is not None
    assert sea.contains(shapely.Point(5, 2)) and not sea.contains(shapely.Point(5, 8))
    # below the line: trapezoids 0..4 (y 5.1 -> 5.5) and 4..10 (y 5.5 -> 5.0714)
    assert sea.area == pytest.approx((5.1 + 5.5) / 2 * 4 + (5.5 + 5.0 + 0.5 / 7) / 2 * 6, rel=1e-6)
    westward = shapely.LineString(list(eastward.coords)[::-1])
    sea2 = assemble_sea([westward], bbox)
    assert sea2.contains(shapely.Point(5, 8)) and not sea2.contains(shapely.Point(5, 2))


def test_sea_islands_are_holes_and_ends_are_snapped():
    bbox = (0.0, 0.0, 10.0, 10.0)
    # the coastline stops 0.3 short of both edges (a cut extract); an island (CCW) in the sea
    coast = shapely.LineString([(0.3, 6), (9.7, 6)])
    island = shapely.LineString([(4, 2), (6, 2), (6, 3), (4, 3), (4, 2)])
    sea = assemble_sea([coast, island], bbox, snap_deg=0.5)
    assert sea is not None
    assert sea.contains(shapely.Point(1, 1)) and not sea.contains(shapely.Point(5, 2.5))
    assert not sea.contains(shapely.Point(5, 8))


def test_no_sea_without_a_cutting_coastline():
    bbox = (0.0, 0.0, 10.0, 10.0)
    assert assemble_sea([], bbox) is None
    assert assemble_sea([shapely.LineString([(3, 3), (6, 6)])], bbox) is None


def test_stage_counts_in_manifest(datasets):
    for region in ("monaco", "helsinki"):
        ds = datasets.get(region)
        counts = ds.manifest["counts"]
        assert counts["layers_features"] > 1000
        assert counts["layers_road"] > 500 and counts["layers_building"] > 100
        assert "layers" in ds.manifest["stages_run"]


def test_layer_store_window_query(datasets):
    store = datasets.get("monaco").component("layers")
    assert store.has_sea and store.bbox is not None
    vp = Viewport.from_center(*MONACO, 16, 600, 400)
    feats = store.query(vp.bounds, 16)
    classes = set(feats.cls[feats.layer == "road"])
    assert {"primary", "residential", "footway"} <= classes
    assert (feats.layer == "building").sum() > 100
    # every feature meets the window
    window = shapely.box(*vp.bounds).buffer(2.0)  # the R*Tree stores float32 bounds
    assert shapely.intersects(shapely.envelope(feats.geom), window).all()
    # minzoom: buildings and footways are not in a zoom-12 answer; primaries are
    low = store.query(vp.bounds, 12)
    assert (low.layer == "building").sum() == 0
    assert "footway" not in set(low.cls[low.layer == "road"])
    assert "primary" in set(low.cls[low.layer == "road"])
    # far away: nothing
    far = Viewport.from_center(0.0, 0.0, 16, 600, 400)
    assert len(store.query(far.bounds, 16)) == 0


def test_monaco_sea_polygon_covers_the_sea_not_the_town(datasets):
    store = datasets.get("monaco").component("layers")
    x, y = to_mercator(np.array([7.45, 7.4246, 7.400]), np.array([43.72, 43.7384, 43.745]))
    vp = Viewport.from_center(43.73, 7.43, 12, 1000, 1000)
    feats = store.query(vp.bounds, 12)
    sea = shapely.union_all(feats.geom[(feats.layer == "water") & (feats.cls == "sea")])
    inside = shapely.contains_xy(sea, x, y)
    assert inside.tolist() == [True, False, False]  # open sea; Monte-Carlo; La Turbie
