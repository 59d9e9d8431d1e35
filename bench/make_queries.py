"""Build the search quality query sets from the sample PBFs (read with osmium, not with Meridian's
index, so that the answers do not depend on the code under test).

    python -m bench.make_queries            # writes bench/data/<region>-{geocode,suggest,reverse,nearest}.json

Geocoding kinds: exact ("street number, city"), lowercase, no_city, number_first, postcode,
no_diacritics, abbreviation, typo1, typo2, structured, street, place, poi, name_variant.
A query's ``expect`` is the tagged object's location (a way: the mean of its nodes).
Deterministic (fixed seed); the outputs are committed.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections import defaultdict
from typing import Any

import osmium
from unidecode import unidecode

from config.settings import PROJECT_ROOT

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
            continue
        lat, lng = _mean(pts)
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


def reverse_queries(region: str, rng: random.Random, n: int = 150) -> list[dict]:
    addresses, streets, _places, _pois = read(region)
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
        way = rng.choice(streets[name + "\0lines"])
        if len(way) < 2:
            continue
        i = rng.randrange(len(way) - 1)
        (la, lo), (lb, lob) = way[i], way[i + 1]
        f = rng.random()
        lat, lng = la + f * (lb - la), lo + f * (lob - lo)
        # 5-10 m beside the street
        off = rng.uniform(5, 10) / 111_195.0
        lat += off * rng.choice((-1, 1)) * 0.7
        # not at a junction: no other street within 15 m (the answer would be a coin toss)
        p = Point(lng * k, lat)
        near = tree.query(p, predicate="dwithin", distance=15.0 / 111_195.0)
        if any(owners[j] != name for j in near):
            continue
        out.append({"lat": round(lat, 7), "lng": round(lng, 7), "expect_street": name, "kind": "street"})
    return out


def nearest_queries(region: str, rng: random.Random, n: int = 100, radius: float = 5000.0) -> list[dict]:
    """A point and an OSM tag; expect the nearest object with that tag (named or not), brute force."""
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
        ranked = sorted(by_tag[tag], key=lambda p: _dist((lat, lng), (p["lat"], p["lng"])))
        best = ranked[0]
        d0 = _dist((lat, lng), (best["lat"], best["lng"]))
        if d0 > radius * 0.9:
            continue
        if len(ranked) > 1 and _dist((lat, lng), (ranked[1]["lat"], ranked[1]["lng"])) - d0 < 10.0:
            continue  # a tie within the precision of a centroid: not a fair question
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
            ("nearest", nearest_queries),
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
