"""POI search by name and/or category, within near+radius or a bbox, paginated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.categories import BY_ID, resolve
from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter
from engine.geo import haversine_m, round_coord
from engine.search.geocoder import parse
from engine.services.geocoding import matcher_for

if TYPE_CHECKING:
    from engine.search.index import SearchIndex

MAX_SCAN = 2000  # name matches considered before filtering and paging


@dataclass(frozen=True)
class PoiParams:
    q: str | None = None
    category: str | None = None  # an id, a raw 'key=value', or a comma list of them (any)
    near: tuple[float, float] | None = None  # (lat, lng)
    radius: float | None = None  # metres, with near
    bbox: tuple[float, float, float, float] | None = None  # (min_lng, min_lat, max_lng, max_lat)
    limit: int = 10
    offset: int = 0


def poi_result(f: dict[str, Any], region: str, distance: float | None) -> dict[str, Any]:
    return {
        "id": f"{region}:{f['id']}",
        "name": f["name"],
        "category": f["category"],
        "coord": {"lat": round_coord(f["lat"]), "lng": round_coord(f["lng"])},
        "address": {
            "country": f["country"],
            "city": f["city"],
            "district": f["district"],
            "street": f["street"],
            "number": f["housenumber"],
            "postcode": f["postcode"],
        },
        "distance": None if distance is None else round(distance, 1),
        "osm": {"type": f["osm_type"], "id": f["osm_id"]},
        "region": region,
    }


def _tag_ok(f: dict[str, Any], ids: set[str], raw: set[str]) -> bool:
    if not ids and not raw:
        return True
    if f["category"] in ids:
        return True
    tags = f.get("tags") or ""
    for t in raw:
        k, v = t.split("=", 1)
        if (f"|{k}=" in tags) if v == "*" else (f"|{k}={v}|" in tags):
            return True
    return False


def run(datasets: DatasetRegistry, params: PoiParams) -> dict[str, Any]:
    if not (params.q and params.q.strip()) and not params.category:
        raise InvalidParameter("give q (a name) or category", parameter="q")
    ids, raw = resolve((params.category or "").split(","), parameter="category")
    if params.radius is not None and params.near is None:
        raise InvalidParameter("radius needs near", parameter="radius")
    hits: list[tuple[float, float, str, dict[str, Any]]] = []  # (sort key, distance, region, feature)
    for ds in datasets.all():
        index = ds.search
        if params.bbox:
            b = params.bbox
            if b[2] < ds.bbox.min_lng or b[0] > ds.bbox.max_lng or b[3] < ds.bbox.min_lat or b[1] > ds.bbox.max_lat:
                continue
        if params.q and params.q.strip():
            q = parse(params.q)
            if q.number:  # a number in a POI name ('Pub 99'): keep it as a word
                q.words.append(q.number)
                q.number = None
            cands = matcher_for(ds).match(q, limit=MAX_SCAN, types={"poi"})
            feats = index.features(int(c["id"].split(":")[1]) for c in cands)
            rows = [(1.0 - c["score"], feats[int(c["id"].split(":")[1])]) for c in cands]
        else:
            rows = [(0.0, f) for f in _spatial(index, params, ids, raw)]
        for rank, f in rows:
            if f["type"] != "poi" or not _tag_ok(f, ids, raw):
                continue
            if params.bbox:
                b = params.bbox
                if not (b[0] <= f["lng"] <= b[2] and b[1] <= f["lat"] <= b[3]):
                    continue
            d = None
            if params.near:
                d = haversine_m(params.near[0], params.near[1], f["lat"], f["lng"])
                if params.radius is not None and d > params.radius:
                    continue
            key = rank if params.q else (d if d is not None else 0.0)
            hits.append((key, d or 0.0, ds.region, f))
    hits.sort(key=lambda h: (round(h[0], 6), h[1], h[2], h[3]["id"]))
    page = hits[params.offset : params.offset + params.limit]
    return {
        "pois": [poi_result(f, region, d if params.near else None) for _k, d, region, f in page],
        "total": len(hits),
    }


def _spatial(index: SearchIndex, params: PoiParams, ids: set[str], raw: set[str]) -> list[dict[str, Any]]:
    """Category-only search: the POIs of the categories inside the box or circle (or all)."""
    from engine.services.proximity import tag_needle  # noqa: PLC0415

    conds: list[str] = []
    args: list[str | float] = []
    if ids:
        conds.append(f"f.category IN ({','.join('?' * len(ids))})")
        args += sorted(ids)
    for t in sorted(raw):
        conds.append("instr(f.tags, ?) > 0")
        args.append(tag_needle(t))
    where = "f.type = 'poi'" + (f" AND ({' OR '.join(conds)})" if conds else "")
    box = None
    if params.bbox:
        box = params.bbox
    elif params.near and params.radius is not None:
        import math  # noqa: PLC0415

        dlat = params.radius / 111_000.0
        dlng = dlat / max(0.05, math.cos(math.radians(params.near[0])))
        box = (params.near[1] - dlng, params.near[0] - dlat, params.near[1] + dlng, params.near[0] + dlat)
    from engine.search.index import FEATURE_COLUMNS, SearchIndex  # noqa: PLC0415

    cols = ", ".join("f." + c.strip() for c in FEATURE_COLUMNS.split(","))
    if box:
        sql = (
            f"SELECT {cols} FROM points_rtree r JOIN features f ON f.id = r.id "
            "WHERE r.min_lng <= ? AND r.max_lng >= ? AND r.min_lat <= ? AND r.max_lat >= ? AND " + where
        )
        args = [box[2], box[0], box[3], box[1], *args]
    else:
        sql = f"SELECT {cols} FROM features f WHERE {where}"
    return [SearchIndex.row_to_feature(r) for r in index.execute(sql, args)]


def categories(datasets: DatasetRegistry) -> dict[str, Any]:
    """The taxonomy with POI counts per region (GET /v1/poi/categories)."""
    from engine.categories import CATEGORIES  # noqa: PLC0415

    counts = {ds.region: ds.search.category_counts() for ds in datasets.all()}
    return {
        "categories": [
            {
                "id": c.id,
                "label": c.label,
                "tags": list(c.tags),
                "counts": {region: counts[region].get(c.id, 0) for region in counts},
            }
            for c in CATEGORIES
        ]
    }


__all__ = ["PoiParams", "run", "categories", "poi_result", "BY_ID"]
