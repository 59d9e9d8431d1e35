"""Reverse geocoding's street pieces (engine.search.street_parts): numbered by where they are, so
that the pieces near a point share pages, each keeping its street, its geometry and its box."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import shapely

from engine import layout
from engine.search import street_parts
from engine.search.address_points import BANDS_PER_DEGREE, band

NUMBERED = (
    "SELECT p.id, p.street_id, p.geom, r.min_lng, r.max_lng, r.min_lat, r.max_lat "
    "FROM street_parts p JOIN parts_rtree r ON r.id = p.id ORDER BY p.id"
)


def _place(geom: bytes) -> tuple[int, float]:
    """A piece's place as the import orders them: the band of its box's centre, the centre's
    longitude (its box is its geometry's bounds)."""
    min_lng, min_lat, max_lng, max_lat = shapely.bounds(shapely.from_wkb(geom)).tolist()
    return band((min_lat + max_lat) / 2), (min_lng + max_lng) / 2


def test_pieces_are_numbered_by_band_then_west_to_east_each_with_its_street_and_box(tmp_path: Path):
    """Pieces staged in no order (lines and squares, some across band edges, on both sides of the
    equator) come out numbered 1..n in place order; every piece keeps its street, its geometry and
    its box in the R*Tree (rounded outwards to 32-bit floats); the staging table is gone."""
    rng = np.random.default_rng(7)
    edge = 1 / BANDS_PER_DEGREE
    conn = sqlite3.connect(tmp_path / "search.sqlite")
    conn.executescript(street_parts.TABLES + street_parts.STAGED)
    staged = []
    for street_id in rng.permutation(2000).tolist():
        lat, lng = rng.uniform(-3, 3) * edge + rng.choice([0.0, 60.0]), rng.uniform(-0.02, 0.02)
        points = np.column_stack([lng + rng.uniform(0, 0.002, 3), lat + rng.uniform(0, 0.6, 3) * edge])
        line = shapely.LineString(points)
        geom = shapely.to_wkb(shapely.Polygon(points) if street_id % 5 == 0 else line)
        min_lng, min_lat, max_lng, max_lat = line.bounds
        staged.append((street_id, geom, min_lng, max_lng, min_lat, max_lat))
    conn.executemany(street_parts.STAGE, staged)

    assert street_parts.write_tables(conn) == len(staged)

    rows = conn.execute(NUMBERED).fetchall()
    assert [row[0] for row in rows] == list(range(1, len(staged) + 1))
    places = [_place(row[2]) for row in rows]
    assert places == sorted(places)
    assert len({band for band, _ in places}) > 10  # not one band: the order was put to the test
    by_piece = {(sid, geom): box for sid, geom, *box in staged}
    assert sorted(by_piece) == sorted((sid, geom) for _id, sid, geom, *_box in rows)
    for _id, sid, geom, min_lng, max_lng, min_lat, max_lat in rows:
        true_min_lng, true_max_lng, true_min_lat, true_max_lat = by_piece[(sid, geom)]
        assert min_lng <= true_min_lng <= min_lng + 1e-5 and max_lng - 1e-5 <= true_max_lng <= max_lng
        assert min_lat <= true_min_lat <= min_lat + 1e-5 and max_lat - 1e-5 <= true_max_lat <= max_lat
    assert conn.execute("SELECT count(*) FROM temp.sqlite_master WHERE name = 'street_parts_staged'").fetchone()[0] == 0


@pytest.mark.parametrize("region", ["helsinki", "monaco"])
def test_an_imported_index_numbers_its_street_pieces_by_place(data_dir: Path, region: str):
    """The samples' pieces, in id order, go band by band and west to east (in the PBF's order
    before: the pieces near a point lay on as many pages as there were pieces)."""
    conn = sqlite3.connect(f"file:{layout.current_link(data_dir, region) / layout.SEARCH_DB}?mode=ro", uri=True)
    rows = conn.execute(NUMBERED).fetchall()
    conn.close()
    assert len(rows) > 100
    assert [row[0] for row in rows] == list(range(1, len(rows) + 1))
    places = [_place(row[2]) for row in rows]
    assert places == sorted(places)
