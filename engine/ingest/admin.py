"""Import stage "admin": administrative boundaries assembled from relations -> admin.sqlite.

Complete relations are assembled by osmium's multipolygon builder. An extract cut from a larger
file (Helsinki's sample) holds relations whose member ways are partly or entirely outside it;
those are rebuilt for the part the extract covers:

* no member way in the extract, but a member node (admin_centre, label) or an already assembled
  sub-area inside it -> the area covers the whole extract (a city, region, country around it);
* some member ways present -> their lines are cut by the extract's bbox (loose ends snapped to
  the bbox edge), the bbox is split into faces along them, and a face is inside when an odd
  number of boundary crossings separates it from an anchor known to be inside (an admin_centre
  or label node, a place node of the same name, or an assembled sub-area).

Such areas are flagged ``clipped``. Puts ``shared["admin_areas"]`` (list of AdminArea) and
``shared["bbox"]`` for later stages.
"""

from __future__ import annotations

import json
import sqlite3

import osmium
import shapely
from shapely.geometry import LineString, MultiPolygon, Point, box
from shapely.ops import linemerge, polygonize, unary_union

from engine import layout
from engine.admin import AdminArea
from engine.countries import to_alpha3
from engine.ingest.context import ImportContext
from engine.ingest.osm_tags import admin_level, names_of

MAX_LEVEL = 11


def _is_admin(tags) -> bool:
    return (
        tags.get("boundary") == "administrative"
        and tags.get("type") in ("boundary", "multipolygon")
        and admin_level(tags) is not None
    )


def extract_bbox(pbf_path) -> list[float] | None:
    """[min_lng, min_lat, max_lng, max_lat] from the PBF header, or from the node extent."""
    fp = osmium.FileProcessor(str(pbf_path), osmium.osm.NODE)
    box_ = fp.header.box()
    if box_.valid():
        return [box_.bottom_left.lon, box_.bottom_left.lat, box_.top_right.lon, box_.top_right.lat]
    min_lng = min_lat = 1e9
    max_lng = max_lat = -1e9
    for n in fp:
        loc = n.location
        if loc.valid():
            min_lng, max_lng = min(min_lng, loc.lon), max(max_lng, loc.lon)
            min_lat, max_lat = min(min_lat, loc.lat), max(max_lat, loc.lat)
    return None if min_lng > max_lng else [min_lng, min_lat, max_lng, max_lat]


def _valid_polygonal(geom):
    if geom is None or geom.is_empty:
        return None
    if not geom.is_valid:
        geom = shapely.make_valid(geom)
    if geom.geom_type == "GeometryCollection":
        polys = [g for g in geom.geoms if g.geom_type in ("Polygon", "MultiPolygon")]
        geom = unary_union(polys) if polys else None
    if geom is None or geom.is_empty or geom.geom_type not in ("Polygon", "MultiPolygon"):
        return None
    return geom


def _as_multi(geom):
    return MultiPolygon([geom]) if geom.geom_type == "Polygon" else geom


def _extend_to_frame(end, prev, bbox_poly, frame):
    p = Point(end)
    if p.distance(frame) < 1e-9:
        return None
    dx, dy = end[0] - prev[0], end[1] - prev[1]
    norm = (dx * dx + dy * dy) ** 0.5
    if norm > 0:
        minx, miny, maxx, maxy = bbox_poly.bounds
        reach = 2 * ((maxx - minx) + (maxy - miny))
        ray = LineString([end, (end[0] + dx / norm * reach, end[1] + dy / norm * reach)])
        hit = ray.intersection(frame)
        if not hit.is_empty:
            pts = list(getattr(hit, "geoms", [hit]))
            best = min(pts, key=lambda q: q.distance(p))
            return (best.x, best.y)
    edge = frame.interpolate(frame.project(p))
    return (edge.x, edge.y)


def _partial_area(way_lines, bbox_poly, anchors, outside=()):
    """Area of a relation inside the extract from the member lines that are present."""
    frame = bbox_poly.exterior
    lines = []
    for coords in way_lines:
        if len(coords) >= 2:
            lines.append(LineString(coords))
    merged = linemerge(lines) if lines else None
    parts = (
        list(merged.geoms)
        if merged is not None and hasattr(merged, "geoms")
        else ([merged] if merged is not None else [])
    )
    fixed = []
    for line in parts:
        coords = list(line.coords)
        if not line.is_closed:
            # loose ends: the rest of the way lies outside the extract; carry on in the
            # direction of the last segment up to the bbox edge
            for idx, prev in ((0, 1), (-1, -2)):
                end = _extend_to_frame(coords[idx], coords[prev], bbox_poly, frame)
                if end is not None:
                    if idx == 0:
                        coords.insert(0, end)
                    else:
                        coords.append(end)
        fixed.append(LineString(coords))
    if not fixed:
        return None
    boundary = unary_union(fixed).intersection(bbox_poly)
    noded = unary_union([boundary, frame])
    faces = list(polygonize(noded))
    if not faces:
        return None
    anchor = next((a for a in anchors if bbox_poly.contains(a)), None)
    flip = 0
    if anchor is None:
        # no point known inside: a point known outside (another country) fixes the parity
        anchor = next((a for a in outside if bbox_poly.contains(a)), None)
        flip = 1
    if anchor is None:
        return None
    inside = []
    for face in faces:
        rep = face.representative_point()
        crossing = LineString([(anchor.x, anchor.y), (rep.x, rep.y)]).intersection(boundary)
        n = 0
        if not crossing.is_empty:
            n = len(crossing.geoms) if hasattr(crossing, "geoms") else 1
        if (n + flip) % 2 == 0:
            inside.append(face)
    return _valid_polygonal(unary_union(inside)) if inside else None


