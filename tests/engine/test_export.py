"""`meridian export`: the GraphML reads back with osmnx as the same graph as ``graph/*.npy``, and
the GeoPackages read back with geopandas with one row per road node / edge, admin area and POI."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import osmnx
import pyogrio
import pytest
from click.testing import CliRunner

from cli.main import main
from engine.export import EDGE_DTYPES, WHAT, parse_what
from engine.routing import profile as P


@pytest.fixture(scope="module")
def exported(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "monaco"
    result = CliRunner().invoke(main, ["export", "monaco", "--out", str(out)], env={"DATA_DIR": str(data_dir)})
    assert result.exit_code == 0, result.output
    return out, result.output


def test_graphml_reads_back_as_the_road_graph(exported, datasets):
    out, output = exported
    dataset = datasets.get("monaco")
    g = dataset.router.g
    counts = dataset.manifest["counts"]
    assert "roads.graphml" in output

    G = osmnx.load_graphml(out / "roads.graphml", edge_dtypes=EDGE_DTYPES)
    assert G.number_of_nodes() == g.n_nodes == counts["road_nodes"]
    assert G.number_of_edges() == g.n_edges == counts["road_edges"]
    assert G.graph["crs"] == "EPSG:4326" and G.graph["region"] == "monaco"

    osm = np.asarray(g.node_osm)
    i = int(np.argmax(osm == next(iter(G.nodes))))
    node = G.nodes[int(osm[i])]
    assert (node["x"], node["y"]) == (float(g.node_lng[i]), float(g.node_lat[i]))

    seen = set()
    for u, v, data in G.edges(data=True):
        e = data["meridian_edge"]
        seen.add(e)
        assert (u, v) == (int(osm[g.edge_tail[e]]), int(osm[g.edge_head[e]]))
        assert data["osmid"] == int(g.edge_way[e])
        assert data["travel_time"] == float(g.edge_duration_s[e])  # exact: repr round-trips
        assert data["length"] == float(g.edge_length_m[e])
        assert data["highway"] == P.HIGHWAY_CLASSES[g.edge_class[e]]
        assert data["oneway"] is bool(g.edge_flags[e] & P.FLAG_ONEWAY)
        assert data.get("name", "") == g.name(e)
        coords = data["geometry"].coords
        assert coords[0] == (G.nodes[u]["x"], G.nodes[u]["y"])
        assert coords[-1] == (G.nodes[v]["x"], G.nodes[v]["y"])
    assert seen == set(range(g.n_edges))


def test_geopackages_have_one_row_per_feature(exported, datasets):
    out, _ = exported
    dataset = datasets.get("monaco")
    g = dataset.router.g
    counts = dataset.manifest["counts"]
    min_lng, min_lat, max_lng, max_lat = dataset.bbox.as_list()

    assert {name for name, _ in pyogrio.list_layers(out / "roads.gpkg")} == {"nodes", "edges"}
    nodes = gpd.read_file(out / "roads.gpkg", layer="nodes")
    edges = gpd.read_file(out / "roads.gpkg", layer="edges")
    assert len(nodes) == g.n_nodes and len(edges) == g.n_edges
    assert nodes.crs.to_epsg() == 4326 and edges.crs.to_epsg() == 4326
    assert set(edges.geom_type) == {"LineString"}
    assert edges["length"].sum() == pytest.approx(float(np.asarray(g.edge_length_m, np.float64).sum()))

    admin = gpd.read_file(out / "admin.gpkg", layer="admin")
    assert len(admin) == counts["admin_areas"] == len(dataset.admin.areas)
    assert admin.crs.to_epsg() == 4326
    assert set(admin.geom_type) <= {"Polygon", "MultiPolygon"} and admin.is_valid.all()
    assert sorted(admin["name"]) == sorted(a.name for a in dataset.admin.areas)
    assert not admin.is_empty.any()

    pois = gpd.read_file(out / "pois.gpkg", layer="pois")
    assert len(pois) == counts["pois"]
    assert pois.crs.to_epsg() == 4326 and set(pois.geom_type) == {"Point"}
    assert pois.geometry.x.between(min_lng, max_lng).all() and pois.geometry.y.between(min_lat, max_lat).all()
    assert not pois["tags"].str.contains("|", regex=False).any()


def test_export_parts_and_errors(data_dir, tmp_path):
    runner = CliRunner()
    env = {"DATA_DIR": str(data_dir)}
    result = runner.invoke(main, ["export", "helsinki", "--out", str(tmp_path), "--what", "admin"], env=env)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["admin.gpkg"]

    result = runner.invoke(main, ["export", "monaco", "--out", str(tmp_path), "--what", "graph,roads"], env=env)
    assert result.exit_code == 2 and "roads" in result.output
    result = runner.invoke(main, ["export", "atlantis", "--out", str(tmp_path)], env=env)
    assert result.exit_code == 1 and "atlantis" in result.output

    assert parse_what(None) == WHAT and parse_what("") == WHAT
    assert parse_what(" pois , graph") == ("graph", "pois")
    with pytest.raises(ValueError):
        parse_what("graph,nodes")
