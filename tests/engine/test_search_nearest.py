"""Nearest by category on a map drawn in the test (issue 20): an area POI is as near as its
outline (0 inside), in the ranking and in ``distance``; each item names its precise OSM tag."""

from __future__ import annotations

import pytest

from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf
from engine.services.proximity import NearestParams, precise_tag, run
from tests.engine.osm_grid import OsmGrid

# one cell = 10 m. A park P-Q-R-S 200 m x 100 m (its centroid 50 m inside), a small park mapped
# as a node G, an optician O. X stands 20 m south of the park's edge, 45 m from G, 81 m from
# the park's centroid.
MAP = """
    P-------------------Q
    |                   |
    |                   |
    |                   |
    |                   |
    |                   |
    |                   |
    |                   |
    |                   |
    |                   |
    S-------------------R

              X

                  G     O
"""


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nearest")
    g = OsmGrid(MAP, grid_m=10)
    g.way("PQRSP", leisure="park", name="Big Park")
    g.node_tags["G"] = {"leisure": "park", "name": "Pocket Park"}  # (node()'s first argument is "name")
    g.node_tags["O"] = {"shop": "optician", "name": "Optic Oy"}
    import_pbf(g.write(tmp / "town.osm.pbf"), tmp / "data", "town")
    return g, DatasetRegistry(tmp / "data")


def nearest(ds, point, categories, limit=5):
    return run(ds, NearestParams(lat=point[0], lng=point[1], categories=tuple(categories), limit=limit))["results"]


def test_an_area_is_as_near_as_its_outline(town):
    g, ds = town
    res = nearest(ds, g.coord("X"), ["leisure=park"])
    assert [r["name"] for r in res] == ["Big Park", "Pocket Park"]
    assert 19 <= res[0]["distance"] <= 21 and res[0]["distance_to"] == "outline"
    assert 44 <= res[1]["distance"] <= 46 and res[1]["distance_to"] == "point"


def test_inside_an_area_the_distance_is_zero(town):
    g, ds = town
    inside = g.offset("P", north_m=-10, east_m=10)  # near a corner, 80+ m from the centroid
    res = nearest(ds, inside, ["park"], limit=1)
    assert res[0]["name"] == "Big Park"
    assert res[0]["distance"] == 0.0


def test_each_item_names_its_precise_tag(town):
    g, ds = town
    for categories in (["shop"], ["shop=*"], ["shop=optician"]):
        (item,) = nearest(ds, g.coord("X"), categories, limit=1)
        assert item["name"] == "Optic Oy"
        assert item["tag"] == "shop=optician"
    park = nearest(ds, g.coord("X"), ["park"], limit=1)[0]
    assert park["category"] == "park" and park["tag"] == "leisure=park"


def test_precise_tag_reads_the_pois_own_tags():
    assert precise_tag("|shop=optician|name=x|", ["shop=*"]) == "shop=optician"
    assert precise_tag("|amenity=parking|", ["amenity=parking", "amenity=parking_entrance"]) == "amenity=parking"
    assert precise_tag("|amenity=cafe|", ["shop=*"]) is None
