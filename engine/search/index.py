"""Read side of search.sqlite: opened read-only, shared by every request of a process.

SQLite connections are per thread (``mode=ro`` URI, memory-mapped), so gunicorn threads and
Celery threads share the page cache. The vocabulary (every normalised word of every name) and
its typo tables (symmetric deletes: edit distance 1, 2 for words of 8+ letters; prefixes while
typing) are tables of the same file, written by the import (engine.search.vocabulary).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from numpy.typing import NDArray
from rapidfuzz import process
from rapidfuzz.distance import OSA
from shapely.geometry.base import BaseGeometry

from engine import layout
from engine.geo import LocalProjection
from engine.search import address_points
from engine.search.address_points import ADDRESS_POINT
from engine.search.context import COUNTRY_WORDS
from engine.search.vocabulary import Vocabulary, deletes

FEATURE_COLUMNS = (
    "id, type, name, names, housenumber, hn_norm, street, street_key, street_id, city, district, "
    "postcode, country, lat, lng, osm_type, osm_id, category, tags, importance"
)
_FIELDS = [c.strip() for c in FEATURE_COLUMNS.split(",")]
ADDRESSES_ON_STREETS = f"SELECT {FEATURE_COLUMNS} FROM features WHERE type = 'address' AND street_id IN ({{marks}})"

# the names matching (best first, or as stored), with their number of entries; then the entries
# of the names
_NAMES_MATCHING = (
    "SELECT n.norm, n.entries, n.first_entry, n.first_feature FROM names_fts f JOIN names n ON n.id = f.rowid "
    "WHERE names_fts MATCH ? "
)
NAME_SEARCH = _NAMES_MATCHING + "ORDER BY f.rank LIMIT ?"
NAME_MATCHES = _NAMES_MATCHING + "LIMIT ?"
ENTRIES_NAMED = "SELECT id, feature_id, norm FROM entries WHERE norm = ? ORDER BY id LIMIT ?"
ENTRIES_OF_NAMES = "SELECT id, feature_id, norm FROM entries WHERE norm IN ({marks}) ORDER BY id"
NAMES_TABLE = "names_fts"
# a dataset imported before the names table existed ranks every entry
ENTRY_SEARCH = (
    "SELECT e.id, e.feature_id, e.norm FROM entries_fts f JOIN entries e ON e.id = f.rowid "
    "WHERE entries_fts MATCH ? ORDER BY f.rank LIMIT ?"
)
# names and context words together (a dataset imported before the table existed has none: the
# geocoder then searches names only). A word found in the name counts ten times one found in the
# context: the query's words all hold somewhere, the names holding more of them come first.
CONTEXT_TABLE = "entry_context_fts"
PREFIX_WORDS = 40  # words a prefix being typed stands for, at most
FUZZY_PREFIX_WORDS = 40  # ... and the most frequent of the words it begins with one edit away
FTS_PREFIX_INDEXED = 4  # letters of the longest prefix index of names_fts and entry_context_fts
TYPO_TABLE = "vocab_deletes"  # with vocab_prefix_deletes and vocab_lengths (engine.search.vocabulary)
_ENTRY_CONTEXT = (
    "SELECT e.id, e.feature_id, e.norm FROM entry_context_fts f JOIN entries e ON e.id = f.rowid "
    "WHERE entry_context_fts MATCH ? "
)
ENTRY_CONTEXT_SEARCH = _ENTRY_CONTEXT + "ORDER BY bm25(entry_context_fts, 10.0, 1.0) LIMIT ?"
ENTRY_CONTEXT_MATCHES = _ENTRY_CONTEXT + "LIMIT ?"
MEMO_MAX = 100_000  # entries of a per-process lookup memo before it is emptied
_MISSING = object()


def _memo(cache: dict, key: Any, compute: Callable[[], Any]) -> Any:
    """``cache[key]``, computed and kept on a miss (None included); the cache is emptied past
    :data:`MEMO_MAX` entries. Threads share it: a lookup never fails on another's clearing."""
    found = cache.get(key, _MISSING)
    if found is _MISSING:
        found = compute()
        if len(cache) > MEMO_MAX:
            cache.clear()
        cache[key] = found
    return found


