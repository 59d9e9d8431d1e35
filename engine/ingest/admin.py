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
import logging
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import osmium
import shapely
from shapely.geometry import GeometryCollection, LinearRing, LineString, MultiPolygon, Point, Polygon, box
from shapely.geometry.base import BaseGeometry
from shapely.ops import linemerge, polygonize, unary_union

from engine import layout
from engine.admin import AdminArea
from engine.countries import to_alpha3
from engine.geo import EARTH_RADIUS_M
from engine.ingest.context import ImportContext
from engine.ingest.osm_tags import admin_level, names_of

MAX_LEVEL = 11
LonLat = tuple[float, float]


def _is_admin(tags: osmium.osm.TagList) -> bool:
    return (
        tags.get("boundary") == "administrative"
        and tags.get("type") in ("boundary", "multipolygon")
        and admin_level(tags) is not None
    )


def extract_bbox(pbf_path: Path | str) -> list[float] | None:
    """[min_lng, min_lat, max_lng, max_lat] from the PBF header, or from the node extent."""
    fp = osmium.FileProcessor(str(pbf_path), osmium.osm.NODE)
    box_ = fp.header.box()
    if box_.valid():
        return [box_.bottom_left.lon, box_.bottom_left.lat, box_.top_right.lon, box_.top_right.lat]
    min_lng = min_lat = 1e9
    max_lng = max_lat = -1e9
    for n in fp:
        loc = n.location if isinstance(n, osmium.osm.Node) else None
        if loc is not None and loc.valid():
            min_lng, max_lng = min(min_lng, loc.lon), max(max_lng, loc.lon)
            min_lat, max_lat = min(min_lat, loc.lat), max(max_lat, loc.lat)
    return None if min_lng > max_lng else [min_lng, min_lat, max_lng, max_lat]


def _valid_polygonal(geom: BaseGeometry | None) -> BaseGeometry | None:
    """The polygonal part of a geometry, made valid; None when there is none."""
    if geom is None or geom.is_empty:
        return None
    if not geom.is_valid:
        geom = shapely.make_valid(geom)
    if isinstance(geom, GeometryCollection):
        polys = [g for g in geom.geoms if g.geom_type in ("Polygon", "MultiPolygon")]
        geom = unary_union(polys) if polys else None
    if geom is None or geom.is_empty or geom.geom_type not in ("Polygon", "MultiPolygon"):
        return None
    return geom


def _as_multi(geom: BaseGeometry) -> BaseGeometry:
    return MultiPolygon([geom]) if isinstance(geom, Polygon) else geom


def _extend_to_frame(end: LonLat, prev: LonLat, bbox_poly: Polygon, frame: LinearRing) -> LonLat | None:
    """Where a loose end, carried on in the direction of its last segment, meets the bbox
    outline (the nearest outline point when the ray misses); None when it is on the outline."""
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


def _partial_area(
    way_lines: list[list[LonLat]], bbox_poly: Polygon, anchors: list[Point], outside: Sequence[Point] = ()
) -> BaseGeometry | None:
    """Area of a relation inside the extract from the member lines that are present."""
    frame = bbox_poly.exterior
    lines = []
    for run in way_lines:
        if len(run) >= 2:
            lines.append(LineString(run))
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


@dataclass(frozen=True)
class AdminRelation:
    """A boundary=administrative relation and the members the builders use."""

    id: int
    tags: dict[str, str]
    ways: list[int]
    nodes: list[int]  # admin_centre, label, ...: points inside the area
    rels: list[int]  # sub-areas

    @property
    def level(self) -> int:
        level = admin_level(self.tags)
        assert level is not None  # _is_admin
        return level

    @property
    def iso1(self) -> str | None:
        """The ISO 3166-1 code as tagged (alpha-2)."""
        return self.tags.get("ISO3166-1:alpha2") or self.tags.get("ISO3166-1")

    @property
    def alpha3(self) -> str | None:
        return to_alpha3(self.tags.get("ISO3166-1:alpha3")) or to_alpha3(self.iso1)


def _read_relations(pbf_path: Path | str) -> dict[int, AdminRelation]:
    rels: dict[int, AdminRelation] = {}
    for r in osmium.FileProcessor(str(pbf_path), osmium.osm.RELATION):
        if isinstance(r, osmium.osm.Relation) and _is_admin(r.tags):
            rels[r.id] = AdminRelation(
                id=r.id,
                tags=dict(r.tags),
                ways=[m.ref for m in r.members if m.type == "w"],
                nodes=[m.ref for m in r.members if m.type == "n"],
                rels=[m.ref for m in r.members if m.type == "r"],
            )
    return rels


