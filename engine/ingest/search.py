"""Import stage "search": addresses, named streets, places and POIs -> search.sqlite.

Two passes over the PBF at once (engine.ingest.search_reading): the addresses in a child
process, the street pieces, places and POIs here. Every feature gets country/city/district from
its addr:* tags or, when missing, from the admin areas of the "admin" stage
(``ctx.shared["admin_areas"]``); a missing postcode is taken from the nearest address of the same
street that has one (within 300 m).

The steps: the feature pass, then the features in id order, each written as it is made
(``_IndexWriter``, so memory does not grow with the rows): streets (same-name ways clustered,
while the address pass still reads), addresses (the address pass's columns of
engine.ingest.search_addresses: orphans adopted, duplicates dropped, postcodes filled, tied to a
street; the street postcodes set once those are known), places, admin areas as places, POIs, and
``_finish_index`` (full-text indexes, vocabulary, secondary indexes).

Tables (see engine.search.index for the reader):
    features      one row per address / street / place / poi; geom: a street's lines (WKB, lon/lat),
                  an address's building outline or an area POI's outline (park, parking lot; WKB,
                  metres in the projection of meta 'proj'); a street's category is its highway
                  kind ('highway=residential', reverse geocoding tells footways from streets)
    entries       one row per searchable name variant (normalised)
    names, names_fts  each distinct normalised name once, with its FTS5 index: a name the
                  entries of thousands of streets share is ranked once (entries_norm finds them)
    entry_context_fts  FTS5 of each entry's name (column norm) and its feature's context words
                  (column context: city, district, postcode, country; a street's also those its
                  addresses give), so '<street>, <town>' asks for both (engine.search.context);
                  a dataset imported before it existed has none, the geocoder then searches names
    vocab         every normalised word with its frequency (typo tolerance works on it)
    vocab_deletes, vocab_prefix_deletes, vocab_lengths   its typo tables (engine.search.vocabulary)
    points_rtree  R*Tree over places, POIs and the streets known only from addresses
    address_points  addresses and the POIs that carry one, clustered by where they are, for
                  reverse geocoding (engine.search.address_points; written last, from features)
    street_parts + parts_rtree  the streets' ways and squares, and their R*Tree, numbered by where
                  they are (engine.search.street_parts; written last, from a staging table)
"""

from __future__ import annotations

import json
import math
import operator
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, fields
from itertools import repeat
from pathlib import Path

import numpy as np
import shapely
from shapely.geometry import LineString, MultiLineString, Point, Polygon

from engine import layout
from engine.admin import AdminArea, AdminIndex, PartColumns, address_parts
from engine.geo import LocalProjection
from engine.ingest.context import ImportContext
from engine.ingest.osm_tags import name_variants, names_of
from engine.ingest.search_addresses import (
    AddressChunk,
    AddressTable,
    IndexedStreet,
    StreetPostcode,
    UnknownStreet,
    adopt_orphans,
    assign_streets,
    dedupe,
    fill_postcodes,
    street_postcodes,
)
from engine.ingest.search_reading import (
    AddressPass,
    CollectedPlace,
    CollectedPoi,
    CollectedWay,
    footprint_wkb,
    read_features,
)
from engine.ingest.sqlite_writer import SqliteWriter
from engine.progress import ImportProgress
from engine.search import address_points, street_parts, vocabulary
from engine.search.context import context_text, context_words
from engine.search.normalize import normalize, normalize_housenumber, tokens

DRIVABLE = {
    "motorway",
    "trunk",
    "primary",
    "secondary",
    "tertiary",
    "unclassified",
    "residential",
    "motorway_link",
    "trunk_link",
    "primary_link",
    "secondary_link",
    "tertiary_link",
    "living_street",
    "service",
    "road",
}
CLUSTER_GAP_M = 150.0  # same-name street pieces closer than this are one street
FLUSH_ROWS = 20_000  # features written to SQLite at a time
# SQLite's page cache while the index is built (default 2 MB): each point is added to the R*Tree
# on its own, down a path of pages that a small cache reads again and again from the file
BUILD_CACHE_KIB = 128 * 1024
PARTS_CACHE_MAX = 100_000  # points whose admin parts are kept
CONTEXTS_MAX = 100_000  # distinct feature contexts kept before they are written

