"""A street name shared by many towns (issue 18 item 4): '<street> <number>, <town>' finds that
town's street. 'Church Road' is the name of 21 streets in each of two towns, more names than
engine.search.geocoder.COMMON_WORD, so the any-word query leaves 'church' and 'road' out and only
the town is searched; the name-and-context query (``entry_context_fts``) asks for both. A dataset
imported before that table existed still answers, with the name-only queries."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from engine import layout
from engine.dataset import DatasetRegistry
from engine.geo import haversine_m
from engine.ingest.pipeline import import_pbf
from engine.search.geocoder import COMMON_WORD
from engine.search.index import ENTRY_CONTEXT_SEARCH
from engine.services.geocoding import GeocodeParams
from engine.services.geocoding import run as geocode
from engine.services.suggest import SuggestParams
from engine.services.suggest import run as suggest
from tests.engine.osm_grid import OsmGrid

TOWNS = ("Northam", "Southby")  # side by side, west to east
TOWN_M = 6000.0  # each town a square this wide
STREETS_PER_TOWN = 21  # 'Church Road's in each town: 42 names in all
STREET_GAP_M = 250.0  # farther apart than the import's same-street clustering gap (150 m)


def _draw_town(g: OsmGrid, k: int, name: str) -> None:
    """Town ``k``: its admin boundary, its Church Roads (west-east, one under the other) and their
    addresses 15 m north of the line: number 7 on the first one only, 1 and 3 on the others."""
    west = k * TOWN_M
    corners = [f"{name}{c}" for c in "abcd"]
    for corner, (north, east) in zip(corners, [(0, 0), (0, TOWN_M), (-TOWN_M, TOWN_M), (-TOWN_M, 0)], strict=True):
        g.add_node(corner, *g.offset("O", north_m=north, east_m=west + east))
    ring = g.way([*corners, corners[0]])
    g.relation([("w", ring, "outer")], type="boundary", boundary="administrative", admin_level="8", name=name)
    for s in range(STREETS_PER_TOWN):
        north = -100.0 - s * STREET_GAP_M
        ends = [f"{name}-{s}-{end}" for end in ("w", "e")]
        g.add_node(ends[0], *g.offset("O", north_m=north, east_m=west + 500))
        g.add_node(ends[1], *g.offset("O", north_m=north, east_m=west + 1500))
        g.way(ends, highway="residential", name="Church Road")
        for i, number in enumerate(["7"] if s == 0 else ["1", "3"]):
            house = f"{name}-{s}-{number}"
            g.add_node(house, *g.offset("O", north_m=north + 15, east_m=west + 600 + 200 * i))
            g.node(house, addr__housenumber=number, addr__street="Church Road")


def _draw_mill_lane(g: OsmGrid) -> None:
    """'Mill Lane': one street across the town line (its middle in Northam), number 5 on it 100 m
    into either town (no addr:city: the town comes from the boundaries)."""
    north = -100.0 - STREETS_PER_TOWN * STREET_GAP_M
    ends = ["mill-w", "mill-e"]
    for end, east in zip(ends, (TOWN_M - 400, TOWN_M + 200), strict=True):
        g.add_node(end, *g.offset("O", north_m=north, east_m=east))
    g.way(ends, highway="residential", name="Mill Lane")
    for town, east in zip(TOWNS, (TOWN_M - 100, TOWN_M + 100), strict=True):
        g.add_node(f"mill-5-{town}", *g.offset("O", north_m=north + 15, east_m=east))
        g.node(f"mill-5-{town}", addr__housenumber="5", addr__street="Mill Lane")


@pytest.fixture(scope="module")
def towns(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("context")
    g = OsmGrid("O", grid_m=10)
    for k, name in enumerate(TOWNS):
        _draw_town(g, k, name)
    _draw_mill_lane(g)
    import_pbf(g.write(tmp / "towns.osm.pbf"), tmp / "data", "towns")
    return g, tmp / "data"


def _top(data_dir, **params) -> dict:
    cands = geocode(DatasetRegistry(data_dir), GeocodeParams(**params))["candidates"]
    assert cands, params
    return cands[0]


def _assert_church_road_7_of(g: OsmGrid, town: str, cand: dict) -> None:
    assert cand["type"] == "address"
    assert (cand["address"]["street"], cand["address"]["number"], cand["address"]["city"]) == ("Church Road", "7", town)
    lat, lng = g.coord(f"{town}-0-7")
    assert haversine_m(lat, lng, cand["coord"]["lat"], cand["coord"]["lng"]) < 1.0


def test_the_street_name_is_common_enough_to_be_left_out_of_the_any_word_query(towns):
    _g, data_dir = towns
    index = DatasetRegistry(data_dir).get("towns").search
    assert index.vocab.get("church") > COMMON_WORD
    assert index.has_context


@pytest.mark.parametrize("town", TOWNS)
def test_street_number_town_finds_that_towns_address(towns, town):
    g, data_dir = towns
    _assert_church_road_7_of(g, town, _top(data_dir, query=f"Church Road 7, {town}"))


@pytest.mark.parametrize("town", TOWNS)
def test_structured_city_finds_that_towns_address(towns, town):
    g, data_dir = towns
    _assert_church_road_7_of(g, town, _top(data_dir, street="Church Road", number="7", city=town))


def test_a_typo_in_the_town_still_finds_it(towns):
    g, data_dir = towns
    _assert_church_road_7_of(g, "Southby", _top(data_dir, query="Church Road 7, Suothby"))


@pytest.mark.parametrize("town", TOWNS)
def test_a_street_across_the_town_line_gives_the_number_in_the_town_named(towns, town):
    g, data_dir = towns
    cand = _top(data_dir, query=f"Mill Lane 5, {town}")
    assert (cand["address"]["street"], cand["address"]["number"], cand["address"]["city"]) == ("Mill Lane", "5", town)
    lat, lng = g.coord(f"mill-5-{town}")
    assert haversine_m(lat, lng, cand["coord"]["lat"], cand["coord"]["lng"]) < 1.0


def test_suggest_while_typing_the_town(towns):
    _g, data_dir = towns
    first = suggest(DatasetRegistry(data_dir), SuggestParams(q="Church Road 7, Sout"))["suggestions"][0]
    assert first["text"] == "Church Road 7, Southby"


def test_a_dataset_without_the_context_table_still_answers(towns, tmp_path):
    """A dataset imported by the previous release (no ``entry_context_fts``) opens and geocodes
    with the name-only queries."""
    _g, data_dir = towns
    old = tmp_path / "data"
    shutil.copytree(data_dir, old, symlinks=True)
    version = (old / "regions" / "towns" / "current").resolve()
    with sqlite3.connect(version / layout.SEARCH_DB) as conn:
        conn.execute("DROP TABLE entry_context_fts")
    registry = DatasetRegistry(old)
    assert not registry.get("towns").search.has_context
    assert geocode(registry, GeocodeParams(query="Church Road 7, Northam"))["candidates"]
    assert suggest(registry, SuggestParams(q="Church Road 7, Nor"))["suggestions"]


@pytest.mark.parametrize(
    "match",
    [
        '{norm} : ("mannerheimintie") AND ("helsinki")',  # a few entries: every one, in any order
        '("helsinki")',  # thousands: the best ranked, as FTS5 ranks them
        '{norm} : ("katu" OR "helsinki") AND ("helsinki")',
    ],
)
def test_the_context_search_takes_every_match_or_the_best_ranked(data_dir, match):
    """Up to its limit, the name-and-context search returns every entry that matches (unranked:
    ranking them would read every row holding each word); past it, the limit best by bm25."""
    index = DatasetRegistry(data_dir).get("helsinki").search
    limit = 40
    ranked = list(index.execute(ENTRY_CONTEXT_SEARCH, (match, limit)))
    everything = list(index.execute(ENTRY_CONTEXT_SEARCH, (match, 100_000)))
    assert ranked
    found = index.search_entries_in_context(match, limit)
    if len(everything) <= limit:
        assert sorted(found) == sorted(everything)
    else:
        assert found == ranked
