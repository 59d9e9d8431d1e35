"""The search stage's passes over the PBF: the objects that give addresses, and those that give
street pieces, places and POIs.

A country's tagged objects are nearly all addresses, and turning each into Python values is most
of the reading. So the two kinds are read by two passes, each with osmium's own filter: the
address pass (objects with ``addr:housenumber``, into the columns of
:mod:`engine.ingest.search_addresses`) runs in a child process while this one reads the rest
(:func:`read_features`) and goes on with the streets, and its columns come back when the stage
needs them (:func:`start_address_pass`). Each pass keeps the file's order, so the addresses, the
street pieces, the places and the POIs come out in the order of one pass over the file.

Both passes read node locations (ways get their coordinates; multipolygon relations are assembled
by osmium for the few that carry an address, a place or a POI).
"""

from __future__ import annotations

import ctypes
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import RawArray
from pathlib import Path
from typing import Any

import numpy as np
import osmium
import shapely
from shapely.geometry import LineString, Polygon

from engine.categories import POI_KEYS, categorize, poi_tags
from engine.geo import LocalProjection
from engine.ingest.child_process import ChildCall
from engine.ingest.osm_tags import housenumbers, names_of
from engine.ingest.search_addresses import AddressColumns, AddressSource
from engine.progress import ImportProgress
from engine.search.normalize import normalize

STREET_HIGHWAYS_EXCLUDED = {
    "bus_stop",
    "platform",
    "proposed",
    "elevator",
    "street_lamp",
    "abandoned",
    "razed",
    "traffic_signals",
    "crossing",
    "turning_circle",
    "emergency_access_point",
}
PLACE_IMPORTANCE = {
    "country": 1.0,
    "state": 0.95,
    "region": 0.9,
    "province": 0.9,
    "city": 0.9,
    "town": 0.8,
    "municipality": 0.8,
    "borough": 0.7,
    "village": 0.7,
    "suburb": 0.65,
    "quarter": 0.55,
    "neighbourhood": 0.5,
    "hamlet": 0.5,
    "island": 0.5,
    "square": 0.45,
    "locality": 0.4,
    "islet": 0.35,
    "city_block": 0.3,
    "plot": 0.2,
    "farm": 0.2,
    "isolated_dwelling": 0.2,
}
RAW_POI_KEYS = ("amenity", "shop", "tourism", "leisure", "healthcare", "office", "emergency")
# what the address pass reads of an object (_AddressReader.take)
ADDRESS_KEYS = (
    "addr:housenumber",
    "addr:street",
    "addr:place",
    "addr:postcode",
    "addr:city",
    "addr:suburb",
    "addr:district",
    "addr:country",
    "entrance",
    "building",
    "name",
)
# the objects each pass gets from osmium's filters, and the multipolygons it assembles
ADDRESS_FILTER = ("addr:housenumber",)
FEATURE_FILTER = ("place", "name", *POI_KEYS)  # a place, a named street, a POI
FEATURE_AREA_FILTER = ("place", "amenity", "shop", "tourism", "leisure", "office", "historic")
COUNT_EVERY = 4096  # objects between updates of the address pass's shared count

LonLat = tuple[float, float]
# an outline: a closed way's ring (lon/lat), or an assembled multipolygon (shapely, lon/lat)
Outline = list[LonLat] | shapely.Geometry


@dataclass(frozen=True, eq=False)
class CollectedWay:
    """A named highway way: one piece of a street."""

    osm_id: int
    coords: np.ndarray  # (k, 2) lon/lat: one object a way, not a tuple and two floats a point
    name: str
    names: dict[str, str]
    highway: str
    area: bool  # a square (highway=pedestrian + area=yes): inside it is on it


@dataclass(frozen=True)
class CollectedPlace:
    osm_type: str
    osm_id: int
    lat: float
    lng: float
    place: str
    names: dict[str, str]
    name: str
    importance: float
    postcode: str | None