# -- rows of the index ----------------------------------------------------------------------------


@dataclass
class Feature:
    """One row of ``features``; the fields in the order of the table's columns."""

    id: int
    type: str  # address / street / place / poi
    name: str | None
    names: str | None  # JSON {"name": ..., "name:sv": ...}
    housenumber: str | None
    hn_norm: str | None
    street: str | None
    street_key: str | None
    street_id: int | None
    city: str | None
    district: str | None
    postcode: str | None
    country: str | None
    lat: float
    lng: float
    osm_type: str | None
    osm_id: int | None
    category: str | None  # a POI's category, a place's place=* or admin_level=N
    tags: str | None  # a POI's raw tags, "|amenity=bench|..."
    importance: float
    geom: bytes | None

    def as_row(self) -> tuple[object, ...]:
        return _FEATURE_ROW(self)


FEATURE_COLUMNS = tuple(f.name for f in fields(Feature))
_FEATURE_ROW = operator.attrgetter(*FEATURE_COLUMNS)  # the row tuple, made in C


# The rows sent to the writer process are plain tuples: pickling a NamedTuple costs about ten
# times as much as the tuple, and there is one per address.

# one row of ``entries``, a searchable name variant of a feature: (id, feature_id, norm, is_primary)
Entry = tuple[int, int, str, int]


# where a feature with entries is, or one of the addresses of such a street: rows of the import's
# temporary ``feature_context`` (joined per feature in ``_write_entry_contexts``): (feature_id,
# city, district, postcode, country)
FeatureContext = tuple[int, str | None, str | None, str | None, str | None]


# one row of ``points_rtree``, a point feature other than an address as a degenerate box: (id,
# min_lng, max_lng, min_lat, max_lat)
PointBox = tuple[int, float, float, float, float]


# a street piece as staged (engine.search.street_parts numbers them by place at the end): (street_id,
# geom, min_lng, max_lng, min_lat, max_lat); geom a way's LineString or a square's Polygon (WKB)
StreetPart = tuple[int, bytes, float, float, float, float]


_INSERT_FEATURE = (
    f"INSERT INTO features ({', '.join(FEATURE_COLUMNS)}) VALUES ({', '.join('?' * len(FEATURE_COLUMNS))})"
)


def _insert_rows(
    conn: sqlite3.Connection,
    features: list[tuple[object, ...]],
    entries: list[Entry],
    point_boxes: list[PointBox],
    parts: list[StreetPart],
) -> None:
    """The rows made since the last flush (a job of the writer process)."""
    conn.executemany(_INSERT_FEATURE, features)
    conn.executemany("INSERT INTO entries VALUES (?,?,?,?)", entries)
    conn.executemany("INSERT INTO points_rtree VALUES (?,?,?,?,?)", point_boxes)
    conn.executemany(street_parts.STAGE, parts)


def _insert_contexts(conn: sqlite3.Connection, rows: list[tuple[int, str]]) -> None:
    conn.executemany("INSERT INTO temp.feature_context VALUES (?,?)", rows)


def _set_postcodes(conn: sqlite3.Connection, rows: list[tuple[str, int]]) -> None:
    conn.executemany("UPDATE features SET postcode = ? WHERE id = ?", rows)


