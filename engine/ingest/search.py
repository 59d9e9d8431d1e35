"""Import stage "search": addresses, named streets, places and POIs -> search.sqlite.

One pass over the PBF with node locations (ways get their coordinates; multipolygon relations
are assembled by osmium for the few that carry an address, a place or a POI). Every feature gets
country/city/district from its addr:* tags or, when missing, from the admin areas of the
"admin" stage (``ctx.shared["admin_areas"]``); a missing postcode is taken from the nearest
address of the same street that has one (within 300 m).

Tables (see engine.search.index for the reader):
    features      one row per address / street / place / poi; geom: a street's lines (WKB, lon/lat)
                  or an address's building outline (WKB, metres in the projection of meta 'proj')
    entries       one row per searchable name variant (normalised), with entries_fts (FTS5)
    vocab         every normalised word with its frequency (typo tolerance works on it)
    points_rtree  R*Tree over addresses, places, POIs;  street_parts + parts_rtree over streets
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict

import numpy as np
import osmium
import shapely
from scipy.spatial import cKDTree
from shapely.geometry import LineString, MultiLineString, Point, Polygon

from engine import layout
from engine.admin import AdminIndex, address_parts
from engine.categories import categorize, poi_tags
from engine.geo import LocalProjection
from engine.ingest.context import ImportContext
from engine.ingest.osm_tags import housenumbers, name_variants, names_of
from engine.search.normalize import normalize, normalize_housenumber, tokens

STREET_HIGHWAYS_EXCLUDED = {
    "bus_stop",
    "platform",
    "proposed",
    "elevator",
    "street_lamp",
    "abandoned",
    "razed",
    "traffic_signals",
    "crossing",
    "turning_circle",
    "emergency_access_point",
}
DRIVABLE = {
    "motorway",
    "trunk",
    "primary",
    "secondary",
    "tertiary",
    "unclassified",
    "residential",
    "motorway_link",
    "trunk_link",
    "primary_link",
    "secondary_link",
    "tertiary_link",
    "living_street",
    "service",
    "road",
}
PLACE_IMPORTANCE = {
    "country": 1.0,
    "state": 0.95,
    "region": 0.9,
    "province": 0.9,
    "city": 0.9,
    "town": 0.8,
    "municipality": 0.8,
    "borough": 0.7,
    "village": 0.7,
    "suburb": 0.65,
    "quarter": 0.55,
    "neighbourhood": 0.5,
    "hamlet": 0.5,
    "island": 0.5,
    "square": 0.45,
    "locality": 0.4,
    "islet": 0.35,
    "city_block": 0.3,
    "plot": 0.2,
    "farm": 0.2,
    "isolated_dwelling": 0.2,
}
RAW_POI_KEYS = ("amenity", "shop", "tourism", "leisure", "healthcare", "office", "emergency")
CLUSTER_GAP_M = 150.0  # same-name street pieces closer than this are one street
POSTCODE_FILL_M = 300.0
ORPHAN_M = 50.0  # a house number without a street: the nearest named street this close


class _Collector:
    def __init__(self) -> None:
        self.addresses: list[dict] = []
        self.streets: dict[str, list[dict]] = defaultdict(list)  # norm name -> ways
        self.places: list[dict] = []
        self.pois: list[dict] = []

    def take(self, kind: str, tags, lat: float, lng: float, geom=None) -> None:
        osm_type, osm_id = kind
        t = tags
        hn = t.get("addr:housenumber")
        street = t.get("addr:street") or t.get("addr:place")
        if hn:
            for number in housenumbers(hn):
                self.addresses.append(
                    {
                        "osm_type": osm_type,
                        "osm_id": osm_id,
                        "lat": lat,
                        "lng": lng,
                        "number": number,
                        "street": street,
                        "postcode": t.get("addr:postcode"),
                        "city": t.get("addr:city"),
                        "district": t.get("addr:suburb") or t.get("addr:district"),
                        "country": t.get("addr:country"),
                        "entrance": osm_type == "node" and "entrance" in t,
                        "building": "building" in t,
                        "name": t.get("name"),
                        "footprint": geom,
                    }
                )
        name = t.get("name")
        place = t.get("place")
        if place and name:
            self.places.append(
                {
                    "osm_type": osm_type,
                    "osm_id": osm_id,
                    "lat": lat,
                    "lng": lng,
                    "place": place,
                    "names": names_of(t),
                    "name": name,
                    "importance": PLACE_IMPORTANCE.get(place, 0.3),
                    "postcode": t.get("addr:postcode"),
                }
            )
            return
        category = categorize(t)
        raw = poi_tags(t)
        unnamed_ok = any(t.get(k) for k in RAW_POI_KEYS)  # benches, post boxes: raw-tag search
        if (category or (raw and (name or unnamed_ok))) and not (
            osm_type == "way" and t.get("highway") and not category
        ):
            if category == "bus_stop" and not name:
                return
            self.pois.append(
                {
                    "osm_type": osm_type,
                    "osm_id": osm_id,
                    "lat": lat,
                    "lng": lng,
                    "names": names_of(t),
                    "name": name,
                    "category": category,
                    "tags": raw,
                    "street": street,
                    "number": hn,
                    "postcode": t.get("addr:postcode"),
                    "city": t.get("addr:city"),
                    "importance": 0.35 + (0.1 if t.get("wikidata") else 0) + (0.05 if name else -0.1),
                }
            )


def _way_point(coords):
    """A point that represents a way: the centroid of a closed ring (inside it), else mid-line."""
    if len(coords) >= 4 and coords[0] == coords[-1]:
        poly = Polygon(coords)
        if poly.is_valid and poly.area > 0:
            c = poly.centroid
            if not poly.contains(c):
                c = poly.representative_point()
            return c.y, c.x
    line = LineString(coords)
    p = line.interpolate(0.5, normalized=True)
    return p.y, p.x


def collect(pbf_path) -> _Collector:
    col = _Collector()
    wkb = osmium.geom.WKBFactory()
    area_filter = osmium.filter.KeyFilter(
        "addr:housenumber", "place", "amenity", "shop", "tourism", "leisure", "office", "historic"
    )
    from engine.categories import POI_KEYS  # noqa: PLC0415

    keep = osmium.filter.KeyFilter("addr:housenumber", "place", "name", *POI_KEYS)
    fp = osmium.FileProcessor(str(pbf_path)).with_locations().with_areas(area_filter).with_filter(keep)
    for o in fp:
        tags = o.tags
        if o.is_node():
            loc = o.location
            if loc.valid():
                col.take(("node", o.id), tags, loc.lat, loc.lon)
        elif o.is_way():
            coords = [(n.location.lon, n.location.lat) for n in o.nodes if n.location.valid()]
            if len(coords) < 2:
                continue
            hw = tags.get("highway")
            name = tags.get("name")
            if hw and hw not in STREET_HIGHWAYS_EXCLUDED and hw != "platform" and name:
                square = len(coords) >= 4 and coords[0] == coords[-1] and tags.get("area") == "yes"
                col.streets[normalize(name)].append(
                    {
                        "osm_id": o.id,
                        "coords": coords,
                        "name": name,
                        "names": names_of(tags),
                        "highway": hw,
                        "postcode": tags.get("postal_code"),
                        "area": square,  # a square (highway=pedestrian + area=yes): inside it is on it
                    }
                )
                if not square:
                    continue  # a square may also be a place or a POI (a market square)
            lat, lng = _way_point(coords)
            footprint = coords if len(coords) >= 4 and coords[0] == coords[-1] else None
            col.take(("way", o.id), tags, lat, lng, footprint)
        elif o.is_area():
            if o.from_way():
                continue  # ways were taken above
            try:
                geom = shapely.from_wkb(bytes.fromhex(wkb.create_multipolygon(o)))
            except Exception:  # noqa: BLE001 - broken multipolygon: skip it
                continue
            c = geom.centroid if geom.is_valid else geom.representative_point()
            if geom.is_valid and not geom.contains(c):
                c = geom.representative_point()
            col.take(("relation", o.orig_id()), tags, c.y, c.x)
    return col


def _cluster_ways(ways: list[dict], proj: LocalProjection) -> list[list[dict]]:
    """Split same-name ways into streets: pieces within CLUSTER_GAP_M belong together."""
    if len(ways) == 1:
        return [ways]
    lines = []
    for w in ways:
        arr = np.asarray(w["coords"])
        x, y = proj.to_xy(arr[:, 1], arr[:, 0])
        lines.append(LineString(np.column_stack([x, y])))
    parent = list(range(len(ways)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    tree = shapely.STRtree(lines)
    for i, line in enumerate(lines):
        for j in tree.query(line, predicate="dwithin", distance=CLUSTER_GAP_M):
            ri, rj = find(i), find(int(j))
            if ri != rj:
                parent[ri] = rj
    groups: dict[int, list[dict]] = defaultdict(list)
    for i, w in enumerate(ways):
        groups[find(i)].append(w)
    return list(groups.values())


def _line_length_m(coords, proj: LocalProjection) -> float:
    arr = np.asarray(coords)
    x, y = proj.to_xy(arr[:, 1], arr[:, 0])
    return float(np.sum(np.hypot(np.diff(x), np.diff(y))))


SCHEMA = """
CREATE TABLE features (
    id INTEGER PRIMARY KEY, type TEXT NOT NULL, name TEXT, names TEXT,
    housenumber TEXT, hn_norm TEXT, street TEXT, street_key TEXT, street_id INTEGER,
    city TEXT, district TEXT, postcode TEXT, country TEXT,
    lat REAL NOT NULL, lng REAL NOT NULL, osm_type TEXT, osm_id INTEGER,
    category TEXT, tags TEXT, importance REAL NOT NULL DEFAULT 0, geom BLOB
);
CREATE TABLE entries (id INTEGER PRIMARY KEY, feature_id INTEGER NOT NULL, norm TEXT NOT NULL,
                      is_primary INTEGER NOT NULL);
