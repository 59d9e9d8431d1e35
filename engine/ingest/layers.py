"""Import stage "layers": what the static-map renderer draws, in ``layers.sqlite``.

One row per drawable feature::

    features(id, layer, class, name, flags, minzoom, geom)   geom = WKB, Web Mercator metres
    features_rtree(id, minx, maxx, miny, maxy)                R*Tree over the same ids
    meta(key, value)                                          bbox, coverage, counts (JSON)

Layers and their classes (see :func:`classify_area` / :func:`classify_line`):

- ``water`` polygons: ``water`` (natural=water, landuse=reservoir/basin, waterway=riverbank/dock),
  ``pool`` (leisure=swimming_pool) and ``sea`` (assembled from natural=coastline, see below);
- ``waterway`` lines: river, canal, stream, drain;
- ``landuse`` polygons: park, wood, scrub, pitch, beach, cemetery, residential, commercial,
  industrial, construction, farm, wetland, pedestrian (pedestrian squares);
- ``building`` polygons;
- ``road`` lines by class (motorway, trunk, primary, secondary, tertiary, residential, service,
  pedestrian, track, footway, sidewalk (footway=sidewalk/crossing), steps, cycleway), links
  folded into their parent class, with the street name for labels; ``flags`` bit 1 = tunnel,
  bit 2 = bridge;
- ``rail`` lines: rail, light_rail, tram, subway, funicular;
- ``admin`` lines: the member ways of boundary=administrative relations (and ways tagged so),
  class = the lowest admin_level they bound; maritime and coastline ways are left out;
- ``place`` points: city, town, village, suburb, quarter, neighbourhood with their names.

``minzoom`` is the first zoom at which a feature is worth drawing: a per-class floor, raised for
small polygons until they cover a few pixels; the renderer asks the R*Tree for the window and
``minzoom <= zoom`` only.

**Sea.** OSM has no sea polygons: the sea is what lies on the right-hand side of
natural=coastline ways. Within the extract's bbox the stage nodes the coastline with the bbox
outline, polygonizes, and classifies every face by which side of the coastline segments on its
border it lies (right = sea, left = land); closed coastline rings (islands, breakwaters) are
land. Open coastline ends that stop short of the bbox are extended to the nearest bbox edge when
they are close to it; if the coastline still does not cut the bbox into faces, no sea is stored
and the coverage stays land-coloured (water areas still draw). The result is stored as
``water``/``sea`` polygons like any other water.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import osmium
import shapely

from engine import layout
from engine.ingest.context import ImportContext
from engine.render.mercator import TILE_SIZE, WORLD_SIZE, coords_to_mercator

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE features (
    id INTEGER PRIMARY KEY,
    layer TEXT NOT NULL,
    class TEXT NOT NULL,
    name TEXT,
    flags INTEGER NOT NULL DEFAULT 0,
    minzoom INTEGER NOT NULL,
    geom BLOB NOT NULL
);
CREATE VIRTUAL TABLE features_rtree USING rtree(id, minx, maxx, miny, maxy);
"""

FLAG_TUNNEL = 1
FLAG_BRIDGE = 2

ROAD_CLASSES = {
    "motorway": "motorway",
    "motorway_link": "motorway",
    "trunk": "trunk",
    "trunk_link": "trunk",
    "primary": "primary",
    "primary_link": "primary",
    "secondary": "secondary",
    "secondary_link": "secondary",
    "tertiary": "tertiary",
    "tertiary_link": "tertiary",
    "unclassified": "residential",
    "residential": "residential",
    "living_street": "residential",
    "road": "residential",
    "busway": "service",
    "service": "service",
    "pedestrian": "pedestrian",
    "track": "track",
    "footway": "footway",
    "path": "footway",
    "bridleway": "footway",
    "trail": "footway",
    "steps": "steps",
    "cycleway": "cycleway",
}
RAIL_CLASSES = {
    "rail": "rail",
    "light_rail": "rail",
    "narrow_gauge": "rail",
    "preserved": "rail",
    "tram": "tram",
    "subway": "subway",
    "funicular": "rail",
    "monorail": "rail",
}
WATERWAY_CLASSES = {"river": "river", "canal": "canal", "stream": "stream", "drain": "drain", "ditch": "drain"}
PLACE_CLASSES = {"city": 9, "town": 11, "village": 12, "suburb": 12, "quarter": 14, "neighbourhood": 15}

