"""The addresses of the search stage as columns: collected, cleaned up and tied to their streets.

A country has tens of millions of addresses, so none of them is kept as a Python object between
the PBF pass and the index: an address is a row of numpy columns, its strings (number, street,
postcode, city ...) are codes into one ``StringPool`` that holds each distinct string once, and a
building outline is kept as WKB. The steps below work on arrays of row numbers; the rows of the
``features`` table are made a chunk at a time while writing (``AddressTable.chunks``).

The steps, in the order of the stage:

* ``adopt_orphans``: a number without addr:street/addr:place takes the nearest named street
  within ORPHAN_M (as Nominatim's parent street); the others are dropped;
* ``dedupe``: one address per (street, number) within about 60 m (buildings beat nodes beat
  entrances); sets the normalised street key and house number;
* ``fill_postcodes``: a missing postcode from the nearest address of the same street within
  POSTCODE_FILL_M;
* ``assign_streets``: each address's street id, the nearest street of its name; the names no
  street has are returned, for streets made from their addresses;
* ``street_postcodes``: a street's postcode, the most common among its addresses.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import shapely
from scipy.spatial import cKDTree
from shapely.geometry import LineString, MultiLineString, Point

from engine.geo import LocalProjection
from engine.search.index import MINOR_STREET_KINDS
from engine.search.normalize import normalize, normalize_housenumber

POSTCODE_FILL_M = 300.0
ORPHAN_M = 50.0  # a house number without a street: the nearest named street this close
MANY_STREETS = 16  # streets of one name beyond which an address finds its street with a KD-tree
POSTCODE_NEIGHBOURS = 8  # addresses with a postcode looked at for one without

# Two addresses of the same street and number closer than this (degrees, about 60 m each way at
# the latitudes we serve) are one address.
DUPLICATE_DLAT = 0.00055
DUPLICATE_DLNG = 0.0011

NO_STRING = -1  # the code of a missing string (None)
NO_STREET = 0  # street ids start at 1
CHUNK = 65_536  # rows turned into Python values at a time


class StringPool:
    """Each distinct string once; the columns hold its code (``NO_STRING`` for None)."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self.values: list[str] = []

    def code(self, value: str | None) -> int:
        if value is None:
            return NO_STRING
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self.values)
            self.values.append(value)
        return found

    def value(self, code: int) -> str | None:
        return None if code == NO_STRING else self.values[code]

    def mapped(self, fn: Callable[[str], str]) -> np.ndarray:
        """Per code, the code of ``fn(value)`` (added to the pool); indexed by ``NO_STRING`` too."""
        codes = [self.code(fn(value)) for value in list(self.values)]
        return np.array([*codes, NO_STRING], dtype=np.int32)

    def truthy(self, codes: np.ndarray) -> np.ndarray:
        """Which codes stand for a non-empty string (what ``if value:`` tells)."""
        flags = np.array([bool(v) for v in self.values] + [False])  # the last one: NO_STRING
        result: np.ndarray = flags[codes]
        return result


@dataclass(frozen=True)
class AddressSource:
    """What every house number of one OSM object shares (``12;14`` on one object gives two)."""

    osm_type: str
    osm_id: int
    lat: float
    lng: float
    street: str | None  # addr:street, else addr:place
    postcode: str | None
    city: str | None
    district: str | None
    country: str | None
    entrance: bool  # an entrance node
    building: bool
    name: str | None
    footprint: bytes | None  # the building's outline, WKB in the index's metric projection


STRING_COLUMNS = ("osm_type", "street", "postcode", "city", "district", "country", "name")


class AddressColumns:
    """Addresses as the PBF pass appends them: compact typed arrays, strings as pool codes."""

    def __init__(self) -> None:
        self.strings = StringPool()
        self.osm_id = array("q")
        self.lat = array("d")
        self.lng = array("d")
        self.number = array("i")
        self.flags = array("b")  # bit 0: building, bit 1: entrance
        self.codes = {name: array("i") for name in STRING_COLUMNS}
        self.footprints: list[bytes | None] = []

    def append(self, source: AddressSource, number: str) -> None:
        self.osm_id.append(source.osm_id)
        self.lat.append(source.lat)
        self.lng.append(source.lng)
        self.number.append(self.strings.code(number))
        self.flags.append(int(source.building) | (int(source.entrance) << 1))
        for name, column in self.codes.items():
            column.append(self.strings.code(getattr(source, name)))
        self.footprints.append(source.footprint)

    def __len__(self) -> int:
        return len(self.osm_id)

    def table(self) -> AddressTable:
        """The columns as numpy arrays over the same memory (the builder takes no more rows)."""
        flags = np.frombuffer(self.flags, dtype=np.int8)
        return AddressTable(
            strings=self.strings,
            osm_id=np.frombuffer(self.osm_id, dtype=np.int64),
            lat=np.frombuffer(self.lat, dtype=np.float64),
            lng=np.frombuffer(self.lng, dtype=np.float64),
            number=np.frombuffer(self.number, dtype=np.int32),
            building=(flags & 1).astype(bool),
            entrance=(flags & 2).astype(bool),
            codes={name: np.frombuffer(values, dtype=np.int32) for name, values in self.codes.items()},
            footprints=self.footprints,
        )


