"""Geocoding on the bundled samples, checked against coordinates read from the PBF here."""

from __future__ import annotations

import osmium
import pytest

from config.settings import PROJECT_ROOT
from engine.errors import InvalidParameter
from engine.geo import haversine_m
from engine.services.geocoding import GeocodeParams, run

SAMPLES = PROJECT_ROOT / "data" / "samples"


def _addresses(region: str, street: str, number: str) -> list[tuple[float, float]]:
    """Every location in the PBF tagged with that street and number (nodes; ways: node mean)."""
    found = []
    fp = osmium.FileProcessor(str(SAMPLES / f"{region}.osm.pbf")).with_locations()
    for o in fp:
        tags = o.tags
        if tags.get("addr:street") != street:
            continue
        if number not in [n.strip() for n in (tags.get("addr:housenumber") or "").split(";")]:
            continue
        if isinstance(o, osmium.osm.Node):
            found.append((o.location.lat, o.location.lon))
        elif isinstance(o, osmium.osm.Way):
            pts = [(n.location.lat, n.location.lon) for n in o.nodes if n.location.valid()]
            if pts:
                found.append((sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)))
    return found


def _top(datasets, **kw) -> dict:
    result = run(datasets, GeocodeParams(**kw))
    assert result["candidates"], f"no candidate for {kw}"
    return result["candidates"][0]


@pytest.mark.parametrize(
    "region,query,street,number,country",
    [
        ("helsinki", "Mannerheimintie 5, Helsinki", "Mannerheimintie", "5", "FIN"),
        ("helsinki", "Aleksanterinkatu 52", "Aleksanterinkatu", "52", "FIN"),
        ("monaco", "6 Quai Antoine 1er, Monaco", "Quai Antoine 1er", "6", "MCO"),
    ],
)
def test_exact_address_within_30m(datasets, region, query, street, number, country):
    truth = _addresses(region, street, number)
    assert truth, "the sample must hold the address"
    top = _top(datasets, query=query)
    assert top["type"] == "address" and not top["interpolated"]
    assert top["address"]["street"] == street and top["address"]["number"] == number
    assert top["address"]["country"] == country
    assert top["region"] == region
    d = min(haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng) for lat, lng in truth)
    assert d <= 30.0, f"{query}: {d:.0f} m from the tagged building"
    assert 0.0 < top["score"] <= 1.0


def test_candidate_shape(datasets):
    top = _top(datasets, query="Mannerheimintie 5, Helsinki")
    assert set(top) >= {"id", "type", "score", "interpolated", "name", "address", "coord", "osm", "region"}
    assert set(top["address"]) == {"country", "city", "district", "street", "number", "postcode"}
    assert top["address"]["city"] == "Helsinki"
    assert top["osm"]["type"] in ("node", "way", "relation") and top["osm"]["id"] > 0
    assert isinstance(top["id"], str)


@pytest.mark.parametrize(
    "query",
    [
        "mannerheimintie 5",
        "Mannerheimintie 5 Helsinki",
        "5 Mannerheimintie",
        "Manerheimintie 5",
        "Mannerheimintie 5 00100",
        "MANNERHEIMINTIE 5, HELSINKI",
    ],
)
def test_free_text_variants_find_the_same_building(datasets, query):
    truth = _addresses("helsinki", "Mannerheimintie", "5")
    top = _top(datasets, query=query)
    d = min(haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng) for lat, lng in truth)
    assert d <= 30.0, (query, top)


def test_structured_and_abbreviated(datasets):
    truth = _addresses("helsinki", "Aleksanterinkatu", "52")
    for kw in (
        {"street": "Aleksanterinkatu", "number": "52", "city": "Helsinki"},
        {"query": "Aleksanterink. 52"},
        {"query": "Aleksantrinkatu 52"},  # one typo
    ):
        top = _top(datasets, **kw)
        assert top["type"] == "address", kw
        d = min(haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng) for lat, lng in truth)
        assert d <= 30.0, (kw, top)


def test_diacritics_and_saint_abbreviation(datasets):
    assert _top(datasets, query="Ste Devote")["name"] == "Sainte-Dévote"
    assert _top(datasets, query="Sainte Devote")["name"] == "Sainte-Dévote"
    assert _top(datasets, query="Etela Esplanadi")["name"] == "Eteläesplanadi"
    assert _top(datasets, query="Bd des Moulins")["name"] == "Boulevard des Moulins"


def test_country_filter_and_bbox(datasets):
    assert run(datasets, GeocodeParams(query="Mannerheimintie 5", country="MC"))["candidates"] == []
    assert _top(datasets, query="Mannerheimintie 5", country="fi")["address"]["country"] == "FIN"
    far_box = (7.40, 43.72, 7.45, 43.75)  # Monaco
    assert run(datasets, GeocodeParams(query="Mannerheimintie 5", bbox=far_box))["candidates"] == []
    with pytest.raises(InvalidParameter) as err:
        run(datasets, GeocodeParams(query="x", country="ZZ"))
    assert err.value.parameter == "country"


def test_no_match_is_empty(datasets):
    assert run(datasets, GeocodeParams(query="qwxzyv plorkk"))["candidates"] == []