LANDUSE = {
    ("leisure", "park"): "park",
    ("leisure", "garden"): "park",
    ("leisure", "common"): "park",
    ("leisure", "playground"): "park",
    ("leisure", "dog_park"): "park",
    ("landuse", "grass"): "park",
    ("landuse", "village_green"): "park",
    ("landuse", "recreation_ground"): "park",
    ("landuse", "meadow"): "park",
    ("natural", "grassland"): "park",
    ("leisure", "golf_course"): "park",
    ("landuse", "forest"): "wood",
    ("natural", "wood"): "wood",
    ("natural", "scrub"): "scrub",
    ("natural", "heath"): "scrub",
    ("leisure", "pitch"): "pitch",
    ("leisure", "track"): "pitch",
    ("leisure", "stadium"): "pitch",
    ("leisure", "sports_centre"): "pitch",
    ("natural", "beach"): "beach",
    ("natural", "sand"): "beach",
    ("landuse", "cemetery"): "cemetery",
    ("amenity", "grave_yard"): "cemetery",
    ("landuse", "residential"): "residential",
    ("landuse", "commercial"): "commercial",
    ("landuse", "retail"): "commercial",
    ("landuse", "industrial"): "industrial",
    ("landuse", "railway"): "industrial",
    ("landuse", "port"): "industrial",
    ("landuse", "construction"): "construction",
    ("landuse", "brownfield"): "construction",
    ("landuse", "farmland"): "farm",
    ("landuse", "orchard"): "farm",
    ("landuse", "vineyard"): "farm",
    ("landuse", "allotments"): "farm",
    ("natural", "wetland"): "wetland",
}
LANDUSE_KEYS = ("leisure", "landuse", "natural", "amenity")

# first zoom a class is drawn at (polygons may start later when small, see _polygon_minzoom)
CLASS_MINZOOM = {
    ("road", "motorway"): 5,
    ("road", "trunk"): 6,
    ("road", "primary"): 8,
    ("road", "secondary"): 9,
    ("road", "tertiary"): 11,
    ("road", "residential"): 12,
    ("road", "pedestrian"): 13,
    ("road", "service"): 14,
    ("road", "track"): 13,
    ("road", "footway"): 15,
    ("road", "steps"): 15,
    ("road", "cycleway"): 14,
    ("road", "sidewalk"): 17,
    ("rail", "rail"): 9,
    ("rail", "tram"): 13,
    ("rail", "subway"): 14,
    ("waterway", "river"): 8,
    ("waterway", "canal"): 10,
    ("waterway", "stream"): 13,
    ("waterway", "drain"): 14,
    ("building", "building"): 14,
    ("water", "sea"): 0,
    ("water", "pool"): 15,
}
LAYER_MINZOOM = {"water": 4, "landuse": 9, "building": 14, "admin": 0}
MIN_POLYGON_PX = 6.0  # a polygon is drawn once it covers this many (CSS) pixels


def classify_area(tags) -> tuple[str, str] | None:
    """(layer, class) of an area (closed way or multipolygon), or None when not drawn."""
    building = tags.get("building")
    if building and building != "no":
        return "building", "building"
    if (
        tags.get("natural") == "water"
        or tags.get("waterway") in ("riverbank", "dock")
        or tags.get("landuse") in ("reservoir", "basin")
        or "water" in tags
    ):
        return "water", "water"
    if tags.get("leisure") == "swimming_pool":
        return "water", "pool"
    for key in LANDUSE_KEYS:
        value = tags.get(key)
        if value is not None:
            cls = LANDUSE.get((key, value))
            if cls:
                return "landuse", cls
    if tags.get("highway") == "pedestrian" and tags.get("area") == "yes":
        return "landuse", "pedestrian"
    return None


