"""Reverse geocoding's street pieces, numbered by where they are.

Reverse geocoding asks ``parts_rtree`` for the street pieces (ways and squares) whose box comes
near a point, then reads their rows in ``street_parts`` by id. The R*Tree keeps pieces that are
near one another in the same nodes, but a row's page follows its id: numbered in the order the
import meets them (the PBF's), the dozen pieces near a point lie on a dozen pages, each a disk read
of its own from a cold page cache. So the import numbers the pieces by place: by the band of
latitude of their box's centre (engine.search.address_points's bands, about 220 m), west to east
within a band. The pieces near a point then share a few pages.

The tables (``TABLES``) are created with the rest of the index; the import writes each piece, as
it meets it, to a staging table of the writer's connection
(``STAGED``); ``write_tables`` numbers them in that order and fills ``street_parts`` and
``parts_rtree`` at the end of the search stage. Readers need nothing new: an index whose pieces
are numbered in the PBF's order (dataset format 2 and older) gives the same answers, from more
pages.
"""

from __future__ import annotations

import sqlite3
from itertools import islice

from engine.search.address_points import band_sql

TABLES = """
CREATE TABLE street_parts (id INTEGER PRIMARY KEY, street_id INTEGER NOT NULL,
                           geom BLOB NOT NULL);  -- a way: LineString; a square: Polygon
CREATE VIRTUAL TABLE parts_rtree USING rtree (id, min_lng, max_lng, min_lat, max_lat);
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

WRITE_ROWS = 20_000  # pieces inserted at a time


def write_tables(conn: sqlite3.Connection) -> int:
    """Fill ``street_parts`` and ``parts_rtree`` from the staged pieces, numbered from 1 by place;
    drop the staging table. Returns the number of pieces."""
    pieces = enumerate(conn.cursor().execute(BY_PLACE), start=1)
    written = 0
    while chunk := list(islice(pieces, WRITE_ROWS)):
        conn.executemany("INSERT INTO street_parts VALUES (?,?,?)", ((i, sid, geom) for i, (sid, geom, *_box) in chunk))
        conn.executemany("INSERT INTO parts_rtree VALUES (?,?,?,?,?)", ((i, *box) for i, (_sid, _geom, *box) in chunk))
        written += len(chunk)
    conn.execute(f"DROP TABLE {STAGED_NAME}")
    return written
