"""The vocabulary and its typo tables, written into search.sqlite at import and read from there.

Typo tolerance works on symmetric deletes: a word is found from a misspelling when both share a
one-letter delete (edit distance 1; two for words of 8+ letters, through the deletes' deletes).
Typing adds prefixes: every 4..10-letter prefix of a word, and the prefix's one-letter deletes,
lead to the word.

These tables grow with the vocabulary (about 25 rows a word; a country has hundreds of thousands
of words), so they are built once by the import (``write_tables``) and looked up with SQL by each
process (``Vocabulary``): the SQLite file is memory-mapped read-only, so every gunicorn worker and
Celery thread shares the same pages instead of holding its own copy of the tables in Python dicts.
An index imported before the tables were written into it has none: each process then builds them
in memory from its ``vocab`` table on first use (``TypoTables``), with the same rows.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

PREFIX_MIN, PREFIX_MAX = 4, 10  # prefixes typed while the word is not complete
DELETE_MIN = 4  # shorter words: no typo tolerance (too many false friends)
PREFIX_WORD_MIN = 5  # words this long or longer are found from a typo in their prefix

TABLES = """
CREATE TABLE vocab_deletes (key TEXT NOT NULL, word TEXT NOT NULL, PRIMARY KEY (key, word)) WITHOUT ROWID;
CREATE TABLE vocab_prefix_deletes (key TEXT NOT NULL, word TEXT NOT NULL, PRIMARY KEY (key, word)) WITHOUT ROWID;
CREATE TABLE vocab_lengths (length INTEGER NOT NULL, word TEXT NOT NULL, PRIMARY KEY (length, word)) WITHOUT ROWID;
"""

Execute = Callable[[str, Sequence[Any]], Iterable[tuple[Any, ...]]]


def deletes(word: str) -> set[str]:
    """The word with one letter left out, each way."""
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def delete_rows(words: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(delete, word) for the symmetric-delete table."""
    for w in words:
        if len(w) >= DELETE_MIN and not w.isdigit():
            for d in deletes(w):
                yield d, w