@dataclass(frozen=True)
class CollectedPoi:
    osm_type: str
    osm_id: int
    lat: float
    lng: float
    names: dict[str, str]
    name: str | None
    category: str | None
    tags: list[str]  # key=value strings for raw-tag search
    street: str | None
    number: str | None
    postcode: str | None
    city: str | None
    importance: float
    outline: Outline | None = None  # an area POI (park, parking): nearest-by-category measures to it


@dataclass(frozen=True)
class TaggedObject:
    """An OSM object reduced to what the collector reads: its tags at one point."""

    osm_type: str  # node / way / relation
    osm_id: int
    tags: Mapping[str, str]  # a dict: read dozens of times per object, much faster than a TagList
    lat: float
    lng: float
    footprint: Outline | None = None  # the outline of a closed way or a multipolygon


@dataclass
class Features:
    """What the feature pass keeps: street pieces by normalised name, places and POIs."""

    streets: dict[str, list[CollectedWay]] = field(default_factory=lambda: defaultdict(list))
    places: list[CollectedPlace] = field(default_factory=list)
    pois: list[CollectedPoi] = field(default_factory=list)

    def take(self, obj: TaggedObject) -> None:
        """The place or the POI an object is (a place is never also a POI)."""
        place, name = obj.tags.get("place"), obj.tags.get("name")
        if place and name:
            self._take_place(obj, place, name)
        else:
            self._take_poi(obj)

    def _take_place(self, obj: TaggedObject, place: str, name: str) -> None:
        self.places.append(
            CollectedPlace(
                osm_type=obj.osm_type,
                osm_id=obj.osm_id,
                lat=obj.lat,
                lng=obj.lng,
                place=place,
                names=names_of(obj.tags),
                name=name,
                importance=PLACE_IMPORTANCE.get(place, 0.3),
                postcode=obj.tags.get("addr:postcode"),
            )
        )

    def _take_poi(self, obj: TaggedObject) -> None:
        tags = obj.tags
        name = tags.get("name")
        category = categorize(tags)
        raw = poi_tags(tags)
        unnamed_ok = any(tags.get(k) for k in RAW_POI_KEYS)  # benches, post boxes: raw-tag search
        if not (category or (raw and (name or unnamed_ok))):
            return
        if obj.osm_type == "way" and tags.get("highway") and not category:
            return  # a road with a raw POI tag is a road
        if category == "bus_stop" and not name:
            return
        self.pois.append(
            CollectedPoi(
                osm_type=obj.osm_type,
                osm_id=obj.osm_id,
                lat=obj.lat,
                lng=obj.lng,
                names=names_of(tags),
                name=name,
                category=category,
                tags=raw,
                street=_street_of(tags),
                number=tags.get("addr:housenumber"),
                postcode=tags.get("addr:postcode"),
                city=tags.get("addr:city"),
                importance=0.35 + (0.1 if tags.get("wikidata") else 0) + (0.05 if name else -0.1),
                outline=obj.footprint,
            )
        )


class _AddressReader:
    """The address pass's columns, an object at a time."""

    def __init__(self, proj: LocalProjection) -> None:
        self.proj = proj  # building outlines are kept as WKB in the index's projection
        self.addresses = AddressColumns()

    def take(self, obj: TaggedObject) -> None:
        tags = obj.tags
        raw = tags.get("addr:housenumber")
        if not raw:
            return
        numbers = housenumbers(raw)
        if not numbers:
            return
        source = AddressSource(
            osm_type=obj.osm_type,
            osm_id=obj.osm_id,
            lat=obj.lat,
            lng=obj.lng,
            street=_street_of(tags),
            postcode=tags.get("addr:postcode"),
            city=tags.get("addr:city"),
            district=tags.get("addr:suburb") or tags.get("addr:district"),
            country=tags.get("addr:country"),
            entrance=obj.osm_type == "node" and "entrance" in tags,
            building="building" in tags,
            name=tags.get("name"),
            footprint=footprint_wkb(obj.footprint, self.proj),
        )
        for number in numbers:
            self.addresses.append(source, number)