@dataclass(frozen=True)
class AddressChunk:
    """Consecutive addresses as columns of Python values, in row order: the ``features`` rows are
    zipped from them (one Python object per address was most of the stage's address loop)."""

    osm_type: list[str]
    osm_id: list[int]
    lat: list[float]
    lng: list[float]
    number: list[str]
    street: list[str]
    street_key: list[str]
    hn_norm: list[str]
    street_id: list[int | None]
    postcode: list[str | None]
    city: list[str | None]
    district: list[str | None]
    country: list[str | None]
    name: list[str | None]
    footprint: list[bytes | None]
    points: tuple[np.ndarray, np.ndarray]  # lat, lng as arrays (the admin lookup's input)

    def __len__(self) -> int:
        return len(self.osm_id)


@dataclass
class AddressTable:
    """Every collected address as one row of the columns; the steps fill the last three."""

    strings: StringPool
    osm_id: np.ndarray
    lat: np.ndarray
    lng: np.ndarray
    number: np.ndarray
    building: np.ndarray
    entrance: np.ndarray
    codes: dict[str, np.ndarray]  # STRING_COLUMNS
    footprints: list[bytes | None]
    street_key: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # normalised street
    hn_norm: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # normalised number
    street_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # NO_STREET: none yet

    def __len__(self) -> int:
        return int(self.osm_id.size)

    def chunks(self, rows: np.ndarray, size: int = CHUNK) -> Iterator[AddressChunk]:
        """The addresses of ``rows``, in that order, ``size`` at a time, with their strings."""
        values = np.array([*self.strings.values, None], dtype=object)  # NO_STRING (-1) is None
        for start in range(0, rows.size, size):
            part = rows[start : start + size]
            strings = {name: values[self.codes[name][part]].tolist() for name in STRING_COLUMNS}
            lat, lng = self.lat[part], self.lng[part]
            yield AddressChunk(
                osm_id=self.osm_id[part].tolist(),
                lat=lat.tolist(),
                lng=lng.tolist(),
                number=values[self.number[part]].tolist(),
                street_key=values[self.street_key[part]].tolist(),
                hn_norm=values[self.hn_norm[part]].tolist(),
                street_id=[street_id or None for street_id in self.street_id[part].tolist()],
                footprint=[self.footprints[row] for row in part.tolist()],
                points=(lat, lng),
                **strings,
            )


@dataclass(frozen=True)
class IndexedStreet:
    """A street feature as the address steps see it."""

    feature_id: int
    key: str  # the normalised name
    name: str
    lines: MultiLineString
    lat: float
    lng: float
    kind: str = ""  # its highway kind (street_kind)


# -- orphans --------------------------------------------------------------------------------------


def adopt_orphans(table: AddressTable, streets: list[IndexedStreet], proj: LocalProjection) -> np.ndarray:
    """The rows kept: those with a street, in order, then the orphans that found one (their
    ``street`` set to its name) in order; the other orphans are dropped."""
    has_street = table.strings.truthy(table.codes["street"])
    kept = np.flatnonzero(has_street)
    orphans = np.flatnonzero(~has_street)
    if not orphans.size or not streets:
        return kept
    lines, owners = _major_street_lines(streets, proj)
    tree = shapely.STRtree(lines)
    adopted = []
    xs, ys = proj.to_xy(table.lat[orphans], table.lng[orphans])
    for row, x, y in zip(orphans.tolist(), xs.tolist(), ys.tolist(), strict=True):
        p = Point(x, y)
        i = tree.nearest(p)
        if i is not None and lines[int(i)].distance(p) <= ORPHAN_M:
            table.codes["street"][row] = table.strings.code(owners[int(i)])
            adopted.append(row)
    return np.concatenate([kept, np.array(adopted, dtype=np.int64)])


