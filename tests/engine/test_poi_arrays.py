"""engine.search.index.PoiArrays: the POIs' tags kept in one buffer answer as the rows do."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from engine import layout
from engine.search.index import PoiArrays, SearchIndex


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_tags_and_tag_lookups_equal_the_rows(data_dir, region):
    db = layout.current_link(data_dir, region).resolve() / layout.SEARCH_DB
    rows = sqlite3.connect(db).execute("SELECT id, tags FROM features WHERE type = 'poi'").fetchall()
    arrays = PoiArrays(SearchIndex(db))
    assert arrays.all_ids.tolist() == [fid for fid, _tags in rows]
    tags = [t or "" for _fid, t in rows]
    assert [arrays.tags(pos) for pos in range(len(rows))] == tags
    pairs = {"|" + kv + "|" for t in tags for kv in t.strip("|").split("|") if kv}
    keys = {"|" + kv.split("=", 1)[0] + "=" for kv in (p.strip("|") for p in pairs)}
    hostile = {"", "|", "\n", "|\n|", "=", "é", "|name=Caf", "no such tag"}
    assert len(pairs) > 50  # the samples test what they should
    for needle in sorted(pairs | keys | hostile):
        expected = np.flatnonzero([needle in t for t in tags])
        assert arrays.for_tag(needle).tolist() == expected.tolist(), needle
