"""Export a region's dataset for analysts: road graph (GraphML + GeoPackage), admin areas, POIs.

An ops / build-time tool (``meridian export REGION --out DIR``), never on the request path: it
reads the components of an imported version and writes files QGIS, geopandas, networkx and osmnx
open directly.

Files written into ``out_dir``
------------------------------
``roads.graphml``  the road graph as an osmnx-style ``networkx.MultiDiGraph``
                   (``osmnx.save_graphml``; read back with
                   ``osmnx.load_graphml(path, edge_dtypes=EDGE_DTYPES)``)
``roads.gpkg``     the same graph as GeoPackage layers ``nodes`` and ``edges`` (directed: one
                   row per drivable direction), written by ``osmnx.save_graph_geopackage``
                   (``osmnx.convert.graph_to_gdfs`` + geopandas)
``admin.gpkg``     layer ``admin``: one row per admin area (polygon / multipolygon)
``pois.gpkg``      layer ``pois``: one row per POI of the search index (point)

Everything is WGS84 (``EPSG:4326``).

Graph conventions (osmnx 2)
---------------------------
* node key = ``osmid``, the OSM node id of the graph node (as in osmnx, not repeated as an
  attribute: it is the ``osmid`` index / column of the GeoPackage layer); attributes ``x`` (lng),
  ``y`` (lat), ``street_count`` (osmnx's count of undirected streets at the node).
* edge ``(u, v, key)``: one per directed edge of :class:`engine.routing.graph.RoadGraph`
  (``key`` numbers parallel edges between the same nodes from 0). Attributes: ``osmid`` (OSM way
  id), ``length`` (m), ``travel_time`` (s, the profile duration without turn costs),
  ``speed_kph``, ``highway`` (our class name, :data:`engine.routing.profile.HIGHWAY_CLASSES`;
  ``ferry`` for ferries), ``name`` (only when named), ``oneway`` (bool), ``geometry`` (LineString
  in travel direction, first point = u), plus the OSM-style tags ``junction="roundabout"``,
  ``toll="yes"``, ``tunnel="yes"``, ``access="destination"`` when they apply, and
  ``meridian_edge`` (the edge id in ``graph/*.npy``) and ``weight`` (our routing weight, s).
* graph attributes: ``crs="EPSG:4326"``, ``simplified=True`` (nodes only at junctions, ends and
  barriers), ``created_with``, ``region``, ``version``.

Turn costs and turn restrictions (the turn graph) have no place in this model: a shortest path in
the exported graph is a lower bound of ours (``tests/engine/test_osmnx_oracle.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from engine import layout
from engine.errors import DatasetError
from engine.routing import profile as P
from engine.routing.graph import RoadGraph

WHAT: tuple[str, ...] = ("graph", "admin", "pois")
CRS = "EPSG:4326"
GRAPHML = "roads.graphml"
ROADS_GPKG = "roads.gpkg"
ADMIN_GPKG = "admin.gpkg"
POIS_GPKG = "pois.gpkg"

_TAG_FLAGS = (
    (P.FLAG_ROUNDABOUT, "junction", "roundabout"),
    (P.FLAG_TOLL, "toll", "yes"),
    (P.FLAG_TUNNEL, "tunnel", "yes"),
    (P.FLAG_RESTRICTED, "access", "destination"),
)


# non-osmnx edge attributes, for ``osmnx.load_graphml(path, edge_dtypes=EDGE_DTYPES)``
EDGE_DTYPES = {"meridian_edge": int, "weight": float}


def parse_what(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """``"graph,admin"`` -> ``("graph", "admin")``; ``None`` or ``""`` -> everything."""
    if value is None:
        return WHAT
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [s.strip().lower() for s in items if s and s.strip()]
    if not items:
        return WHAT
    bad = sorted(set(items) - set(WHAT))
    if bad:
        raise ValueError(f"unknown export part(s) {', '.join(bad)}; choose from {', '.join(WHAT)}")
    return tuple(w for w in WHAT if w in items)


# ------------------------------------------------------------------------------ road graph
def graph_to_networkx(g: RoadGraph, *, region: str = "", version: str = ""):
    """The road graph as an osmnx-style ``networkx.MultiDiGraph`` (see the module docstring)."""
    import networkx as nx
    import osmnx
    import shapely

    n_edges = g.n_edges
    node_osm = np.asarray(g.node_osm, dtype=np.int64)
    if len(np.unique(node_osm)) != len(node_osm):  # osmnx keys nodes by OSM id
        raise DatasetError("road graph has duplicate OSM node ids: cannot key nodes by osmid")
    lat = np.asarray(g.node_lat, dtype=np.float64)
    lng = np.asarray(g.node_lng, dtype=np.float64)

    G: nx.MultiDiGraph[int] = nx.MultiDiGraph(
        crs=CRS, simplified=True, created_with="meridian", region=region, version=version
    )
    G.add_nodes_from(
        (int(o), {"y": float(y), "x": float(x)})
        for o, y, x in zip(node_osm.tolist(), lat.tolist(), lng.tolist(), strict=True)
    )

    gf = np.asarray(g.edge_geom_first, dtype=np.int64)
    owner = np.repeat(np.arange(n_edges), np.diff(gf))
    coords = np.column_stack([np.asarray(g.geom_lng, np.float64), np.asarray(g.geom_lat, np.float64)])
    lines = np.asarray(shapely.linestrings(coords, indices=owner)) if n_edges else np.array([], dtype=object)

    tail = np.asarray(g.edge_tail, dtype=np.int64)
    head = np.asarray(g.edge_head, dtype=np.int64)
    length = np.asarray(g.edge_length_m, dtype=np.float64)
    duration = np.asarray(g.edge_duration_s, dtype=np.float64)
    weight = np.asarray(g.edge_weight, dtype=np.float64)
    cls = np.asarray(g.edge_class).tolist()
    flags = np.asarray(g.edge_flags).tolist()
    way = np.asarray(g.edge_way, dtype=np.int64).tolist()
    name_ids = np.asarray(g.edge_name).tolist()
    u_ids = node_osm[tail].tolist()
    v_ids = node_osm[head].tolist()
    keys: dict[tuple[int, int], int] = {}
    edges = []
    for e in range(n_edges):
        u, v = u_ids[e], v_ids[e]
        k = keys.get((u, v), 0)
        keys[(u, v)] = k + 1
        dur = float(duration[e])
        data = {
            "osmid": way[e],
            "length": float(length[e]),
            "travel_time": dur,
            "speed_kph": round(float(length[e]) / dur * 3.6, 1) if dur > 0 else 0.0,
            "highway": P.HIGHWAY_CLASSES[cls[e]],
            "oneway": bool(flags[e] & P.FLAG_ONEWAY),
            "geometry": lines[e],
            "meridian_edge": e,
            "weight": float(weight[e]),
        }
        name = g.names[name_ids[e]]
        if name:
            data["name"] = name
        for bit, tag, value in _TAG_FLAGS:
            if flags[e] & bit:
                data[tag] = value
        edges.append((u, v, k, data))
    G.add_edges_from(edges)  # type: ignore[arg-type]  # (u, v, key, data): the stubs know only Graph's 2- and 3-tuples
    nx.set_node_attributes(G, osmnx.stats.count_streets_per_node(G), name="street_count")
    return G


def export_graph(g: RoadGraph, out_dir: Path, *, region: str = "", version: str = "") -> dict:
    import osmnx

    G = graph_to_networkx(g, region=region, version=version)
    graphml = out_dir / GRAPHML
    gpkg = out_dir / ROADS_GPKG
    for path in (graphml, gpkg):
        path.unlink(missing_ok=True)
    osmnx.save_graphml(G, graphml)
    osmnx.save_graph_geopackage(G, gpkg, directed=True)
    return {"files": [graphml.name, gpkg.name], "nodes": G.number_of_nodes(), "edges": G.number_of_edges()}


# ------------------------------------------------------------------------------ admin and POIs
def admin_frame(admin):
    """An :class:`engine.admin.AdminIndex` as a GeoDataFrame (one row per area)."""
    import geopandas as gpd

    rows = [
        {
            "id": a.id,
            "osm_type": a.osm_type,
            "osm_id": a.osm_id,
            "name": a.name,
            "level": a.level,
            "iso3166_1": a.iso3166_1,
            "iso3166_2": a.iso3166_2,
            "country": a.country,
            "clipped": bool(a.clipped),
            "names": json.dumps(a.names, ensure_ascii=False),
        }
        for a in admin.areas
    ]
    columns = ["id", "osm_type", "osm_id", "name", "level", "iso3166_1", "iso3166_2", "country", "clipped", "names"]
    return gpd.GeoDataFrame(rows, columns=columns, geometry=[a.geometry for a in admin.areas], crs=CRS)


POI_COLUMNS = (
    "id",
    "name",
    "category",
    "osm_type",
    "osm_id",
    "housenumber",
    "street",
    "city",
    "district",
    "postcode",
    "country",
    "tags",
    "importance",
)


def pois_frame(search):
    """The POIs of a :class:`engine.search.index.SearchIndex` as a GeoDataFrame of points."""
    import geopandas as gpd

    rows = search.execute(
        f"SELECT {', '.join(POI_COLUMNS)}, lat, lng FROM features WHERE type = 'poi' ORDER BY id"
    ).fetchall()
    n = len(POI_COLUMNS)
    records = [dict(zip(POI_COLUMNS, r[:n], strict=True)) for r in rows]
    for rec in records:  # '|amenity=cafe|shop=bakery|' -> 'amenity=cafe;shop=bakery'
        rec["tags"] = ";".join(t for t in (rec["tags"] or "").split("|") if t)
    geometry = gpd.points_from_xy([r[n + 1] for r in rows], [r[n] for r in rows], crs=CRS)
    return gpd.GeoDataFrame(records, columns=list(POI_COLUMNS), geometry=geometry, crs=CRS)


def _write_layer(gdf, path: Path, layer: str) -> None:
    path.unlink(missing_ok=True)
    gdf.to_file(path, layer=layer, driver="GPKG", engine="pyogrio")


# ------------------------------------------------------------------------------ region
def export_region(dataset, out_dir: Path, what: Iterable[str] = WHAT) -> dict[str, dict]:
    """Write the chosen parts (``graph``, ``admin``, ``pois``) of a :class:`engine.dataset.Dataset`
    into ``out_dir``; returns per part the files written and their row counts."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    what = parse_what(list(what))
    done: dict[str, dict] = {}
    if "graph" in what:
        g = RoadGraph.open(Path(dataset.path) / layout.GRAPH_DIR)
        done["graph"] = export_graph(g, out_dir, region=dataset.region, version=dataset.version)
    if "admin" in what:
        gdf = admin_frame(dataset.admin)
        _write_layer(gdf, out_dir / ADMIN_GPKG, "admin")
        done["admin"] = {"files": [ADMIN_GPKG], "rows": len(gdf)}
    if "pois" in what:
        gdf = pois_frame(dataset.search)
        _write_layer(gdf, out_dir / POIS_GPKG, "pois")
        done["pois"] = {"files": [POIS_GPKG], "rows": len(gdf)}
    return done
