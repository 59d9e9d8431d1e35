"""The turn table of the import (engine.routing.build.build_turns), worked out as arrays, against
the rules taken one edge and one turn at a time, on both samples and every profile: barriers,
restrictions (Monaco's and Helsinki's via-node relations), U-turns at dead ends or anywhere
(walkers, cyclists), roundabouts, restricted-access entries, a cyclist getting off to push."""

from __future__ import annotations

import numpy as np
import pytest

from config.settings import PROJECT_ROOT
from engine.routing import profile as P
from engine.routing.build import _forbidden, _graph_arrays, _node_components, _TurnRules, build_turns, read_osm
from engine.routing.profiles import PROFILES
from tests.engine.osm_grid import OsmGrid

SAMPLES = PROJECT_ROOT / "data" / "samples"


def _turns_one_by_one(rules: _TurnRules, m: int) -> list[tuple[int, int, float, float]]:
    """(edge arrived on, edge entered, duration, duration + extra weight) of every turn, the rules
    applied to each candidate in turn."""
    out: list[tuple[int, int, float, float]] = []
    duration = rules.profile.turn_duration_s
    for e in range(m):
        v = int(rules.edge_head[e])
        restrictions = rules.by_via.get(v, [])
        onward, back = [], []
        for f in range(int(rules.first_out[v]), int(rules.first_out[v + 1])):
            forbidden = _forbidden(restrictions, rules.edge_way[e], rules.edge_way[f])
            if f == rules.edge_twin[e]:
                back += [] if forbidden else [f]
                if not rules.profile.turns_back:
                    continue
            if not rules.blocked[v] and not forbidden:
                onward.append(f)
        for f in onward:
            angle = (rules.start_b[f] - rules.end_b[e] + 540.0) % 360.0 - 180.0
            roundabout = bool((rules.edge_flags[e] | rules.edge_flags[f]) & P.FLAG_ROUNDABOUT)
            cost = duration(angle, n_roads=int(rules.deg[v]), uturn=False, roundabout=roundabout)
            cost += float(rules.node_penalty_s[v])
            restricted = rules.edge_flags[f] & P.FLAG_RESTRICTED and not rules.edge_flags[e] & P.FLAG_RESTRICTED
            extra = P.RESTRICTED_ENTRY_S if restricted else 0.0
            extra += rules.profile.mode_change_s if rules.pushed[f] and not rules.pushed[e] else 0.0
            out.append((e, f, cost, cost + extra))
        for f in [] if onward else back:
            cost = duration(180.0, n_roads=int(rules.deg[v]), uturn=True, roundabout=False)
            out.append((e, f, cost, cost))
    return out


def _drawn_map(path):
    """A dead end whose U-turn a restriction forbids (C), one where it is left (E), a bollard (D)."""
    m = OsmGrid(
        """
        A----B----C
             |
             D----E
        """
    )
    main = m.way("ABC", highway="residential", name="Main Street")
    m.way("BDE", highway="residential", name="Side Street")
    m.node("D", barrier="bollard")
    m.restriction("no_u_turn", from_way=main, via="C", to_way=main)
    return m.write(path / "map.osm.pbf")


@pytest.mark.parametrize("region", ["monaco", "helsinki", "drawn"])
@pytest.mark.parametrize("name", ["car", "foot", "bicycle"])
def test_turn_table_applies_the_rules_turn_by_turn(region, name, tmp_path):
    profile = PROFILES[name]
    pbf = _drawn_map(tmp_path) if region == "drawn" else SAMPLES / f"{region}.osm.pbf"
    roads = read_osm(pbf, (profile,))[name]
    arrays, _ = _graph_arrays(roads.ways, roads.node_penalty)
    arrays.update(_node_components(arrays))
    m = arrays["edge_head"].shape[0]
    e, f, cost, weight = (
        list(column) for column in zip(*_turns_one_by_one(_TurnRules(arrays, roads, profile), m), strict=True)
    )
    table = build_turns(arrays, roads, profile)
    assert np.array_equal(table.first_out, np.concatenate([[0], np.cumsum(np.bincount(e, minlength=m))]))
    assert np.array_equal(table.to, np.asarray(f, np.int32))
    assert np.array_equal(table.cost_s, np.asarray(cost).astype(np.float32))
    assert np.array_equal(table.weight, np.asarray(weight).astype(np.float32))
    if name != "foot" and region != "drawn":  # walkers are not bound by the samples' turn restrictions
        assert table.restricted_removed > 0
    assert f and len(set(f) - set(range(m))) == 0


def test_a_profile_whose_turns_are_free_says_so():
    for profile in PROFILES.values():
        durations = {
            profile.turn_duration_s(angle, n_roads=n, uturn=uturn, roundabout=rb)
            for angle in (-180.0, -90.0, -30.0, 0.0, 45.0, 120.0, 180.0)
            for n in (1, 2, 3, 5)
            for uturn in (False, True)
            for rb in (False, True)
        }
        assert (durations == {0.0}) == profile.turns_free, profile.name