def classify_line(tags) -> tuple[str, str, int] | None:
    """(layer, class, flags) of a way drawn as a line, or None."""
    flags = 0
    tunnel = tags.get("tunnel")
    if tunnel and tunnel != "no":
        flags |= FLAG_TUNNEL
    bridge = tags.get("bridge")
    if bridge and bridge != "no":
        flags |= FLAG_BRIDGE
    highway = tags.get("highway")
    if highway is not None:
        cls = ROAD_CLASSES.get(highway)
        if cls and tags.get("area") != "yes" and tags.get("indoor", "no") == "no":
            if cls == "footway" and tags.get("footway") in ("sidewalk", "crossing"):
                cls = "sidewalk"  # mapped beside the road it belongs to: only at high zoom
            return "road", cls, flags
        return None
    railway = tags.get("railway")
    if railway is not None:
        cls = RAIL_CLASSES.get(railway)
        if cls:
            if cls == "subway" and not flags & FLAG_TUNNEL and tags.get("layer", "0").startswith("-"):
                flags |= FLAG_TUNNEL
            return "rail", cls, flags
        return None
    waterway = tags.get("waterway")
    if waterway is not None:
        cls = WATERWAY_CLASSES.get(waterway)
        if cls and tunnel not in ("culvert",):
            return "waterway", cls, flags
    return None


def _admin_level(value: str | None) -> int | None:
    try:
        level = int(value) if value is not None else None
    except ValueError:
        return None
    return level if level is not None and 2 <= level <= 10 else None


def _admin_member_ways(pbf: str) -> dict[int, int]:
    """way id -> lowest admin_level of the boundary=administrative relations it belongs to."""
    levels: dict[int, int] = {}
    fp = osmium.FileProcessor(pbf, osmium.osm.RELATION).with_filter(
        osmium.filter.TagFilter(("boundary", "administrative"))
    )
    for rel in fp:
        if not isinstance(rel, osmium.osm.Relation):
            continue
        level = _admin_level(rel.tags.get("admin_level"))
        if level is None or not isinstance(rel, osmium.osm.Relation):
            continue
        for member in rel.members:
            if member.type == "w" and member.role in ("outer", "inner", "") and level < levels.get(member.ref, 99):
                levels[member.ref] = level
    return levels