@dataclass
class MemberData:
    """What the second pass finds for the relations: member geometry, points known to be inside
    an area, and the areas osmium could assemble whole."""

    way_coords: dict[int, list[list[LonLat]]] = field(default_factory=dict)  # runs of located nodes
    node_locs: dict[int, LonLat] = field(default_factory=dict)
    place_nodes: dict[str | None, list[LonLat]] = field(default_factory=dict)  # a relation's name -> place nodes
    country_nodes: dict[str, list[LonLat]] = field(default_factory=dict)  # addr:country -> a few points
    assembled: dict[int, BaseGeometry] = field(default_factory=dict)

    def take_node(self, o: osmium.osm.Node, want_nodes: set[int], rel_names: set[str | None]) -> None:
        loc = o.location
        if o.id in want_nodes and loc.valid():
            self.node_locs[o.id] = (loc.lon, loc.lat)
        cc = o.tags.get("addr:country")
        if cc and loc.valid() and len(self.country_nodes.setdefault(cc.upper(), [])) < 5:
            self.country_nodes[cc.upper()].append((loc.lon, loc.lat))
        name = o.tags.get("name")
        if name in rel_names and "place" in o.tags and loc.valid():
            self.place_nodes.setdefault(name, []).append((loc.lon, loc.lat))


def _located_runs(way: osmium.osm.Way) -> list[list[LonLat]]:
    """The way's runs of at least two located nodes (a way cut by the extract has several)."""
    pieces, cur = [], []
    for n in way.nodes:
        if n.location.valid():
            cur.append((n.location.lon, n.location.lat))
        else:
            if len(cur) >= 2:
                pieces.append(cur)
            cur = []
    if len(cur) >= 2:
        pieces.append(cur)
    return pieces


def _assembled_geometry(area: osmium.osm.Area, wkb: osmium.geom.WKBFactory) -> BaseGeometry | None:
    try:
        geom = shapely.from_wkb(bytes.fromhex(wkb.create_multipolygon(area)))
    except Exception:  # noqa: BLE001 - a broken ring: fall back to the partial builder
        return None
    return _valid_polygonal(geom)


def _read_members(pbf_path: Path | str, rels: dict[int, AdminRelation]) -> MemberData:
    want_ways = {w for r in rels.values() for w in r.ways}
    want_nodes = {n for r in rels.values() for n in r.nodes}
    rel_names = {r.tags.get("name") for r in rels.values()}
    members = MemberData()
    wkb = osmium.geom.WKBFactory()
    fp = (
        osmium.FileProcessor(str(pbf_path))
        .with_locations()
        .with_areas(osmium.filter.TagFilter(("boundary", "administrative")))
    )
    for o in fp:
        if isinstance(o, osmium.osm.Node):
            members.take_node(o, want_nodes, rel_names)
        elif isinstance(o, osmium.osm.Way):
            if o.id in want_ways:
                members.way_coords[o.id] = _located_runs(o)
        elif isinstance(o, osmium.osm.Area) and not o.from_way() and o.orig_id() in rels:
            geom = _assembled_geometry(o, wkb)
            if geom is not None:
                members.assembled[o.orig_id()] = geom
    return members


