"""The import's batched admin lookup (``AdminIndex.parts_of_points``) gives every point the same
country, city and district as the one-point lookup the API uses (``address_parts(containing())``)."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from shapely.geometry import box

from engine import layout
from engine.admin import AdminArea, AdminIndex, PartColumns, address_parts


def _area(i: int, name: str, level: int, geometry, country: str | None = None) -> AdminArea:
    return AdminArea(i, "relation", i, name, {}, level, None, None, country, geometry)


def _nested_areas() -> list[AdminArea]:
    """A country, two cities side by side sharing an edge, districts of level 9 and 10 (one
    straddling the cities' edge), an overlapping level-7 county, a hole."""
    return [
        _area(1, "Land", 2, box(0, 0, 10, 10), "LND"),
        _area(2, "West City", 8, box(0, 0, 5, 10), "LND"),
        _area(3, "East City", 8, box(5, 0, 10, 10), "LND"),
        _area(4, "County", 7, box(2, 2, 8, 8), "LND"),
        _area(5, "Old Town", 10, box(1, 1, 3, 3)),
        _area(6, "Borough", 9, box(4, 4, 6, 6)),
        _area(7, "Ring", 10, shapely.Polygon([(6, 6), (9, 6), (9, 9), (6, 9)], [[(7, 7), (8, 7), (8, 8), (7, 8)]])),
    ]


def _one_by_one(index: AdminIndex, lats: np.ndarray, lngs: np.ndarray) -> list[dict]:
    return [address_parts(index.containing(lat, lng)) for lat, lng in zip(lats.tolist(), lngs.tolist(), strict=True)]


def _batched(index: AdminIndex, lats: np.ndarray, lngs: np.ndarray, chunk: int) -> list[dict]:
    """``parts_of_points`` a chunk at a time, as the one-point lookup's dicts."""
    found = []
    for start in range(0, len(lats), chunk):
        columns = index.parts_of_points(lats[start : start + chunk], lngs[start : start + chunk])
        found += [dict(zip(PartColumns._fields, parts, strict=True)) for parts in zip(*columns, strict=True)]
    return found


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_batched_parts_equal_the_one_point_lookup(chunk):
    index = AdminIndex(_nested_areas())
    rng = np.random.default_rng(3)
    # inside, outside, on shared edges and corners, in the hole
    lngs = np.r_[rng.uniform(-1, 11, 400), [5.0, 5.0, 0.0, 7.5, 10.0, 2.0]]
    lats = np.r_[rng.uniform(-1, 11, 400), [5.0, 0.0, 0.0, 7.5, 10.0, 2.0]]
    batched = _batched(index, lats, lngs, chunk)
    assert batched == _one_by_one(index, lats, lngs)
    assert {p["city"] for p in batched} >= {"West City", "East City", None}
    assert {p["district"] for p in batched} >= {"Old Town", "Borough", "Ring", None}


def test_no_areas_and_no_points():
    empty = AdminIndex([])
    assert empty.parts_of_points(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == PartColumns(
        [None, None], [None, None], [None, None]
    )
    assert AdminIndex(_nested_areas()).parts_of_points(np.array([]), np.array([])) == PartColumns([], [], [])


def test_batched_parts_on_the_samples_admin_areas(data_dir):
    for region in ("monaco", "helsinki"):
        index = AdminIndex.open(layout.current_link(data_dir, region).resolve())
        west, south, east, north = shapely.total_bounds([a.geometry for a in index.areas])
        rng = np.random.default_rng(5)
        lats, lngs = rng.uniform(south, north, 2000), rng.uniform(west, east, 2000)
        batched = _batched(index, lats, lngs, 500)
        assert batched == _one_by_one(index, lats, lngs), region
        assert any(p["city"] for p in batched), region
