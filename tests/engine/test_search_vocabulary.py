"""The vocabulary's typo tables: written into search.sqlite by the import, read from there by every
process (engine.search.vocabulary), never rebuilt in a process's memory."""

from __future__ import annotations

import shutil
import sqlite3

from engine import layout
from engine.search.index import FUZZY_PREFIX_WORDS, SearchIndex
from engine.search.vocabulary import delete_rows, deletes, prefix_delete_rows


def _db(data_dir, region):
    return layout.current_link(data_dir, region).resolve() / layout.SEARCH_DB


def test_tables_hold_every_delete_of_every_word(data_dir):
    conn = sqlite3.connect(_db(data_dir, "helsinki"))
    words = [w for (w,) in conn.execute("SELECT word FROM vocab")]
    stored = set(conn.execute("SELECT key, word FROM vocab_deletes"))
    assert stored == set(delete_rows(words)) and len(stored) > 10 * len(words) // 2
    stored_prefix = set(conn.execute("SELECT key, word FROM vocab_prefix_deletes"))
    assert stored_prefix == set(prefix_delete_rows(words))
    by_length = conn.execute("SELECT COUNT(*) FROM vocab_lengths").fetchone()[0]
    assert by_length == sum(not w.isdigit() for w in words)


def test_typos_are_found_through_the_dataset_tables(data_dir, tmp_path):
    """Remove one word's rows from a copy of the tables: the typo that reached it through them no
    longer does, while the original file still answers, so SearchIndex reads the file's tables
    (a per-process table built from ``vocab`` would still find it)."""
    original = SearchIndex(_db(data_dir, "helsinki"))
    assert "mannerheimintie" in original.vocab
    typo = "mannerheimintei"  # a transposition: shares a two-letter delete with the word
    assert "mannerheimintie" in original.expand(typo)
    assert "mannerheimintie" in original.expand("manmerh", prefix=True)
    original.close()

    copy = tmp_path / layout.SEARCH_DB
    shutil.copy(_db(data_dir, "helsinki"), copy)
    conn = sqlite3.connect(copy)
    conn.execute("DELETE FROM vocab_deletes WHERE word = 'mannerheimintie'")
    conn.execute("DELETE FROM vocab_prefix_deletes WHERE word = 'mannerheimintie'")
    conn.execute("DELETE FROM vocab_lengths WHERE word = 'mannerheimintie'")
    conn.commit()
    conn.close()
    edited = SearchIndex(copy)
    try:
        assert "mannerheimintie" in edited.vocab  # still a word of the vocabulary
        assert "mannerheimintie" not in edited.expand(typo)
        assert "mannerheimintie" not in edited.expand("manmerh", prefix=True)
    finally:
        edited.close()


def test_opening_the_index_loads_no_vocabulary(data_dir):
    """Opening reads nothing of the vocabulary into memory; a lookup caches only what it asked."""
    index = SearchIndex(_db(data_dir, "helsinki"))
    try:
        assert index.vocab.get("mannerheimintie") > 0
        assert index.vocab.get("qqqqzzz") is None and "qqqqzzz" not in index.vocab
        assert index.vocab.with_prefix("mannerh", 5)[0].startswith("mannerh")
        assert set(index.vocab.delete_neighbours(deletes("mannerheimintie"))) >= {"mannerheimintie"}
    finally:
        index.close()


def test_an_index_without_the_typo_tables_builds_them_in_memory(data_dir, tmp_path):
    """An index imported by a release that did not write the typo tables answers typos, while
    typing and with two edits, exactly as one that holds them."""
    current = SearchIndex(_db(data_dir, "helsinki"))
    copy = tmp_path / layout.SEARCH_DB
    shutil.copy(_db(data_dir, "helsinki"), copy)
    conn = sqlite3.connect(copy)
    for table in ("vocab_deletes", "vocab_prefix_deletes", "vocab_lengths"):
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    older = SearchIndex(copy)
    try:
        asked = [("mannerheimintei", False), ("manmerh", True), ("aleksanterinktau", False), ("kaivokadu", False)]
        asked += [("esplanadi", True), ("bulevadri", False), ("rautatientori", False), ("xqzvw", False)]
        for token, prefix in asked:
            assert older.expand(token, prefix=prefix) == current.expand(token, prefix=prefix), token
        assert "mannerheimintie" in older.expand("mannerheimintei")
    finally:
        older.close()
        current.close()


def test_a_prefix_one_edit_from_many_words_stands_for_the_most_frequent_of_them(data_dir, tmp_path):
    """A short prefix typed with a typo begins thousands of a country's words ('grov': every
    'gro?...'): it stands for its exact continuations and, of those one edit away, only the
    FUZZY_PREFIX_WORDS most frequent, each of which would be one more term of the name search."""
    copy = tmp_path / layout.SEARCH_DB
    shutil.copy(_db(data_dir, "helsinki"), copy)
    near = [f"qzxb{a}{b}" for a in "abcdefghij" for b in "abcdefghij"]  # 100 words one edit from 'qzxa'
    conn = sqlite3.connect(copy)
    conn.executemany("INSERT INTO vocab VALUES (?, ?)", [(w, i + 1) for i, w in enumerate(near)] + [("qzxaend", 1)])
    conn.executemany("INSERT OR IGNORE INTO vocab_prefix_deletes VALUES (?, ?)", prefix_delete_rows([*near, "qzxaend"]))
    conn.commit()
    conn.close()
    index = SearchIndex(copy)
    try:
        found = index.expand("qzxa", prefix=True)
        assert found["qzxaend"] > 0.75  # the exact continuation, first
        fuzzy = {w for w, score in found.items() if score == 0.7}
        assert fuzzy == set(near[-FUZZY_PREFIX_WORDS:])  # the most frequent
        assert index.vocab.most_frequent(near[:5], FUZZY_PREFIX_WORDS) == near[:5]  # few: all of them
    finally:
        index.close()