class _AreaPlacer:
    """The geometry of every relation: assembled by osmium when complete, else rebuilt for the
    part of the extract it covers (flagged clipped)."""

    def __init__(
        self,
        rels: dict[int, AdminRelation],
        members: MemberData,
        bbox_poly: Polygon | None,
        log: logging.Logger | None,
    ) -> None:
        self.rels, self.members, self.bbox_poly, self.log = rels, members, bbox_poly, log
        self.geoms: dict[int, BaseGeometry] = {}
        self.clipped: set[int] = set()

    def place_all(self) -> None:
        """Deepest levels first: an assembled sub-area anchors its parents. Relations with
        nothing known inside them come last, placed against the areas already built."""
        deferred: list[AdminRelation] = []
        for rid in sorted(self.rels, key=lambda rid: -self.rels[rid].level):
            if rid in self.members.assembled:
                self.geoms[rid] = self.members.assembled[rid]
                continue
            if self.bbox_poly is None:
                continue
            rel = self.rels[rid]
            anchors = self._anchors(rel, self.bbox_poly)
            if anchors:
                self._place(rel, self.bbox_poly, anchors, [])
            else:
                deferred.append(rel)
        for rel in deferred:
            assert self.bbox_poly is not None  # nothing is deferred without a bbox
            self._place(rel, self.bbox_poly, self._anchors(rel, self.bbox_poly), self._outside(rel))

    def _anchors(self, rel: AdminRelation, bbox_poly: Polygon) -> list[Point]:
        """Points in the extract known to be inside the area: its member nodes, place nodes of
        its name, its placed sub-areas, addresses of its country."""
        m = self.members
        anchors = [Point(m.node_locs[n]) for n in rel.nodes if n in m.node_locs]
        anchors += [Point(c) for c in m.place_nodes.get(rel.tags.get("name"), [])]
        anchors += [self.geoms[c].representative_point() for c in rel.rels if c in self.geoms]
        if rel.level == 2 and rel.iso1:
            anchors += [Point(c) for c in m.country_nodes.get(rel.iso1.upper(), [])]
        return [a for a in anchors if bbox_poly.contains(a)]

    def _outside(self, rel: AdminRelation) -> list[Point]:
        """Points known to be outside the area: in built areas of the same level, and in
        complete areas lying in another country."""
        outside = [g.representative_point() for other, g in self.geoms.items() if self.rels[other].level == rel.level]
        own = rel.alpha3
        foreign = [
            g
            for other, g in self.geoms.items()
            if self.rels[other].level == 2 and self.rels[other].iso1 and to_alpha3(self.rels[other].iso1) != own
        ]
        for other, g in self.geoms.items():
            if other in self.members.assembled and self.rels[other].level > rel.level:
                rep = g.representative_point()
                if any(f.covers(rep) for f in foreign):
                    outside.append(rep)
        return outside

    def _place(self, rel: AdminRelation, bbox_poly: Polygon, anchors: list[Point], outside: list[Point]) -> None:
        lines = [piece for w in rel.ways for piece in self.members.way_coords.get(w, [])]
        if lines:  # noqa: SIM108 (a nested conditional expression reads worse)
            geom = _partial_area(lines, bbox_poly, anchors, outside)
        else:  # no boundary crosses the extract: it covers all of it or none of it
            geom = bbox_poly if anchors else None
        if geom is not None:
            self.geoms[rel.id] = geom
            self.clipped.add(rel.id)
        elif self.log:
            self.log.info("admin relation %s (%s) not placed in the extract", rel.id, rel.tags.get("name"))


def _admin_area(i: int, rel: AdminRelation, geom: BaseGeometry, clipped: bool) -> AdminArea:
    return AdminArea(
        id=i,
        osm_type="relation",
        osm_id=rel.id,
        name=rel.tags.get("name") or str(rel.id),
        names=names_of(rel.tags, all_langs=True),
        level=rel.level,
        iso3166_1=rel.iso1,
        iso3166_2=rel.tags.get("ISO3166-2"),
        country=rel.alpha3 if rel.level == 2 else None,
        geometry=_as_multi(geom),
        clipped=clipped,
    )


def _assign_countries(areas: list[AdminArea]) -> None:
    """The country of every area: the level-2 area (with a code) holding its representative point."""
    countries = [a for a in areas if a.level == 2 and a.country]
    for a in areas:
        if a.country is None:
            rep = a.geometry.representative_point()
            for c in countries:
                if c.geometry.covers(rep):
                    a.country = c.country
                    break


def build_areas(pbf_path: Path | str, bbox: list[float] | None, log: logging.Logger | None = None) -> list[AdminArea]:
    """The admin areas of the extract, by level then relation id (ids from 1)."""
    rels = _read_relations(pbf_path)
    if not rels:
        return []
    placer = _AreaPlacer(
        rels, _read_members(pbf_path, rels), box(bbox[0], bbox[1], bbox[2], bbox[3]) if bbox else None, log
    )
    placer.place_all()
    ranked = sorted(placer.geoms, key=lambda rid: (rels[rid].level, rid))
    areas = [_admin_area(i + 1, rels[rid], placer.geoms[rid], rid in placer.clipped) for i, rid in enumerate(ranked)]
    _assign_countries(areas)
    return areas


def write_db(path: Path, areas: list[AdminArea]) -> None:
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
