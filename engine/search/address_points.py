"""Reverse geocoding's address-bearing points, clustered on disk by where they are.

Reverse geocoding looks for the address points within about 100 m of a point. An R*Tree finds
their ids quickly, but their rows lie in ``features`` in id order (the order of the PBF file), so
from a cold page cache every candidate costs a page read of its own: at country size that was
most of a lookup's time. ``address_points`` holds just what the lookup needs (id, position,
whether it is a POI, its street, its outline), in a table whose primary key is (band of latitude,
longitude): the points of one band sorted west to east. The points near one another share pages,
and a lookup reads one short range of rows for each band its box crosses (one or two for 100 m).
The outline (a building's, or an area POI's; ``features.geom``, metres in the index's projection)
is stored here again so that the ranking, which measures from the outline, reads no ``features``
row either: a copy of the addresses' outlines, a few hundred MB for a country's buildings.

A band is 1/BANDS_PER_DEGREE of a degree of latitude (about 220 m). ``lat * BANDS_PER_DEGREE``
is exact in floating point (a power of two), so the band of a point is the same in SQL, where
the import computes it, and in Python, where a lookup does.

The table is written once at the end of the search stage (``write_table``), from the rows of
``features``: one sort and an ordered insert. An index imported before the table existed has
none; its lookups join ``points_rtree`` (which then holds the addresses too) to ``features``
(engine.search.index.SpatialCache).
"""

from __future__ import annotations

import sqlite3
from operator import itemgetter

from engine.search.vocabulary import Execute

BANDS_PER_DEGREE = 512

# an address-bearing point: an address, or a POI that carries a street and a house number
ADDRESS_POINT = "(f.type = 'address' OR (f.type = 'poi' AND f.street IS NOT NULL AND f.housenumber IS NOT NULL))"

TABLE_NAME = "address_points"
TABLE = f"""
CREATE TABLE {TABLE_NAME} (
    band INTEGER NOT NULL, lng REAL NOT NULL, feature_id INTEGER NOT NULL,
    lat REAL NOT NULL, is_poi INTEGER NOT NULL, street_id INTEGER NOT NULL,  -- street_id -1: none
    footprint BLOB,  -- features.geom: the outline (WKB, metres in the index's projection) or NULL
    PRIMARY KEY (band, lng, feature_id)
) WITHOUT ROWID
"""


def band_sql(lat: str) -> str:
    """The SQL of the band of the latitude ``lat`` (a column or an expression), as :func:`band`."""
    return f"CAST(({lat}) * {BANDS_PER_DEGREE} AS INTEGER)"


FILL = (
    f"INSERT INTO {TABLE_NAME} SELECT {band_sql('f.lat')}, f.lng, f.id, f.lat, "
    f"f.type = 'poi', COALESCE(f.street_id, -1), f.geom FROM features f WHERE {ADDRESS_POINT} ORDER BY 1, 2, 3"
)

# (feature id, lat, lng, is_poi, street_id, footprint) of one band's points in a box
IN_BAND = (
    f"SELECT feature_id, lat, lng, is_poi, street_id, footprint FROM {TABLE_NAME} "
    "WHERE band = ? AND lng BETWEEN ? AND ? AND lat BETWEEN ? AND ?"
)


def write_table(conn: sqlite3.Connection) -> None:
    """Create and fill ``address_points`` from the ``features`` of the index being written."""
    conn.execute(TABLE)
    conn.execute(FILL)


def band(lat: float) -> int:
    """The band of a latitude, as :func:`band_sql` computes it (CAST truncates towards zero, as int
    does)."""
    return int(lat * BANDS_PER_DEGREE)


def in_box(execute: Execute, min_lng: float, max_lng: float, min_lat: float, max_lat: float) -> list[tuple]:
    """(feature id, lat, lng, is_poi, street_id, footprint) of the address points in the box, by
    feature id."""
    rows: list[tuple] = []
    for b in range(band(min_lat), band(max_lat) + 1):
        rows += execute(IN_BAND, (b, min_lng, max_lng, min_lat, max_lat))
    rows.sort(key=itemgetter(0))
    return rows
