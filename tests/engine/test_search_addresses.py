"""The address steps of the search import on columns (engine.ingest.search_addresses), on a few
addresses placed by hand: duplicates, postcodes, streets and their order."""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import LineString, MultiLineString

from engine.geo import LocalProjection
from engine.ingest.search_addresses import (
    AddressColumns,
    AddressSource,
    AddressTable,
    IndexedStreet,
    adopt_orphans,
    assign_streets,
    dedupe,
    fill_postcodes,
    street_postcodes,
)

PROJ = LocalProjection(60.0, 25.0)
M_LAT = 1 / 111_195.0  # degrees per metre north (the projection's)


def _source(street: str | None, lat_m: float = 0.0, **kw: object) -> AddressSource:
    fields: dict[str, object] = {
        "osm_type": "node",
        "osm_id": 1,
        "lat": 60.0 + lat_m * M_LAT,
        "lng": 25.0,
        "street": street,
        "postcode": None,
        "city": None,
        "district": None,
        "country": None,
        "entrance": False,
        "building": False,
        "name": None,
        "footprint": None,
    }
    fields.update(kw)
    return AddressSource(**fields)  # type: ignore[arg-type]


def _table(*addresses: tuple[AddressSource, str]) -> AddressTable:
    columns = AddressColumns()
    for source, number in addresses:
        columns.append(source, number)
    return columns.table()


def _street(feature_id: int, name: str, lat_m: float) -> IndexedStreet:
    lat = 60.0 + lat_m * M_LAT
    line = LineString([(24.999, lat), (25.001, lat)])
    return IndexedStreet(feature_id, name.lower(), name, MultiLineString([line]), lat, 25.0, "residential")


def test_a_building_beats_a_node_and_an_entrance_of_the_same_number_nearby():
    table = _table(
        (_source("Main Street", 0, entrance=True, osm_id=1), "1"),
        (_source("Main Street", 10, osm_id=2), "1"),
        (_source("Main Street", 20, building=True, osm_type="way", osm_id=3), "1"),
        (_source("Main Street", 500, osm_id=4), "1"),  # far: another address
        (_source("Main Street", 0, osm_id=5), "2"),
    )
    kept = dedupe(table, np.arange(len(table)))
    assert table.osm_id[kept].tolist() == [3, 4, 5]  # groups by their best address, ranked
    assert {table.strings.value(int(c)) for c in table.street_key[kept]} == {"main street"}


def test_orphans_take_the_street_within_reach_others_are_dropped():
    table = _table(
        (_source(None, 20, osm_id=1), "1"), (_source("Main Street", osm_id=2), "2"), (_source(None, 300, osm_id=3), "3")
    )
    kept = adopt_orphans(table, [_street(1, "Main Street", 0)], PROJ)
    assert table.osm_id[kept].tolist() == [2, 1]
    assert table.strings.value(int(table.codes["street"][0])) == "Main Street"


@pytest.mark.parametrize("donors", [1, 3])
def test_a_missing_postcode_comes_from_the_nearest_address_of_the_same_street(donors):
    others = [(_source("Side Road", 5, postcode="99999"), "9")]
    near = [(_source("Main Street", 100 * (i + 1), postcode=f"0010{i}"), str(i + 10)) for i in range(donors)]
    table = _table((_source("Main Street", 0), "1"), *near, *others[: donors - 1])
    rows = dedupe(table, np.arange(len(table)))
    fill_postcodes(table, rows, PROJ)
    assert table.strings.value(int(table.codes["postcode"][0])) == "00100"


def test_addresses_find_the_nearest_street_of_their_name_and_unknown_names_come_in_order():
    streets = [_street(1, "Main Street", 0), _street(2, "Main Street", 1000)]
    table = _table(
        (_source("Market Square", 0), "1"),
        (_source("Main Street", 900), "2"),
        (_source("Harbour Walk", 0), "3"),
        (_source("Main Street", 10), "4"),
        (_source("Market Square", 5), "5"),
    )
    rows = np.arange(len(table))
    table.street_key = table.strings.mapped(str.lower)[table.codes["street"]]
    table.street_id = np.zeros(len(table), dtype=np.int64)
    unknown = assign_streets(table, rows, streets, PROJ)
    assert table.street_id.tolist() == [0, 2, 0, 1, 0]
    assert [(u.name, u.rows.tolist()) for u in unknown] == [("Market Square", [0, 4]), ("Harbour Walk", [2])]


def test_a_street_takes_its_most_common_postcode_the_first_seen_on_a_tie():
    table = _table(*[(_source("Main Street", postcode=pc), str(i)) for i, pc in enumerate(["2", "1", "1", "2", "3"])])
    rows = np.arange(len(table))
    table.street_id = np.array([7, 7, 7, 7, 8])
    found = {p.street_id: p.postcode for p in street_postcodes(table, rows)}
    assert found == {7: "2", 8: "3"}