CREATE VIRTUAL TABLE entries_fts USING fts5 (norm, content='entries', content_rowid='id',
                                              prefix='2 3 4');
CREATE TABLE vocab (word TEXT PRIMARY KEY, freq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE street_parts (id INTEGER PRIMARY KEY, street_id INTEGER NOT NULL,
                           geom BLOB NOT NULL);  -- a way: LineString; a square: Polygon
CREATE VIRTUAL TABLE points_rtree USING rtree (id, min_lng, max_lng, min_lat, max_lat);
CREATE VIRTUAL TABLE parts_rtree USING rtree (id, min_lng, max_lng, min_lat, max_lat);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""


def build(pbf_path, out_path, admin_areas, bbox) -> dict[str, int]:
    col = collect(pbf_path)
    admin = AdminIndex(admin_areas or [])
    if bbox:
        lat0, lng0 = (bbox[1] + bbox[3]) / 2, (bbox[0] + bbox[2]) / 2
    else:
        lat0, lng0 = 0.0, 0.0
    proj = LocalProjection(lat0, lng0)
    parts_cache: dict[tuple[float, float], dict] = {}

    def parts(lat, lng):
        key = (round(lat, 5), round(lng, 5))
        found = parts_cache.get(key)
        if found is None:
            found = address_parts(admin.containing(lat, lng))
            parts_cache[key] = found
        return found

    conn = sqlite3.connect(out_path)
    conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
    features: list[tuple] = []
    entries: list[tuple] = []
    point_boxes: list[tuple] = []
    street_parts: list[tuple] = []
    next_id = 1

    def add_entries(fid, variants, primary):
        seen = set()
        for i, v in enumerate(variants):
            norm = normalize(v)
            if norm and norm not in seen:
                seen.add(norm)
                entries.append((len(entries) + 1, fid, norm, 1 if (i == 0 and primary) else 0))

    # -- streets ------------------------------------------------------------------------------
    street_by_key: dict[str, list[tuple[int, object, float, float]]] = defaultdict(list)
    street_names: dict[int, tuple[str, object]] = {}
    for key, ways in col.streets.items():
        for group in _cluster_ways(ways, proj):
            fid = next_id
            next_id += 1
            lines = [LineString(w["coords"]) for w in group]
            multi = MultiLineString(lines)
            length = sum(_line_length_m(w["coords"], proj) for w in group)
            c = multi.centroid
            rep = multi.interpolate(multi.project(c)) if len(lines) == 1 else None
            if rep is None:
                best = min(lines, key=lambda ln: ln.distance(c))
                rep = best.interpolate(best.project(c))
            names: dict[str, str] = {}
            for w in group:
                for k, v in w["names"].items():
                    names.setdefault(k, v)
            name = max((w["name"] for w in group), key=lambda n: sum(w["name"] == n for w in group))
            p = parts(rep.y, rep.x)
            drivable = any(w["highway"] in DRIVABLE for w in group)
            importance = min(0.6, 0.2 + 0.1 * math.log10(1 + length)) + (0.05 if drivable else 0)
            features.append(
                (
                    fid,
                    "street",
                    name,
                    json.dumps(names, ensure_ascii=False),
                    None,
                    None,
                    name,
                    key,
                    None,
                    p["city"],
                    p["district"],
                    None,
                    p["country"],
                    rep.y,
                    rep.x,
                    "way",
                    group[0]["osm_id"],
                    None,
                    None,
                    importance,
                    shapely.to_wkb(multi),
                )
            )
            add_entries(fid, [name, *name_variants(names)], True)
            for w, line in zip(group, lines, strict=True):
                pid = len(street_parts) + 1
                part = Polygon(w["coords"]) if w.get("area") else line
                if not part.is_valid:
                    part = line
                street_parts.append((pid, fid, shapely.to_wkb(part), line.bounds))
            street_by_key[key].append((fid, multi, rep.y, rep.x))
            street_names[fid] = (name, multi)

    # -- addresses ----------------------------------------------------------------------------
    # a number without addr:street belongs to the nearest named street within ORPHAN_M
    col.addresses = _adopt_orphans(col.addresses, street_names, proj)
    # dedupe: one address per (street, number) within 60 m; buildings beat entrances beat nodes
    addrs = sorted(
        col.addresses,
        key=lambda a: (0 if a["building"] else (2 if a["entrance"] else 1), a["osm_type"] != "way"),
    )
    kept: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for a in addrs:
        a["street_key"] = normalize(a["street"])
        a["hn_norm"] = normalize_housenumber(a["number"])
        k = (a["street_key"], a["hn_norm"])
        if any(abs(b["lat"] - a["lat"]) < 0.00055 and abs(b["lng"] - a["lng"]) < 0.0011 for b in kept[k]):
            continue
        kept[k].append(a)
    addresses = [a for group in kept.values() for a in group]

    # postcodes: fill from the nearest address of the same street that has one
    with_pc = [a for a in addresses if a["postcode"]]
    if with_pc:
        xs, ys = proj.to_xy(np.array([a["lat"] for a in with_pc]), np.array([a["lng"] for a in with_pc]))
        tree = cKDTree(np.column_stack([xs, ys]))
        for a in addresses:
            if a["postcode"]:
                continue
            x, y = proj.to_xy(a["lat"], a["lng"])
            dists, idxs = tree.query([float(x), float(y)], k=min(8, len(with_pc)), distance_upper_bound=POSTCODE_FILL_M)
            for d, i in zip(np.atleast_1d(dists), np.atleast_1d(idxs), strict=True):
                if np.isfinite(d) and with_pc[i]["street_key"] == a["street_key"]:
                    a["postcode"] = with_pc[i]["postcode"]
                    break

    synthetic: dict[str, list[dict]] = defaultdict(list)
    for a in addresses:
        street_id = None
        best = None
        for fid, _multi, slat, slng in street_by_key.get(a["street_key"], []):
            d = (slat - a["lat"]) ** 2 + ((slng - a["lng"]) * proj.kx / proj.ky) ** 2
            if best is None or d < best:
                best, street_id = d, fid
        if street_id is None:
            synthetic[a["street_key"]].append(a)
        a["street_id"] = street_id
    # streets known only from addresses (squares, pedestrian areas): searchable too
    for key, group in synthetic.items():
        fid = next_id
        next_id += 1
        lat = float(np.mean([a["lat"] for a in group]))
        lng = float(np.mean([a["lng"] for a in group]))
        p = parts(lat, lng)
        name = group[0]["street"]
        features.append(
            (
                fid,
                "street",
                name,
                json.dumps({"name": name}, ensure_ascii=False),
                None,
                None,
                name,
                key,
                None,
                p["city"],
                p["district"],
                None,
                p["country"],
                lat,
                lng,
                None,
                None,
                None,
                None,
                0.25,
                None,
            )
        )
        add_entries(fid, [name], True)
        point_boxes.append((fid, lng, lng, lat, lat))
        for a in group:
            a["street_id"] = fid
    street_postcodes: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in addresses:
        fid = next_id
        next_id += 1
        p = parts(a["lat"], a["lng"])
        if a["postcode"] and a["street_id"]:
            street_postcodes[a["street_id"]][a["postcode"]] += 1
        features.append(
            (
                fid,
                "address",
                a["name"],
                None,
                a["number"],
                a["hn_norm"],
                a["street"],
                a["street_key"],
                a["street_id"],
                a["city"] or p["city"],
                a["district"] or p["district"],
                a["postcode"],
                _country(a["country"]) or p["country"],
                a["lat"],
                a["lng"],
                a["osm_type"],
                a["osm_id"],
                None,
                None,
                0.5,
                _footprint_wkb(a["footprint"], proj),
            )
        )
        point_boxes.append((fid, a["lng"], a["lng"], a["lat"], a["lat"]))

    # -- places ---------------------------------------------------------------------------------
    for pl in col.places:
        fid = next_id
        next_id += 1
        p = parts(pl["lat"], pl["lng"])
        city = p["city"] if pl["place"] not in ("city", "town", "village", "municipality") else pl["name"]
        features.append(
            (
                fid,
                "place",
                pl["name"],
                json.dumps(pl["names"], ensure_ascii=False),
                None,
                None,
                None,
                None,
                None,
                city,
                p["district"],
                pl["postcode"],
                p["country"],
                pl["lat"],
                pl["lng"],
                pl["osm_type"],
                pl["osm_id"],
                pl["place"],
                None,
                pl["importance"],
                None,
            )
        )
        add_entries(fid, [pl["name"], *name_variants(pl["names"])], True)
        point_boxes.append((fid, pl["lng"], pl["lng"], pl["lat"], pl["lat"]))
    place_names = {normalize(pl["name"]) for pl in col.places}
    for area in admin_areas or []:
        if normalize(area.name) in place_names and area.level >= 7:
            continue  # the place node already stands for it
        rep = area.geometry.representative_point()
        if area.clipped and area.level < 10:
            continue  # a clipped region/country: its point would be arbitrary
        fid = next_id
        next_id += 1
        p = parts(rep.y, rep.x)
        features.append(
            (
                fid,
                "place",
                area.name,
                json.dumps(area.names, ensure_ascii=False),
                None,
                None,
                None,
                None,
                None,
                area.name if area.level in (7, 8) else p["city"],
                area.name if area.level >= 9 else None,
                None,
                area.country or p["country"],
                rep.y,
                rep.x,
                area.osm_type,
                area.osm_id,
                f"admin_level={area.level}",
                None,
                0.95 - 0.04 * area.level,
                None,
            )
        )
        add_entries(fid, [area.name, *name_variants(names_of(area.names))], True)
        point_boxes.append((fid, rep.x, rep.x, rep.y, rep.y))

    # -- POIs ----------------------------------------------------------------------------------
    for poi in col.pois:
        fid = next_id
        next_id += 1
        p = parts(poi["lat"], poi["lng"])
        features.append(
            (
                fid,
                "poi",
                poi["name"],
                json.dumps(poi["names"], ensure_ascii=False),
                poi["number"],
                normalize_housenumber(poi["number"]) or None,
                poi["street"],
                normalize(poi["street"]) or None,
                None,
                poi["city"] or p["city"],
                p["district"],
                poi["postcode"],
                p["country"],
                poi["lat"],
                poi["lng"],
                poi["osm_type"],
                poi["osm_id"],
                poi["category"],
                "|" + "|".join(poi["tags"]) + "|",
                poi["importance"],
                None,
            )
        )
        if poi["name"]:
            add_entries(fid, [poi["name"], *name_variants(poi["names"])], True)
        point_boxes.append((fid, poi["lng"], poi["lng"], poi["lat"], poi["lat"]))

    # streets: postcode = the most common one among their addresses
    features = [
        f
        if f[1] != "street" or f[0] not in street_postcodes
        else f[:11] + (max(street_postcodes[f[0]].items(), key=lambda kv: kv[1])[0],) + f[12:]
        for f in features
    ]

    conn.executemany(f"INSERT INTO features VALUES ({','.join('?' * 21)})", features)
    conn.executemany("INSERT INTO entries VALUES (?,?,?,?)", entries)
    conn.execute("INSERT INTO entries_fts (rowid, norm) SELECT id, norm FROM entries")
    vocab: dict[str, int] = defaultdict(int)
    for _, _, norm, _ in entries:
        for tok in norm.split():
            vocab[tok] += 1
    for f in features:  # context words: cities, districts, postcodes, countries
        for value in (f[9], f[10], f[11]):
            for tok in tokens(value or ""):
                vocab[tok] += 0
    conn.executemany("INSERT INTO vocab VALUES (?,?)", sorted(vocab.items()))
    conn.executemany("INSERT INTO points_rtree VALUES (?,?,?,?,?)", point_boxes)
    conn.executemany("INSERT INTO street_parts VALUES (?,?,?)", [s[:3] for s in street_parts])
    conn.executemany(
        "INSERT INTO parts_rtree VALUES (?,?,?,?,?)",
        [(s[0], s[3][0], s[3][2], s[3][1], s[3][3]) for s in street_parts],
    )
    conn.executescript(
        """
        CREATE INDEX features_street ON features (street_key, hn_norm) WHERE type = 'address';
        CREATE INDEX features_street_id ON features (street_id) WHERE type = 'address';
        CREATE INDEX features_category ON features (category) WHERE type = 'poi';
        CREATE INDEX entries_feature ON entries (feature_id);
        INSERT INTO entries_fts (entries_fts) VALUES ('optimize');
        """
    )
    conn.execute("INSERT INTO meta VALUES ('proj', ?)", (json.dumps([lat0, lng0]),))
    conn.commit()
    conn.execute("ANALYZE")
    conn.commit()
    conn.close()
    counts = defaultdict(int)
    for f in features:
        counts[f[1]] += 1
    return {
        "addresses": counts["address"],
        "streets": counts["street"],
        "places": counts["place"],
        "pois": counts["poi"],
    }


def _adopt_orphans(
    addresses: list[dict], street_names: dict[int, tuple[str, object]], proj: LocalProjection
) -> list[dict]:
    """Numbers without addr:street/addr:place take the nearest named street within ORPHAN_M
    (as Nominatim's parent street); the others are dropped (nothing to search them by)."""
    orphans = [a for a in addresses if not a["street"]]
    kept = [a for a in addresses if a["street"]]
    if not orphans or not street_names:
        return kept
    lines, owner = [], []
    for name, multi in street_names.values():
        for part in multi.geoms:
            arr = np.asarray(part.coords)
            x, y = proj.to_xy(arr[:, 1], arr[:, 0])
            lines.append(LineString(np.column_stack([x, y])))
            owner.append(name)
    tree = shapely.STRtree(lines)
    for a in orphans:
        x, y = proj.to_xy(a["lat"], a["lng"])
        p = Point(float(x), float(y))
        i = tree.nearest(p)
        if i is not None and lines[int(i)].distance(p) <= ORPHAN_M:
            a["street"] = owner[int(i)]
            kept.append(a)
    return kept


def _footprint_wkb(coords, proj: LocalProjection):
    """The building outline of an address in the index's metric projection (meta 'proj'):
    reverse geocoding measures distances to it in metres, 0 inside."""
    if not coords:
        return None
    arr = np.asarray(coords)
    x, y = proj.to_xy(arr[:, 1], arr[:, 0])
    poly = Polygon(np.column_stack([x, y]))
    return shapely.to_wkb(poly) if poly.is_valid and poly.area > 0 else None


def _country(code: str | None) -> str | None:
    from engine.countries import to_alpha3  # noqa: PLC0415

    return to_alpha3(code)


def run(ctx: ImportContext) -> dict[str, int]:
    return build(
        ctx.pbf_path,
        ctx.out_dir / layout.SEARCH_DB,
        ctx.shared.get("admin_areas"),
        ctx.shared.get("bbox"),
    )
