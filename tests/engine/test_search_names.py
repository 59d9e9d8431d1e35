"""Names ranked once: the search index's ``names`` table, and entries read name by name."""

from __future__ import annotations

import json
import shutil
import sqlite3
from itertools import groupby

import pytest

from config.settings import PROJECT_ROOT
from engine import layout
from engine.search.geocoder import Matcher, parse
from engine.search.index import SearchIndex

OLD_NAME_INDEX = """
DROP TABLE names_fts;
DROP TABLE names;
DROP INDEX entries_norm;
CREATE VIRTUAL TABLE entries_fts USING fts5 (norm, content='entries', content_rowid='id', prefix='2 3 4');
INSERT INTO entries_fts (rowid, norm) SELECT id, norm FROM entries;
"""


def _db(data_dir, region):
    return layout.current_link(data_dir, region).resolve() / layout.SEARCH_DB


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_every_name_is_stored_once_with_its_entries(data_dir, region):
    conn = sqlite3.connect(_db(data_dir, region))
    expected: dict[str, tuple[str, int, int, int]] = {}  # in the order of each name's first entry
    for entry, feature, norm in conn.execute("SELECT id, feature_id, norm FROM entries ORDER BY id"):
        norm_, count, first_entry, first_feature = expected.get(norm, (norm, 0, entry, feature))
        expected[norm] = (norm_, count + 1, first_entry, first_feature)
    stored = conn.execute("SELECT norm, entries, first_entry, first_feature FROM names ORDER BY id").fetchall()
    assert stored == list(expected.values())
    assert any(count > 1 for _norm, count, _e, _f in stored)  # the samples share names: the case is tested


def _common_names(conn, n):
    return [
        norm for (norm,) in conn.execute("SELECT norm FROM names WHERE entries > 1 ORDER BY entries DESC LIMIT ?", (n,))
    ]


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_entries_come_name_by_name_in_rank_order_up_to_the_limit(data_dir, region):
    """Past the limit, the best ranked names' entries, name by name; when every matching name's
    entries fit the limit, all of them (unranked: ranking would read every row holding each word)."""
    index = SearchIndex(_db(data_dir, region))
    conn = sqlite3.connect(_db(data_dir, region))
    entries_of = {
        norm: [tuple(r) for r in rows]
        for norm, rows in groupby(
            conn.execute("SELECT id, feature_id, norm FROM entries ORDER BY norm, id"), key=lambda r: r[2]
        )
    }
    checked = unranked = 0
    for name in _common_names(conn, 5):
        for word in name.split()[:2]:
            match = f'"{word}"'
            ranked = [
                n
                for (n,) in conn.execute(
                    "SELECT n.norm FROM names_fts f JOIN names n ON n.id = f.rowid WHERE names_fts MATCH ? ORDER BY f.rank",
                    (match,),
                )
            ]
            total = sum(len(entries_of[n]) for n in ranked)
            for limit in (1, len(entries_of[name]) - 1, len(entries_of[name]) + 1, 250):
                rows = index.search_entries(match, limit=limit)
                assert len(rows) == min(limit, total)
                groups = [(norm, list(g)) for norm, g in groupby(rows, key=lambda r: r[2])]
                if total <= limit:  # every entry of every name, each name once: no ranking needed
                    assert sorted(norm for norm, _ in groups) == sorted(ranked)
                    assert all(got == entries_of[norm] for norm, got in groups)
                    unranked += 1
                else:
                    assert [norm for norm, _ in groups] == ranked[: len(groups)]  # each name once, best first
                    for i, (norm, got) in enumerate(groups):
                        whole = entries_of[norm]
                        assert got == (whole if i < len(groups) - 1 else whole[: len(got)])
                checked += 1
    assert checked >= 10
    assert 0 < unranked < checked  # both cases are tested


def test_a_dataset_of_the_earlier_format_ranks_entries_and_answers_alike(data_dir, tmp_path):
    """A search index imported before the names table (entries_fts only) still answers, the same
    as the names table on the quality set's queries."""
    old = tmp_path / "search.sqlite"
    shutil.copy(_db(data_dir, "monaco"), old)
    conn = sqlite3.connect(old)
    conn.executescript(OLD_NAME_INDEX)
    conn.close()
    current, earlier = SearchIndex(_db(data_dir, "monaco")), SearchIndex(old)
    assert current.has_names and not earlier.has_names
    queries = [q["query"] for q in json.loads((PROJECT_ROOT / "bench" / "data" / "monaco-geocode.json").read_text())]
    for text in queries[:120]:
        q = parse(text)
        assert Matcher(earlier, "monaco").match(q, limit=5) == Matcher(current, "monaco").match(q, limit=5), text