def build_areas(pbf_path, bbox: list[float] | None, log=None) -> list[AdminArea]:
    # pass 1: admin relations and what they reference
    rels: dict[int, dict] = {}
    for r in osmium.FileProcessor(str(pbf_path), osmium.osm.RELATION):
        if _is_admin(r.tags):
            rels[r.id] = {
                "tags": dict(r.tags),
                "ways": [m.ref for m in r.members if m.type == "w"],
                "nodes": [(m.ref, m.role) for m in r.members if m.type == "n"],
                "rels": [m.ref for m in r.members if m.type == "r"],
            }
    if not rels:
        return []
    want_ways = {w for r in rels.values() for w in r["ways"]}
    want_nodes = {n for r in rels.values() for n, _ in r["nodes"]}
    rel_names = {r["tags"].get("name") for r in rels.values()}

    # pass 2: member geometries, place nodes, assembled areas
    wkb = osmium.geom.WKBFactory()
    way_coords: dict[int, list[list[tuple[float, float]]]] = {}
    node_locs: dict[int, tuple[float, float]] = {}
    place_nodes: dict[str, list[tuple[float, float]]] = {}
    country_nodes: dict[str, list[tuple[float, float]]] = {}  # addr:country -> a few points
    assembled: dict[int, object] = {}
    fp = (
        osmium.FileProcessor(str(pbf_path))
        .with_locations()
        .with_areas(osmium.filter.TagFilter(("boundary", "administrative")))
    )
    for o in fp:
        if o.is_node():
            if o.id in want_nodes and o.location.valid():
                node_locs[o.id] = (o.location.lon, o.location.lat)
            cc = o.tags.get("addr:country")
            if cc and o.location.valid() and len(country_nodes.setdefault(cc.upper(), [])) < 5:
                country_nodes[cc.upper()].append((o.location.lon, o.location.lat))
            name = o.tags.get("name")
            if name in rel_names and "place" in o.tags and o.location.valid():
                place_nodes.setdefault(name, []).append((o.location.lon, o.location.lat))
        elif o.is_way():
            if o.id in want_ways:
                pieces, cur = [], []
                for n in o.nodes:
                    if n.location.valid():
                        cur.append((n.location.lon, n.location.lat))
                    else:
                        if len(cur) >= 2:
                            pieces.append(cur)
                        cur = []
                if len(cur) >= 2:
                    pieces.append(cur)
                way_coords[o.id] = pieces
        elif o.is_area() and not o.from_way() and o.orig_id() in rels:
            try:
                geom = shapely.from_wkb(bytes.fromhex(wkb.create_multipolygon(o)))
            except Exception:  # noqa: BLE001 - a broken ring: fall back to the partial builder
                continue
            geom = _valid_polygonal(geom)
            if geom is not None:
                assembled[o.orig_id()] = geom

    bbox_poly = box(*bbox) if bbox else None
    geoms: dict[int, object] = {}
    clipped: set[int] = set()
    # deepest levels first: an assembled sub-area anchors its parents. Relations with nothing
    # known inside them come last, placed against the countries already built (disjoint).
    order = sorted(rels, key=lambda rid: -(admin_level(rels[rid]["tags"]) or 0))
    deferred: list[int] = []
    for phase in (0, 1):
        for rid in order if phase == 0 else deferred:
            if rid in assembled:
                geoms[rid] = assembled[rid]
                continue
            if bbox_poly is None:
                continue
            rel = rels[rid]
            tags = rel["tags"]
            anchors = [Point(node_locs[n]) for n, role in rel["nodes"] if n in node_locs]
            anchors += [Point(c) for c in place_nodes.get(tags.get("name"), [])]
            anchors += [geoms[c].representative_point() for c in rel["rels"] if c in geoms]
            iso = tags.get("ISO3166-1:alpha2") or tags.get("ISO3166-1")
            if admin_level(tags) == 2 and iso:
                anchors += [Point(c) for c in country_nodes.get(iso.upper(), [])]
            anchors = [a for a in anchors if bbox_poly.contains(a)]
            outside = []
            if phase == 1:
                # disjoint from it: built areas of the same level, then complete areas lying in
                # another country
                level = admin_level(tags)
                own = to_alpha3(tags.get("ISO3166-1:alpha3")) or to_alpha3(iso)
                for other, g in geoms.items():
                    if admin_level(rels[other]["tags"]) == level:
                        outside.append(g.representative_point())
                foreign = []
                for other, g in geoms.items():
                    otags = rels[other]["tags"]
                    o_iso = otags.get("ISO3166-1:alpha2") or otags.get("ISO3166-1")
                    if admin_level(otags) == 2 and o_iso and to_alpha3(o_iso) != own:
                        foreign.append(g)
                for other, g in geoms.items():
                    if other in assembled and admin_level(rels[other]["tags"]) > level:
                        rep = g.representative_point()
                        if any(f.covers(rep) for f in foreign):
                            outside.append(rep)
            elif not anchors:
                deferred.append(rid)
                continue
            lines = [piece for w in rel["ways"] for piece in way_coords.get(w, [])]
            if lines:  # noqa: SIM108 (a nested conditional expression reads worse)
                geom = _partial_area(lines, bbox_poly, anchors, outside)
            else:  # no boundary crosses the extract: it covers all of it or none of it
                geom = bbox_poly if anchors else None
            if geom is not None:
                geoms[rid] = geom
                clipped.add(rid)
            elif log:
                log.info("admin relation %s (%s) not placed in the extract", rid, tags.get("name"))

    areas: list[AdminArea] = []
    for i, rid in enumerate(sorted(geoms, key=lambda r: (admin_level(rels[r]["tags"]), r))):
        tags = rels[rid]["tags"]
        iso1 = tags.get("ISO3166-1:alpha2") or tags.get("ISO3166-1")
        level = admin_level(tags)
        country = None
        if level == 2:
            country = to_alpha3(tags.get("ISO3166-1:alpha3")) or to_alpha3(iso1)
        areas.append(
            AdminArea(
                id=i + 1,
                osm_type="relation",
                osm_id=rid,
                name=tags.get("name") or str(rid),
                names=names_of(tags, all_langs=True),
                level=level,
                iso3166_1=iso1,
                iso3166_2=tags.get("ISO3166-2"),
                country=country,
                geometry=_as_multi(geoms[rid]),
                clipped=rid in clipped,
            )
        )
    # country of every area: the level-2 area (with a code) holding its representative point
    countries = [a for a in areas if a.level == 2 and a.country]
    for a in areas:
        if a.country is None:
            rep = a.geometry.representative_point()
            for c in countries:
                if c.geometry.covers(rep):
                    a.country = c.country
                    break
    return areas


