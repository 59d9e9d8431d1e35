"""Routing on the imported samples (Monaco, Helsinki): real data, checked against independent
references (great-circle bounds, OSRM's answer for the same request measured once by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from engine import polyline
from engine.errors import InvalidParameter
from engine.geo import haversine_m
from engine.routing.graph import RoadGraph
from engine.services.routing import RoutingParams, run

CASINO = (43.7394, 7.4286)
PRINCESSE_GRACE = (43.7494, 7.4379)


def test_graph_is_memory_mapped_and_consistent(datasets):
    router = datasets.get("monaco").router
    g: RoadGraph = router.g
    # a plain ndarray view (fast scalar reads) over the memory-mapped file, not a copy in memory
    assert type(g.edge_head) is np.ndarray and isinstance(g.edge_head.base, np.memmap)
    assert g.n_edges > 3000 and g.has_ch
    # CSR consistency
    assert g.node_first_out[-1] == g.n_edges
    assert np.all(np.diff(np.asarray(g.edge_tail)) >= 0)
    tw = np.asarray(g.edge_twin)
    both = tw >= 0
    assert np.all(np.asarray(g.edge_twin)[tw[both]] == np.nonzero(both)[0])
    # edge length equals its geometry's last cumulative distance
    last = np.asarray(g.edge_geom_first)[1:] - 1
    assert np.allclose(np.asarray(g.geom_cum_m)[last], g.edge_length_m, atol=0.01)
    assert g.meta["restrictions"]["via_node"] > 0


def test_monaco_casino_to_princesse_grace(datasets):
    res = run(datasets, RoutingParams(origin=CASINO, destination=PRINCESSE_GRACE))
    r = res["routes"][0]
    crow = haversine_m(*CASINO, *PRINCESSE_GRACE)
    assert crow < r["distance"] < 3 * crow
    # OSRM (car.lua, same extract) answers 1884.7 m for this request
    assert r["distance"] == pytest.approx(1884.7, rel=0.05)
    assert 100 < r["duration"] < 400
    steps = r["legs"][0]["steps"]
    assert steps[0]["maneuver"]["type"] == "depart" and steps[-1]["maneuver"]["type"] == "arrive"
    assert any(s["name"] == "Avenue Princesse Grace" for s in steps)
    assert all(s["instruction"] for s in steps)
    pts = polyline.decode(r["geometry"])
    w = res["waypoints"]
    assert haversine_m(*pts[0], w[0]["location"]["lat"], w[0]["location"]["lng"]) < 1.5
    assert haversine_m(*pts[-1], w[1]["location"]["lat"], w[1]["location"]["lng"]) < 1.5
    # geometry length ~ route distance
    geo = sum(haversine_m(*a, *b) for a, b in zip(pts[:-1], pts[1:], strict=True))
    assert geo == pytest.approx(r["distance"], rel=0.01)


def test_monaco_alternative(datasets):
    res = run(datasets, RoutingParams(origin=CASINO, destination=PRINCESSE_GRACE, alternatives=2, steps=False))
    assert len(res["routes"]) >= 2
    best = res["routes"][0]
    for alt in res["routes"][1:]:
        assert alt["geometry"] != best["geometry"]
        assert alt["duration"] >= best["duration"] * 0.95


def test_helsinki_route_and_far_point(datasets):
    a = (60.1699, 24.9384)  # Mannerheimintie near the station
    b = (60.1665, 24.9437)
    res = run(datasets, RoutingParams(origin=a, destination=b))
    r = res["routes"][0]
    assert haversine_m(*a, *b) < r["distance"] < 4 * haversine_m(*a, *b) + 500
    with pytest.raises(InvalidParameter) as exc:
        run(datasets, RoutingParams(origin=a, destination=(60.30, 24.94)))
    assert exc.value.parameter == "destination"


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_random_pairs_mostly_routable(datasets, region):
    router = datasets.get(region).router
    g = router.g
    rng = np.random.default_rng(5)
    big = np.nonzero(router.snapper.big_edge & ~router.snapper.connector_edge)[0]
    ok = 0
    n = 200
    for _ in range(n):
        e1, e2 = rng.choice(big, 2)
        o = router.snap(*g.point_along(int(e1), 0.5))
        d = router.snap(*g.point_along(int(e2), 0.5))
        ok += router.leg(o, d) is not None
    assert ok >= 0.97 * n
