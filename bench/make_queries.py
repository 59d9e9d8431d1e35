"""Build the search quality query sets from the sample PBFs (read with osmium, not with Meridian's
index, so that the answers do not depend on the code under test).

    python -m bench.make_queries   # writes bench/data/<region>-{geocode,suggest,reverse,nearest,routes}.json

Geocoding kinds: exact ("street number, city"), lowercase, no_city, number_first, postcode,
no_diacritics, abbreviation, typo1, typo2, structured, street, place, poi, name_variant.
Reverse kinds: address (at an address), street (beside a street given as an address),
near_address (3-15 m from an address), beside_path (beside a footway or passage). Nearest kinds:
nearest (a tag; a closed way measured to its outline), area (parks, parkings: to the outline).
Route pairs (bench.routing --pairs-dir): random road nodes, and near_edge (one end near the
extract's border).
A query's ``expect`` is the tagged object's location (a way: the mean of its nodes).
Deterministic (fixed seed); the outputs are committed.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import osmium
from numpy.typing import NDArray
from unidecode import unidecode

from config.settings import PROJECT_ROOT

if TYPE_CHECKING:
    from shapely.geometry.base import BaseGeometry

SAMPLES = PROJECT_ROOT / "data" / "samples"
OUT = PROJECT_ROOT / "bench" / "data"
REGION_CITY = {"monaco": "Monaco", "helsinki": "Helsinki"}
POI_KEYS = ("amenity", "shop", "tourism", "leisure", "historic", "office")
ABBREV = [
    ("Boulevard ", "Bd "),
    ("Avenue ", "Av. "),
    ("Sainte-", "Ste "),
    ("Saint-", "St "),
    ("Sainte ", "Ste "),
    ("Saint ", "St "),
    ("Place ", "Pl. "),
    ("Chemin ", "Ch. "),
    ("Route ", "Rte "),
]
FI_SUFFIX = [("katu", "k."), ("tie", "t.")]
# OSRM car.lua's drivable classes: route pairs are drawn from the nodes of these ways, read from the
# PBF (not from Meridian's graph), so that a road Meridian drops or cuts off is still asked for
CAR_HIGHWAYS = frozenset(
    {
        "motorway",
        "motorway_link",
        "trunk",
        "trunk_link",
        "primary",
        "primary_link",
        "secondary",
        "secondary_link",
        "tertiary",
        "tertiary_link",
        "unclassified",
        "residential",
        "living_street",
        "service",
    }
)
CAR_DENIED = frozenset({"no", "private", "agricultural", "forestry", "emergency", "psv", "bus"})
EDGE_BAND_M = 1500.0


def _mean(pts):
    return sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)


def read(region: str):
    streets: defaultdict[str, list[Any]] = defaultdict(list)  # name: points; name\0lines; name\0variants
    addresses, places, pois = [], [], []
    fp = osmium.FileProcessor(str(SAMPLES / f"{region}.osm.pbf")).with_locations()
    for o in fp:
        t = o.tags
        if len(t) == 0:
            continue
        if isinstance(o, osmium.osm.Node):
            pts = [(o.location.lat, o.location.lon)]
        elif isinstance(o, osmium.osm.Way):
            pts = [(n.location.lat, n.location.lon) for n in o.nodes if n.location.valid()]
            if not pts:
                continue
        else:
            continue
        name = t.get("name")
        if isinstance(o, osmium.osm.Way) and t.get("highway") and name:
            streets[name].extend(pts)
            streets[name + "\0lines"].append(pts)
            streets[name + "\0variants"].append({k: v for k, v in t if k.startswith("name:")})
            streets[name + "\0kinds"].append(t["highway"])
            continue
        lat, lng = _mean(pts)
        if t.get("addr:street") and "entrance" in t:
            streets[t["addr:street"] + "\0entrance"].append(True)  # an address street (entrances only)
        if t.get("addr:housenumber") and t.get("addr:street") and "entrance" not in t:
            number = t["addr:housenumber"].split(";")[0].strip()
            addresses.append(
                {
                    "street": t["addr:street"],
                    "number": number,
                    "lat": lat,
                    "lng": lng,
                    "postcode": t.get("addr:postcode"),
                    "city": t.get("addr:city"),
                }
            )
        if name and t.get("place"):
            places.append({"name": name, "lat": lat, "lng": lng})
        elif any(k in t for k in POI_KEYS):
            cat = next(f"{k}={t[k]}" for k in POI_KEYS if k in t)
            pois.append(
                {
                    "name": name,
                    "lat": lat,
                    "lng": lng,
                    "tag": cat,
                    "tags": [f"{k}={t[k]}" for k in POI_KEYS if k in t],
                    "osm": ("n" if isinstance(o, osmium.osm.Node) else "w") + str(o.id),
                    "outline": pts if len(pts) >= 4 and pts[0] == pts[-1] else None,
                }
            )
    return addresses, streets, places, pois


def typo(word: str, rng: random.Random) -> str:
    """One edit inside a word (not its first letter): substitution, deletion, transposition."""
    if len(word) < 5:
        return word
    i = rng.randrange(1, len(word) - 1)
    op = rng.choice(("sub", "del", "swap"))
    if op == "sub":
        c = rng.choice([x for x in "aeioustnrlk" if x != word[i].lower()])
        return word[:i] + c + word[i + 1 :]
    if op == "del":
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def typo_text(text: str, rng: random.Random, n: int) -> str:
    words = text.split(" ")
    for _ in range(n):
        long_words = [i for i, w in enumerate(words) if len(w) >= 5 and not any(c.isdigit() for c in w)]
        if not long_words:
            break
        i = rng.choice(long_words)
        words[i] = typo(words[i], rng)
    return " ".join(words)


def abbreviate(street: str) -> str | None:
    for full, short in ABBREV:
        if street.startswith(full) or f" {full}" in street:
            return street.replace(full, short, 1)
    for suffix, short in FI_SUFFIX:
        if street.endswith(suffix) and len(street) > len(suffix) + 3:
            return street[: -len(suffix)] + short
    return None


def geocode_queries(region: str, rng: random.Random, n_per_kind: int = 30) -> list[dict]:
    addresses, streets, places, pois = read(region)
    # one address per (street, number); skip the ambiguous ones (same number far apart)
    by_key = defaultdict(list)
    for a in addresses:
        by_key[(a["street"], a["number"])].append(a)
    uniq = [v[0] for v in by_key.values() if len(v) == 1]
    rng.shuffle(uniq)
    city = REGION_CITY[region]
    out: list[dict] = []

    def add(query, lat, lng, kind, tol=50.0, **extra):
        out.append(
            {
                "query": query,
                "expect": {"lat": round(lat, 7), "lng": round(lng, 7)},
                "tolerance_m": tol,
                "kind": kind,
                **extra,
            }
        )

    picks = uniq[: n_per_kind * 3]
    for a in picks[:n_per_kind]:
        add(f"{a['street']} {a['number']}, {a['city'] or city}", a["lat"], a["lng"], "exact")
    for a in picks[n_per_kind : 2 * n_per_kind]:
        add(f"{a['street']} {a['number']}".lower(), a["lat"], a["lng"], "lowercase")
    for a in picks[2 * n_per_kind :]:
        add(f"{a['street']} {a['number']}", a["lat"], a["lng"], "no_city")
    rng.shuffle(uniq)
    for a in uniq[:n_per_kind]:
        add(f"{a['number']} {a['street']} {a['city'] or city}", a["lat"], a["lng"], "number_first")
    with_pc = [a for a in uniq if a["postcode"]]
    for a in with_pc[:n_per_kind]:
        add(f"{a['street']} {a['number']}, {a['postcode']}", a["lat"], a["lng"], "postcode")
    accents = [a for a in uniq if unidecode(a["street"]) != a["street"]]
    for a in accents[:n_per_kind]:
        add(f"{unidecode(a['street'])} {a['number']}", a["lat"], a["lng"], "no_diacritics")
    abbr = [(a, abbreviate(a["street"])) for a in uniq]
    abbr = [(a, s) for a, s in abbr if s]
    for a, s in abbr[:n_per_kind]:
        add(f"{s} {a['number']}", a["lat"], a["lng"], "abbreviation")
    rng.shuffle(uniq)
    for a in uniq[:n_per_kind]:
        add(f"{typo_text(a['street'], rng, 1)} {a['number']}", a["lat"], a["lng"], "typo1")
    for a in uniq[n_per_kind : 2 * n_per_kind]:
        add(f"{typo_text(a['street'], rng, 2)} {a['number']}", a["lat"], a["lng"], "typo2")
    for a in uniq[2 * n_per_kind : 3 * n_per_kind]:
        add(
            f"{a['street']} {a['number']}",
            a["lat"],
            a["lng"],
            "structured",
            structured={"street": a["street"], "number": a["number"], "city": a["city"] or city},
        )
    # streets: expect the point of the street nearest its centre; tolerance covers its extent
    names = [n for n in streets if "\0" not in n]
    rng.shuffle(names)
    for name in names[:n_per_kind]:
        pts = streets[name]
        c = _mean(pts)
        ext = max(_dist(c, p) for p in pts)
        if ext > 1500:
            continue
        add(name, c[0], c[1], "street", tol=max(60.0, ext + 30.0))
    variants = []
    for name in names:
        for tags in streets[name + "\0variants"]:
            for k, v in tags.items():
                if v != name and k in ("name:sv", "name:fi", "name:fr", "name:en"):
                    variants.append((v, name))
    seen: set[Any] = set()
    for v, name in variants:
        if v in seen or len(seen) >= n_per_kind:
            continue
        seen.add(v)
        pts = streets[name]
        c = _mean(pts)
        ext = max(_dist(c, p) for p in pts)
        if ext <= 1500:
            add(v, c[0], c[1], "name_variant", tol=max(60.0, ext + 30.0))
    counts: defaultdict[Any, int] = defaultdict(int)
    named = [p for p in pois if p["name"]]
    for p in named:
        counts[p["name"]] += 1
    upois = [p for p in named if counts[p["name"]] == 1 and len(p["name"]) >= 4]
    rng.shuffle(upois)
    for p in upois[:n_per_kind]:
        add(p["name"], p["lat"], p["lng"], "poi", tol=60.0)
    pcount: defaultdict[Any, int] = defaultdict(int)
    for p in places:
        pcount[p["name"]] += 1
    for p in [p for p in places if pcount[p["name"]] == 1][:n_per_kind]:
        add(p["name"], p["lat"], p["lng"], "place", tol=1000.0)
    return out


def _dist(a, b) -> float:
    dy = (a[0] - b[0]) * 111_195.0
    dx = (a[1] - b[1]) * 111_195.0 * math.cos(math.radians(a[0]))
    return math.hypot(dx, dy)


GENERIC_WORDS = {
    "rue",
    "avenue",
    "boulevard",
    "place",
    "chemin",
    "route",
    "quai",
    "impasse",
    "allée",
    "square",
    "escalier",
    "escaliers",
    "montée",
    "passage",
    "ruelle",
    "sentier",
    "traverse",
    "descente",
    "esplanade",
    "promenade",
    "tunnel",
    "bretelle",
    "parking",
    "sortie",
    "entrée",
    "de",
    "du",
    "des",
    "la",
    "le",
    "les",
    "l'",
    "d'",
    "the",
    "hotel",
    "café",
    "cafe",
    "restaurant",
    "bar",
}


def _prefix_of(name: str, rng: random.Random) -> str | None:
    """What a user has typed: the generic words in full, then 2-6 letters of the first
    distinctive word ('Rue Malb' for 'Rue Malbousquet')."""
    words = name.split(" ")
    typed = []
    for w in words:
        if w.lower() in GENERIC_WORDS or len(w) <= 2:
            typed.append(w)
            continue
        k = rng.randint(2, min(6, len(w)))
        if len(" ".join(typed + [w[:k]])) < 3:
            k = min(len(w), 3)
        typed.append(w[:k])
        return " ".join(typed)
    return None


def suggest_queries(region: str, rng: random.Random, n: int = 200) -> list[dict]:
    _addresses, streets, places, pois = read(region)
    names = [s for s in streets if "\0" not in s and len(s) >= 5]
    names += [p["name"] for p in pois if p["name"] and len(p["name"]) >= 5]
    names += [p["name"] for p in places if len(p["name"]) >= 5]
    names = sorted(set(names))
    rng.shuffle(names)
    out: list[Any] = []
    for name in names:
        if len(out) >= n:
            break
        prefix = _prefix_of(name, rng)
        if prefix:
            out.append({"prefix": prefix, "expect_text": name, "kind": "prefix"})
    typos = 0
    for name in names[::-1]:
        if typos >= n // 4:
            break
        words = name.split(" ")
        distinct = [w for w in words if w.lower() not in GENERIC_WORDS and len(w) >= 6]
        if not distinct:
            continue
        w = distinct[0]
        head = " ".join(words[: words.index(w)])
        k = rng.randint(5, min(9, len(w)))
        prefix = (head + " " if head else "") + typo(w[:k], rng)
        out.append({"prefix": prefix, "expect_text": name, "kind": "prefix_typo"})
        typos += 1
    return out


# streets a person gives as an address: roads and pedestrian streets, not paths, corridors and
# passages (unless some address names them)
ADDRESS_HIGHWAYS = CAR_HIGHWAYS | {"pedestrian", "road"}
MINOR_HIGHWAYS = frozenset({"footway", "path", "cycleway", "steps", "corridor", "bridleway", "track"})


def address_street(name: str, streets: dict, addressed: set[str]) -> bool:
    return (
        name in addressed
        or bool(streets.get(name + "\0entrance"))
        or any(k in ADDRESS_HIGHWAYS for k in streets[name + "\0kinds"])
    )


def _near_address_queries(addresses, rng: random.Random, n: int) -> list[dict]:
    """Points 3-15 m from an address, in any direction: expect its street when that address is
    clearly the nearest one (the next address on another street at least 5 m farther)."""
    from scipy.spatial import cKDTree  # noqa: PLC0415

    if not addresses:
        return []
    k = math.cos(math.radians(addresses[0]["lat"]))
    xy = [(a["lng"] * k * 111_195.0, a["lat"] * 111_195.0) for a in addresses]
    tree = cKDTree(xy)
    out: list[dict] = []
    order = list(range(len(addresses)))
    rng.shuffle(order)
    for i in order:
        if len(out) >= n:
            break
        a = addresses[i]
        r, phi = rng.uniform(3.0, 15.0), rng.uniform(0.0, 2 * math.pi)
        lat = a["lat"] + r * math.sin(phi) / 111_195.0
        lng = a["lng"] + r * math.cos(phi) / (111_195.0 * k)
        dists, idx = _k_nearest(tree, (lng * k * 111_195.0, lat * 111_195.0), min(8, len(addresses)))
        own = [d for d, j in zip(dists, idx, strict=True) if addresses[j]["street"] == a["street"]]
        other = [d for d, j in zip(dists, idx, strict=True) if addresses[j]["street"] != a["street"]]
        if not own or (other and other[0] < own[0] + 5.0):
            continue
        out.append({"lat": round(lat, 7), "lng": round(lng, 7), "expect_street": a["street"], "kind": "near_address"})
    return out


def _k_nearest(tree: Any, xy: tuple[float, float], k: int) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Distances and positions of the ``k`` nearest points of a cKDTree, as arrays also for k = 1."""
    dists, idx = tree.query(xy, k=k)
    return np.atleast_1d(dists), np.atleast_1d(idx)


