"""A word being typed asked for by the words it begins (SearchIndex.words_beginning) instead of as
an FTS5 prefix: only where both match the very same rows of both full-text indexes."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from engine import layout
from engine.search import index as search_index
from engine.search.context import COUNTRY_WORDS
from engine.search.geocoder import Matcher, parse
from engine.search.index import PREFIX_WORDS, SearchIndex

SEARCHES = {
    "names_fts": "SELECT rowid FROM names_fts WHERE names_fts MATCH ?",
    "entry_context_fts": "SELECT rowid FROM entry_context_fts WHERE entry_context_fts MATCH ?",
}


def _rows(conn: sqlite3.Connection, sql: str, words: frozenset[str]) -> set[int]:
    if not words:
        return set()
    return {r for (r,) in conn.execute(sql, (" OR ".join(f'"{w}"' for w in sorted(words)),))}


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_the_words_vouched_for_match_what_the_prefix_matches(data_dir, region):
    """Prefixes of the vocabulary's words (2 to 9 letters, drawn at random) and of every country's
    words: where the index vouches for the words a prefix begins, those words match exactly the
    rows the prefix matches, in the names and in the names with their context (towns, postcodes,
    the country's words, which the vocabulary does not all list)."""
    db = layout.current_link(data_dir, region).resolve() / layout.SEARCH_DB
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    index = SearchIndex(db)
    try:
        words = [w for (w,) in conn.execute("SELECT word FROM vocab")]
        rng = np.random.default_rng(7)
        prefixes = {w[:n] for w in rng.choice(words, 300) for n in range(2, 10) if len(w) > n}
        prefixes |= {w[:n] for names in COUNTRY_WORDS.values() for w in names for n in range(2, len(w) + 1)}
        vouched = 0
        for prefix in sorted(prefixes):
            listed = index.words_beginning(prefix)
            if listed is None:
                continue
            vouched += 1
            assert len(listed) <= PREFIX_WORDS
            for table, sql in SEARCHES.items():
                assert _rows(conn, sql, listed) == {r for (r,) in conn.execute(sql, (f'"{prefix}"*',))}, (table, prefix)
        assert vouched > len(prefixes) // 4
        # a country's word the vocabulary may not list is never vouched for
        assert index.words_beginning("monak") is None and index.words_beginning("finla") is None
    finally:
        index.close()
        conn.close()


def test_the_query_names_the_words_a_typed_prefix_begins(data_dir, monkeypatch):
    """'Mannerheimin' (typing Mannerheimintie) asks for its words; a prefix that begins more than
    PREFIX_WORDS words (6 here), that FTS5 has an index of, or that may begin a country's word
    keeps FTS5's prefix."""
    db = layout.current_link(data_dir, "helsinki").resolve() / layout.SEARCH_DB
    monkeypatch.setattr(search_index, "PREFIX_WORDS", 6)
    index = SearchIndex(db)
    try:
        matcher = Matcher(index, "helsinki")

        def and_query(text: str) -> str | None:
            q = parse(text, prefix=True)
            return matcher._and_query(q, matcher._expansions(q), matcher._joined(q))

        typed = and_query("Mannerheimin")
        assert typed is not None and '"mannerheimintie"' in typed and "*" not in typed
        assert and_query("Kaup").endswith('"kaup"*)')  # FTS5 has an index of 4-letter prefixes
        assert and_query("Kauppa").endswith('"kauppa"*)')  # ... and 'kauppa' begins 7 words
        assert and_query("Finla").endswith('"finla"*)')
    finally:
        index.close()