def write_db(path, areas: list[AdminArea]) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE admin (
            id INTEGER PRIMARY KEY, osm_type TEXT NOT NULL, osm_id INTEGER NOT NULL,
            name TEXT NOT NULL, names TEXT NOT NULL, level INTEGER NOT NULL,
            iso3166_1 TEXT, iso3166_2 TEXT, country TEXT, clipped INTEGER NOT NULL,
            area_m2 REAL, geom BLOB NOT NULL
        );
        CREATE INDEX admin_osm ON admin (osm_id);
        CREATE INDEX admin_level ON admin (level);
        CREATE VIRTUAL TABLE admin_rtree USING rtree (id, min_lng, max_lng, min_lat, max_lat);
        """
    )
    import math  # noqa: PLC0415

    from engine.geo import EARTH_RADIUS_M  # noqa: PLC0415

    for a in areas:
        minx, miny, maxx, maxy = a.geometry.bounds
        k = (math.pi * EARTH_RADIUS_M / 180) ** 2 * math.cos(math.radians((miny + maxy) / 2))
        conn.execute(
            "INSERT INTO admin VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                a.id,
                a.osm_type,
                a.osm_id,
                a.name,
                json.dumps(a.names, ensure_ascii=False),
                a.level,
                a.iso3166_1,
                a.iso3166_2,
                a.country,
                int(a.clipped),
                a.geometry.area * k,
                shapely.to_wkb(a.geometry),
            ),
        )
        conn.execute("INSERT INTO admin_rtree VALUES (?,?,?,?,?)", (a.id, minx, maxx, miny, maxy))
    conn.commit()
    conn.close()


def run(ctx: ImportContext) -> dict[str, int]:
    bbox = extract_bbox(ctx.pbf_path)
    if bbox:
        ctx.shared["bbox"] = bbox
    areas = build_areas(ctx.pbf_path, bbox, ctx.log)
    write_db(ctx.out_dir / layout.ADMIN_DB, areas)
    ctx.shared["admin_areas"] = areas
    return {"admin_areas": len(areas)}
