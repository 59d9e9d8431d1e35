"""Reverse geocoding's street pieces, stored by where they are.

Reverse geocoding reads the street pieces (ways and squares) near a point and measures each.
``street_cells`` holds them in cells of 1/CELLS_PER_DEGREE of a degree each way (about 220 m of
latitude; of longitude 220 m at the equator, 110 m at 60 degrees), under the primary key (band,
cell, piece): a piece is stored, with its street and its geometry, in every cell it passes
through. The pieces near a point are then one short range of rows for each band of latitude the
lookup's box crosses (one or two): a statement per band and a few adjacent pages, where the
R*Tree before (``parts_rtree``, its lower nodes, then each piece's row in ``street_parts`` by
id) cost a dozen page reads from a cold page cache, the largest part of a country-size lookup.

Pieces are numbered by place (the band of their box's centre, then west to east:
:data:`PLACE_ORDER`) and a lookup returns them by number, so a tie between two pieces is broken
the same way in every import of an extract. A piece whose box spans at most
:data:`CELLS_WITHOUT_TEST` cells goes into all of them (a connected line or square touches every
cell of a box one or two cells wide, nearly every one of a 2 x 2 box); a longer one only into the
cells its geometry meets. Either way every piece within the radius of a point is in a cell the
lookup's box crosses: the lookup returns a superset, the caller measures.

The import writes each piece, as it meets it, to a staging table of the writer's connection
(``STAGED``); ``write_tables`` numbers them and fills ``street_cells`` in key order at the end of
the search stage. An index of dataset format 2 or older has ``street_parts`` and ``parts_rtree``
instead; engine.search.index reads those as before (``STREET_PARTS_IN_BOX``).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from itertools import islice

import numpy as np
import shapely

from engine.search.address_points import BANDS_PER_DEGREE, band_sql
from engine.search.vocabulary import Execute

CELLS_PER_DEGREE = BANDS_PER_DEGREE  # a power of two: lng * CELLS_PER_DEGREE is exact

TABLE_NAME = "street_cells"
TABLES = f"""
CREATE TABLE {TABLE_NAME} (
    band INTEGER NOT NULL, cell INTEGER NOT NULL, part_id INTEGER NOT NULL,
    street_id INTEGER NOT NULL, geom BLOB NOT NULL,  -- a way: LineString; a square: Polygon (WKB, degrees)
    PRIMARY KEY (band, cell, part_id)
) WITHOUT ROWID;
"""

STAGED_NAME = "temp.street_parts_staged"
STAGED = f"""
CREATE TABLE {STAGED_NAME} (street_id INTEGER NOT NULL, geom BLOB NOT NULL,
    min_lng REAL NOT NULL, max_lng REAL NOT NULL, min_lat REAL NOT NULL, max_lat REAL NOT NULL)
"""
STAGE = f"INSERT INTO {STAGED_NAME} VALUES (?,?,?,?,?,?)"

# a piece's place: the band of its box's centre, then the centre's longitude (staging order breaks
# ties, so two imports of one extract number alike)
PLACE_ORDER = f"{band_sql('(min_lat + max_lat) / 2')}, (min_lng + max_lng) / 2, rowid"
BY_PLACE = f"SELECT street_id, geom, min_lng, max_lng, min_lat, max_lat FROM {STAGED_NAME} ORDER BY {PLACE_ORDER}"

# the numbered pieces, one row per cell, before they are sorted into ``street_cells``
CELLS_STAGED_NAME = "temp.street_cells_staged"
CELLS_STAGED = (
    f"CREATE TABLE {CELLS_STAGED_NAME} (band INTEGER, cell INTEGER, part_id INTEGER, street_id INTEGER, geom BLOB)"
)
FILL = f"INSERT INTO {TABLE_NAME} SELECT * FROM {CELLS_STAGED_NAME} ORDER BY band, cell, part_id"

# (piece number, street id, geometry) of the pieces in one band's range of cells
IN_BAND = f"SELECT part_id, street_id, geom FROM {TABLE_NAME} WHERE band = ? AND cell BETWEEN ? AND ?"

WRITE_ROWS = 20_000  # pieces staged at a time
CELLS_WITHOUT_TEST = 4


def cell_of(degrees: float) -> int:
    """The cell (of longitude) or band (of latitude) holding a coordinate."""
    return math.floor(degrees * CELLS_PER_DEGREE)


def cells(geom: bytes, min_lng: float, max_lng: float, min_lat: float, max_lat: float) -> list[tuple[int, int]]:
    """(band, cell) of the cells a piece is stored in: every cell of its box when the box spans
    few, else those its geometry meets."""
    bands = range(cell_of(min_lat), cell_of(max_lat) + 1)
    columns = range(cell_of(min_lng), cell_of(max_lng) + 1)
    spanned = [(b, c) for b in bands for c in columns]
    if len(spanned) <= CELLS_WITHOUT_TEST:
        return spanned
    corners = np.array(spanned, dtype=np.float64) / CELLS_PER_DEGREE  # (south edge, west edge)
    size = 1 / CELLS_PER_DEGREE
    boxes = shapely.box(corners[:, 1], corners[:, 0], corners[:, 1] + size, corners[:, 0] + size)
    met = shapely.intersects(shapely.from_wkb(geom), boxes)
    return [key for key, hit in zip(spanned, met.tolist(), strict=True) if hit]


def _cell_rows(numbered: Iterator[tuple[int, tuple]]) -> Iterator[tuple[int, int, int, int, bytes]]:
    for part_id, (street_id, geom, *box) in numbered:
        for b, c in cells(geom, *box):
            yield b, c, part_id, street_id, geom


def write_tables(conn: sqlite3.Connection) -> int:
    """Fill ``street_cells`` from the staged pieces, numbered from 1 by place; drop the staging
    tables. Returns the number of pieces."""
    conn.execute(CELLS_STAGED)
    pieces = enumerate(conn.cursor().execute(BY_PLACE), start=1)
    written = 0
    while chunk := list(islice(pieces, WRITE_ROWS)):
        conn.executemany(f"INSERT INTO {CELLS_STAGED_NAME} VALUES (?,?,?,?,?)", _cell_rows(iter(chunk)))
        written += len(chunk)
    conn.execute(FILL)
    conn.execute(f"DROP TABLE {CELLS_STAGED_NAME}")
    conn.execute(f"DROP TABLE {STAGED_NAME}")
    return written


def in_box(execute: Execute, min_lng: float, max_lng: float, min_lat: float, max_lat: float) -> list[tuple[int, bytes]]:
    """(street id, geometry) of the pieces stored in the cells the box crosses (a superset of
    those in the box), by piece number."""
    first, last = cell_of(min_lng), cell_of(max_lng)
    found: dict[int, tuple[int, bytes]] = {}
    for b in range(cell_of(min_lat), cell_of(max_lat) + 1):
        for part_id, street_id, geom in execute(IN_BAND, (b, first, last)):
            found[part_id] = (street_id, geom)
    return [found[part_id] for part_id in sorted(found)]
