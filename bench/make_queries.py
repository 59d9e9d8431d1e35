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
from pathlib import Path

import osmium
from unidecode import unidecode

from config.settings import PROJECT_ROOT

SAMPLES = PROJECT_ROOT / "data" / "samples"
OUT = PROJECT_ROOT / "bench" / "data"
REGION_CITY = {"monaco": "Monaco", "helsinki": "Helsinki"}
POI_KEYS = ("amenity", "shop", "tourism", "leisure", "historic", "office")
ABBREV = [
    ("Boulevard ", "Bd "), ("Avenue ", "Av. "), ("Sainte-", "Ste "), ("Saint-", "St "),
    ("Sainte ", "Ste "), ("Saint ", "St "), ("Place ", "Pl. "), ("Chemin ", "Ch. "), ("Route ", "Rte "),
]
FI_SUFFIX = [("katu", "k."), ("tie", "t.")]


def _mean(pts):
    return sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)


def read(region: str):
    addresses, streets, places, pois = [], defaultdict(list), [], []
    fp = osmium.FileProcessor(str(SAMPLES / f"{region}.osm.pbf")).with_locations()
    for o in fp:
        t = o.tags
        if len(t) == 0:
            continue
        if o.is_node():
            pts = [(o.location.lat, o.location.lon)]
        elif o.is_way():
            pts = [(n.location.lat, n.location.lon) for n in o.nodes if n.location.valid()]
            if not pts:
                continue
        else:
            continue
        name = t.get("name")
        if o.is_way() and t.get("highway") and name:
            streets[name].extend(pts)
            streets[name + "\0variants"].append({k: v for k, v in t if k.startswith("name:")})
            continue
        lat, lng = _mean(pts)
        if t.get("addr:housenumber") and t.get("addr:street") and "entrance" not in t:
            number = t["addr:housenumber"].split(";")[0].strip()
            addresses.append({"street": t["addr:street"], "number": number, "lat": lat, "lng": lng,
                              "postcode": t.get("addr:postcode"), "city": t.get("addr:city")})
        if name and t.get("place"):
            places.append({"name": name, "lat": lat, "lng": lng})
        elif name and any(k in t for k in POI_KEYS):
            cat = next(f"{k}={t[k]}" for k in POI_KEYS if k in t)
            pois.append({"name": name, "lat": lat, "lng": lng, "tag": cat})
    return addresses, streets, places, pois


def typo(word: str, rng: random.Random) -> str:
    """One edit inside a word (not its first letter): substitution, deletion, transposition."""
    if len(word) < 5:
        return word
    i = rng.randrange(1, len(word) - 1)
    op = rng.choice(("sub", "del", "swap"))
    if op == "sub":
        c = rng.choice([x for x in "aeioustnrlk" if x != word[i].lower()])
        return word[:i] + c + word[i + 1:]
    if op == "del":
        return word[:i] + word[i + 1:]
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


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
        out.append({"query": query, "expect": {"lat": round(lat, 7), "lng": round(lng, 7)},
                    "tolerance_m": tol, "kind": kind, **extra})

    picks = uniq[: n_per_kind * 3]
    for i, a in enumerate(picks[:n_per_kind]):
        add(f"{a['street']} {a['number']}, {a['city'] or city}", a["lat"], a["lng"], "exact")
    for a in picks[n_per_kind: 2 * n_per_kind]:
        add(f"{a['street']} {a['number']}".lower(), a["lat"], a["lng"], "lowercase")
    for a in picks[2 * n_per_kind:]:
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
    for a in uniq[n_per_kind: 2 * n_per_kind]:
        add(f"{typo_text(a['street'], rng, 2)} {a['number']}", a["lat"], a["lng"], "typo2")
    for a in uniq[2 * n_per_kind: 3 * n_per_kind]:
        add(f"{a['street']} {a['number']}", a["lat"], a["lng"], "structured",
            structured={"street": a["street"], "number": a["number"], "city": a["city"] or city})
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
    seen = set()
    for v, name in variants:
        if v in seen or len(seen) >= n_per_kind:
            continue
        seen.add(v)
        pts = streets[name]
        c = _mean(pts)
        ext = max(_dist(c, p) for p in pts)
        if ext <= 1500:
            add(v, c[0], c[1], "name_variant", tol=max(60.0, ext + 30.0))
    counts = defaultdict(int)
    for p in pois:
        counts[p["name"]] += 1
    upois = [p for p in pois if counts[p["name"]] == 1 and len(p["name"]) >= 4]
    rng.shuffle(upois)
    for p in upois[:n_per_kind]:
        add(p["name"], p["lat"], p["lng"], "poi", tol=60.0)
    pcount = defaultdict(int)
    for p in places:
        pcount[p["name"]] += 1
    for p in [p for p in places if pcount[p["name"]] == 1][:n_per_kind]:
        add(p["name"], p["lat"], p["lng"], "place", tol=1000.0)
    return out