def _street_of(tags: Mapping[str, str]) -> str | None:
    street: str | None = tags.get("addr:street") or tags.get("addr:place")
    return street


def _is_closed(coords: list[LonLat]) -> bool:
    return len(coords) >= 4 and coords[0] == coords[-1]


def _way_point(coords: list[LonLat]) -> tuple[float, float]:
    """A point that represents a way: the centroid of a closed ring (inside it), else mid-line."""
    if _is_closed(coords):
        poly = Polygon(coords)
        if poly.is_valid and poly.area > 0:
            c = poly.centroid
            if not poly.contains(c):
                c = poly.representative_point()
            return c.y, c.x
    line = LineString(coords)
    p = line.interpolate(0.5, normalized=True)
    return p.y, p.x


def _way_coords(way: osmium.osm.Way) -> list[LonLat]:
    return [(n.location.lon, n.location.lat) for n in way.nodes if n.location.valid()]


def _street_tags(tags: osmium.osm.TagList) -> tuple[str, str] | None:
    """(name, highway) of a named highway that is a piece of a street; None for any other way."""
    highway, name = tags.get("highway"), tags.get("name")
    if highway and highway not in STREET_HIGHWAYS_EXCLUDED and name:
        return name, highway
    return None


def _is_square(tags: osmium.osm.TagList, coords: list[LonLat]) -> bool:
    """A street that is an area (highway=pedestrian + area=yes): a square, which may also be a place
    or a POI (a market square) and may have an address."""
    return _is_closed(coords) and tags.get("area") == "yes"


def _way_object(way: osmium.osm.Way, coords: list[LonLat]) -> TaggedObject:
    lat, lng = _way_point(coords)
    return TaggedObject("way", way.id, dict(way.tags), lat, lng, coords if _is_closed(coords) else None)


def _relation_object(area: osmium.osm.Area, wkb: osmium.geom.WKBFactory) -> TaggedObject | None:
    """A multipolygon relation, at a point inside it; None when it is broken."""
    try:
        geom = shapely.from_wkb(bytes.fromhex(wkb.create_multipolygon(area)))
    except Exception:  # noqa: BLE001 - broken multipolygon: skip it
        return None
    c = geom.centroid if geom.is_valid else geom.representative_point()
    if geom.is_valid and not geom.contains(c):
        c = geom.representative_point()
    return TaggedObject("relation", area.orig_id(), dict(area.tags), c.y, c.x, geom if geom.is_valid else None)


def _objects(pbf_path: Path | str, keys: tuple[str, ...], area_keys: tuple[str, ...]) -> Iterator[object]:
    """The file's nodes and ways with one of ``keys``, with node locations, and its multipolygon
    relations with one of ``area_keys`` as :class:`TaggedObject` (broken ones skipped; the areas
    osmium makes of closed ways are left out: the ways are read as ways)."""
    area_filter = osmium.filter.KeyFilter(*area_keys)
    fp = osmium.FileProcessor(str(pbf_path)).with_locations().with_areas(area_filter)
    wkb = osmium.geom.WKBFactory()
    for o in fp.with_filter(osmium.filter.KeyFilter(*keys)):
        if not isinstance(o, osmium.osm.Area):
            yield o
        elif not o.from_way() and (relation := _relation_object(o, wkb)) is not None:
            yield relation


def _address_tags(tags: osmium.osm.TagList) -> dict[str, str]:
    """The tags the address pass reads, as a dict: looking a key up in a TagList is several times
    faster than pyosmium handing out every tag as a Python object."""
    return {key: value for key in ADDRESS_KEYS if (value := tags.get(key)) is not None}


