"""The search stage's two passes over the PBF (engine.ingest.search_reading): the address pass,
run in a child process, and the feature pass split an object as one pass over the file did."""

from __future__ import annotations

from multiprocessing.sharedctypes import RawArray

import pytest

from engine.geo import LocalProjection
from engine.ingest import search_reading
from engine.ingest.search_reading import AddressPass, read_addresses, read_features
from engine.progress import ImportProgress
from tests.engine.osm_grid import OsmGrid

PROJ = LocalProjection(43.73, 7.42)


@pytest.fixture(scope="module")
def town(tmp_path_factory):
    grid = OsmGrid(
        """
        A-B-C
        |   |
        D-E-F
        G-H
        | |
        K-J
        """
    )
    grid.node("A", addr__housenumber="1", addr__street="Main Street")
    # (node()'s first argument is "name")
    grid.node_tags["B"] = {
        "addr:housenumber": "2;4",
        "addr:street": "Main Street",
        "amenity": "cafe",
        "name": "Kahvila",
    }
    grid.node_tags["C"] = {"place": "village", "name": "Kylä"}
    grid.way("ABC", highway="residential", name="Main Street", addr__housenumber="9")  # a street, no address
    grid.way("DEFCD", highway="pedestrian", area="yes", name="Market Square", addr__housenumber="5")
    grid.way("GHJKG", building="yes", addr__housenumber="7", addr__street="Main Street")
    return grid.write(tmp_path_factory.mktemp("reading") / "town.osm.pbf")


def _numbers(columns) -> list[tuple[str, str | None, bool]]:
    """(type, number, has an outline) of each address, in order."""
    value = columns.strings.value
    types = [value(c) for c in columns.codes["osm_type"]]
    numbers = [value(c) for c in columns.number]
    return list(zip(types, numbers, [fp is not None for fp in columns.footprints], strict=True))


def test_the_address_pass_keeps_the_files_order_and_skips_streets(town):
    assert _numbers(read_addresses(town, PROJ)) == [
        ("node", "1", False),
        ("node", "2", False),
        ("node", "4", False),
        ("way", "5", True),  # a square is an area: it may have an address
        ("way", "7", True),  # a building: its outline
    ]


def test_the_feature_pass_takes_street_pieces_places_and_pois(town):
    features = read_features(town)
    assert {key: [w.area for w in ways] for key, ways in features.streets.items()} == {
        "main street": [False],
        "market square": [True],
    }
    assert [p.name for p in features.places] == ["Kylä"]
    assert [(p.name, p.category, p.number) for p in features.pois] == [("Kahvila", "cafe", "2;4")]


def test_the_address_pass_in_a_child_gives_what_it_gives_here(town):
    with AddressPass(town, PROJ, ImportProgress.silent()) as address_pass:
        columns = address_pass.result()
    here = read_addresses(town, PROJ)
    assert _numbers(columns) == _numbers(here)
    assert list(columns.osm_id) == list(here.osm_id)
    assert columns.footprints == here.footprints


def test_the_address_pass_counts_what_it_read(town, monkeypatch):
    """The child's count (shown while the stage waits for it) follows the objects of its pass."""
    monkeypatch.setattr(search_reading, "COUNT_EVERY", 1)
    count = RawArray("q", 1)
    read_addresses(town, PROJ, count)
    objects = list(search_reading._objects(town, search_reading.ADDRESS_FILTER, search_reading.ADDRESS_FILTER))
    assert count[0] == len(objects) >= 5