def _major_street_lines(streets: list[IndexedStreet], proj: LocalProjection) -> tuple[list[LineString], list[str]]:
    """The pieces of every street but footways and the like (a bare number belongs to a street),
    in metres, with the name of their street."""
    lines, owners = [], []
    for street in streets:
        if street.kind in MINOR_STREET_KINDS:
            continue
        for part in street.lines.geoms:
            lines.append(LineString(proj.coords_to_xy(part.coords)))
            owners.append(street.name)
    return lines, owners


# -- duplicates -----------------------------------------------------------------------------------


def dedupe(table: AddressTable, rows: np.ndarray) -> np.ndarray:
    """One address per (street, number) within about 60 m: buildings beat nodes beat entrances,
    ways beat nodes and relations, then the earlier row. Sets ``street_key`` and ``hn_norm``.

    Returns the rows kept, grouped by (street key, number) in the order each group first comes in
    that ranking, each group in ranking order."""
    table.street_key = table.strings.mapped(normalize)[table.codes["street"]]
    table.hn_norm = table.strings.mapped(normalize_housenumber)[table.number]
    table.street_id = np.full(len(table), NO_STREET, dtype=np.int64)
    if not rows.size:
        return rows
    way = table.strings.code("way")
    rank = np.where(table.building[rows], 0, np.where(table.entrance[rows], 2, 1)) * 2
    rank += table.codes["osm_type"][rows] != way
    ranked = rows[np.argsort(rank, kind="stable")]
    group = table.street_key[ranked].astype(np.int64) * (len(table.strings.values) + 1) + table.hn_norm[ranked]
    by_group = np.argsort(group, kind="stable")  # positions in ranking order within each group
    starts = np.flatnonzero(np.r_[True, group[by_group][1:] != group[by_group][:-1]])
    keep = np.ones(ranked.size, dtype=bool)
    sizes = np.diff(np.r_[starts, ranked.size])
    for start, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
        members = by_group[start : start + size]
        keep[members] = _first_apart(table.lat[ranked[members]].tolist(), table.lng[ranked[members]].tolist())
    first = np.repeat(by_group[starts], sizes)  # each position's group, by its first position
    order = np.lexsort((by_group, first))
    return ranked[by_group[order][keep[by_group[order]]]]


def _first_apart(lats: list[float], lngs: list[float]) -> list[bool]:
    """Which of these points (one street and number, in ranking order) are kept: those with no
    kept one within the duplicate box. The kept ones are also filed by grid cell of the box, so
    a duplicate is looked for in the 9 cells around only."""
    cells: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    keep = []
    for lat, lng in zip(lats, lngs, strict=True):
        ci, cj = math.floor(lat / DUPLICATE_DLAT), math.floor(lng / DUPLICATE_DLNG)
        near = (b for di in (-1, 0, 1) for dj in (-1, 0, 1) for b in cells.get((ci + di, cj + dj), ()))
        duplicate = any(
            abs(b_lat - lat) < DUPLICATE_DLAT and abs(b_lng - lng) < DUPLICATE_DLNG for b_lat, b_lng in near
        )
        keep.append(not duplicate)
        if not duplicate:
            cells[(ci, cj)].append((lat, lng))
    return keep


# -- postcodes ------------------------------------------------------------------------------------


def fill_postcodes(table: AddressTable, rows: np.ndarray, proj: LocalProjection) -> None:
    """A missing postcode: the one of the nearest address of the same street within
    POSTCODE_FILL_M (among the POSTCODE_NEIGHBOURS nearest addresses with a postcode)."""
    postcode = table.codes["postcode"]
    has_postcode = table.strings.truthy(postcode[rows])
    donors, missing = rows[has_postcode], rows[~has_postcode]
    if not donors.size or not missing.size:
        return
    tree = cKDTree(np.column_stack(proj.to_xy(table.lat[donors], table.lng[donors])))
    k = min(POSTCODE_NEIGHBOURS, donors.size)
    for start in range(0, missing.size, CHUNK):
        chunk = missing[start : start + CHUNK]
        points = np.column_stack(proj.to_xy(table.lat[chunk], table.lng[chunk]))
        found_dists, found_idxs = tree.query(points, k=k, distance_upper_bound=POSTCODE_FILL_M)
        dists = np.asarray(found_dists).reshape(chunk.size, k)  # k = 1 gives one column, not two axes
        idxs = np.asarray(found_idxs).reshape(chunk.size, k)
        found = np.isfinite(dists)
        neighbours = donors[np.where(found, idxs, 0)]
        same = found & (table.street_key[neighbours] == table.street_key[chunk][:, None])
        filled = same.any(axis=1)
        first = neighbours[np.arange(chunk.size), same.argmax(axis=1)]
        postcode[chunk[filled]] = postcode[first[filled]]