def read_addresses(
    pbf_path: Path | str, proj: LocalProjection, count: ctypes.Array[Any] | None = None
) -> AddressColumns:
    """The address pass: every address of the file, in the file's order. A named highway that is
    not a square gives no address (it is a street). ``count`` (one int64) follows the objects read."""
    reader = _AddressReader(proj)
    done = np.ctypeslib.as_array(count) if count is not None else np.zeros(1, np.int64)
    for n, o in enumerate(_objects(pbf_path, ADDRESS_FILTER, ADDRESS_FILTER), 1):
        if n % COUNT_EVERY == 0:
            done[0] = n
        if isinstance(o, osmium.osm.Node):
            if o.location.valid():
                reader.take(TaggedObject("node", o.id, _address_tags(o.tags), o.location.lat, o.location.lon))
        elif isinstance(o, osmium.osm.Way):
            coords = _way_coords(o)
            if len(coords) >= 2 and (_street_tags(o.tags) is None or _is_square(o.tags, coords)):
                reader.take(_way_object(o, coords))
        elif isinstance(o, TaggedObject):
            reader.take(o)
    return reader.addresses


def read_features(pbf_path: Path | str, progress: ImportProgress | None = None) -> Features:
    """The feature pass: the street pieces, places and POIs of the file, in the file's order."""
    features = Features()
    with (progress or ImportProgress.silent()).step("search: reading features", unit="tagged objects") as step:
        for o in _objects(pbf_path, FEATURE_FILTER, FEATURE_AREA_FILTER):
            step.advance()
            if isinstance(o, osmium.osm.Node):
                if o.location.valid():
                    features.take(TaggedObject("node", o.id, dict(o.tags), o.location.lat, o.location.lon))
            elif isinstance(o, osmium.osm.Way):
                _take_way(features, o)
            elif isinstance(o, TaggedObject):
                features.take(o)
    return features


def _take_way(features: Features, way: osmium.osm.Way) -> None:
    coords = _way_coords(way)
    if len(coords) < 2:
        return
    tags = way.tags
    street = _street_tags(tags)
    if street is not None:
        name, highway = street
        square = _is_square(tags, coords)
        piece = CollectedWay(way.id, np.array(coords, dtype=np.float64), name, names_of(tags), highway, square)
        features.streets[normalize(name)].append(piece)
        if not square:
            return  # a square may also be a place or a POI (a market square)
    features.take(_way_object(way, coords))


class AddressPass:
    """:func:`read_addresses` in a child process while this one goes on; :meth:`result` waits for
    its columns, showing the child's count."""

    def __init__(self, pbf_path: Path | str, proj: LocalProjection, progress: ImportProgress) -> None:
        self._count = RawArray("q", 1)
        self._progress = progress
        self._started = progress.clock()
        self._call = ChildCall(read_addresses, pbf_path, proj, self._count)

    def result(self) -> AddressColumns:
        # the step's rate counts from the pass's start, with the stage
        step = self._progress.step("search: reading addresses", unit="tagged objects", started=self._started)
        with step as shown, shown.watch(np.ctypeslib.as_array(self._count)):
            return self._call.result()

    def __enter__(self) -> AddressPass:
        return self

    def __exit__(self, *exc: object) -> None:
        self._call.close()


def footprint_wkb(outline: Outline | None, proj: LocalProjection) -> bytes | None:
    """An outline (a building's, an area POI's) in the index's metric projection (meta 'proj'):
    reverse geocoding and nearest-by-category measure distances to it in metres, 0 inside."""
    if outline is None:
        return None
    poly: shapely.Geometry
    if isinstance(outline, list):
        if not outline:
            return None
        poly = Polygon(proj.coords_to_xy(outline))
    else:
        poly = shapely.transform(outline, proj.coords_to_xy)
    return shapely.to_wkb(poly) if shapely.is_valid(poly) and shapely.area(poly) > 0 else None
