"""Read side of search.sqlite: opened read-only, shared by every request of a process.

SQLite connections are per thread (``mode=ro`` URI, memory-mapped), so gunicorn threads and
Celery threads share the page cache. The vocabulary (every normalised word of every name, a few
thousand words for a city) is loaded once into a symmetric-delete table for typo tolerance
(edit distance 1, 2 for words of 8+ letters) and a sorted list for prefixes.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import shapely
from rapidfuzz import process
from rapidfuzz.distance import OSA

from engine import layout
from engine.geo import LocalProjection

FEATURE_COLUMNS = (
    "id, type, name, names, housenumber, hn_norm, street, street_key, street_id, city, district, "
    "postcode, country, lat, lng, osm_type, osm_id, category, tags, importance"
)
_FIELDS = [c.strip() for c in FEATURE_COLUMNS.split(",")]


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


class SearchIndex:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        conn = self._conn()
        self.vocab: dict[str, int] = dict(conn.execute("SELECT word, freq FROM vocab"))
        self.sorted_words = sorted(self.vocab)
        self._del: dict[str, list[str]] = {}
        for w in self.vocab:
            if len(w) >= 4 and not w.isdigit():
                for d in _deletes(w):
                    self._del.setdefault(d, []).append(w)
        # prefixes (4..10 letters) by their one-letter deletes: typos while typing
        pdel: dict[str, set[str]] = {}
        for w in self.vocab:
            if len(w) >= 5 and not w.isdigit():
                for n in range(4, min(len(w), 10) + 1):
                    pre = w[:n]
                    for d in _deletes(pre) | {pre}:
                        pdel.setdefault(d, set()).add(w)
        self._pdel: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in pdel.items()}
        del pdel
        self._by_len: dict[int, list[str]] = {}
        for w in self.vocab:
            if not w.isdigit():
                self._by_len.setdefault(len(w), []).append(w)
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        lat0, lng0 = json.loads(meta.get("proj", "[0, 0]"))
        self.proj = LocalProjection(lat0, lng0)
        self._street_geoms: dict[int, object] = {}
        self._expand_cache: dict[tuple, dict[str, float]] = {}
        self._geom_lock = threading.Lock()
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

    # -- vocabulary ----------------------------------------------------------------------------
    def expand(self, tok: str, prefix: bool = False, fuzzy: bool = True) -> dict[str, float]:
        """Vocabulary words a query token may stand for, with a match quality in (0, 1]."""
        key = (tok, prefix, fuzzy)
        found = self._expand_cache.get(key)
        if found is None:
            found = self._expand(tok, prefix, fuzzy)
            if len(self._expand_cache) > 100_000:
                self._expand_cache.clear()
            self._expand_cache[key] = found
        return found

    def _expand(self, tok: str, prefix: bool, fuzzy: bool) -> dict[str, float]:
        out: dict[str, float] = {}
        if tok in self.vocab:
            out[tok] = 1.0
        if prefix and len(tok) >= 4:  # shorter prefixes: FTS5 prefix queries (geocoder)
            i = bisect.bisect_left(self.sorted_words, tok)
            n = 0
            while i < len(self.sorted_words) and self.sorted_words[i].startswith(tok) and n < 40:
                w = self.sorted_words[i]
                if w != tok:
                    out.setdefault(w, 0.75 + 0.2 * len(tok) / len(w))
                i += 1
                n += 1
        if prefix and fuzzy and len(tok) >= 4 and len(out) < 3 and not tok.isdigit():
            head = tok[:10]
            maxd = 1 if len(tok) < 8 else 2
            for key in _deletes(head) | {head}:
                for w in self._pdel.get(key, ()):
                    if w in out:
                        continue
                    n = len(tok)
                    d = min(OSA.distance(tok, w[:m], score_cutoff=maxd) for m in (n - 1, n, n + 1))
                    if d <= maxd:
                        out[w] = 0.7
        if fuzzy and len(tok) >= 4 and not tok.isdigit() and tok not in self.vocab:
            maxd = 2 if len(tok) >= 8 else 1
            keys = {tok} | _deletes(tok)
            if maxd == 2:
                keys |= {d2 for d in _deletes(tok) for d2 in _deletes(d)}
            for key in keys:
                for w in self._del.get(key, ()):
                    if w in out:
                        continue
                    d = OSA.distance(tok, w, score_cutoff=maxd)
                    if d <= maxd:
                        out[w] = 0.85 if d == 1 else 0.7
                w_exact = key if key in self.vocab and key != tok else None
                if w_exact and w_exact not in out and len(w_exact) >= 3:
                    d = OSA.distance(tok, w_exact, score_cutoff=maxd)
                    if d <= maxd:
                        out[w_exact] = 0.85 if d == 1 else 0.7
            if not out and len(tok) >= 6:
                # two edits the delete table cannot see (e.g. a swap and a substitution)
                for n in range(len(tok) - 2, len(tok) + 3):
                    pool = self._by_len.get(n)
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
        """(entry id, feature id, norm) of entries matching an FTS5 expression, best first."""
        sql = (
            "SELECT e.id, e.feature_id, e.norm FROM entries_fts f JOIN entries e ON e.id = f.rowid "
            "WHERE entries_fts MATCH ? ORDER BY f.rank LIMIT ?"
        )
        try:
            return list(self.execute(sql, (match, limit)))
        except sqlite3.OperationalError:
            return []

    def addresses_on_street(self, street_id: int) -> list[dict]:
        rows = self.execute(
            f"SELECT {FEATURE_COLUMNS} FROM features WHERE type = 'address' AND street_id = ?",
            (street_id,),
        )
        return [self.row_to_feature(r) for r in rows]

    def street_geometry(self, street_id: int):
        geom = self._street_geoms.get(street_id)
        if geom is None:
            row = self.execute("SELECT geom FROM features WHERE id = ?", (street_id,)).fetchone()
            if row is None or row[0] is None:
                return None
            geom = shapely.from_wkb(row[0])
            with self._geom_lock:
                self._street_geoms[street_id] = geom
        return geom

    def footprints(self, ids) -> dict[int, object]:
        """Building outlines of address features, in metres of ``self.proj`` (see ingest)."""
        ids = list(ids)
        if not ids:
            return {}
        rows = self.execute(
            f"SELECT id, geom FROM features WHERE id IN ({','.join('?' * len(ids))}) AND geom IS NOT NULL",
            ids,
        )
        return {fid: shapely.from_wkb(g) for fid, g in rows}

    def category_counts(self) -> dict[str, int]:
        rows = self.execute(
            "SELECT category, COUNT(*) FROM features WHERE type = 'poi' AND category IS NOT NULL GROUP BY category"
        )
        return dict(rows)


class PoiArrays:
    """POI coordinates in numpy arrays, for nearest-by-category in microseconds.

    ``arrays[category]`` and :meth:`for_tag` give positions into ``all_ids`` / ``all_lat`` /
    ``all_lng`` / ``all_reach``. An area POI (a park, a parking lot: stored with its outline) has
    its outline in ``outlines[position]`` (metres of ``index.proj``) and, in ``all_reach``, the
    farthest any point of it lies from its (lat, lng): its outline is at least
    ``distance - reach`` away, so a scan by point distance knows which outlines to measure."""

    def __init__(self, index: SearchIndex) -> None:
        import numpy as np  # noqa: PLC0415

        rows = index.execute("SELECT id, category, lat, lng, tags, geom FROM features WHERE type = 'poi'").fetchall()
        by_cat: dict[str, list[int]] = {}
        for pos, row in enumerate(rows):
            if row[1]:
                by_cat.setdefault(row[1], []).append(pos)
        self.proj = index.proj
        self.all_ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.all_lat = np.array([r[2] for r in rows], dtype=np.float64)
        self.all_lng = np.array([r[3] for r in rows], dtype=np.float64)
        self.all_reach = np.zeros(len(rows))
        self.outlines: dict[int, object] = {}
        for pos, row in enumerate(rows):
            if row[5] is not None:
                outline = shapely.from_wkb(row[5])
                x, y = index.proj.to_xy(row[2], row[3])
                self.outlines[pos] = outline
                self.all_reach[pos] = shapely.hausdorff_distance(shapely.Point(float(x), float(y)), outline)
        self._tags = [r[4] or "" for r in rows]
        self._masks: dict[str, Any] = {}  # needle -> positions of the POIs whose tags hold it
        self.arrays = {cat: np.array(items, dtype=np.int64) for cat, items in by_cat.items()}

    def tags(self, pos: int) -> str:
        """The POI's raw tags, ``'|k=v|k=v|'``."""
        return self._tags[pos]

    def for_tag(self, needle: str):
        """Positions of the POIs whose tags hold ``needle`` ('|amenity=cafe|')."""
        import numpy as np  # noqa: PLC0415

        found = self._masks.get(needle)
        if found is None:
            found = np.nonzero(np.fromiter((needle in t for t in self._tags), dtype=bool, count=len(self._tags)))[0]
            if len(self._masks) > 512:
                self._masks.clear()
            self._masks[needle] = found
        return found

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