def _point_on_way(streets: dict, name: str, rng: random.Random) -> tuple[float, float] | None:
    """(lat, lng) of a random point of a random way of the street, None for a way of one point."""
    way = rng.choice(streets[name + "\0lines"])
    if len(way) < 2:
        return None
    i = rng.randrange(len(way) - 1)
    (la, lo), (lb, lob) = way[i], way[i + 1]
    f = rng.random()
    return la + f * (lb - la), lo + f * (lob - lo)


def _beside_path_queries(addresses, streets, names, rng: random.Random, n: int) -> list[dict]:
    """Points 2-6 m beside a footway, passage or steps that no address names: expect the street
    of the nearest address within 40 m when that street is also the nearest address street (the
    two readings agree; no other address or street within 5 m more); with no address within
    40 m, the nearest address street within 40 m (none other within 5 m more)."""
    from scipy.spatial import cKDTree  # noqa: PLC0415

    addressed = {a["street"] for a in addresses}
    minor = [
        m
        for m in names
        if not address_street(m, streets, addressed) and all(kd in MINOR_HIGHWAYS for kd in streets[m + "\0kinds"])
    ]
    if not addresses or not minor:
        return []
    from shapely import STRtree  # noqa: PLC0415
    from shapely.geometry import LineString, Point  # noqa: PLC0415

    k = math.cos(math.radians(addresses[0]["lat"]))
    tree = cKDTree([(a["lng"] * k * 111_195.0, a["lat"] * 111_195.0) for a in addresses])
    lines, owners = [], []
    for m in names:
        if address_street(m, streets, addressed):
            for pts in streets[m + "\0lines"]:
                if len(pts) >= 2:
                    lines.append(LineString([(lo * k * 111_195.0, la * 111_195.0) for la, lo in pts]))
                    owners.append(m)
    street_tree = STRtree(lines)
    out: list[dict] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(n * 20):
        if len(out) >= n:
            break
        name = rng.choice(minor)
        on_way = _point_on_way(streets, name, rng)
        if on_way is None:
            continue
        lat, lng = on_way
        lat += rng.uniform(2, 6) / 111_195.0 * rng.choice((-1, 1))
        dists, idx = _k_nearest(tree, (lng * k * 111_195.0, lat * 111_195.0), min(4, len(addresses)))
        best = addresses[idx[0]]["street"] if dists[0] <= 40.0 else None
        if best and any(addresses[j]["street"] != best and d < dists[0] + 5.0 for d, j in zip(dists, idx, strict=True)):
            continue
        p = Point(lng * k * 111_195.0, lat * 111_195.0)
        near = street_tree.query(p, predicate="dwithin", distance=60.0)
        by_street: dict[str, float] = {}
        for j in near:
            by_street[owners[j]] = min(by_street.get(owners[j], math.inf), lines[j].distance(p))
        ranked = sorted(by_street.items(), key=lambda t: t[1])
        if not ranked or ranked[0][1] > 40.0 or (len(ranked) > 1 and ranked[1][1] < ranked[0][1] + 5.0):
            continue
        if best is None:  # no address near: the nearest address street
            best = ranked[0][0]
        elif ranked[0][0] != best:
            continue
        if (name, best) in seen:
            continue  # one question per footway and answer
        seen.add((name, best))
        out.append({"lat": round(lat, 7), "lng": round(lng, 7), "expect_street": best, "kind": "beside_path"})
    return out


