"""Admin boundaries of a region: point-in-polygon hierarchy, lookup by name and by OSM id.

Built by the import stage ``admin`` (engine.ingest.admin) into ``admin.sqlite``; opened
read-only here. Geometries are shapely (multi)polygons, prepared once for fast containment
tests, behind an STRtree.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import shapely
from shapely import STRtree
from shapely.geometry.base import BaseGeometry

from engine import layout
from engine.search.normalize import normalize


class PartColumns(NamedTuple):
    """:func:`address_parts` of many points, one list per part (the names are its keys)."""

    country: list[str | None]
    city: list[str | None]
    district: list[str | None]


@dataclass
class AdminArea:
    id: int
    osm_type: str
    osm_id: int
    name: str
    names: dict[str, str]
    level: int
    iso3166_1: str | None  # alpha-2, as tagged (ISO3166-1 / ISO3166-1:alpha2)
    iso3166_2: str | None
    country: str | None  # alpha-3 of the country the area lies in
    geometry: BaseGeometry
    clipped: bool = False  # built from an extract that cuts the boundary (geometry = covered part)
    extra: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {"name": self.name, "level": self.level}


class AdminIndex:
    def __init__(self, areas: list[AdminArea], conn: sqlite3.Connection | None = None) -> None:
        self.areas = areas
        self._conn = conn
        self._by_osm = {(a.osm_type, a.osm_id): a for a in areas}
        self._by_osm_id: dict[int, AdminArea] = {}
        for a in areas:
            self._by_osm_id.setdefault(a.osm_id, a)
        self._by_name: dict[str, list[AdminArea]] = {}
        for a in areas:
            keys = {normalize(a.name)} | {normalize(v) for v in a.names.values()}
            for key in keys:
                if key:
                    self._by_name.setdefault(key, []).append(a)
        for a in areas:
            shapely.prepare(a.geometry)
        self._tree = STRtree([a.geometry for a in areas]) if areas else None

    # -- loading -------------------------------------------------------------------------------
    @classmethod
    def open(cls, version_dir: Path) -> AdminIndex:
        path = Path(version_dir) / layout.ADMIN_DB
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        rows = conn.execute(
            "SELECT id, osm_type, osm_id, name, names, level, iso3166_1, iso3166_2, country, "
            "geom, clipped FROM admin ORDER BY id"
        ).fetchall()
        conn.close()
        areas = [
            AdminArea(
                id=r[0],
                osm_type=r[1],
                osm_id=r[2],
                name=r[3],
                names=json.loads(r[4]),
                level=r[5],
                iso3166_1=r[6],
                iso3166_2=r[7],
                country=r[8],
                geometry=shapely.from_wkb(r[9]),
                clipped=bool(r[10]),
            )
            for r in rows
        ]
        return cls(areas)

    def close(self) -> None:
        pass

    # -- queries -------------------------------------------------------------------------------
    def containing(self, lat: float, lng: float) -> list[AdminArea]:
        """Areas containing the point, sorted by admin level (country first)."""
        if self._tree is None:
            return []
        covering = self._tree.query(shapely.Point(lng, lat), predicate="covered_by")  # as parts_of_points
        return self._by_level(sorted(int(i) for i in covering))

    def _by_level(self, indexes: list[int]) -> list[AdminArea]:
        """The areas of these indexes (ascending), country first: by level, then the larger first."""
        return sorted((self.areas[i] for i in indexes), key=lambda a: (a.level, a.geometry.area * -1))

    def parts_of_points(self, lats: np.ndarray, lngs: np.ndarray) -> PartColumns:
        """:func:`address_parts` of :meth:`containing` for many points, as columns in the points'
        order (the import's millions of addresses, a chunk at a time). The points are one query of
        the tree (predicate ``covered_by``: the area covers the point, as in :meth:`containing`),
        and the parts of each distinct set of areas are worked out once: a region has few such
        sets."""
        sets, inverse = self._area_sets(lats, lngs)
        by_set = [address_parts(self._by_level(list(areas))) for areas in sets]
        table = np.array([[p[name] for name in PartColumns._fields] for p in by_set], dtype=object)
        picked = table[inverse]
        return PartColumns(*(picked[:, k].tolist() for k in range(len(PartColumns._fields))))

    def _area_sets(self, lats: np.ndarray, lngs: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """The distinct sets of areas (ascending indexes) covering these points, and for each
        point the position of its set."""
        n = len(lats)
        if self._tree is None or n == 0:
            return [()], np.zeros(n, dtype=np.int64)
        point, area = self._tree.query(shapely.points(lngs, lats), predicate="covered_by")
        order = np.lexsort((area, point))
        point, area = point[order], area[order]
        counts = np.bincount(point, minlength=n)
        # one row per point: its areas, ascending, padded with -1 (np.unique then finds the sets)
        rows = np.full((n, max(int(counts.max()), 1)), -1, dtype=np.int64)
        rows[point, np.arange(point.size) - (np.cumsum(counts) - counts)[point]] = area
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        return [tuple(int(i) for i in row if i >= 0) for row in distinct], inverse.ravel()

    def by_name(self, name: str, level: int | None = None) -> list[AdminArea]:
        found = self._by_name.get(normalize(name), [])
        if level is not None:
            found = [a for a in found if a.level == level]
        return sorted(found, key=lambda a: (a.level, a.id))

    def by_osm_id(self, osm_id: int, osm_type: str | None = None) -> AdminArea | None:
        if osm_type:
            return self._by_osm.get((osm_type, osm_id))
        return self._by_osm_id.get(osm_id)

    def address_parts(self, lat: float, lng: float) -> dict[str, str | None]:
        """country (alpha-3), city, district of a point from the containing areas."""
        return address_parts(self.containing(lat, lng))


def address_parts(areas: list[AdminArea]) -> dict[str, str | None]:
    country = city = district = None
    city_level = None
    for a in areas:  # sorted by level ascending
        if a.level == 2 and a.country and country is None:
            country = a.country
        if 7 <= a.level <= 8:
            city, city_level = a.name, a.level  # level 8 (municipality) wins over 7
    for a in areas:
        # district: level 10 if any, else 9 or 11, below the city
        if a.level > (city_level or 8) and a.level in (9, 10, 11) and (district is None or a.level == 10):
            district = a.name
    if country is None:
        for a in areas:
            if a.country:
                country = a.country
                break
    return {"country": country, "city": city, "district": district}
