"""Exact ties among more names than the matcher keeps: a town holding 'Elm Walk' more times than
``Matcher.match`` looks up (60 names at most) answers 'Elm Walk 30, Ashford' with the same
candidates whatever order the full-text search returned its rows in."""

from __future__ import annotations

import pytest

from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf
from engine.search.geocoder import Matcher
from engine.services.geocoding import GeocodeParams
from engine.services.geocoding import run as geocode
from tests.engine.osm_grid import OsmGrid

TOWN = "Ashford"
STREETS = 70  # more than the 60 names the matcher looks up
COLUMNS = 7
GAP_M = 300.0  # farther apart than the import's same-street clustering gap (150 m)


@pytest.fixture(scope="module")
def elm_walks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ties")
    g = OsmGrid("O", grid_m=10)
    side = GAP_M * (STREETS // COLUMNS + 2)
    corners = [f"corner-{c}" for c in "abcd"]
    for corner, (north, east) in zip(corners, [(0, 0), (0, side), (-side, side), (-side, 0)], strict=True):
        g.add_node(corner, *g.offset("O", north_m=north, east_m=east))
    ring = g.way([*corners, corners[0]])
    g.relation([("w", ring, "outer")], type="boundary", boundary="administrative", admin_level="8", name=TOWN)
    for s in range(STREETS):
        north, east = -GAP_M * (1 + s // COLUMNS), GAP_M * (1 + s % COLUMNS)
        g.add_node(f"elm-{s}-w", *g.offset("O", north_m=north, east_m=east))
        g.add_node(f"elm-{s}-e", *g.offset("O", north_m=north, east_m=east + 100))
        g.way([f"elm-{s}-w", f"elm-{s}-e"], highway="residential", name="Elm Walk")
        g.add_node(f"elm-{s}-30", *g.offset("O", north_m=north + 15, east_m=east + 50))
        g.node(f"elm-{s}-30", addr__housenumber="30", addr__street="Elm Walk")
    import_pbf(g.write(tmp / "ties.osm.pbf"), tmp / "data", "ties")
    return tmp / "data"


def _answer(data_dir) -> list[tuple]:
    cands = geocode(DatasetRegistry(data_dir), GeocodeParams(query=f"Elm Walk 30, {TOWN}", limit=5))["candidates"]
    return [(c["type"], c["coord"]["lat"], c["coord"]["lng"], c["score"]) for c in cands]


def test_the_answer_among_exact_ties_does_not_follow_the_row_order(elm_walks, monkeypatch):
    in_index_order = _answer(elm_walks)
    assert len(in_index_order) == 5
    assert {kind for kind, *_ in in_index_order} == {"address"}
    assert len({score for *_, score in in_index_order}) == 1  # the case is tested: exact ties

    rows_of = Matcher._candidate_rows
    rows_seen: list[int] = []

    def reversed_rows(self, *args, **kwargs):
        rows = rows_of(self, *args, **kwargs)
        rows_seen.append(len({fid for _eid, fid, _norm in rows}))
        return rows[::-1]

    monkeypatch.setattr(Matcher, "_candidate_rows", reversed_rows)
    assert _answer(elm_walks) == in_index_order
    assert rows_seen and rows_seen[0] >= STREETS  # every Elm Walk is a candidate: the cut decides