def reverse_queries(region: str, rng: random.Random, n: int = 150) -> list[dict]:
    addresses, streets, _places, _pois = read(region)
    addressed = {a["street"] for a in addresses}
    out = []
    rng.shuffle(addresses)
    for a in addresses[:n]:
        out.append(
            {"lat": round(a["lat"], 7), "lng": round(a["lng"], 7), "expect_street": a["street"], "kind": "address"}
        )
    names = [s for s in streets if "\0" not in s]
    rng.shuffle(names)
    from shapely import STRtree  # noqa: PLC0415
    from shapely.geometry import LineString, Point  # noqa: PLC0415

    k = math.cos(math.radians(addresses[0]["lat"] if addresses else 45.0))
    lines, owners = [], []
    for name in names:
        for pts in streets[name + "\0lines"]:
            if len(pts) >= 2:
                lines.append(LineString([(lo * k, la) for la, lo in pts]))
                owners.append(name)
    tree = STRtree(lines)
    for name in names:
        if sum(q["kind"] == "street" for q in out) >= n:
            break
        if not address_street(name, streets, addressed):
            continue  # beside a footway the answer is the address street (beside_path below)
        on_way = _point_on_way(streets, name, rng)
        if on_way is None:
            continue
        lat, lng = on_way
        # 5-10 m beside the street
        off = rng.uniform(5, 10) / 111_195.0
        lat += off * rng.choice((-1, 1)) * 0.7
        # not at a junction: no other street within 15 m (the answer would be a coin toss)
        p = Point(lng * k, lat)
        near = tree.query(p, predicate="dwithin", distance=15.0 / 111_195.0)
        if any(owners[j] != name for j in near):
            continue
        out.append({"lat": round(lat, 7), "lng": round(lng, 7), "expect_street": name, "kind": "street"})
    out += _near_address_queries(addresses, rng, n // 2)
    out += _beside_path_queries(addresses, streets, names, rng, n // 3)
    return out


def _poi_dist(q: tuple[float, float], poi: dict) -> float:
    """Metres from q to a POI: to its outline (0 inside) when it is a closed way, else its point."""
    if not poi.get("outline"):
        return _dist(q, (poi["lat"], poi["lng"]))
    from shapely.geometry import Point, Polygon  # noqa: PLC0415

    k = math.cos(math.radians(q[0])) * 111_195.0
    poly = Polygon([(lng * k, lat * 111_195.0) for lat, lng in poi["outline"]])
    if not poly.is_valid:
        return _dist(q, (poi["lat"], poi["lng"]))
    return poly.distance(Point(q[1] * k, q[0] * 111_195.0))


def nearest_queries(region: str, rng: random.Random, n: int = 100, radius: float = 5000.0) -> list[dict]:
    """A point and an OSM tag; expect the nearest object with that tag (named or not), brute force,
    measured as the service documents: to a node's point, to a closed way's outline (0 inside)."""
    _a, _s, _p, pois = read(region)
    by_tag = defaultdict(list)
    for p in pois:
        for tag in p["tags"]:
            by_tag[tag].append(p)
    tags = sorted(t for t, v in by_tag.items() if len(v) >= 3 and t.split("=")[0] in ("amenity", "shop", "tourism"))
    lats = [p["lat"] for p in pois]
    lngs = [p["lng"] for p in pois]
    out: list[Any] = []
    while len(out) < n:
        tag = rng.choice(tags)
        lat = rng.uniform(min(lats), max(lats))
        lng = rng.uniform(min(lngs), max(lngs))
        ranked = sorted(by_tag[tag], key=lambda p: _poi_dist((lat, lng), p))
        best = ranked[0]
        d0 = _poi_dist((lat, lng), best)
        if d0 > radius * 0.9:
            continue
        if len(ranked) > 1 and _poi_dist((lat, lng), ranked[1]) - d0 < 10.0:
            continue  # a tie within 10 m: not a fair question
        out.append(
            {
                "lat": round(lat, 7),
                "lng": round(lng, 7),
                "category": tag,
                "expect": {"lat": round(best["lat"], 7), "lng": round(best["lng"], 7)},
                "tolerance_m": 25.0,
                "expect_osm": best["osm"],
                "expect_name": best["name"],
                "kind": "nearest",
            }
        )
    return out


def road_nodes(region: str) -> tuple[list[tuple[float, float]], tuple[float, float, float, float]]:
    """Positions of the nodes of car-drivable ways, and the bounding box of every node."""
    pts: list[tuple[float, float]] = []
    box = [math.inf, math.inf, -math.inf, -math.inf]
    fp = osmium.FileProcessor(str(SAMPLES / f"{region}.osm.pbf")).with_locations()
    for o in fp:
        if isinstance(o, osmium.osm.Node) and o.location.valid():
            lat, lng = o.location.lat, o.location.lon
            box = [min(box[0], lat), min(box[1], lng), max(box[2], lat), max(box[3], lng)]
        if not isinstance(o, osmium.osm.Way) or o.tags.get("highway") not in CAR_HIGHWAYS:
            continue
        access = o.tags.get("motor_vehicle") or o.tags.get("vehicle") or o.tags.get("access")
        if access in CAR_DENIED or o.tags.get("area") == "yes":
            continue
        pts.extend((n.location.lat, n.location.lon) for n in o.nodes if n.location.valid())
    return sorted(set(pts)), (box[0], box[1], box[2], box[3])


def route_pairs(region: str, rng: random.Random, n: int = 1000, n_edge: int = 300) -> list[dict]:
    """Random pairs of road nodes ("random"), and pairs with one end within EDGE_BAND_M of the
    extract's border ("near_edge": hills and clipped roads, where the network splits first)."""
    nodes, (s, w, n_, e) = road_nodes(region)

    def border_m(p: tuple[float, float]) -> float:
        return min(_dist(p, (s, p[1])), _dist(p, (n_, p[1])), _dist(p, (p[0], w)), _dist(p, (p[0], e)))

    near = [p for p in nodes if border_m(p) <= EDGE_BAND_M]
    out = []
    for _ in range(n):
        a, b = rng.sample(nodes, 2)
        out.append(
            {
                "origin": [round(a[0], 7), round(a[1], 7)],
                "destination": [round(b[0], 7), round(b[1], 7)],
                "kind": "random",
            }
        )
    for _ in range(n_edge if near else 0):
        a, b = rng.choice(near), rng.choice(nodes)
        out.append(
            {
                "origin": [round(a[0], 7), round(a[1], 7)],
                "destination": [round(b[0], 7), round(b[1], 7)],
                "kind": "near_edge",
            }
        )
    return out


AREA_TAGS = ("leisure=park", "leisure=garden", "leisure=playground", "leisure=pitch", "amenity=parking")


def read_areas(region: str) -> dict[str, list[tuple[str, BaseGeometry]]]:
    """Tag -> [(osm id 'w1'/'r1', shapely polygon in lng/lat)] of the areas (closed ways and
    multipolygons) and ('n1', point) of the nodes carrying one of AREA_TAGS."""
    import shapely  # noqa: PLC0415
    from osmium.geom import WKBFactory  # noqa: PLC0415

    wkb = WKBFactory()
    out: dict[str, list[tuple[str, BaseGeometry]]] = defaultdict(list)
    fp = osmium.FileProcessor(str(SAMPLES / f"{region}.osm.pbf")).with_locations().with_areas()
    geom: BaseGeometry
    for o in fp:
        if isinstance(o, osmium.osm.Changeset):
            continue
        tags = [f"{k}={o.tags[k]}" for k in ("leisure", "amenity") if k in o.tags]
        tags = [t for t in tags if t in AREA_TAGS]
        if not tags:
            continue
        if isinstance(o, osmium.osm.Node):
            geom, oid = shapely.Point(o.location.lon, o.location.lat), f"n{o.id}"
        elif isinstance(o, osmium.osm.Way):  # a closed way: its ring of known nodes (an extract may cut it)
            pts = [(n.location.lon, n.location.lat) for n in o.nodes if n.location.valid()]
            if len(pts) < 4 or o.nodes[0].ref != o.nodes[-1].ref:
                continue
            geom, oid = shapely.Polygon(pts), f"w{o.id}"
            if not geom.is_valid:
                continue
        elif isinstance(o, osmium.osm.Area) and not o.from_way():
            try:
                geom = shapely.from_wkb(bytes.fromhex(wkb.create_multipolygon(o)))
            except Exception:  # noqa: BLE001 - a broken multipolygon: not a fair question
                continue
            oid = ("w" if o.from_way() else "r") + str(o.orig_id())
        else:
            continue
        for t in tags:
            out[t].append((oid, geom))
    return out


def area_nearest_queries(region: str, rng: random.Random, n: int = 60, radius: float = 5000.0) -> list[dict]:
    """A point and an area tag (parks, parkings...): expect the nearest by distance to the area's
    outline (0 inside), not to its centroid; nodes with the tag by their point."""
    import shapely  # noqa: PLC0415

    areas = {t: v for t, v in read_areas(region).items() if len(v) >= 3}
    if not areas:
        return []
    allpts = [g.centroid for v in areas.values() for _, g in v]
    lat0 = sum(p.y for p in allpts) / len(allpts)
    k = math.cos(math.radians(lat0)) * 111_195.0

    def metric(coords):
        return coords * [k, 111_195.0]

    lats, lngs = [p.y for p in allpts], [p.x for p in allpts]
    tags = sorted(areas)
    out: list[dict] = []
    while len(out) < n:
        tag = rng.choice(tags)
        lat, lng = rng.uniform(min(lats), max(lats)), rng.uniform(min(lngs), max(lngs))
        q = shapely.Point(lng * k, lat * 111_195.0)
        ranked = sorted((shapely.transform(g, metric).distance(q), oid, g) for oid, g in areas[tag])
        d0, oid, g = ranked[0]
        if d0 > radius * 0.9 or (len(ranked) > 1 and ranked[1][0] - d0 < 10.0):
            continue
        c = g.centroid if g.geom_type == "Point" else g.representative_point()
        out.append(
            {
                "lat": round(lat, 7),
                "lng": round(lng, 7),
                "category": tag,
                "expect": {"lat": round(c.y, 7), "lng": round(c.x, 7)},
                "tolerance_m": 25.0,
                "expect_osm": oid,
                "expect_distance_m": round(d0, 1),
                "kind": "area",
            }
        )
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", nargs="*", default=["monaco", "helsinki"])
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for region in args.regions:
        for kind, fn in (
            ("geocode", geocode_queries),
            ("suggest", suggest_queries),
            ("reverse", reverse_queries),
            ("nearest", lambda region, rng: nearest_queries(region, rng) + area_nearest_queries(region, rng)),
            ("routes", route_pairs),
        ):
            rng = random.Random(f"{region}-{kind}-1")
            items = fn(region, rng)
            path = OUT / f"{region}-{kind}.json"
            path.write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            kinds: defaultdict[Any, int] = defaultdict(int)
            for it in items:
                kinds[it.get("kind", kind)] += 1
            print(f"{path.relative_to(PROJECT_ROOT)}: {len(items)} {dict(kinds)}")


if __name__ == "__main__":
    main()
