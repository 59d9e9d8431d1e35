"""Suggest, reverse geocoding, POI search, categories and nearest on the bundled samples.

Expected answers are computed in the test from the PBF (osmium) or from plain brute force over
all features, never hard-coded.
"""

from __future__ import annotations

import osmium
import pytest

from config.settings import PROJECT_ROOT
from engine.categories import BY_ID, categorize
from engine.errors import InvalidParameter
from engine.geo import haversine_m
from engine.services import poi, proximity, reverse_geocoding, suggest

SAMPLES = PROJECT_ROOT / "data" / "samples"


def _nodes(region: str, pred) -> list[tuple[float, float, dict]]:
    out = []
    for o in osmium.FileProcessor(str(SAMPLES / f"{region}.osm.pbf"), osmium.osm.NODE):
        if isinstance(o, osmium.osm.Node) and len(o.tags) and pred(o.tags):
            out.append((o.location.lat, o.location.lon, dict(o.tags)))
    return out


def test_suggest_prefixes_and_typos(datasets):
    for prefix in ("mann", "Manner", "mannerheimint", "mannerhiemintie"):
        texts = [s["text"] for s in suggest.run(datasets, suggest.SuggestParams(q=prefix, limit=5))["suggestions"]]
        assert any(t.startswith("Mannerheimintie") for t in texts), (prefix, texts)
    res = suggest.run(datasets, suggest.SuggestParams(q="bd des moul", limit=5))["suggestions"]
    assert res[0]["text"].startswith("Boulevard des Moulins")
    s = res[0]
    assert set(s) >= {"text", "type", "coord", "address"} and s["type"] == "street"
    assert suggest.run(datasets, suggest.SuggestParams(q="m"))["suggestions"] == []


def test_suggest_number_gives_the_address(datasets):
    res = suggest.run(datasets, suggest.SuggestParams(q="Aleksanterinkatu 52", limit=5))["suggestions"]
    assert res[0]["type"] == "address" and res[0]["text"].startswith("Aleksanterinkatu 52")


def test_reverse_finds_the_tagged_address_nearby(datasets):
    addrs = _nodes("helsinki", lambda t: "addr:housenumber" in t and "addr:street" in t and "entrance" not in t)
    assert len(addrs) > 50
    hits = 0
    for lat, lng, tags in addrs[:40]:
        res = reverse_geocoding.run(datasets, reverse_geocoding.ReverseParams(lat=lat, lng=lng, radius=50))
        top = res["candidates"][0]
        assert top["distance"] <= 50
        if top["address"]["street"] == tags["addr:street"]:
            hits += 1
        assert res["admin"] and res["admin"][0]["level"] == 2
    assert hits >= 36


def test_reverse_at_sea_or_outside_is_empty(datasets):
    sea = reverse_geocoding.run(datasets, reverse_geocoding.ReverseParams(lat=43.70, lng=7.45))
    assert sea == {"candidates": [], "admin": []}
    far = reverse_geocoding.run(datasets, reverse_geocoding.ReverseParams(lat=0.0, lng=0.0))
    assert far == {"candidates": [], "admin": []}


def test_reverse_admin_hierarchy(datasets):
    res = reverse_geocoding.run(datasets, reverse_geocoding.ReverseParams(lat=43.7329, lng=7.4258))
    levels = {a["level"]: a["name"] for a in res["admin"]}
    assert levels[2] == "Monaco" and levels[8] == "Monaco" and 10 in levels
    assert res["candidates"][0]["address"]["country"] == "MCO"


def test_nearest_matches_brute_force(datasets):
    pharmacies = _nodes("helsinki", lambda t: categorize(t) == "pharmacy")
    assert pharmacies
    lat, lng = 60.1695, 24.9401
    res = proximity.run(datasets, proximity.NearestParams(lat=lat, lng=lng, categories=("pharmacy",), limit=3))
    got = [r["distance"] for r in res["results"]]
    assert got == sorted(got) and len(got) == 3
    truth = sorted(haversine_m(lat, lng, a, b) for a, b, _ in pharmacies)
    assert abs(got[0] - truth[0]) < 1.0  # nodes only in truth: ours may be nearer (ways)
    assert all(r["category"] == "pharmacy" for r in res["results"])


def test_nearest_unknown_category_names_it(datasets):
    with pytest.raises(InvalidParameter) as err:
        proximity.run(datasets, proximity.NearestParams(lat=60.17, lng=24.94, categories=("nope",)))
    assert err.value.parameter == "categories" and "nope" in err.value.message