def _dist(a, b) -> float:
    dy = (a[0] - b[0]) * 111_195.0
    dx = (a[1] - b[1]) * 111_195.0 * math.cos(math.radians(a[0]))
    return math.hypot(dx, dy)


def suggest_queries(region: str, rng: random.Random, n: int = 200) -> list[dict]:
    _addresses, streets, places, pois = read(region)
    names = [s for s in streets if "\0" not in s and len(s) >= 6]
    names += [p["name"] for p in pois if len(p["name"]) >= 6]
    names += [p["name"] for p in places if len(p["name"]) >= 5]
    names = sorted(set(names))
    rng.shuffle(names)
    out = []
    for name in names[:n]:
        k = rng.randint(3, min(10, len(name) - 1))
        prefix = name[:k]
        out.append({"prefix": prefix, "expect_text": name, "kind": "prefix"})
    for name in names[n: n + n // 4]:
        k = rng.randint(6, min(12, len(name)))
        out.append({"prefix": typo(name[:k], rng) if k >= 6 else name[:k], "expect_text": name,
                    "kind": "prefix_typo"})
    return out


def reverse_queries(region: str, rng: random.Random, n: int = 150) -> list[dict]:
    addresses, streets, _places, _pois = read(region)
    out = []
    rng.shuffle(addresses)
    for a in addresses[:n]:
        out.append({"lat": round(a["lat"], 7), "lng": round(a["lng"], 7), "expect_street": a["street"],
                    "kind": "address"})
    names = [s for s in streets if "\0" not in s]
    rng.shuffle(names)
    for name in names[:n]:
        pts = streets[name]
        if len(pts) < 2:
            continue
        i = rng.randrange(len(pts) - 1)
        (la, lo), (lb, lob) = pts[i], pts[i + 1]
        f = rng.random()
        lat, lng = la + f * (lb - la), lo + f * (lob - lo)
        # 5-10 m beside the street
        off = rng.uniform(5, 10) / 111_195.0
        lat += off * rng.choice((-1, 1)) * 0.7
        out.append({"lat": round(lat, 7), "lng": round(lng, 7), "expect_street": name, "kind": "street"})
    return out


def nearest_queries(region: str, rng: random.Random, n: int = 100) -> list[dict]:
    """A point and a category; expect the nearest tagged node/way of that OSM tag (brute force)."""
    _a, _s, _p, pois = read(region)
    by_tag = defaultdict(list)
    for p in pois:
        by_tag[p["tag"]].append(p)
    tags = [t for t, v in by_tag.items() if len(v) >= 3 and t.split("=")[0] in ("amenity", "shop", "tourism")]
    lats = [p["lat"] for p in pois]
    lngs = [p["lng"] for p in pois]
    out = []
    for _ in range(n):
        tag = rng.choice(sorted(tags))
        lat = rng.uniform(min(lats), max(lats))
        lng = rng.uniform(min(lngs), max(lngs))
        best = min(by_tag[tag], key=lambda p: _dist((lat, lng), (p["lat"], p["lng"])))
        out.append({"lat": round(lat, 7), "lng": round(lng, 7), "category": tag,
                    "expect": {"lat": round(best["lat"], 7), "lng": round(best["lng"], 7)},
                    "tolerance_m": 10.0, "expect_name": best["name"]})
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", nargs="*", default=["monaco", "helsinki"])
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for region in args.regions:
        for kind, fn in (("geocode", geocode_queries), ("suggest", suggest_queries),
                         ("reverse", reverse_queries), ("nearest", nearest_queries)):
            rng = random.Random(f"{region}-{kind}-1")
            items = fn(region, rng)
            path = OUT / f"{region}-{kind}.json"
            path.write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            kinds = defaultdict(int)
            for it in items:
                kinds[it.get("kind", kind)] += 1
            print(f"{path.relative_to(PROJECT_ROOT)}: {len(items)} {dict(kinds)}")


if __name__ == "__main__":
    main()
