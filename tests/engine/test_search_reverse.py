"""Reverse geocoding on a map drawn in the test (issue 20): the address the point is at first,
then the nearest street someone gives as an address; footways and passages without addresses
only when nothing else is near. Imported through the real pipeline (search stage included)."""

from __future__ import annotations

import pytest

from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf
from engine.search.index import SearchIndex
from engine.services.reverse_geocoding import ReverseParams, run
from tests.engine.osm_grid import OsmGrid

# one cell = 5 m. A building (Main Street 8) 10 m north of a footway ("Kauppakuja", a passage
# in front of the shops), Main Street 15 m south of the footway; the footway runs on east, past
# the building, and a branch of it goes far north. O: a bare house number (no addr:street)
# 5 m from the footway, 20 m from Main Street.
MAP = """
                                                          Z
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
                                                          |
    P--------Q
    |        |
    T--------U
                      O
    F---------------------------------------------------- Y


    A-----------------------------------------------------B
"""


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reverse")
    g = OsmGrid(MAP, grid_m=5)
    g.way("AB", highway="residential", name="Main Street")
    g.way("FY", highway="footway", name="Kauppakuja")
    g.way("YZ", highway="footway", name="Kauppakuja")
    g.way("PQUTP", building="yes", addr__housenumber="8", addr__street="Main Street")
    g.node("O", addr__housenumber="5")
    pbf = g.write(tmp / "town.osm.pbf")
    import_pbf(pbf, tmp / "data", "town")
    return g, DatasetRegistry(tmp / "data")


def first(ds, point, radius=100.0) -> dict:
    cands = run(ds, ReverseParams(lat=point[0], lng=point[1], radius=radius))["candidates"]
    assert cands, point
    return cands[0]


def test_on_a_passage_in_front_of_a_building_gives_the_address(town):
    g, ds = town
    at = g.coord_between("F", "Y", 0.08)  # on the footway, 10 m from the building, 15 m from Main Street
    c = first(ds, at)
    assert c["type"] == "address"
    assert (c["address"]["street"], c["address"]["number"]) == ("Main Street", "8")
    assert 9 <= c["distance"] <= 11


def test_on_a_footway_with_no_address_near_gives_the_street(town):
    g, ds = town
    at = g.coord_between("F", "Y", 0.7)  # on the footway, 100+ m from any address
    c = first(ds, at)
    assert c["type"] == "street"
    assert c["address"]["street"] == "Main Street"
    assert 14 <= c["distance"] <= 16


def test_a_footway_alone_is_still_an_answer(town):
    g, ds = town
    at = g.offset("Z", east_m=3)  # 100 m from Main Street, 3 m from the footway
    c = first(ds, at, radius=50.0)
    assert c["type"] == "street"
    assert c["name"] == "Kauppakuja"
    assert 2 <= c["distance"] <= 4


def test_a_bare_number_belongs_to_the_street_not_the_footway(town):
    g, ds = town
    c = first(ds, g.coord("O"))
    assert c["type"] == "address"
    assert (c["address"]["street"], c["address"]["number"]) == ("Main Street", "5")


def test_one_answer_reads_the_row_of_that_answer_only(town, monkeypatch):
    """From a cold page cache each row of ``features`` is a disk read of its own (they lie in the
    PBF's order): a request for one answer reads its row, not those of the spares behind it."""
    g, ds = town
    asked: list[list[int]] = []
    features = SearchIndex.features

    def recording(self, ids):
        ids = list(ids)
        asked.append(ids)
        return features(self, ids)

    monkeypatch.setattr(SearchIndex, "features", recording)
    at = g.coord_between("F", "Y", 0.08)  # the address, two streets and a bare number near
    one = run(ds, ReverseParams(lat=at[0], lng=at[1], limit=1))["candidates"]
    assert len(one) == 1
    assert asked == [[int(one[0]["id"].split(":")[1])]]
    asked.clear()
    three = run(ds, ReverseParams(lat=at[0], lng=at[1], limit=3))["candidates"]
    assert len(three) == 3 and three[0] == one[0]
    assert sum(len(ids) for ids in asked) == 3
