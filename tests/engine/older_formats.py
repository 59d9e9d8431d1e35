"""Search indexes as older releases imported them, made from an index of today's format, for the
tests that check a release still answers the same from them (engine.layout.READ_FORMAT_VERSIONS)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import shapely

STREET_PARTS_IN_RTREE = """
CREATE TABLE street_parts (id INTEGER PRIMARY KEY, street_id INTEGER NOT NULL, geom BLOB NOT NULL);
CREATE VIRTUAL TABLE parts_rtree USING rtree (id, min_lng, max_lng, min_lat, max_lat);
"""


def _street_parts_in_rtree(conn: sqlite3.Connection) -> None:
    """Street pieces in ``street_parts`` and ``parts_rtree`` (formats 1 and 2), numbered alike."""
    rows = conn.execute("SELECT DISTINCT part_id, street_id, geom FROM street_cells ORDER BY part_id").fetchall()
    conn.executescript(STREET_PARTS_IN_RTREE)
    conn.executemany("INSERT INTO street_parts VALUES (?,?,?)", rows)
    bounds = shapely.bounds(shapely.from_wkb([geom for _id, _sid, geom in rows])).tolist()
    conn.executemany(
        "INSERT INTO parts_rtree VALUES (?,?,?,?,?)",
        (
            (part_id, min_lng, max_lng, min_lat, max_lat)
            for (part_id, _sid, _g), (min_lng, min_lat, max_lng, max_lat) in zip(rows, bounds, strict=True)
        ),
    )
    conn.execute("DROP TABLE street_cells")


def _addresses_in_rtree(conn: sqlite3.Connection) -> None:
    """Address points in ``points_rtree`` (format 1)."""
    conn.execute("DROP TABLE address_points")
    conn.execute("INSERT INTO points_rtree SELECT id, lng, lng, lat, lat FROM features WHERE type = 'address'")


def as_format(search_db: Path, version: int) -> Path:
    """Rewrite ``search_db`` in place as an import of format ``version`` (1 or 2) wrote it."""
    conn = sqlite3.connect(search_db)
    _street_parts_in_rtree(conn)
    if version == 1:
        _addresses_in_rtree(conn)
    conn.commit()
    conn.close()
    return search_db