def test_interpolated_number_between_known_ones(datasets):
    """A number missing from the data lies between its known neighbours on the street."""
    idx = datasets.get("helsinki").search
    rows = idx.execute(
        "SELECT hn_norm, lat, lng FROM features WHERE type='address' AND street_key='aleksanterinkatu'"
    ).fetchall()
    known = {int(h): (lat, lng) for h, lat, lng in rows if h.isdigit()}
    evens = sorted(n for n in known if n % 2 == 0)
    gap = next((a, b) for a, b in zip(evens, evens[1:], strict=False) if b - a >= 4)
    missing = gap[0] + 2
    top = _top(datasets, query=f"Aleksanterinkatu {missing}")
    assert top["type"] == "address" and top["interpolated"] is True
    assert top["address"]["number"] == str(missing)
    (la, lo), (lb, lob) = known[gap[0]], known[gap[1]]
    span = haversine_m(la, lo, lb, lob)
    da = haversine_m(top["coord"]["lat"], top["coord"]["lng"], la, lo)
    db = haversine_m(top["coord"]["lat"], top["coord"]["lng"], lb, lob)
    assert da <= span + 20 and db <= span + 20
    exact = _top(datasets, query=f"Aleksanterinkatu {gap[0]}")
    assert exact["score"] > top["score"]


def test_ranking_number_before_street_before_poi(datasets):
    cands = run(datasets, GeocodeParams(query="Aleksanterinkatu 52", limit=10))["candidates"]
    types = [c["type"] for c in cands]
    assert types[0] == "address"
    scores = [c["score"] for c in cands]
    assert scores == sorted(scores, reverse=True)


def test_duplicates_do_not_crowd_the_top(datasets):
    cands = run(datasets, GeocodeParams(query="Mannerheimintie 5", limit=5))["candidates"]
    keys = [(c["type"], c["address"]["street"], c["address"]["number"]) for c in cands if c["type"] == "address"]
    assert len(keys) == len(set(keys))


def _all_addresses(region: str) -> list[tuple[str, str, float, float]]:
    out = []
    fp = osmium.FileProcessor(str(SAMPLES / f"{region}.osm.pbf")).with_locations()
    for o in fp:
        t = o.tags
        if "addr:housenumber" in t and "addr:street" in t and "entrance" not in t and isinstance(o, osmium.osm.Node):
            out.append((t["addr:street"], t["addr:housenumber"], o.location.lat, o.location.lon))
    return out


def test_number_inside_the_street_name(datasets):
    """'Avenue du 3 Septembre 126': the house number is the other number (regression)."""
    cases = [a for a in _all_addresses("monaco") if any(ch.isdigit() for ch in a[0])]
    assert cases, "the Monaco sample has streets named with a number"
    for street, number, lat, lng in cases[:5]:
        top = _top(datasets, query=f"{street} {number}")
        d = haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng)
        assert d <= 60.0, (street, number, top)


def test_house_number_ranges_and_letters(datasets):
    cases = [a for a in _all_addresses("helsinki") + _all_addresses("monaco") if "-" in a[1] or a[1][-1:].isalpha()]
    assert cases
    for street, number, lat, lng in cases[:8]:
        top = _top(datasets, query=f"{street} {number}")
        d = haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng)
        assert d <= 60.0, (street, number, top)


def test_two_typos_in_a_long_word(datasets):
    truth = _addresses("helsinki", "Aleksanterinkatu", "52")
    top = _top(datasets, query="Aleksatneriakatu 52")  # a swap and a substitution
    d = min(haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng) for lat, lng in truth)
    assert d <= 30.0


def test_near_biases_between_same_named_streets(datasets):
    idx = datasets.get("monaco").search
    rows = idx.execute(
        "SELECT street_key, lat, lng FROM features WHERE type='street' AND street_key IN "
        "(SELECT street_key FROM features WHERE type='street' GROUP BY street_key HAVING COUNT(*) > 1)"
    ).fetchall()
    assert rows, "the Monaco sample has same-named streets in different places"
    key, lat, lng = rows[0]
    name = idx.execute("SELECT name FROM features WHERE street_key=? LIMIT 1", (key,)).fetchone()[0]
    top = _top(datasets, query=name, near=(lat, lng))
    assert haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng) < 50.0


def test_swedish_and_other_name_variants(datasets):
    """Every name:xx / alt_name of a street finds that street (variants read from the PBF)."""
    variants = {}
    for o in osmium.FileProcessor(str(SAMPLES / "helsinki.osm.pbf")).with_locations():
        t = o.tags
        if (
            isinstance(o, osmium.osm.Way)
            and t.get("highway")
            and t.get("name")
            and t.get("name:sv")
            and t["name:sv"] != t["name"]
        ):
            pts = [(n.location.lat, n.location.lon) for n in o.nodes if n.location.valid()]
            variants.setdefault(t["name:sv"], (t["name"], pts))
    assert len(variants) >= 5
    for sv, (fi, pts) in list(variants.items())[:8]:
        top = _top(datasets, query=sv)
        assert top["name"] == fi, (sv, top)
        assert min(haversine_m(top["coord"]["lat"], top["coord"]["lng"], a, b) for a, b in pts) < 1500
        assert _top(datasets, query=sv, lang="sv")["name"] == sv


def test_postcode_only(datasets):
    """A bare postcode: the middle of the addresses tagged with it (computed here from the PBF)."""
    pts = []
    for o in osmium.FileProcessor(str(SAMPLES / "helsinki.osm.pbf"), osmium.osm.NODE):
        if o.tags.get("addr:postcode") == "00100":
            pts.append((o.location.lat, o.location.lon))
    assert pts
    top = _top(datasets, postcode="00100")
    assert top["address"]["postcode"] == "00100" and top["address"]["country"] == "FIN"
    lat = sum(p[0] for p in pts) / len(pts)
    lng = sum(p[1] for p in pts) / len(pts)
    assert haversine_m(top["coord"]["lat"], top["coord"]["lng"], lat, lng) < 500
    assert run(datasets, GeocodeParams(query="00100", country="MC"))["candidates"] == []