def test_nearest_raw_tag_and_radius(datasets):
    res = proximity.run(
        datasets, proximity.NearestParams(lat=60.1695, lng=24.9401, categories=("amenity=cafe",), limit=5, radius=300)
    )
    assert res["results"] and all(r["distance"] <= 300 for r in res["results"])


def test_poi_search_paginates_with_total(datasets):
    params = dict(category="cafe", near=(60.1695, 24.9401), radius=1000.0)
    first = poi.run(datasets, poi.PoiParams(limit=5, offset=0, **params))
    second = poi.run(datasets, poi.PoiParams(limit=5, offset=5, **params))
    assert first["total"] == second["total"] > 10
    ids = [p["id"] for p in first["pois"]] + [p["id"] for p in second["pois"]]
    assert len(set(ids)) == 10
    dists = [p["distance"] for p in first["pois"] + second["pois"]]
    assert dists == sorted(dists) and dists[-1] <= 1000


def test_poi_by_name_and_category(datasets):
    res = poi.run(datasets, poi.PoiParams(q="Stockmann"))
    assert res["pois"] and "Stockmann" in res["pois"][0]["name"]
    raw = poi.run(datasets, poi.PoiParams(category="amenity=pharmacy", bbox=(24.93, 60.16, 24.96, 60.18)))
    assert raw["total"] >= 1 and all(p["category"] == "pharmacy" for p in raw["pois"])


def test_categories_listing_counts(datasets):
    cats = poi.categories(datasets)["categories"]
    ids = [c["id"] for c in cats]
    for cid in ("fuel", "restaurant", "cafe", "pharmacy", "hospital", "atm", "bank", "parking", "hotel", "supermarket"):
        assert cid in ids and cid in BY_ID
    counts = {c["id"]: c["counts"] for c in cats}
    assert counts["restaurant"]["helsinki"] > 0 and counts["restaurant"]["monaco"] > 0


def test_suggest_typo_in_the_word_being_typed(datasets):
    res = suggest.run(datasets, suggest.SuggestParams(q="aleksamterink", limit=5))["suggestions"]
    assert any(s["text"].startswith("Aleksanterinkatu") for s in res)


def test_suggest_prefix_is_not_an_abbreviation(datasets):
    """'Parking Pl' is someone typing 'Parking Pl...', not 'Parking Place'."""
    res = suggest.run(datasets, suggest.SuggestParams(q="Parking Pl", limit=5))["suggestions"]
    assert res and res[0]["text"].startswith("Parking Pl")
    assert all(not s["text"].startswith("Parking Place") for s in res)


def test_reverse_inside_a_building_gives_its_address(datasets):
    """A point inside an addressed building outline: that building's address, distance 0."""
    found = 0
    for o in osmium.FileProcessor(str(SAMPLES / "helsinki.osm.pbf")).with_locations():
        if not (isinstance(o, osmium.osm.Way) and "building" in o.tags and "addr:street" in o.tags):
            continue
        import shapely  # noqa: PLC0415

        pts = [(n.location.lon, n.location.lat) for n in o.nodes if n.location.valid()]
        if len(pts) < 4 or pts[0] != pts[-1]:
            continue
        inner = shapely.Polygon(pts).representative_point()
        res = reverse_geocoding.run(datasets, reverse_geocoding.ReverseParams(lat=inner.y, lng=inner.x))
        top = res["candidates"][0]
        assert top["address"]["street"] == o.tags["addr:street"], (o.id, top)
        found += 1
        if found >= 10:
            break
    assert found >= 5


def test_nearest_unnamed_raw_tag_matches_brute_force(datasets):
    benches = _nodes("helsinki", lambda t: t.get("amenity") == "bench")
    assert benches
    lat, lng = 60.1700, 24.9450
    res = proximity.run(datasets, proximity.NearestParams(lat=lat, lng=lng, categories=("amenity=bench",), limit=1))
    best = min(haversine_m(lat, lng, a, b) for a, b, _ in benches)
    assert res["results"] and abs(res["results"][0]["distance"] - best) < 1.0


def test_suggest_near_prefers_the_close_one(datasets):
    """Two streets named 'Rue Grimaldi' (Monaco, Roquebrune): near picks the one close by."""
    idx = datasets.get("monaco").search
    rows = idx.execute(
        "SELECT lat, lng, city FROM features WHERE type='street' AND street_key='rue grimaldi'"
    ).fetchall()
    cities = {r[2] for r in rows}
    assert len(cities) >= 2
    for lat, lng, city in rows:
        res = suggest.run(datasets, suggest.SuggestParams(q="Rue Grimal", limit=3, near=(lat, lng)))["suggestions"]
        assert res[0]["address"]["city"] == city, (city, res[0])