class SpatialCache:
    """In-memory, metric (``index.proj``) copies of what reverse geocoding scans: address points
    (and POIs that carry an address) in a KD-tree, street pieces in an STRtree, the ids of the
    minor streets (:data:`MINOR_STREET_KINDS` that no address names). Built on first use, a few MB
    for a city."""

    def __init__(self, index: SearchIndex) -> None:
        import numpy as np  # noqa: PLC0415
        from scipy.spatial import cKDTree  # noqa: PLC0415

        proj = index.proj
        rows = index.execute(
            "SELECT id, lat, lng, type = 'poi', COALESCE(street_id, -1) FROM features "
            "WHERE type = 'address' OR (type = 'poi' AND street IS NOT NULL AND housenumber IS NOT NULL)"
        ).fetchall()
        self.addr_ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.addr_is_poi = np.array([bool(r[3]) for r in rows], dtype=bool)
        self.addr_street = np.array([r[4] for r in rows], dtype=np.int64)
        self.addr_tree: cKDTree | None = None
        if rows:
            x, y = proj.to_xy(np.array([r[1] for r in rows]), np.array([r[2] for r in rows]))
            self.addr_tree = cKDTree(np.column_stack([x, y]))
        parts = index.execute("SELECT street_id, geom FROM street_parts").fetchall()
        self.part_street = np.array([p[0] for p in parts], dtype=np.int64)
        lines = []

        def metric(coords):
            x, y = proj.to_xy(coords[:, 1], coords[:, 0])
            return np.column_stack([x, y])

        for _sid, wkb in parts:  # ways (LineString) and squares (Polygon)
            lines.append(shapely.transform(shapely.from_wkb(wkb), metric))
        self.part_lines = np.array(lines, dtype=object)
        self.part_tree = shapely.STRtree(lines) if lines else None
        self.footprints = {
            fid: shapely.from_wkb(g)
            for fid, g in index.execute("SELECT id, geom FROM features WHERE type = 'address' AND geom IS NOT NULL")
        }
        # streets nobody gives as an address: footways, passages, steps... that no address names
        addressed = set(self.addr_street[~self.addr_is_poi].tolist())
        self.minor_streets = frozenset(
            sid
            for sid, category in index.execute("SELECT id, category FROM features WHERE type = 'street'")
            if category and category.removeprefix("highway=") in MINOR_STREET_KINDS and sid not in addressed
        )


def spatial_cache(index: SearchIndex) -> SpatialCache:
    found = index._spatial
    if found is None:
        with index._geom_lock:
            found = index._spatial
            if found is None:
                found = SpatialCache(index)
                index._spatial = found
    return found
