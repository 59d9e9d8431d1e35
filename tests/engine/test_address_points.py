"""Reverse geocoding's address points (engine.search.address_points): the band-clustered table
finds exactly the points of a box, and an index imported before the table existed (its addresses
in points_rtree) finds the same addresses near a point."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import shapely

from engine import layout
from engine.dataset import DatasetRegistry
from engine.search import address_points
from engine.search.index import SearchIndex, spatial_cache
from engine.services import reverse_geocoding
from engine.services.reverse_geocoding import ReverseParams
from tests.engine.dataset_copies import copy_region

FEATURES = """
CREATE TABLE features (id INTEGER PRIMARY KEY, type TEXT NOT NULL, street TEXT, housenumber TEXT,
                       street_id INTEGER, lat REAL NOT NULL, lng REAL NOT NULL, geom BLOB)
"""


def _brute_force(rows: list[tuple], box: tuple[float, float, float, float]) -> list[tuple]:
    min_lng, max_lng, min_lat, max_lat = box
    return sorted(r for r in rows if min_lng <= r[2] <= max_lng and min_lat <= r[1] <= max_lat)


def test_a_box_finds_exactly_its_address_points_across_bands_and_the_equator(tmp_path: Path):
    """Points on both sides of band edges, of the equator and of the prime meridian (bands of
    negative latitudes truncate towards zero in SQL and in Python alike); POIs without a street
    or a number and places are no address points; each point comes with its outline."""
    rng = np.random.default_rng(3)
    edge = 1 / address_points.BANDS_PER_DEGREE
    lats = np.concatenate([rng.uniform(-0.01, 0.01, 3000), 60.0 + rng.uniform(-2, 2, 600) * edge])
    lngs = rng.uniform(-0.01, 0.01, len(lats))
    kinds = rng.choice(["address", "poi", "poi_no_number", "place"], len(lats))
    conn = sqlite3.connect(tmp_path / "search.sqlite")
    conn.execute(FEATURES)
    expected = []
    for i, (lat, lng, kind) in enumerate(zip(lats.tolist(), lngs.tolist(), kinds.tolist(), strict=True), start=1):
        typ = "poi" if kind.startswith("poi") else kind
        number = None if kind == "poi_no_number" else "1"
        street_id = int(rng.integers(1, 50)) if kind == "address" and i % 3 else None
        outline = shapely.to_wkb(shapely.box(i, 0, i + 1, 1)) if i % 2 else None
        row = (i, typ, "Katu", number, street_id, lat, lng, outline)
        conn.execute("INSERT INTO features VALUES (?,?,?,?,?,?,?,?)", row)
        if kind in ("address", "poi"):
            expected.append((i, lat, lng, int(typ == "poi"), street_id if street_id is not None else -1, outline))
    address_points.write_table(conn)
    assert conn.execute("SELECT count(*) FROM address_points").fetchone()[0] == len(expected)

    for centre_lat in (0.0, -edge, edge, 60.0, 60.0 + edge / 2):
        for _ in range(60):
            lat, lng = centre_lat + rng.uniform(-3, 3) * edge, rng.uniform(-0.01, 0.01)
            half = rng.uniform(0.1, 2.5) * edge
            box = (lng - half, lng + half, lat - half, lat + half)
            assert address_points.in_box(conn.execute, *box) == _brute_force(expected, box)


def _old_layout(search_db: Path, out: Path) -> Path:
    """A copy of an index as imported before ``address_points`` (format 1): the addresses in
    points_rtree."""
    if out != search_db:
        shutil.copy(search_db, out)
    conn = sqlite3.connect(out)
    conn.execute("DROP TABLE address_points")
    conn.execute("INSERT INTO points_rtree SELECT id, lng, lng, lat, lat FROM features WHERE type = 'address'")
    conn.commit()
    conn.close()
    return out


@pytest.mark.parametrize("region", ["helsinki", "monaco"])
def test_an_index_without_address_points_finds_the_same_addresses(data_dir: Path, tmp_path: Path, region: str):
    search_db = layout.current_link(data_dir, region) / layout.SEARCH_DB
    new, old = SearchIndex(search_db), SearchIndex(_old_layout(search_db, tmp_path / "old.sqlite"))
    assert new.has_table(address_points.TABLE_NAME) and not old.has_table(address_points.TABLE_NAME)
    addresses = new.execute("SELECT lat, lng FROM features WHERE type = 'address' ORDER BY id").fetchall()
    spots = addresses[:: max(1, len(addresses) // 150)]
    assert len(spots) >= 10
    rng = np.random.default_rng(11)
    found = 0
    for lat, lng in spots:
        lat, lng = lat + rng.normal(0, 0.0003), lng + rng.normal(0, 0.0003)
        for radius, k in ((100.0, 20), (40.0, 5), (400.0, 50)):
            near = spatial_cache(new).addresses_near(lat, lng, radius, k)
            assert near == spatial_cache(old).addresses_near(lat, lng, radius, k)
            found += bool(near)
    assert found >= len(spots)  # 400 m around an address finds one: not only empty lists compared
    new.close()
    old.close()


def test_a_dataset_of_format_1_is_served_with_the_same_reverse_answers(datasets, data_dir: Path, tmp_path: Path):
    """A release reading format 2 opens a dataset imported before ``address_points`` (format 1:
    its addresses in points_rtree) and answers reverse geocoding as from the same dataset in
    format 2."""
    version_dir = copy_region(data_dir, tmp_path / "data")
    _old_layout(version_dir / layout.SEARCH_DB, version_dir / layout.SEARCH_DB)
    manifest = json.loads((version_dir / layout.MANIFEST).read_text())
    assert manifest["format_version"] == layout.FORMAT_VERSION == 2
    manifest["format_version"] = 1
    (version_dir / layout.MANIFEST).write_text(json.dumps(manifest))
    old = DatasetRegistry(tmp_path / "data")
    dataset = old.get("helsinki")
    assert dataset is not None and not dataset.search.has_table(address_points.TABLE_NAME)

    rng = np.random.default_rng(2)
    lo_lng, lo_lat, hi_lng, hi_lat = manifest["bbox"]
    addresses = 0
    for _ in range(300):
        params = ReverseParams(lat=rng.uniform(lo_lat, hi_lat), lng=rng.uniform(lo_lng, hi_lng), limit=3)
        answer = reverse_geocoding.run(old, params)
        assert answer == reverse_geocoding.run(datasets, params)
        addresses += any(c["type"] == "address" for c in answer["candidates"])
    assert addresses > 100
