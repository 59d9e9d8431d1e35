"""Geocoding: free text or structured address -> candidates from every loaded region.

Params are already validated by the web layer (limit within Limits.geocode_limit, coordinates in
range); this function only raises InvalidParameter for what needs the data (an unknown country).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from engine.countries import normalize_country
from engine.dataset import BBox, Dataset, DatasetRegistry
from engine.errors import InvalidParameter
from engine.geo import round_coord
from engine.search.geocoder import Matcher, parses
from engine.search.index import SearchIndex

BBoxTuple = tuple[float, float, float, float]


@dataclass(frozen=True)
class GeocodeParams:
    query: str | None = None
    street: str | None = None
    number: str | None = None
    city: str | None = None
    postcode: str | None = None
    country: str | None = None  # alpha-2 or alpha-3
    limit: int = 5
    near: tuple[float, float] | None = None  # (lat, lng) bias
    bbox: BBoxTuple | None = None  # (min_lng, min_lat, max_lng, max_lat)
    lang: str | None = None


# One Matcher per loaded search index, built once and dropped with the index.
_MATCHERS: WeakKeyDictionary[SearchIndex, Matcher] = WeakKeyDictionary()


def matcher_for(dataset: Dataset) -> Matcher:
    index = dataset.search
    m = _MATCHERS.get(index)
    if m is None:
        m = _MATCHERS.setdefault(index, Matcher(index, dataset.region))
    return m


def _overlaps(ds_bbox: BBox, bbox: BBoxTuple) -> bool:
    return not (
        bbox[2] < ds_bbox.min_lng or bbox[0] > ds_bbox.max_lng or bbox[3] < ds_bbox.min_lat or bbox[1] > ds_bbox.max_lat
    )


def _postcode_area(ds: Dataset, postcode: str, country: str | None, bbox: BBoxTuple | None) -> list[dict[str, Any]]:
    row = ds.search.execute(
        "SELECT AVG(lat), AVG(lng), COUNT(*), MIN(city), MIN(country), MIN(postcode) "
        "FROM features WHERE type = 'address' AND replace(lower(postcode), ' ', '') = ?",
        (postcode,),
    ).fetchone()
    if not row or not row[2]:
        return []
    lat, lng, _n, city, cc, raw = row
    if (country and cc != country) or (bbox and not (bbox[0] <= lng <= bbox[2] and bbox[1] <= lat <= bbox[3])):
        return []
    return [
        {
            "id": f"{ds.region}:postcode:{postcode}",
            "type": "place",
            "score": 0.9,
            "interpolated": False,
            "name": raw,
            "address": {"country": cc, "city": city, "district": None, "street": None, "number": None, "postcode": raw},
            "coord": {"lat": round_coord(lat), "lng": round_coord(lng)},
            "osm": None,
            "region": ds.region,
        }
    ]


def run(datasets: DatasetRegistry, params: GeocodeParams) -> dict[str, Any]:
    if not (params.query and params.query.strip()) and not (params.street or params.city or params.postcode):
        raise InvalidParameter("give a query or a structured address (street, city, postcode)", parameter="query")
    country = normalize_country(params.country)
    queries = parses(
        params.query, street=params.street, number=params.number, city=params.city, postcode=params.postcode
    )
    for q in queries:
        if q.empty and q.city_words:
            q.words, q.city_words = q.city_words, []  # only a city: search it as a place
    merged: list[dict[str, Any]] = []
    for ds in datasets.all():
        if params.bbox and not _overlaps(ds.bbox, params.bbox):
            continue
        m = matcher_for(ds)
        for q in queries:
            if q.empty and q.postcode:  # only a postcode: the middle of its addresses
                merged.extend(_postcode_area(ds, q.postcode, country, params.bbox))
                continue
            merged.extend(
                m.match(q, country=country, bbox=params.bbox, near=params.near, limit=params.limit, lang=params.lang)
            )
    if len(queries) > 1:  # the same candidate from two parses: keep the best
        best: dict[str, dict[str, Any]] = {}
        for c in merged:
            if c["id"] not in best or c["score"] > best[c["id"]]["score"]:
                best[c["id"]] = c
        merged = list(best.values())
    merged.sort(key=lambda c: -c["score"])
    return {"candidates": merged[: params.limit]}
