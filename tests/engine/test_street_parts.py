"""Reverse geocoding's street pieces (engine.search.street_parts): stored in the cells they pass
through and numbered by place, so that the pieces near a point are a few adjacent rows, and a box
finds every piece it meets."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import shapely

from engine import layout
from engine.search import street_parts
from engine.search.address_points import band
from engine.search.street_parts import CELLS_PER_DEGREE

EDGE = 1 / CELLS_PER_DEGREE
NUMBERED = "SELECT DISTINCT part_id, street_id, geom FROM street_cells ORDER BY part_id"


def _place(geom: bytes) -> tuple[int, float]:
    """A piece's place as the import orders them: the band of its box's centre, the centre's
    longitude (its box is its geometry's bounds)."""
    min_lng, min_lat, max_lng, max_lat = shapely.bounds(shapely.from_wkb(geom)).tolist()
    return band((min_lat + max_lat) / 2), (min_lng + max_lng) / 2


def _staged_pieces(rng: np.random.Generator) -> list[tuple]:
    """Lines and squares near the equator and the prime meridian and at 60 degrees north, short
    ones across cell edges and long diagonal ones across many cells."""
    staged = []
    for street_id in rng.permutation(2000).tolist():
        lat, lng = rng.uniform(-3, 3) * EDGE + rng.choice([0.0, 60.0]), rng.uniform(-0.02, 0.02)
        reach = 0.6 * EDGE if street_id % 7 else 12 * EDGE
        points = np.column_stack([lng + rng.uniform(0, reach, 3), lat + rng.uniform(0, reach, 3)])
        line = shapely.LineString(points)
        geom = shapely.to_wkb(shapely.Polygon(points) if street_id % 5 == 0 else line)
        min_lng, min_lat, max_lng, max_lat = line.bounds
        staged.append((street_id, geom, min_lng, max_lng, min_lat, max_lat))
    return staged


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[sqlite3.Connection, list[tuple]]:
    conn = sqlite3.connect(tmp_path_factory.mktemp("street_parts") / "search.sqlite")
    conn.executescript(street_parts.TABLES + street_parts.STAGED)
    staged = _staged_pieces(np.random.default_rng(7))
    conn.executemany(street_parts.STAGE, staged)
    assert street_parts.write_tables(conn) == len(staged)
    return conn, staged


def test_pieces_are_numbered_by_band_then_west_to_east_each_with_its_street(written):
    """Pieces staged in no order come out numbered 1..n in place order, each with its street and
    its geometry; the staging tables are gone."""
    conn, staged = written
    rows = conn.execute(NUMBERED).fetchall()
    assert [row[0] for row in rows] == list(range(1, len(staged) + 1))
    places = [_place(row[2]) for row in rows]
    assert places == sorted(places)
    assert len({band for band, _ in places}) > 10  # not one band: the order was put to the test
    assert sorted((sid, geom) for sid, geom, *_box in staged) == sorted((sid, geom) for _id, sid, geom in rows)
    temp = conn.execute("SELECT name FROM temp.sqlite_master WHERE type = 'table'").fetchall()
    assert temp == []


def test_a_piece_is_in_the_cells_it_meets_and_long_ones_in_no_other(written):
    """A long diagonal piece is stored in the cells its geometry meets, not in every cell of its
    box; a short one in every cell of its box."""
    conn, staged = written
    long_stored = long_box = 0
    for part_id, _sid, geom in conn.execute(NUMBERED).fetchall():
        shape = shapely.from_wkb(geom)
        stored = conn.execute("SELECT band, cell FROM street_cells WHERE part_id = ?", (part_id,)).fetchall()
        for b, c in stored:
            assert (
                shapely.intersects(shape, shapely.box(c * EDGE, b * EDGE, (c + 1) * EDGE, (b + 1) * EDGE))
                or len(stored) <= 4
            )
        min_lng, min_lat, max_lng, max_lat = shape.bounds
        spanned = (street_parts.cell_of(max_lat) - street_parts.cell_of(min_lat) + 1) * (
            street_parts.cell_of(max_lng) - street_parts.cell_of(min_lng) + 1
        )
        if spanned > street_parts.CELLS_WITHOUT_TEST:
            long_stored, long_box = long_stored + len(stored), long_box + spanned
        else:
            assert len(stored) == spanned
    assert 0 < long_stored < long_box  # long pieces were there, and kept out of cells they miss


def test_a_box_finds_every_piece_it_meets_once_by_number(written):
    """Boxes of 10 m to 1 km around points near cell edges, the equator and the prime meridian:
    every piece whose geometry meets the box is found, each once, in number order; nothing far
    from the box."""
    conn, _staged = written
    rows = conn.execute(NUMBERED).fetchall()
    shapes = shapely.from_wkb([geom for _id, _sid, geom in rows])
    rng = np.random.default_rng(5)
    met_some = 0
    for centre_lat in (0.0, -EDGE, EDGE, 60.0, 60.0 + EDGE / 2):
        for _ in range(60):
            lat, lng = centre_lat + rng.uniform(-3, 3) * EDGE, rng.uniform(-0.02, 0.02)
            half = rng.uniform(0.05, 2.5) * EDGE
            box = (lng - half, lng + half, lat - half, lat + half)
            found = street_parts.in_box(conn.execute, *box)
            numbers = [part_id for part_id, _sid, geom in rows if (_sid, geom) in set(found)]
            assert len(found) == len(set(found)) == len(numbers)
            assert [(sid, geom) for part_id, sid, geom in rows if part_id in numbers] == found
            query = shapely.box(box[0], box[2], box[1], box[3])
            meets = [
                (sid, geom) for (_id, sid, geom), shape in zip(rows, shapes, strict=True) if shape.intersects(query)
            ]
            assert set(meets) <= set(found)
            near = shapely.box(box[0] - EDGE, box[2] - EDGE, box[1] + EDGE, box[3] + EDGE)
            assert all(shapely.from_wkb(geom).intersects(near) for _sid, geom in found)
            met_some += bool(meets)
    assert met_some > 100


@pytest.mark.parametrize("region", ["helsinki", "monaco"])
def test_an_imported_index_stores_its_street_pieces_by_place(data_dir: Path, region: str):
    """The samples' pieces, in number order, go band by band and west to east; the R*Tree of
    formats 1 and 2 is not written any more."""
    conn = sqlite3.connect(f"file:{layout.current_link(data_dir, region) / layout.SEARCH_DB}?mode=ro", uri=True)
    rows = conn.execute(NUMBERED).fetchall()
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert len(rows) > 100
    assert [row[0] for row in rows] == list(range(1, len(rows) + 1))
    places = [_place(row[2]) for row in rows]
    assert places == sorted(places)
    assert "parts_rtree" not in tables and "street_parts" not in tables