@dataclass(frozen=True)
class StreetPostcode:
    street_id: int
    postcode: str


def street_postcodes(table: AddressTable, rows: np.ndarray) -> list[StreetPostcode]:
    """A street's postcode: the most common one among its addresses (the first seen on a tie)."""
    postcode = table.codes["postcode"][rows]
    street_id = table.street_id[rows]
    counted = table.strings.truthy(postcode) & (street_id != NO_STREET)
    pairs = street_id[counted] * (len(table.strings.values) + 1) + postcode[counted]
    if not pairs.size:
        return []
    unique, first, count = np.unique(pairs, return_index=True, return_counts=True)
    streets = unique // (len(table.strings.values) + 1)
    best = np.lexsort((first, -count, streets))  # by street, most common first, then first seen
    winners = best[np.r_[True, streets[best][1:] != streets[best][:-1]]]
    codes = unique[winners] % (len(table.strings.values) + 1)
    return [
        StreetPostcode(sid, str(table.strings.value(code)))
        for sid, code in zip(streets[winners].tolist(), codes.tolist(), strict=True)
    ]


# -- streets --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnknownStreet:
    """A street name of addresses that no street has (a square, a pedestrian area)."""

    key: str
    name: str  # the street as the first of its addresses writes it
    rows: np.ndarray  # its addresses, in order


def assign_streets(
    table: AddressTable, rows: np.ndarray, streets: list[IndexedStreet], proj: LocalProjection
) -> list[UnknownStreet]:
    """Each address's ``street_id``: the nearest street of its street name. Returns the names no
    street has, in the order their first address comes, with their addresses."""
    if not rows.size:
        return []
    by_key: dict[str, list[IndexedStreet]] = defaultdict(list)
    for street in streets:
        by_key[street.key].append(street)
    aspect = proj.kx / proj.ky
    keys = table.street_key[rows]
    by_name = np.argsort(keys, kind="stable")
    starts = np.flatnonzero(np.r_[True, keys[by_name][1:] != keys[by_name][:-1]]).tolist()
    for start, end in zip(starts, [*starts[1:], rows.size], strict=True):
        group = rows[by_name[start:end]]
        candidates = by_key.get(str(table.strings.value(int(keys[by_name[start]]))), [])
        if len(candidates) > MANY_STREETS:
            table.street_id[group] = _nearest_by_tree(table, group, candidates, aspect)
        elif candidates:
            table.street_id[group] = _nearest_by_scan(table, group, candidates, aspect)
    return _unknown_streets(table, rows)


def _nearest_by_tree(table: AddressTable, group: np.ndarray, streets: list[IndexedStreet], aspect: float) -> np.ndarray:
    """A name of many streets: the nearest street point from a KD-tree."""
    tree = cKDTree(np.array([(s.lat, s.lng * aspect) for s in streets]))
    nearest = tree.query(np.column_stack([table.lat[group], table.lng[group] * aspect]))[1]
    return np.array([s.feature_id for s in streets], dtype=np.int64)[nearest]


def _nearest_by_scan(table: AddressTable, group: np.ndarray, streets: list[IndexedStreet], aspect: float) -> list[int]:
    """A name of a few streets: the nearest street point, the first one on a tie."""
    found = []
    for lat, lng in zip(table.lat[group].tolist(), table.lng[group].tolist(), strict=True):
        best, street_id = None, NO_STREET
        for street in streets:
            d = (street.lat - lat) ** 2 + ((street.lng - lng) * aspect) ** 2
            if best is None or d < best:
                best, street_id = d, street.feature_id
        found.append(street_id)
    return found


def _unknown_streets(table: AddressTable, rows: np.ndarray) -> list[UnknownStreet]:
    without = rows[table.street_id[rows] == NO_STREET]
    if not without.size:
        return []
    keys = table.street_key[without]
    names, first = np.unique(keys, return_index=True)
    by_name = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[by_name], names)
    groups = np.split(by_name, bounds[1:])
    return [
        UnknownStreet(
            key=str(table.strings.value(int(keys[members[0]]))),
            name=str(table.strings.value(int(table.codes["street"][without[members[0]]]))),
            rows=without[members],
        )
        for _, members in sorted(zip(first.tolist(), groups, strict=True), key=lambda fg: fg[0])
    ]