def prefix_delete_rows(words: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(prefix or one of its deletes, word) for the typing table."""
    for w in words:
        if len(w) >= PREFIX_WORD_MIN and not w.isdigit():
            keys: set[str] = set()
            for n in range(PREFIX_MIN, min(len(w), PREFIX_MAX) + 1):
                pre = w[:n]
                keys.add(pre)
                keys |= deletes(pre)
            for k in keys:
                yield k, w


def write_tables(conn: sqlite3.Connection) -> dict[str, int]:
    """Create and fill the typo tables from the ``vocab`` table of the index being written."""
    conn.executescript(TABLES)
    words = [w for (w,) in conn.execute("SELECT word FROM vocab")]
    conn.executemany("INSERT OR IGNORE INTO vocab_deletes VALUES (?, ?)", delete_rows(words))
    conn.executemany("INSERT OR IGNORE INTO vocab_prefix_deletes VALUES (?, ?)", prefix_delete_rows(words))
    conn.executemany("INSERT INTO vocab_lengths VALUES (?, ?)", ((len(w), w) for w in words if not w.isdigit()))
    return {"vocabulary": len(words)}


@dataclass(frozen=True)
class TypoTables:
    """The three typo tables in memory, for an index that does not hold them: the same rows as
    ``write_tables`` writes, looked up the way ``Vocabulary`` queries the file's tables."""

    by_key: dict[str, dict[str, list[str]]]  # table -> key -> words
    by_length: dict[int, list[str]]  # length -> words, sorted (as the file's primary key orders them)

    @classmethod
    def build(cls, words: Sequence[str]) -> TypoTables:
        by_key: dict[str, dict[str, list[str]]] = {}
        for table, rows in (("vocab_deletes", delete_rows(words)), ("vocab_prefix_deletes", prefix_delete_rows(words))):
            keyed: dict[str, list[str]] = defaultdict(list)
            for key, word in rows:
                keyed[key].append(word)
            by_key[table] = dict(keyed)
        by_length: dict[int, list[str]] = defaultdict(list)
        for w in sorted(words):
            if not w.isdigit():
                by_length[len(w)].append(w)
        return cls(by_key, dict(by_length))

    def neighbours(self, table: str, keys: Sequence[str]) -> list[str]:
        keyed = self.by_key[table]
        return list(dict.fromkeys(w for k in keys for w in keyed.get(k, ())))


def _in(count: int) -> str:
    return ",".join("?" * count)


class Vocabulary:
    """Read side: every lookup is an indexed SQLite query (``execute`` runs on the calling thread's
    read-only connection). Frequencies of the words asked for are kept in a bounded cache.
    ``tables_in_file=False``: an index without the typo tables; they are built in memory."""

    CACHE_MAX = 50_000

    def __init__(self, execute: Execute, tables_in_file: bool = True) -> None:
        self._execute = execute
        self._freq: dict[str, int | None] = {}
        self._by_length: dict[int, list[str]] = {}
        self._tables_in_file = tables_in_file
        self._in_memory: TypoTables | None = None
        self._in_memory_lock = threading.Lock()

    def _memory_tables(self) -> TypoTables:
        with self._in_memory_lock:
            if self._in_memory is None:
                words = [w for (w,) in self._execute("SELECT word FROM vocab", ())]
                self._in_memory = TypoTables.build(words)
            return self._in_memory

    def get(self, word: str, default: int | None = None) -> int | None:
        """The word's frequency in the names (0: a context word only), ``default`` when unknown."""
        if word in self._freq:
            found = self._freq[word]
        else:
            row = next(iter(self._execute("SELECT freq FROM vocab WHERE word = ?", (word,))), None)
            found = None if row is None else int(row[0])
            if len(self._freq) >= self.CACHE_MAX:
                self._freq.clear()
            self._freq[word] = found
        return default if found is None else found

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def known(self, words: Iterable[str]) -> set[str]:
        """Those of ``words`` in the vocabulary."""
        keys = sorted(set(words))
        if not keys:
            return set()
        return {w for (w,) in self._execute(f"SELECT word FROM vocab WHERE word IN ({_in(len(keys))})", keys)}

    def most_frequent(self, words: Sequence[str], limit: int) -> list[str]:
        """``words`` when they are at most ``limit``, else the ``limit`` most frequent in the names
        (ties in word order)."""
        if len(words) <= limit:
            return list(words)
        keys = sorted(set(words))
        sql = f"SELECT word FROM vocab WHERE word IN ({_in(len(keys))}) ORDER BY freq DESC, word LIMIT ?"
        return [w for (w,) in self._execute(sql, [*keys, limit])]

    def with_prefix(self, prefix: str, limit: int) -> list[str]:
        """The first ``limit`` words (in sorted order) that begin with ``prefix``."""
        rows = self._execute("SELECT word FROM vocab WHERE word >= ? ORDER BY word LIMIT ?", (prefix, limit))
        out = []
        for (w,) in rows:
            if not w.startswith(prefix):
                break
            out.append(w)
        return out

    def _neighbours(self, table: str, keys: Iterable[str]) -> list[str]:
        ks = sorted(set(keys))
        if not ks:
            return []
        if not self._tables_in_file:
            return self._memory_tables().neighbours(table, ks)
        sql = f"SELECT DISTINCT word FROM {table} WHERE key IN ({_in(len(ks))})"  # noqa: S608 - table is ours
        return [w for (w,) in self._execute(sql, ks)]

    def delete_neighbours(self, keys: Iterable[str]) -> list[str]:
        """Words sharing one of ``keys`` (a token and its deletes) as a one-letter delete."""
        return self._neighbours("vocab_deletes", keys)

    def prefix_neighbours(self, keys: Iterable[str]) -> list[str]:
        """Words whose 4..10-letter prefix, or a one-letter delete of it, is one of ``keys``."""
        return self._neighbours("vocab_prefix_deletes", keys)

    def of_length(self, length: int) -> list[str]:
        """Every non-numeric word of ``length`` letters (the last-resort typo scan). Kept once read:
        the words themselves are a small part of the tables (about 60 bytes a word)."""
        if not self._tables_in_file:
            return self._memory_tables().by_length.get(length, [])
        found = self._by_length.get(length)
        if found is None:
            rows = self._execute("SELECT word FROM vocab_lengths WHERE length = ?", (length,))
            found = self._by_length[length] = [w for (w,) in rows]
        return found
