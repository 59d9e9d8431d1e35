"""The synthetic network generator (bench/synthetic.py): valid OSM, deterministic, importable."""

from __future__ import annotations

from collections import Counter

import numpy as np
import osmium
import pytest

from bench.synthetic import generate, grid_size_for, write_pbf
from engine.geo import haversine_m


def test_grid_size_reaches_target():
    for target in (50, 1_000, 10_000, 100_000, 1_000_000):
        n = grid_size_for(target)
        assert 3 * n * n - 2 * n >= target
        assert 3 * (n - 1) ** 2 - 2 * (n - 1) < target


def test_deterministic_from_seed():
    a, b, c = generate(2_000, seed=3), generate(2_000, seed=3), generate(2_000, seed=4)
    assert np.array_equal(a.lat, b.lat) and a.ways == b.ways and a.restrictions == b.restrictions
    assert not np.array_equal(a.lat, c.lat)


def test_pbf_round_trip(tmp_path):
    city = generate(5_000, seed=7)
    out = tmp_path / "syn.osm.pbf"
    write_pbf(city, out)
    nodes, ways, rels = {}, {}, {}
    for obj in osmium.FileProcessor(str(out)):
        if isinstance(obj, osmium.osm.Node):
            nodes[obj.id] = (obj.location.lat, obj.location.lon)
        elif isinstance(obj, osmium.osm.Way):
            ways[obj.id] = ([n.ref for n in obj.nodes], dict(obj.tags))
        else:
            rels[obj.id] = ([(m.type, m.ref, m.role) for m in obj.members], dict(obj.tags))
    assert len(nodes) == city.node_count >= 5_000
    assert len(ways) == len(city.ways)
    assert len(rels) == len(city.restrictions) > 0
    # every way references existing nodes, consecutive nodes are 40-60 m apart (half blocks)
    for refs, _tags in ways.values():
        for a, b in zip(refs, refs[1:], strict=False):
            d = haversine_m(*nodes[a], *nodes[b])
            assert 35 < d < 65, d
    classes = Counter(t["highway"] for _, t in ways.values())
    assert set(classes) == {"primary", "secondary", "residential"}
    assert classes["residential"] > classes["secondary"] > 0 and classes["primary"] > 0
    assert all("name" in t for _, t in ways.values())
    oneways = Counter(t.get("oneway") for _, t in ways.values())
    assert oneways["yes"] > 0 and oneways["-1"] > 0
    # restrictions: from/to ways end (or start) at the via node
    for members, tags in rels.values():
        assert tags["type"] == "restriction"
        (ft, frm, fr), (vt, via, vr), (tt, to, tr) = members
        assert (ft, fr, vt, vr, tt, tr) == ("w", "from", "n", "via", "w", "to")
        for w in (frm, to):
            refs = ways[w][0]
            assert via in (refs[0], refs[-1])


def test_imports_through_pipeline(tmp_path):
    from engine.ingest.pipeline import STAGES, import_pbf

    if not any(s.name == "roads" for s in STAGES):
        pytest.skip("no 'roads' import stage yet in engine.ingest.pipeline.STAGES")
    city = generate(1_000, seed=2)
    pbf = tmp_path / "synthetic.osm.pbf"
    write_pbf(city, pbf)
    result = import_pbf(pbf, tmp_path / "data", "synthetic")
    assert (result.path / "graph").is_dir()
    counts = result.manifest["counts"]
    graph_counts = {k: v for k, v in counts.items() if "node" in k or "edge" in k}
    assert graph_counts and all(v > 0 for v in graph_counts.values()), counts


def test_search_layer_addresses_pois_and_towns(tmp_path):
    """Addresses, POIs and town boundaries (bench/synthetic_search.py): counts as asked, street
    names reused across districts, every address on a street of its name, towns as admin areas."""
    from engine.ingest.admin import build_areas, extract_bbox

    city = generate(20_000, seed=5, addresses=6_000, pois=200)
    layer = city.search
    assert layer.address_count == 6_000 and layer.poi_count == 200
    names = [tags["name"] for _, _, tags in city.ways]
    assert len(set(names)) < len(names) / 2  # one name, many streets
    out = tmp_path / "syn.osm.pbf"
    write_pbf(city, out)
    addr_streets, pois, way_names = Counter(), 0, set()
    for obj in osmium.FileProcessor(str(out)):
        if obj.is_node() and "addr:housenumber" in obj.tags and "name" not in obj.tags:
            addr_streets[obj.tags["addr:street"]] += 1
            assert obj.tags["addr:postcode"].isdigit() and obj.tags["addr:city"]
        elif obj.is_node() and "name" in obj.tags:
            pois += 1
        elif obj.is_way() and "highway" in obj.tags:
            way_names.add(obj.tags["name"])
    assert sum(addr_streets.values()) == 6_000 and pois == 200
    assert set(addr_streets) <= way_names
    areas = build_areas(out, extract_bbox(out))
    assert len(areas) == len(layer.town_names) and all(a.level == 8 and not a.clipped for a in areas)
    assert {a.name for a in areas} == set(layer.town_names)