def prefix_score(typed: str, word: str) -> float:
    """How well a word being typed (``typed``) matches a word it begins: the more of it typed,
    the better, below a whole word's 1.0."""
    return 0.75 + 0.2 * len(typed) / len(word)


class SearchIndex:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        conn = self._conn()
        # read from the dataset's typo tables, not built here: every process shares the pages
        # (an index imported before the tables existed gets them built in memory)
        self.vocab = Vocabulary(self.execute, tables_in_file=self.has_table(TYPO_TABLE))
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        lat0, lng0 = json.loads(meta.get("proj", "[0, 0]"))
        self.proj = LocalProjection(lat0, lng0)
        self.has_context = self.has_table(CONTEXT_TABLE)
        self.has_names = self.has_table(NAMES_TABLE)
        self._street_geoms: dict[int, BaseGeometry | None] = {}
        self._expand_cache: dict[tuple, dict[str, float]] = {}
        self._prefix_cache: dict[str, frozenset[str] | None] = {}
        self._spatial_lock = threading.Lock()
        # built on first use by poi_arrays() and spatial_cache()
        self._poi_arrays: PoiArrays | None = None
        self._spatial: SpatialCache | None = None

    @classmethod
    def open(cls, version_dir: Path) -> SearchIndex:
        return cls(Path(version_dir) / layout.SEARCH_DB)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("PRAGMA mmap_size = 268435456")
            conn.execute("PRAGMA query_only = 1")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def close(self) -> None:
        """Close every thread's connection (the dataset is being unloaded)."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(sqlite3.ProgrammingError):  # closed from its own thread
                conn.close()
        self._local = threading.local()

    def execute(self, sql: str, args=()):
        return self._conn().execute(sql, args)

    def has_table(self, name: str) -> bool:
        return self.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None

    # -- vocabulary ----------------------------------------------------------------------------
    def expand(self, tok: str, prefix: bool = False, fuzzy: bool = True) -> dict[str, float]:
        """Vocabulary words a query token may stand for, with a match quality in (0, 1]."""
        return _memo(self._expand_cache, (tok, prefix, fuzzy), lambda: self._expand(tok, prefix, fuzzy))

    def words_beginning(self, prefix: str) -> frozenset[str] | None:
        """Every word the full-text indexes hold that begins with ``prefix`` (a word being typed),
        or None when they may be more than :data:`PREFIX_WORDS` or than the vocabulary lists, or
        when FTS5 has an index of the prefix (:data:`FTS_PREFIX_INDEXED`).

        A query can then name those words instead of asking FTS5 for the prefix: FTS5 answers a
        prefix longer than its prefix indexes by merging the postings of every word it begins
        first ('avenu'* reads every name on an avenue), where named words are read only as far as
        the rarer words of the query need. The vocabulary lists every word of the names and of the
        towns and districts. Of the context words it does not list, a country's words are checked
        here; a postcode is indexed without its space ('vlt1117'), which an all-letter prefix
        longer than the prefix indexes does not begin (outward codes hold a digit; Malta's letters
        are three).
        """
        return _memo(self._prefix_cache, prefix, lambda: self._words_beginning(prefix))

    def _words_beginning(self, prefix: str) -> frozenset[str] | None:
        words = self.vocab.with_prefix(prefix, PREFIX_WORDS + 1)
        vouched = (
            prefix.isalpha()
            and len(prefix) > FTS_PREFIX_INDEXED
            and len(words) <= PREFIX_WORDS
            and not any(w.startswith(prefix) for names in COUNTRY_WORDS.values() for w in names)
        )
        return frozenset(words) if vouched else None

    def _expand(self, tok: str, prefix: bool, fuzzy: bool) -> dict[str, float]:
        out: dict[str, float] = {}
        if tok in self.vocab:
            out[tok] = 1.0
        if prefix and len(tok) >= 4:  # shorter prefixes: FTS5 prefix queries (geocoder)
            for w in self.vocab.with_prefix(tok, PREFIX_WORDS):
                if w != tok:
                    out.setdefault(w, prefix_score(tok, w))
        if prefix and fuzzy and len(tok) >= 4 and len(out) < 3 and not tok.isdigit():
            head = tok[:10]
            maxd = 1 if len(tok) < 8 else 2
            near = []
            for w in self.vocab.prefix_neighbours(deletes(head) | {head}):
                if w in out:
                    continue
                n = len(tok)
                d = min(OSA.distance(tok, w[:m], score_cutoff=maxd) for m in (n - 1, n, n + 1))
                if d <= maxd:
                    near.append(w)
            # a short prefix one edit away begins thousands of a country's words ('grov': every
            # 'gro?...'); each would be one more term of the name search
            for w in self.vocab.most_frequent(near, FUZZY_PREFIX_WORDS):
                out[w] = 0.7
        if fuzzy and len(tok) >= 4 and not tok.isdigit() and tok not in self.vocab:
            maxd = 2 if len(tok) >= 8 else 1
            keys = {tok} | deletes(tok)
            if maxd == 2:
                keys |= {d2 for d in deletes(tok) for d2 in deletes(d)}
            # words sharing a delete with the token, and the deletes that are words themselves
            exact = {k for k in self.vocab.known(keys) if k != tok and len(k) >= 3}
            for w in [*self.vocab.delete_neighbours(keys), *sorted(exact)]:
                if w in out:
                    continue
                d = OSA.distance(tok, w, score_cutoff=maxd)
                if d <= maxd:
                    out[w] = 0.85 if d == 1 else 0.7
            if not out and len(tok) >= 6:
                # two edits the delete table cannot see (e.g. a swap and a substitution)
                for n in range(len(tok) - 2, len(tok) + 3):
                    pool = self.vocab.of_length(n)
                    if pool:
                        for w, d, _ in process.extract(tok, pool, scorer=OSA.distance, score_cutoff=2, limit=4):
                            out.setdefault(w, 0.85 if d == 1 else 0.7)
        return out

    # -- features ------------------------------------------------------------------------------
    @staticmethod
    def row_to_feature(row) -> dict:
        return dict(zip(_FIELDS, row, strict=True))

    def features(self, ids) -> dict[int, dict]:
        ids = list(ids)
        if not ids:
            return {}
        q = ",".join("?" * len(ids))
        rows = self.execute(f"SELECT {FEATURE_COLUMNS} FROM features WHERE id IN ({q})", ids)
        return {r[0]: self.row_to_feature(r) for r in rows}

    def search_entries(self, match: str, limit: int = 80) -> list[tuple[int, int, str]]:
        """(entry id, feature id, norm) of entries whose name matches an FTS5 expression, up to
        ``limit``: every one when they are no more, else the best ranked first; the entries of one
        name (equal in rank) together, in the order they were written."""
        if not self.has_names:
            return self._search(ENTRY_SEARCH, match, limit)
        names = self._names(match, limit)
        # the names of several entries whose every entry is taken: read together
        budget, several = limit, []
        for norm, count, _entry, _feature in names:
            if count > 1 and count < budget:
                several.append(norm)
            budget -= count
            if budget <= 0:
                break
        by_name: dict[str, list[tuple[int, int, str]]] = {}
        if several:
            for row in self.execute(ENTRIES_OF_NAMES.format(marks=",".join("?" * len(several))), several):
                by_name.setdefault(row[2], []).append(row)
        rows: list[tuple[int, int, str]] = []
        for norm, count, entry, feature in names:
            if count == 1:
                rows.append((entry, feature, norm))
            elif norm in by_name:
                rows.extend(by_name[norm])
            else:  # the name that fills the limit
                rows.extend(self.execute(ENTRIES_NAMED, (norm, limit - len(rows))))
            if len(rows) >= limit:
                break
        return rows

    def _names(self, match: str, limit: int) -> list[Any]:
        """The names matching, with their entries, as many as the limit takes: all of them, as
        stored, when they and their entries fit the limit, else the best ranked (bm25 reads every
        row that holds each word of the query, a common word's tens of thousands across a country,
        only to order names all taken anyway)."""
        names = self._search(NAME_MATCHES, match, limit + 1)
        if len(names) <= limit and sum(entries for _norm, entries, _e, _f in names) <= limit:
            return names
        return self._search(NAME_SEARCH, match, limit)

    def search_entries_in_context(self, match: str, limit: int = 80) -> list[tuple[int, int, str]]:
        """(entry id, feature id, norm) of entries matching an FTS5 expression over the columns
        ``norm`` and ``context`` (their feature's context words), best first; none when the
        dataset has no such table (``has_context``)."""
        if not self.has_context:
            return []
        # all of them when they are few: bm25 reads every row that holds each word of the query
        # (the thousands of a common word) to weigh the words, only to order rows all taken anyway
        rows = self._search(ENTRY_CONTEXT_MATCHES, match, limit + 1)
        if len(rows) <= limit:
            return rows
        return self._search(ENTRY_CONTEXT_SEARCH, match, limit)

    def _search(self, sql: str, match: str, limit: int) -> list[Any]:
        try:
            return list(self.execute(sql, (match, limit)))
        except sqlite3.OperationalError:  # an expression FTS5 cannot parse: no match
            return []

    def addresses_on_streets(self, street_ids: list[int], number: str | None = None) -> dict[int, list[dict]]:
        """Each street's addresses, or only those of the (normalised) house number ``number``, by
        street id (every id given, in the order given), each street's in the order they were
        written; one statement for all the streets."""
        out: dict[int, list[dict]] = {street_id: [] for street_id in street_ids}
        if not out:
            return out
        sql = ADDRESSES_ON_STREETS.format(marks=",".join("?" * len(out)))
        args: list[Any] = list(out)
        if number is not None:
            sql += " AND hn_norm = ?"
            args.append(number)
        for row in self.execute(sql + " ORDER BY street_id, id", args):
            feature = self.row_to_feature(row)
            out[feature["street_id"]].append(feature)
        return out

    def street_geometry(self, street_id: int) -> BaseGeometry | None:
        """The street's line (lat/lng), or None; kept per process up to :data:`MEMO_MAX` streets
        (a country holds about a million)."""
        return _memo(self._street_geoms, street_id, lambda: self._read_street_geometry(street_id))

    def _read_street_geometry(self, street_id: int) -> BaseGeometry | None:
        row = self.execute("SELECT geom FROM features WHERE id = ?", (street_id,)).fetchone()
        return None if row is None or row[0] is None else shapely.from_wkb(row[0])

    def category_counts(self) -> dict[str, int]:
        rows = self.execute(
            "SELECT category, COUNT(*) FROM features WHERE type = 'poi' AND category IS NOT NULL GROUP BY category"
        )
        return dict(rows)


POI_READ_ROWS = 10_000  # rows of POIs read at a time
TAGS_END = b"\n"  # after each POI's tags in PoiArrays' buffer


class PoiArrays:
    """POI coordinates in numpy arrays, for nearest-by-category in microseconds.

    ``arrays[category]`` and :meth:`for_tag` give positions into ``all_ids`` / ``all_lat`` /
    ``all_lng`` / ``all_reach``. An area POI (a park, a parking lot: stored with its outline) has
    its outline in ``outlines[position]`` (metres of ``index.proj``) and, in ``all_reach``, the
    farthest any point of it lies from its (lat, lng): its outline is at least
    ``distance - reach`` away, so a scan by point distance knows which outlines to measure."""

    def __init__(self, index: SearchIndex) -> None:
        # Read in blocks, the tags kept as one UTF-8 buffer with offsets: a country's POIs are a
        # million rows, and Python objects kept for each (a string of tags among the rows' freed
        # tuples) would hold the whole read's memory in the allocator for the process's life.
        ids: list[int] = []
        lats: list[float] = []
        lngs: list[float] = []
        by_cat: dict[str, list[int]] = {}
        tag_parts: list[bytes] = []
        ends: list[int] = []
        end = 0
        self.proj = index.proj
        self.outlines: dict[int, BaseGeometry] = {}
        reach: dict[int, float] = {}
        cursor = index.execute("SELECT id, category, lat, lng, tags, geom FROM features WHERE type = 'poi'")
        while rows := cursor.fetchmany(POI_READ_ROWS):
            for fid, category, lat, lng, tags, geom in rows:
                pos = len(ids)
                ids.append(fid)
                lats.append(lat)
                lngs.append(lng)
                if category:
                    by_cat.setdefault(category, []).append(pos)
                raw = (tags or "").encode()
                tag_parts.append(raw + TAGS_END)
                end += len(raw) + len(TAGS_END)
                ends.append(end)
                if geom is not None:
                    outline = shapely.from_wkb(geom)
                    x, y = index.proj.to_xy(lat, lng)
                    self.outlines[pos] = outline
                    reach[pos] = shapely.hausdorff_distance(shapely.Point(float(x), float(y)), outline)
        self.all_ids = np.array(ids, dtype=np.int64)
        self.all_lat = np.array(lats, dtype=np.float64)
        self.all_lng = np.array(lngs, dtype=np.float64)
        self.all_reach = np.zeros(len(ids))
        for pos, far in reach.items():
            self.all_reach[pos] = far
        self._tag_bytes = b"".join(tag_parts)
        self._tag_data = np.frombuffer(self._tag_bytes, dtype=np.uint8)
        self._tag_ends = np.array(ends, dtype=np.int64)  # each POI's tags end (past its TAGS_END)
        self._masks: dict[str, Any] = {}  # needle -> positions of the POIs whose tags hold it
        self.arrays = {cat: np.array(items, dtype=np.int64) for cat, items in by_cat.items()}

    def tags(self, pos: int) -> str:
        """The POI's raw tags, ``'|k=v|k=v|'``."""
        start = int(self._tag_ends[pos - 1]) if pos else 0
        return self._tag_bytes[start : int(self._tag_ends[pos]) - len(TAGS_END)].decode()

    def for_tag(self, needle: str):
        """Positions of the POIs whose tags hold ``needle`` ('|amenity=cafe|')."""
        found = self._masks.get(needle)
        if found is None:
            found = self._positions_holding(needle.encode())
            if len(self._masks) > 512:
                self._masks.clear()
            self._masks[needle] = found
        return found

    def _positions_holding(self, needle: bytes):
        """Positions whose tags hold ``needle``: the buffer's offsets where its first byte is,
        narrowed byte by byte (numpy), each kept where the whole needle lies within one POI's tags."""
        data, ends = self._tag_data, self._tag_ends
        if not needle:
            return np.arange(len(ends))
        at = np.flatnonzero(data[: max(len(data) - len(needle) + 1, 0)] == needle[0])
        for k in range(1, len(needle)):
            if not len(at):
                break
            at = at[data[at + k] == needle[k]]
        owner = np.searchsorted(ends, at, side="right")
        return np.unique(owner[at + len(needle) <= ends[owner] - len(TAGS_END)])

    def outline_distance(self, pos: int, lat: float, lng: float) -> float | None:
        """Metres from the point to the POI's outline (0 inside), or None for a point POI."""
        outline = self.outlines.get(pos)
        if outline is None:
            return None
        x, y = self.proj.to_xy(lat, lng)
        return float(outline.distance(shapely.Point(float(x), float(y))))


def poi_arrays(index: SearchIndex) -> PoiArrays:
    found = index._poi_arrays
    if found is None:
        found = PoiArrays(index)
        index._poi_arrays = found
    return found


# ``highway`` kinds of streets that are no address of their own (reverse geocoding answers them
# only when no address and no other street is within the radius)
MINOR_STREET_KINDS = frozenset({"footway", "path", "cycleway", "steps", "corridor", "bridleway", "track"})


IN_BOX = "r.max_lng >= ? AND r.min_lng <= ? AND r.max_lat >= ? AND r.min_lat <= ?"
# an index imported before ``address_points`` existed (engine.search.address_points)
ADDRESS_POINTS_IN_RTREE = (
    "SELECT f.id, f.lat, f.lng, f.type = 'poi', COALESCE(f.street_id, -1), f.geom "
    f"FROM points_rtree r JOIN features f ON f.id = r.id WHERE {IN_BOX} AND {ADDRESS_POINT} ORDER BY f.id"
)
STREET_PARTS_IN_BOX = (
    f"SELECT p.street_id, p.geom FROM parts_rtree r JOIN street_parts p ON p.id = r.id WHERE {IN_BOX} ORDER BY p.id"
)
# R*Tree boxes are stored as 32-bit floats, rounded outwards: a query box this much larger (degrees,
# ~0.1 m) finds every row whose true coordinates are in the box
RTREE_SLACK_DEG = 1e-6


@dataclass(frozen=True)
class NearAddress:
    """An address-bearing point near a point (``SpatialCache.addresses_near``)."""

    distance: float  # metres in the index's projection
    feature_id: int
    is_poi: bool
    street_id: int  # -1: none
    footprint: bytes | None  # its outline (WKB, metres in the index's projection), if it has one


@dataclass(frozen=True)
class NearParts:
    """Street pieces near a point, in metres of the index's projection (``SpatialCache.parts_near``)."""

    street_ids: NDArray[np.int64]
    lines: NDArray[np.object_]  # ways (LineString) and squares (Polygon)


class SpatialCache:
    """What reverse geocoding looks up near a point. Address points and street pieces come from the
    dataset's R*Trees (``points_rtree``, ``parts_rtree``) through SQL, so every worker reads the
    same memory-mapped pages instead of holding a KD-tree and the geometries of a whole region
    (hundreds of MB per worker for a few million addresses, and seconds to build on the first
    request). Distances are measured in the index's metric projection (``index.proj``): an R*Tree
    box in degrees only selects the candidates. Kept in the process: the ids of the minor streets
    (:data:`MINOR_STREET_KINDS` that no address names), read once."""

    def __init__(self, index: SearchIndex) -> None:
        self._index = index
        self._clustered = index.has_table(address_points.TABLE_NAME)
        kinds = sorted(f"highway={kind}" for kind in MINOR_STREET_KINDS)  # a street's category
        self.minor_streets = frozenset(
            sid
            for (sid,) in index.execute(
                f"SELECT s.id FROM features s WHERE s.type = 'street' AND s.category IN ({','.join('?' * len(kinds))}) "
                "AND NOT EXISTS (SELECT 1 FROM features a WHERE a.type = 'address' AND a.street_id = s.id)",
                kinds,
            )
        )

    def _box(self, lat: float, lng: float, radius: float) -> tuple[float, float, float, float]:
        """(min lng, max lng, min lat, max lat) holding every point within ``radius`` metres."""
        proj = self._index.proj
        dlng, dlat = radius / proj.kx + RTREE_SLACK_DEG, radius / proj.ky + RTREE_SLACK_DEG
        return lng - dlng, lng + dlng, lat - dlat, lat + dlat

    def addresses_near(self, lat: float, lng: float, radius: float, k: int) -> list[NearAddress]:
        """The ``k`` nearest address-bearing points closer than ``radius``, nearest first."""
        box = self._box(lat, lng, radius)
        if self._clustered:
            rows = address_points.in_box(self._index.execute, *box)
        else:
            rows = self._index.execute(ADDRESS_POINTS_IN_RTREE, box).fetchall()
        if not rows:
            return []
        cols = np.array([row[:5] for row in rows], dtype=np.float64)  # ids stay exact in float64 below 2**53
        px, py = self._index.proj.to_xy(lat, lng)
        x, y = self._index.proj.to_xy(cols[:, 1], cols[:, 2])
        dists = np.sqrt((x - px) ** 2 + (y - py) ** 2)
        nearest = np.argsort(dists, kind="stable")[:k]
        return [
            NearAddress(float(dists[i]), int(cols[i, 0]), bool(cols[i, 3]), int(cols[i, 4]), rows[i][5])
            for i in nearest.tolist()
            if dists[i] < radius
        ]

    def parts_near(self, lat: float, lng: float, radius: float) -> NearParts:
        """The street pieces whose box comes within ``radius`` of the point (a superset of those
        within the radius: the caller measures)."""
        rows = self._index.execute(STREET_PARTS_IN_BOX, self._box(lat, lng, radius)).fetchall()
        lines = np.asarray(shapely.from_wkb([wkb for _sid, wkb in rows]), dtype=object)
        if rows:
            lines = shapely.transform(lines, self._index.proj.coords_to_xy)
        return NearParts(np.array([sid for sid, _wkb in rows], dtype=np.int64), lines)


def spatial_cache(index: SearchIndex) -> SpatialCache:
    found = index._spatial
    if found is None:
        with index._spatial_lock:
            found = index._spatial
            if found is None:
                found = SpatialCache(index)
                index._spatial = found
    return found
