"""The search index's per-process memos stay bounded: a country holds about a million streets,
and a web process that kept every street line it interpolated on would grow for its whole life."""

from __future__ import annotations

import sqlite3

import shapely

from engine import layout
from engine.search import index as index_module
from engine.search.index import SearchIndex


def test_street_lines_kept_are_bounded_and_read_alike(data_dir, monkeypatch):
    db = layout.current_link(data_dir, "helsinki").resolve() / layout.SEARCH_DB
    streets = [
        (sid, wkb)
        for sid, wkb in sqlite3.connect(db).execute(
            "SELECT id, geom FROM features WHERE type = 'street' AND geom IS NOT NULL ORDER BY id LIMIT 50"
        )
    ]
    assert len(streets) == 50
    monkeypatch.setattr(index_module, "MEMO_MAX", 10)
    index = SearchIndex(db)
    for _round in range(2):
        for sid, wkb in streets:
            assert shapely.equals(index.street_geometry(sid), shapely.from_wkb(wkb))
    assert index.street_geometry(-1) is None
    assert len(index._street_geoms) <= 11  # MEMO_MAX, then emptied