class _IndexWriter:
    """Writes the rows of the index as they are made, FLUSH_ROWS features at a time (nothing
    holds every row until the end); a feature's id is its position (from 1). Counts the features
    by type and the vocabulary on the way.

    The rows go to ``writes``, whose process inserts them while the next ones are made (SQLite
    took a quarter of the stage when every address went into an R*Tree too)."""

    def __init__(self, writes: SqliteWriter, admin: AdminIndex) -> None:
        self.writes = writes
        self.admin = admin
        self.next_id = 1
        self.counts: Counter[str] = Counter()
        self.vocab: dict[str, int] = defaultdict(int)  # word -> frequency in the names
        self._entry_count = 0
        self._features: list[tuple[object, ...]] = []
        self._entries: list[Entry] = []
        self._contexts: set[FeatureContext] = set()
        self._point_boxes: list[PointBox] = []
        self._parts: list[StreetPart] = []
        self._parts_cache: dict[tuple[float, float], dict[str, str | None]] = {}

    def add(self, feature: Feature, variants: list[str] | None = None, point: bool = True) -> None:
        """Add a feature, its searchable name variants (the first one is its primary name) and,
        for a point feature, its R*Tree box (addresses come by ``add_points``)."""
        assert feature.id == self.next_id
        self.next_id += 1
        self.counts[feature.type] += 1
        self._features.append(feature.as_row())
        if self._add_entries(feature.id, variants or []):
            self._add_context(feature.id, feature)
        elif feature.type == "address" and feature.street_id is not None:
            # where the address is places its street too: a street crossing a town line is
            # found from either town
            self._add_context(feature.street_id, feature)
        self._add_context_words((feature.city, feature.district, feature.postcode))
        if point:
            self._point_boxes.append((feature.id, feature.lng, feature.lng, feature.lat, feature.lat))
        if len(self._features) >= FLUSH_ROWS:
            self.flush()

    def add_points(
        self,
        kind: str,
        rows: list[tuple[object, ...]],
        contexts: list[FeatureContext],
        context_values: set[str | None],
    ) -> None:
        """Point features without names of their own, already as rows (a chunk of addresses):
        the contexts they give (their streets'), the city, district and postcode values among
        those. They have no R*Tree box: reverse geocoding finds them in ``address_points``."""
        if not rows:
            return
        assert rows[0][0] == self.next_id
        self.next_id += len(rows)
        self.counts[kind] += len(rows)
        self._features += rows
        self._keep_contexts(contexts)
        self._add_context_words(context_values)
        if len(self._features) >= FLUSH_ROWS:
            self.flush()

    def _add_context_words(self, values: Iterable[str | None]) -> None:
        """A city's, district's or postcode's words: typo tolerance may correct to them."""
        for value in values:
            for tok in tokens(value or ""):
                self.vocab[tok] += 0

    def _add_context(self, owner_id: int, feature: Feature) -> None:
        """The feature's city, district, postcode and country as context of ``owner_id`` (itself,
        or an address's street); each distinct one once while CONTEXTS_MAX are kept."""
        self._keep_contexts([(owner_id, feature.city, feature.district, feature.postcode, feature.country)])

    def _keep_contexts(self, contexts: Iterable[FeatureContext]) -> None:
        """Contexts kept, each distinct one once, until CONTEXTS_MAX are written."""
        self._contexts.update(contexts)
        if len(self._contexts) >= CONTEXTS_MAX:
            self.write_contexts()

    def write_contexts(self) -> None:
        """The contexts kept, into the temporary table (the last ones: before ``_finish_index``)."""
        rows = [(c[0], context_text(context_words(*c[1:]))) for c in self._contexts]
        self.writes.submit(_insert_contexts, rows)
        self._contexts = set()

    def _add_entries(self, feature_id: int, variants: list[str]) -> bool:
        """The feature's name variants as entries; whether it has any."""
        seen: set[str] = set()
        for i, variant in enumerate(variants):
            norm = normalize(variant)
            if norm and norm not in seen:
                seen.add(norm)
                self._entry_count += 1
                self._entries.append((self._entry_count, feature_id, norm, 1 if i == 0 else 0))
                for tok in norm.split():
                    self.vocab[tok] += 1
        return bool(seen)

    def add_street_part(self, street_id: int, geom: bytes, bounds: tuple[float, float, float, float]) -> None:
        min_lng, min_lat, max_lng, max_lat = bounds
        self._parts.append((street_id, geom, min_lng, max_lng, min_lat, max_lat))

    def set_street_postcodes(self, postcodes: list[StreetPostcode]) -> None:
        """A street's postcode, known once its addresses are (the rows are written by then)."""
        self.flush()
        rows = [(p.postcode, p.street_id) for p in postcodes]
        self.writes.submit(_set_postcodes, rows)

    def flush(self) -> None:
        """The rows made so far, handed to the writer."""
        self.writes.submit(_insert_rows, self._features, self._entries, self._point_boxes, self._parts)
        self._features, self._entries, self._point_boxes, self._parts = [], [], [], []

    def parts(self, lat: float, lng: float) -> dict[str, str | None]:
        """country / city / district of a point from the admin areas (cached per ~1 m, a bounded
        cache: nearly every address has a point of its own)."""
        key = (round(lat, 5), round(lng, 5))
        found = self._parts_cache.get(key)
        if found is None:
            if len(self._parts_cache) >= PARTS_CACHE_MAX:
                self._parts_cache.clear()
            found = address_parts(self.admin.containing(lat, lng))
            self._parts_cache[key] = found
        return found


