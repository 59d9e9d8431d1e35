"""Admin areas from relations cut by the extract: the partial builder against the true shape.

The oracle: a known polygon (with a hole), its boundary split into 'ways', the extract's bbox
cutting it the way a clipped PBF does (nodes outside the bbox are missing, so each way stops at
its last node inside). The rebuilt area must match the true polygon inside the bbox.
"""

from __future__ import annotations

import random

import pytest
import shapely
from shapely.geometry import Point, Polygon, box

from engine.ingest.admin import _partial_area


def _clipped_ways(ring, bbox_poly, n_ways=4):
    """Split a closed ring into ways and drop the nodes outside the bbox (a 'simple' extract)."""
    coords = list(ring.coords)[:-1]
    step = max(2, len(coords) // n_ways)
    ways = []
    for i in range(0, len(coords), step):
        way = coords[i : i + step + 1]
        if i + step >= len(coords):
            way = coords[i:] + [coords[0]]
        pieces, cur = [], []
        for c in way:
            if bbox_poly.contains(Point(c)):
                cur.append(c)
            else:
                if len(cur) >= 2:
                    pieces.append(cur)
                cur = []
        if len(cur) >= 2:
            pieces.append(cur)
        ways.extend(pieces)
    return ways


def _densify(poly, step):
    return shapely.segmentize(poly, step)


@pytest.mark.parametrize("seed", range(6))
def test_partial_area_matches_the_true_shape_inside_the_extract(seed):
    rng = random.Random(seed)
    cx, cy = rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)
    r = rng.uniform(0.5, 0.9)
    outer = Point(cx, cy).buffer(r, quad_segs=32)
    hole = Point(cx + r * 0.3, cy).buffer(r * 0.2, quad_segs=16)
    true = _densify(Polygon(outer.exterior.coords, [hole.exterior.coords]), 0.01)
    extract = box(-0.6, -0.6, 0.6, 0.6)
    lines = _clipped_ways(true.exterior, extract) + _clipped_ways(true.interiors[0], extract, 2)
    anchor = true.representative_point()
    if not extract.contains(anchor):
        anchor = true.intersection(extract).representative_point()
    got = _partial_area(lines, extract, [anchor])
    want = true.intersection(extract)
    assert got is not None and got.is_valid
    # the only error: each cut way ends at its last node inside (within ~0.01 of the edge)
    assert got.symmetric_difference(want).area <= 0.03 * want.area


def test_partial_area_from_a_point_known_outside():
    true = _densify(box(-1.0, -1.0, 0.2, 1.0), 0.01)  # covers the left part of the extract
    extract = box(-0.5, -0.5, 0.5, 0.5)
    lines = _clipped_ways(true.exterior, extract)
    got = _partial_area(lines, extract, [], outside=[Point(0.4, 0.0)])
    want = true.intersection(extract)
    assert got is not None and got.symmetric_difference(want).area <= 0.03 * want.area
