"""bench/outliers.py without peers: the resampling of a route line before OSRM /match, and the
location of where OSRM's prices for our path differ from ours (on a hand-made leg)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from bench.outliers import locate, resample, seconds_at, timeline
from engine.geo import haversine_m
from engine.routing.router import Leg


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


def _three_edge_router():
    """Edges 0 -> 1 -> 2, 10 m and 1 s each; turning 0 -> 1 costs 0.5 s, 1 -> 2 nothing."""
    return SimpleNamespace(
        length=np.array([10.0, 10.0, 10.0]),
        duration=np.array([1.0, 1.0, 1.0]),
        tfirst=np.array([0, 1, 2, 2]),
        tto=np.array([1, 2]),
        tcost=np.array([0.5, 0.0]),
        g=SimpleNamespace(name=lambda e: f"street {e}"),
    )


def test_timeline_cuts_the_end_edges_and_charges_turns_once_past_the_junction():
    router = _three_edge_router()
    metres, travel, turns = timeline(router, Leg(edges=np.array([0, 1, 2]), start=0.5, end=0.5, weight=0.0))
    assert metres.tolist() == [0.0, 5.0, 15.0, 20.0] and travel.tolist() == [0.0, 0.5, 1.5, 2.0]
    assert turns.tolist() == [0.5, 0.0]
    # at the junction, before the turn; just past it, after
    assert seconds_at(metres, travel, turns, np.array([5.0, 5.1, 20.0])).round(2).tolist() == [0.5, 1.01, 2.5]


def test_locate_finds_the_stretch_where_osrm_charges_a_uturn():
    router = _three_edge_router()
    leg = Leg(edges=np.array([0, 1, 2]), start=0.0, end=1.0, weight=0.0)
    # OSRM drove the same 30 m but charged 28 s on the middle 10 m (a U-turn) where we take 1.5 s
    driven = {
        "duration": 30.0,
        "legs": [(10.0, 1.0), (10.0, 28.0), (10.0, 1.0)],
        "points": [(43.73, 7.42), (43.7301, 7.42), (43.7302, 7.42), (43.7303, 7.42)],
    }
    found = locate(router, leg, driven, spans=1)
    assert found["where"] == [
        {
            "street": "street 1",
            "at": [43.7301, 7.42],
            "metres": 10.0,
            "osrm_s": 28.0,
            "ours_s": 1.5,
            "gap_s": 26.5,
            "osrm_uturn": True,
        }
    ]
    assert found["osrm_uturns"] == 1
    assert found["osrm_s_for_ours_without_its_uturns"] == 3.5  # our own time for the path
