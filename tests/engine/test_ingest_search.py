"""The admin and search import stages on the samples, compared with the PBF read here."""

from __future__ import annotations

import json
import sqlite3

import osmium

from config.settings import PROJECT_ROOT
from engine import layout
from engine.geo import LocalProjection
from engine.ingest import search_reading
from engine.ingest.search_addresses import STRING_COLUMNS
from engine.search.normalize import normalize, tokens

SAMPLES = PROJECT_ROOT / "data" / "samples"


def _version(data_dir, region):
    return layout.current_link(data_dir, region).resolve()


def test_manifest_counts_and_bbox(data_dir):
    for region in ("monaco", "helsinki"):
        manifest = json.loads((_version(data_dir, region) / layout.MANIFEST).read_text())
        counts = manifest["counts"]
        for key in ("admin_areas", "addresses", "streets", "places", "pois"):
            assert counts[key] > 0, (region, key)
        min_lng, min_lat, max_lng, max_lat = manifest["bbox"]
        assert min_lng < max_lng and min_lat < max_lat


def test_every_tagged_street_is_searchable(data_dir):
    """Every addr:street of the PBF is a street feature of the index."""
    streets = set()
    for o in osmium.FileProcessor(str(SAMPLES / "helsinki.osm.pbf")):
        if "addr:housenumber" in o.tags and "addr:street" in o.tags:
            streets.add(normalize(o.tags["addr:street"]))
    conn = sqlite3.connect(_version(data_dir, "helsinki") / layout.SEARCH_DB)
    indexed = {r[0] for r in conn.execute("SELECT street_key FROM features WHERE type='street'")}
    assert streets and streets <= indexed


def test_addresses_get_city_and_country_from_admin(data_dir):
    conn = sqlite3.connect(_version(data_dir, "monaco") / layout.SEARCH_DB)
    rows = conn.execute("SELECT country, city FROM features WHERE type='address'").fetchall()
    assert rows and all(country in ("MCO", "FRA") and city for country, city in rows)
    conn = sqlite3.connect(_version(data_dir, "helsinki") / layout.SEARCH_DB)
    rows = conn.execute("SELECT country, city FROM features WHERE type='address'").fetchall()
    assert all(country == "FIN" and city for country, city in rows)
    # a few addresses carry their own addr:city ('Helsingin kaupunki'); the rest come from admin
    assert sum(city == "Helsinki" for _, city in rows) >= 0.95 * len(rows)


def test_admin_levels_and_codes(datasets):
    admin = datasets.get("monaco").admin
    monaco = [a for a in admin.areas if a.level == 2 and a.iso3166_1 == "MC"]
    assert monaco and monaco[0].country == "MCO" and monaco[0].geometry.is_valid
    assert all(a.geometry.is_valid for a in admin.areas)
    helsinki = datasets.get("helsinki").admin
    names = [a.name for a in helsinki.containing(60.1699, 24.9384)]
    assert "Helsinki" in names and "Suomi" in names


def test_normalisation():
    assert tokens("Sainte-Dévote") == tokens("Ste Devote") == ("sainte", "devote")
    assert tokens("Aleksanterink. 52") == ("aleksanterinkatu", "52")
    assert normalize("Bd des Moulins") == "boulevard des moulins"
    assert normalize("Av. Princesse Grace") == "avenue princesse grace"


def _addresses(pbf, proj):
    """What the address pass kept: the address columns, strings as values."""
    cols = search_reading.read_addresses(pbf, proj)
    value = cols.strings.value
    addresses = [list(cols.osm_id), list(cols.flags), [value(c) for c in cols.number]]
    return addresses + [[value(c) for c in cols.codes[name]] for name in STRING_COLUMNS]


def test_the_address_pass_reads_by_key_what_all_the_tags_give(monkeypatch):
    """The address pass looks up only ADDRESS_KEYS of a node: on both samples it collects the same
    addresses as with every tag of every node."""
    proj = LocalProjection(43.73, 7.42)
    for region in ("monaco", "helsinki"):
        pbf = SAMPLES / f"{region}.osm.pbf"
        by_key = _addresses(pbf, proj)
        monkeypatch.setattr(search_reading, "_address_tags", dict)
        every_tag = _addresses(pbf, proj)
        monkeypatch.undo()
        assert by_key[0], region
        assert by_key == every_tag, region
