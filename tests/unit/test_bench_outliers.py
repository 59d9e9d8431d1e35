"""bench/outliers.py's resampling of a route line before OSRM /match (pure geometry, no peers)."""

from __future__ import annotations

import numpy as np

from bench.outliers import resample
from engine.geo import haversine_m


def test_resample_keeps_ends_and_spaces_points_evenly():
    # an L-shaped line: 2 km east in 40 m pieces, then 1 km north in 4 m pieces (so that spacing
    # by vertex count would not be even)
    lngs = list(np.linspace(24.90, 24.936, 51)) + [24.936] * 250
    lats = [60.17] * 51 + list(np.linspace(60.17, 60.179, 251))[1:]
    coords = [[x, y] for x, y in zip(lngs, lats, strict=True)]
    pts = resample(coords, 50)
    assert len(pts) == 50
    assert pts[0] == (lats[0], lngs[0]) and np.allclose(pts[-1], (lats[-1], lngs[-1]))
    gaps = sorted(haversine_m(*p, *q) for p, q in zip(pts, pts[1:], strict=False))
    # equal steps along the line; only the step across the corner is shorter as the crow flies
    assert gaps[-1] - gaps[1] < 0.01 * gaps[-1]
    assert gaps[0] < gaps[1]


def test_short_lines_are_sent_as_they_are():
    coords = [[7.42, 43.73], [7.421, 43.731], [7.422, 43.733]]
    assert resample(coords, 100) == [(43.73, 7.42), (43.731, 7.421), (43.733, 7.422)]