def _polygon_minzoom(area_m2: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """First zoom where a polygon of this Mercator area covers MIN_POLYGON_PX pixels."""
    side_px_at_z0 = np.sqrt(np.maximum(area_m2, 1e-6) / MIN_POLYGON_PX) / (WORLD_SIZE / TILE_SIZE)
    zoom = np.ceil(-np.log2(side_px_at_z0))
    return np.clip(np.maximum(zoom, floor), 0, 30).astype(int)


def assemble_sea(
    coast: list[shapely.Geometry], bbox: tuple[float, float, float, float], snap_deg: float | None = None
) -> shapely.Geometry | None:
    """Sea polygons (lng/lat) inside ``bbox`` from coastline lines (land on their left).

    Returns None when the coastline does not split the bbox (no sea can be told apart).
    """
    if not coast:
        return None
    box = shapely.box(*bbox)
    if snap_deg is None:  # ends this close to the bbox outline are extended to it
        snap_deg = min(0.01, 0.05 * min(bbox[2] - bbox[0], bbox[3] - bbox[1]))
    merged = shapely.line_merge(shapely.union_all(coast))
    parts = list(getattr(merged, "geoms", [merged]))
    islands = [shapely.Polygon(p.coords) for p in parts if p.is_ring and len(p.coords) >= 4]
    pieces: list[shapely.Geometry] = []
    for part in parts:
        if part.is_ring:
            continue
        coords = list(part.coords)
        # extend an end that stops short of the bbox to the closest point on its outline
        for end, at in ((coords[0], 0), (coords[-1], -1)):
            pt = shapely.Point(end)
            if box.contains(pt) and box.exterior.distance(pt) <= snap_deg:
                proj = box.exterior.interpolate(box.exterior.project(pt))
                if at == 0:
                    coords.insert(0, (proj.x, proj.y))
                else:
                    coords.append((proj.x, proj.y))
        clipped = shapely.intersection(shapely.LineString(coords), box)
        if not clipped.is_empty:
            pieces.append(clipped)
    faces: list[shapely.Geometry] = []
    if pieces:
        noded = shapely.union_all([box.exterior, *pieces])
        faces = list(shapely.get_parts(shapely.polygonize(shapely.get_parts(noded))))
    # coastline segments of the open pieces, with a probe point a hair to each side
    sea_faces = []
    segs = []
    for piece in pieces:
        for line in shapely.get_parts(piece):
            c = np.asarray(line.coords)
            if len(c) >= 2:
                segs.append(np.hstack([c[:-1], c[1:]]))
    if len(faces) >= 2 and segs:
        s = np.vstack(segs)
        mid = (s[:, :2] + s[:, 2:]) / 2.0
        d = s[:, 2:] - s[:, :2]
        norm = np.hypot(d[:, 0], d[:, 1])
        ok = norm > 0
        mid, d, norm = mid[ok], d[ok], norm[ok]
        right = np.column_stack([d[:, 1], -d[:, 0]]) / norm[:, None] * 1e-6
        for face in faces:
            r = shapely.contains_xy(face, mid[:, 0] + right[:, 0], mid[:, 1] + right[:, 1]).sum()
            left = shapely.contains_xy(face, mid[:, 0] - right[:, 0], mid[:, 1] - right[:, 1]).sum()
            if r > left:
                sea_faces.append(face)
    if not sea_faces:
        return None
    sea = shapely.union_all(sea_faces)
    if islands:
        sea = shapely.difference(sea, shapely.union_all(shapely.make_valid(np.array(islands))))
    return sea if not sea.is_empty else None


def _header_bbox(pbf: str) -> tuple[float, float, float, float] | None:
    """The bounding box the PBF's header declares (an extract's cut), if any."""
    reader = osmium.io.Reader(pbf, osmium.osm.NOTHING)
    try:
        box = reader.header().box()
        if not box.valid():
            return None
        return (box.bottom_left.lon, box.bottom_left.lat, box.top_right.lon, box.top_right.lat)
    finally:
        reader.close()


@dataclass
class _DrawnRows:
    """The features as read from the PBF, one list per column (geometry as hex WKB, lng/lat), and
    the coastline ways the sea is assembled from."""

    layer: list[str] = field(default_factory=list)
    cls: list[str] = field(default_factory=list)
    name: list[str | None] = field(default_factory=list)
    flags: list[int] = field(default_factory=list)
    wkb: list[str] = field(default_factory=list)
    coast: list[str] = field(default_factory=list)

    def add(self, layer: str, cls: str, name: str | None, flags: int, geom_hex: str) -> None:
        self.layer.append(layer)
        self.cls.append(cls)
        self.name.append(name)
        self.flags.append(flags)
        self.wkb.append(geom_hex)


def _line_wkb(wkb: osmium.geom.WKBFactory, way: osmium.osm.Way) -> str | None:
    """The way's linestring; for a way cut by the extract (nodes without a location), the runs of
    located nodes as a multilinestring, so edge roads and coastline still draw."""
    try:
        return wkb.create_linestring(way)
    except osmium.InvalidLocationError:
        pass
    runs: list[list[tuple[float, float]]] = [[]]
    for node in way.nodes:
        loc = node.location
        if loc.valid():
            runs[-1].append((loc.lon, loc.lat))
        elif runs[-1]:
            runs.append([])
    runs = [r for r in runs if len(r) >= 2]
    if not runs:
        return None
    return shapely.to_wkb(shapely.MultiLineString(runs), hex=True)


def _way_admin_level(way: osmium.osm.Way, admin_ways: dict[int, int]) -> int | None:
    """The admin level a way bounds (as a relation member or tagged itself); maritime: none."""
    tags = way.tags
    level = admin_ways.get(way.id)
    if level is None and tags.get("boundary") == "administrative":
        level = _admin_level(tags.get("admin_level"))
    if level is not None and tags.get("maritime") == "yes":
        return None
    return level


def _read_way(rows: _DrawnRows, way: osmium.osm.Way, wkb: osmium.geom.WKBFactory, admin_ways: dict[int, int]) -> None:
    """A coastline, or a way drawn as a line (road, rail, waterway) and/or as an admin boundary."""
    tags = way.tags
    if tags.get("natural") == "coastline":
        geom_hex = _line_wkb(wkb, way)
        if geom_hex:
            rows.coast.append(geom_hex)
        return
    line = classify_line(tags) if len(tags) else None
    level = _way_admin_level(way, admin_ways)
    if not line and level is None:
        return
    geom_hex = _line_wkb(wkb, way)
    if geom_hex is None:
        return
    if line:
        rows.add(line[0], line[1], tags.get("name"), line[2], geom_hex)
    if level is not None:
        rows.add("admin", str(level), None, 0, geom_hex)


def _read_rows(pbf: str) -> _DrawnRows:
    """One pass over the PBF: areas, lines, admin boundaries, place nodes and the coastline."""
    admin_ways = _admin_member_ways(pbf)
    wkb = osmium.geom.WKBFactory()
    rows = _DrawnRows()
    area_filter = osmium.filter.KeyFilter(
        "building", "landuse", "natural", "leisure", "water", "waterway", "amenity", "highway"
    )
    node_filter = osmium.filter.KeyFilter("place")
    node_filter.enable_for(osmium.osm.NODE)  # ways, relations and areas pass unfiltered
    fp = osmium.FileProcessor(pbf).with_locations().with_areas(area_filter).with_filter(node_filter)
    for obj in fp:
        try:
            if isinstance(obj, osmium.osm.Area):
                found = classify_area(obj.tags)
                if found:
                    rows.add(found[0], found[1], obj.tags.get("name"), 0, wkb.create_multipolygon(obj))
            elif isinstance(obj, osmium.osm.Way):
                _read_way(rows, obj, wkb, admin_ways)
            elif isinstance(obj, osmium.osm.Node):
                place = obj.tags.get("place")
                name = obj.tags.get("name")
                if place in PLACE_CLASSES and name:
                    rows.add("place", place, name, 0, wkb.create_point(obj))
        except (osmium.InvalidLocationError, RuntimeError):
            continue  # a way or area with nodes outside the extract, or a broken multipolygon
    return rows


@dataclass
class LayerFeatures:
    """Drawable features as numpy columns, geometries as shapely objects (lng/lat)."""

    geoms: np.ndarray
    layer: np.ndarray
    cls: np.ndarray
    names: np.ndarray
    flags: np.ndarray

    @classmethod
    def of(cls, rows: _DrawnRows) -> LayerFeatures:
        return cls(
            geoms=shapely.from_wkb(np.array(rows.wkb, dtype=object), on_invalid="ignore"),
            layer=np.array(rows.layer, dtype=object),
            cls=np.array(rows.cls, dtype=object),
            names=np.array(rows.name, dtype=object),
            flags=np.array(rows.flags, dtype=np.int64),
        )

    def add_polygons(self, geoms: np.ndarray, layer: str, cls: str) -> None:
        """Unnamed polygons of one class (the sea)."""
        k = len(geoms)
        self.geoms = np.concatenate([self.geoms, geoms])
        self.layer = np.concatenate([self.layer, np.array([layer] * k, dtype=object)])
        self.cls = np.concatenate([self.cls, np.array([cls] * k, dtype=object)])
        self.names = np.concatenate([self.names, np.array([None] * k, dtype=object)])
        self.flags = np.concatenate([self.flags, np.zeros(k, dtype=np.int64)])

    def drawable(self) -> LayerFeatures:
        """Without the geometries that failed to parse or are empty."""
        keep = ~shapely.is_missing(self.geoms) & ~shapely.is_empty(self.geoms)
        return LayerFeatures(self.geoms[keep], self.layer[keep], self.cls[keep], self.names[keep], self.flags[keep])


def _add_sea(features: LayerFeatures, coast: list[str], bbox: tuple[float, float, float, float]) -> int:
    """The sea within the bbox as water/sea polygons; returns how many."""
    coast_lines = list(shapely.from_wkb(np.array(coast, dtype=object), on_invalid="ignore"))
    sea = assemble_sea([g for g in coast_lines if g is not None], bbox)
    if sea is None:
        return 0
    parts = shapely.get_parts(sea)
    features.add_polygons(parts, "water", "sea")
    return len(parts)


def _minzooms(merc: np.ndarray, layer: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """First zoom each feature is drawn at: its class's floor (admin lines by level, places by
    kind), later for polygons too small to see."""
    floor = np.array(
        [CLASS_MINZOOM.get((lay, c), LAYER_MINZOOM.get(lay, 12)) for lay, c in zip(layer, cls, strict=False)],
        dtype=float,
    )
    admin = layer == "admin"
    if admin.any():
        levels = np.array([int(c) for c in cls[admin]])
        floor[admin] = np.select([levels <= 2, levels <= 4, levels <= 6, levels <= 8], [0, 5, 8, 11], 13)
    place = layer == "place"
    if place.any():
        floor[place] = [PLACE_CLASSES[c] for c in cls[place]]
    minzoom = floor.astype(int)
    polys = np.isin(shapely.get_type_id(merc), (3, 6))
    if polys.any():
        minzoom[polys] = _polygon_minzoom(shapely.area(merc[polys]), floor[polys])
    return minzoom


def _write_layers(
    out: Path, features: LayerFeatures, bbox: tuple[float, float, float, float] | None, has_sea: bool
) -> dict[str, int]:
    """Write layers.sqlite (features ordered by layer, then west to east) and return the count
    per layer."""
    merc = shapely.transform(features.geoms, coords_to_mercator)
    bounds = shapely.bounds(merc)
    minzoom = _minzooms(merc, features.layer, features.cls)
    layer, cls, names, flags = features.layer, features.cls, features.names, features.flags
    counts: dict[str, int] = defaultdict(int)
    for lay in layer:
        counts[f"layers_{lay}"] += 1
    con = sqlite3.connect(out)
    try:
        con.executescript(SCHEMA)
        order = np.lexsort((bounds[:, 1], bounds[:, 0], layer.astype(str)))
        wkbs = shapely.to_wkb(merc, output_dimension=2)
        con.executemany(
            "INSERT INTO features (id, layer, class, name, flags, minzoom, geom) VALUES (?, ?, ?, ?, ?, ?, ?)",
            ((k + 1, layer[i], cls[i], names[i], int(flags[i]), int(minzoom[i]), wkbs[i]) for k, i in enumerate(order)),
        )
        con.executemany(
            "INSERT INTO features_rtree (id, minx, maxx, miny, maxy) VALUES (?, ?, ?, ?, ?)",
            (
                (k + 1, float(bounds[i, 0]), float(bounds[i, 2]), float(bounds[i, 1]), float(bounds[i, 3]))
                for k, i in enumerate(order)
            ),
        )
        meta = {
            "bbox": json.dumps(list(bbox) if bbox else None),
            "has_sea": json.dumps(has_sea),
            "counts": json.dumps(counts),
        }
        con.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
        con.commit()
    finally:
        con.close()
    return counts


def run(ctx: ImportContext) -> dict[str, int]:
    t0 = time.perf_counter()
    pbf = str(ctx.pbf_path)
    rows = _read_rows(pbf)
    features = LayerFeatures.of(rows)
    bbox = _header_bbox(pbf)
    if bbox is None and len(features.geoms):
        minx, miny, maxx, maxy = (float(v) for v in shapely.total_bounds(features.geoms))
        bbox = (minx, miny, maxx, maxy)
    sea_count = _add_sea(features, rows.coast, bbox) if rows.coast and bbox is not None else 0
    features = features.drawable()
    counts = _write_layers(ctx.out_dir / layout.LAYERS_DB, features, bbox, sea_count > 0)
    if bbox is not None:
        ctx.shared.setdefault("bbox", [round(v, 7) for v in bbox])
    n = len(features.geoms)
    ctx.log.info("layers: %d features (%d sea polygons) in %.1fs", n, sea_count, time.perf_counter() - t0)
    result = dict(sorted(counts.items()))
    result["layers_features"] = n
    return result