# -- streets --------------------------------------------------------------------------------------


def _cluster_ways(ways: list[CollectedWay], proj: LocalProjection) -> list[list[CollectedWay]]:
    """Split same-name ways into streets: pieces within CLUSTER_GAP_M belong together."""
    if len(ways) == 1:
        return [ways]
    lines = [LineString(proj.coords_to_xy(w.coords)) for w in ways]
    parent = list(range(len(ways)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    tree = shapely.STRtree(lines)
    for i, line in enumerate(lines):
        for j in tree.query(line, predicate="dwithin", distance=CLUSTER_GAP_M):
            ri, rj = find(i), find(int(j))
            if ri != rj:
                parent[ri] = rj
    groups: dict[int, list[CollectedWay]] = defaultdict(list)
    for i, w in enumerate(ways):
        groups[find(i)].append(w)
    return list(groups.values())


def _line_length_m(coords: np.ndarray, proj: LocalProjection) -> float:
    arr = np.asarray(coords)
    x, y = proj.to_xy(arr[:, 1], arr[:, 0])
    return float(np.sum(np.hypot(np.diff(x), np.diff(y))))


def _street_point(lines: list[LineString], multi: MultiLineString) -> Point:
    """The point a street is found at: on its line, nearest the centroid of all its pieces."""
    c = multi.centroid
    if len(lines) == 1:
        return multi.interpolate(multi.project(c))
    best = min(lines, key=lambda ln: ln.distance(c))
    return best.interpolate(best.project(c))


def _street_names(group: list[CollectedWay]) -> tuple[str, dict[str, str]]:
    """The name most of the pieces carry (the first on a tie), and every name key of any piece."""
    names: dict[str, str] = {}
    for w in group:
        for k, v in w.names.items():
            names.setdefault(k, v)
    name = max((w.name for w in group), key=lambda n: sum(w.name == n for w in group))
    return name, names


def _street_importance(group: list[CollectedWay], proj: LocalProjection) -> float:
    """Longer streets rank higher (up to 0.6), drivable ones a little more."""
    length = sum(_line_length_m(w.coords, proj) for w in group)
    drivable = any(w.highway in DRIVABLE for w in group)
    return min(0.6, 0.2 + 0.1 * math.log10(1 + length)) + (0.05 if drivable else 0)


def street_kind(highways: list[str]) -> str:
    """The ``highway`` value a street of several ways is known by (its ``category`` column):
    the most frequent drivable one, else the most frequent one."""
    drivable = [h for h in highways if h in DRIVABLE]
    pool = drivable or highways
    return max(sorted(set(pool)), key=pool.count)


def _add_street(writer: _IndexWriter, key: str, group: list[CollectedWay], proj: LocalProjection) -> IndexedStreet:
    """A street feature of same-name pieces, with one street part per piece."""
    lines = [LineString(w.coords) for w in group]
    multi = MultiLineString(lines)
    rep = _street_point(lines, multi)
    name, names = _street_names(group)
    p = writer.parts(rep.y, rep.x)
    fid = writer.next_id
    kind = street_kind([w.highway for w in group])
    feature = Feature(
        id=fid,
        type="street",
        name=name,
        names=json.dumps(names, ensure_ascii=False),
        housenumber=None,
        hn_norm=None,
        street=name,
        street_key=key,
        street_id=None,
        city=p["city"],
        district=p["district"],
        postcode=None,  # set from its addresses (_set_street_postcodes)
        country=p["country"],
        lat=rep.y,
        lng=rep.x,
        osm_type="way",
        osm_id=group[0].osm_id,
        category=f"highway={kind}",
        tags=None,
        importance=_street_importance(group, proj),
        geom=shapely.to_wkb(multi),
    )
    writer.add(feature, [name, *name_variants(names)], point=False)
    for w, line in zip(group, lines, strict=True):
        part = Polygon(w.coords) if w.area else line
        if not part.is_valid:
            part = line
        writer.add_street_part(fid, shapely.to_wkb(part), line.bounds)
    return IndexedStreet(fid, key, name, multi, rep.y, rep.x, kind)


def _add_streets(
    writer: _IndexWriter, streets: dict[str, list[CollectedWay]], proj: LocalProjection
) -> list[IndexedStreet]:
    return [
        _add_street(writer, key, group, proj) for key, ways in streets.items() for group in _cluster_ways(ways, proj)
    ]


# -- addresses ------------------------------------------------------------------------------------


def _add_address_streets(writer: _IndexWriter, table: AddressTable, unknown: list[UnknownStreet]) -> None:
    """Streets known only from their addresses (squares, pedestrian areas): searchable too, at the
    mean of their addresses."""
    for street in unknown:
        lat = float(np.mean(table.lat[street.rows]))
        lng = float(np.mean(table.lng[street.rows]))
        p = writer.parts(lat, lng)
        fid = writer.next_id
        feature = Feature(
            id=fid,
            type="street",
            name=street.name,
            names=json.dumps({"name": street.name}, ensure_ascii=False),
            housenumber=None,
            hn_norm=None,
            street=street.name,
            street_key=street.key,
            street_id=None,
            city=p["city"],
            district=p["district"],
            postcode=None,
            country=p["country"],
            lat=lat,
            lng=lng,
            osm_type=None,
            osm_id=None,
            category=None,
            tags=None,
            importance=0.25,
            geom=None,
        )
        writer.add(feature, [street.name] if street.name else [])
        table.street_id[street.rows] = fid


def _add_address_chunk(writer: _IndexWriter, chunk: AddressChunk, areas: PartColumns) -> None:
    """Consecutive addresses; ``areas`` the country, city and district of their admin areas."""
    city = [own or area for own, area in zip(chunk.city, areas.city, strict=True)]
    district = [own or area for own, area in zip(chunk.district, areas.district, strict=True)]
    alpha3 = {code: _country(code) for code in set(chunk.country)}
    country = [alpha3[own] or area for own, area in zip(chunk.country, areas.country, strict=True)]
    ids = range(writer.next_id, writer.next_id + len(chunk))
    columns = {
        "id": ids,
        "type": repeat("address"),
        "name": chunk.name,
        "names": repeat(None),
        "housenumber": chunk.number,
        "hn_norm": chunk.hn_norm,
        "street": chunk.street,
        "street_key": chunk.street_key,
        "street_id": chunk.street_id,
        "city": city,
        "district": district,
        "postcode": chunk.postcode,
        "country": country,
        "lat": chunk.lat,
        "lng": chunk.lng,
        "osm_type": chunk.osm_type,
        "osm_id": chunk.osm_id,
        "category": repeat(None),
        "tags": repeat(None),
        "importance": repeat(0.5),
        "geom": chunk.footprint,
    }
    # where an address is places its street too: a street crossing a town line is found from
    # either town
    contexts: list[FeatureContext] = [
        (street_id, town, part, postcode, land)
        for street_id, town, part, postcode, land in zip(
            chunk.street_id, city, district, chunk.postcode, country, strict=True
        )
        if street_id is not None
    ]
    writer.add_points(
        "address",
        list(zip(*(columns[name] for name in FEATURE_COLUMNS), strict=False)),  # repeat() columns are endless
        contexts,
        {*city, *district, *chunk.postcode},
    )


def _add_addresses(
    writer: _IndexWriter,
    table: AddressTable,
    streets: list[IndexedStreet],
    proj: LocalProjection,
    progress: ImportProgress,
) -> None:
    """Addresses after their clean-up: orphans adopted, duplicates dropped, postcodes filled, each
    tied to a street (a street made from the addresses when none has the name)."""
    rows = dedupe(table, adopt_orphans(table, streets, proj))
    fill_postcodes(table, rows, proj)
    _add_address_streets(writer, table, assign_streets(table, rows, streets, proj))
    with progress.step("search: addresses", total=len(rows), unit="addresses") as step:
        for chunk in table.chunks(rows, FLUSH_ROWS):
            _add_address_chunk(writer, chunk, writer.admin.parts_of_points(*chunk.points))
            step.advance(len(chunk))
    writer.set_street_postcodes(street_postcodes(table, rows))


def _country(code: str | None) -> str | None:
    from engine.countries import to_alpha3  # noqa: PLC0415

    return to_alpha3(code)


# -- places and POIs ------------------------------------------------------------------------------

CITY_PLACES = ("city", "town", "village", "municipality")  # a place that is its own city


def _add_places(writer: _IndexWriter, places: list[CollectedPlace]) -> None:
    for pl in places:
        p = writer.parts(pl.lat, pl.lng)
        feature = Feature(
            id=writer.next_id,
            type="place",
            name=pl.name,
            names=json.dumps(pl.names, ensure_ascii=False),
            housenumber=None,
            hn_norm=None,
            street=None,
            street_key=None,
            street_id=None,
            city=pl.name if pl.place in CITY_PLACES else p["city"],
            district=p["district"],
            postcode=pl.postcode,
            country=p["country"],
            lat=pl.lat,
            lng=pl.lng,
            osm_type=pl.osm_type,
            osm_id=pl.osm_id,
            category=pl.place,
            tags=None,
            importance=pl.importance,
            geom=None,
        )
        writer.add(feature, [pl.name, *name_variants(pl.names)])


def _add_admin_places(writer: _IndexWriter, areas: list[AdminArea], places: list[CollectedPlace]) -> None:
    """Admin areas as places, at a point inside them, unless a place node already stands for the
    area or the extract clips a region or country (its point would be arbitrary)."""
    place_names = {normalize(pl.name) for pl in places}
    for area in areas:
        if normalize(area.name) in place_names and area.level >= 7:
            continue
        if area.clipped and area.level < 10:
            continue
        rep = area.geometry.representative_point()
        p = writer.parts(rep.y, rep.x)
        feature = Feature(
            id=writer.next_id,
            type="place",
            name=area.name,
            names=json.dumps(area.names, ensure_ascii=False),
            housenumber=None,
            hn_norm=None,
            street=None,
            street_key=None,
            street_id=None,
            city=area.name if area.level in (7, 8) else p["city"],
            district=area.name if area.level >= 9 else None,
            postcode=None,
            country=area.country or p["country"],
            lat=rep.y,
            lng=rep.x,
            osm_type=area.osm_type,
            osm_id=area.osm_id,
            category=f"admin_level={area.level}",
            tags=None,
            importance=0.95 - 0.04 * area.level,
            geom=None,
        )
        writer.add(feature, [area.name, *name_variants(names_of(area.names))])


def _add_pois(writer: _IndexWriter, pois: list[CollectedPoi], proj: LocalProjection) -> None:
    for poi in pois:
        p = writer.parts(poi.lat, poi.lng)
        feature = Feature(
            id=writer.next_id,
            type="poi",
            name=poi.name,
            names=json.dumps(poi.names, ensure_ascii=False),
            housenumber=poi.number,
            hn_norm=normalize_housenumber(poi.number) or None,
            street=poi.street,
            street_key=normalize(poi.street) or None,
            street_id=None,
            city=poi.city or p["city"],
            district=p["district"],
            postcode=poi.postcode,
            country=p["country"],
            lat=poi.lat,
            lng=poi.lng,
            osm_type=poi.osm_type,
            osm_id=poi.osm_id,
            category=poi.category,
            tags="|" + "|".join(poi.tags) + "|",
            importance=poi.importance,
            geom=footprint_wkb(poi.outline, proj),
        )
        writer.add(feature, [poi.name, *name_variants(poi.names)] if poi.name else [])


# -- writing --------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE features (
    id INTEGER PRIMARY KEY, type TEXT NOT NULL, name TEXT, names TEXT,
    housenumber TEXT, hn_norm TEXT, street TEXT, street_key TEXT, street_id INTEGER,
    city TEXT, district TEXT, postcode TEXT, country TEXT,
    lat REAL NOT NULL, lng REAL NOT NULL, osm_type TEXT, osm_id INTEGER,
    category TEXT, tags TEXT, importance REAL NOT NULL DEFAULT 0, geom BLOB
);
CREATE TABLE entries (id INTEGER PRIMARY KEY, feature_id INTEGER NOT NULL, norm TEXT NOT NULL,
                      is_primary INTEGER NOT NULL);
-- each distinct name once, ranked by FTS5 once however many entries hold it (a country's common
-- street name is the name of thousands of streets and shops); its entries read by entries_norm
CREATE TABLE names (id INTEGER PRIMARY KEY, norm TEXT NOT NULL, entries INTEGER NOT NULL,
                    first_entry INTEGER NOT NULL, first_feature INTEGER NOT NULL);
-- prefix indexes up to engine.search.index.FTS_PREFIX_INDEXED letters
CREATE VIRTUAL TABLE names_fts USING fts5 (norm, content='names', content_rowid='id', prefix='2 3 4');
-- each entry's name again, beside its feature's context words (engine.search.context): a query
-- names the street and the town together (the town perhaps half typed); contentless, rows are
-- read from entries by rowid
-- (a word being typed is asked for from its third letter: prefix indexes of 3 and 4 letters)
CREATE VIRTUAL TABLE entry_context_fts USING fts5 (norm, context, content='', prefix='3 4');
CREATE TEMP TABLE feature_context (feature_id INTEGER NOT NULL, words TEXT NOT NULL);
CREATE TABLE vocab (word TEXT PRIMARY KEY, freq INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE points_rtree USING rtree (id, min_lng, max_lng, min_lat, max_lat);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""

INDEXES = """
CREATE INDEX features_street ON features (street_key, hn_norm) WHERE type = 'address';
CREATE INDEX features_street_id ON features (street_id) WHERE type = 'address';
CREATE INDEX features_category ON features (category) WHERE type = 'poi';
CREATE INDEX entries_feature ON entries (feature_id);
CREATE INDEX entries_norm ON entries (norm);
INSERT INTO names_fts (names_fts) VALUES ('optimize');
INSERT INTO entry_context_fts (entry_context_fts) VALUES ('optimize');
"""


def _create_index(conn: sqlite3.Connection) -> None:
    conn.executescript(
        f"PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-{BUILD_CACHE_KIB};"
        + SCHEMA
        + street_parts.TABLES
        + street_parts.STAGED
        + ";"
    )


ENTRY_CONTEXTS = """
SELECT e.id, e.norm, c.words FROM entries e
LEFT JOIN (SELECT feature_id, group_concat(words, ' ') AS words FROM temp.feature_context GROUP BY feature_id) c
    ON c.feature_id = e.feature_id
ORDER BY e.id
"""


# each name with its number of entries and its first entry (most names have one: no second read)
NAMES = """
INSERT INTO names (norm, entries, first_entry, first_feature)
SELECT e.norm, n.entries, e.id, e.feature_id
FROM (SELECT min(id) AS first_entry, count(*) AS entries FROM entries GROUP BY norm) n
JOIN entries e ON e.id = n.first_entry
ORDER BY e.id
"""


def _write_entry_contexts(conn: sqlite3.Connection) -> None:
    """``entry_context_fts``: every entry's name and the context words of its feature, each once."""
    rows = conn.cursor().execute(ENTRY_CONTEXTS)
    conn.executemany(
        "INSERT INTO entry_context_fts (rowid, norm, context) VALUES (?,?,?)",
        ((entry_id, norm, context_text((words or "").split())) for entry_id, norm, words in rows),
    )
    conn.execute("DROP TABLE temp.feature_context")


def _finish_index(writer: _IndexWriter, proj: LocalProjection) -> None:
    """The last rows, then the tables made from all of them (:func:`_finish_tables`)."""
    writer.flush()
    writer.write_contexts()
    writer.writes.submit(_finish_tables, sorted(writer.vocab.items()), proj)


def _finish_tables(conn: sqlite3.Connection, vocab: list[tuple[str, int]], proj: LocalProjection) -> None:
    """The tables made from the rows written: full-text index, vocabulary and its typo tables,
    the secondary indexes, reverse geocoding's street pieces and address points, meta and
    statistics."""
    # a name's id follows its first entry's: names tied on rank come in the order of their entries
    conn.execute(NAMES)
    conn.execute("INSERT INTO names_fts (rowid, norm) SELECT id, norm FROM names")
    _write_entry_contexts(conn)
    conn.executemany("INSERT INTO vocab VALUES (?,?)", vocab)
    vocabulary.write_tables(conn)
    conn.executescript(INDEXES)
    street_parts.write_tables(conn)
    address_points.write_table(conn)
    conn.execute("INSERT INTO meta VALUES ('proj', ?)", (json.dumps([proj.lat0, proj.lng0]),))
    conn.commit()
    conn.execute("ANALYZE")
    conn.commit()


# -- the stage ------------------------------------------------------------------------------------


def _projection(bbox: list[float] | None) -> LocalProjection:
    """The index's metric projection, centred on the extract (meta 'proj')."""
    if not bbox:
        return LocalProjection(0.0, 0.0)
    return LocalProjection((bbox[1] + bbox[3]) / 2, (bbox[0] + bbox[2]) / 2)


def build(
    pbf_path: Path | str,
    out_path: Path | str,
    admin_areas: list[AdminArea] | None,
    bbox: list[float] | None,
    progress: ImportProgress | None = None,
) -> dict[str, int]:
    """Build search.sqlite; feature ids follow the order streets, addresses, places, POIs."""
    progress = progress or ImportProgress.silent()
    proj = _projection(bbox)
    with AddressPass(pbf_path, proj, progress) as address_pass, SqliteWriter(Path(out_path)) as writes:
        features = read_features(pbf_path, progress)
        writes.submit(_create_index)
        writer = _IndexWriter(writes, AdminIndex(admin_areas or []))
        streets = _add_streets(writer, features.streets, proj)
        features.streets.clear()  # the pieces are in the streets' lines now
        addresses = address_pass.result().table()
        _add_addresses(writer, addresses, streets, proj, progress)
        _add_places(writer, features.places)
        _add_admin_places(writer, admin_areas or [], features.places)
        _add_pois(writer, features.pois, proj)
        _finish_index(writer, proj)
    return {
        "addresses": writer.counts["address"],
        "streets": writer.counts["street"],
        "places": writer.counts["place"],
        "pois": writer.counts["poi"],
    }


def run(ctx: ImportContext) -> dict[str, int]:
    return build(
        ctx.pbf_path,
        ctx.out_dir / layout.SEARCH_DB,
        ctx.shared.get("admin_areas"),
        ctx.shared.get("bbox"),
        ctx.progress,
    )
