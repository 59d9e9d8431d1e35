"""Reverse geocoding: the nearest address within ``radius``, else the nearest street, plus the
admin hierarchy of the point. Outside every dataset, or nothing within the radius (at sea):
an empty result."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely

from engine.beside import Beside
from engine.dataset import DatasetRegistry
from engine.geo import round_coord
from engine.search.index import SearchIndex, SpatialCache, spatial_cache

ON_ADDRESS_M = 15.0  # an address this near (its building outline, else its point) is where the point is
OWN_STREET_SLACK_M = 8.0  # an address whose street is this much farther than the nearest still wins
STREET_BIAS_M = 3.0  # a street ranks as an address this much nearer
FAR_PENALTY_M = 50.0  # an address on another street than the one the point is at
MINOR_PENALTY_M = 1000.0  # a minor street: only when nothing else is within the radius
NEAR_ADDRESSES = 20  # address-bearing points looked at, nearest first


@dataclass(frozen=True)
class ReverseParams:
    lat: float
    lng: float
    radius: float = 100.0  # metres
    limit: int = 1


def _address(f: dict[str, Any]) -> dict[str, Any]:
    return {
        "country": f["country"],
        "city": f["city"],
        "district": f["district"],
        "street": f["street"],
        "number": f["housenumber"] if f["type"] in ("address", "poi") else None,
        "postcode": f["postcode"],
    }


def _cand(f: dict[str, Any], region: str, t: str, lat: float, lng: float, distance: float) -> dict[str, Any]:
    return {
        "id": f"{region}:{f['id']}",
        "type": t,
        "score": round(max(0.0, 1.0 - distance / 1000.0), 4),
        "interpolated": False,
        "name": f["name"] if t != "address" else f["name"],
        "address": _address(f) if t != "street" else {**_address(f), "street": f["name"], "number": None},
        "coord": {"lat": round_coord(lat), "lng": round_coord(lng)},
        "osm": {"type": f["osm_type"], "id": f["osm_id"]} if f["osm_id"] else None,
        "region": region,
        "distance": round(distance, 1),
    }


def nearest_streets(
    index: SearchIndex, cache: SpatialCache, lat: float, lng: float, radius: float
) -> list[tuple[float, int, Any]]:
    """[(distance m, street_id, the street's piece nearest the point)] within radius, nearest
    first; the piece is in the index's projection (:func:`street_point` finds the point on it)."""
    near = cache.parts_near(lat, lng, radius)
    if not len(near.lines):
        return []
    px, py = index.proj.to_xy(lat, lng)
    dists = shapely.distance(near.lines, shapely.Point(float(px), float(py)))
    best: dict[int, tuple[float, int]] = {}
    for i in np.flatnonzero(dists <= radius).tolist():
        sid, d = int(near.street_ids[i]), float(dists[i])
        if sid not in best or d < best[sid][0]:
            best[sid] = (d, i)
    out = [(d, sid, near.lines[i]) for sid, (d, i) in best.items()]
    out.sort(key=lambda t: (t[0], t[1]))
    return out


def street_point(index: SearchIndex, piece: Any, distance: float, lat: float, lng: float) -> tuple[float, float]:
    """(lat, lng) of the point of a street's ``piece`` nearest the point, ``distance`` away
    (:func:`nearest_streets`): the point itself inside a square. Only the streets a request
    answers with are worth it."""
    px, py = index.proj.to_xy(lat, lng)
    p = shapely.Point(float(px), float(py))
    if piece.geom_type == "Polygon":  # a square: a point inside is on it
        q = p if distance == 0.0 else piece.exterior.interpolate(piece.exterior.project(p))
    else:
        q = piece.interpolate(piece.project(p))
    qlat, qlng = index.proj.to_latlng(q.x, q.y)
    return float(qlat), float(qlng)


def _ranked(index: SearchIndex, params: ReverseParams) -> list[tuple[Any, ...]]:
    """(rank key, point distance, feature id, street piece or None, distance) of the addresses
    and streets near the point, best first. The rule:

    * an address wins when the point is on its building (within ``ON_ADDRESS_M`` of the outline
      or the address point), or when its own street is about as near as the nearest street
      (``OWN_STREET_SLACK_M``): the point is in front of that building;
    * otherwise the nearest street, ``STREET_BIAS_M`` behind an address at the same distance;
    * minor streets (footways, passages, steps that no address names:
      ``engine.search.index.MINOR_STREET_KINDS``) neither count as "the nearest street" nor win
      over an address or another street within the radius: nobody lives at a corridor.
    """
    cache = spatial_cache(index)
    # the two lookups are independent: the streets' page reads overlap the addresses' (engine/beside.py)
    streets_beside = Beside(nearest_streets, index, cache, params.lat, params.lng, params.radius)
    addrs = cache.addresses_near(params.lat, params.lng, params.radius, NEAR_ADDRESSES)
    streets = streets_beside.result()
    minor = cache.minor_streets
    street_d = {sid: d for d, sid, _ in streets}
    nearest_d = next((d for d, sid, _ in streets if sid not in minor), None)
    px, py = index.proj.to_xy(params.lat, params.lng)
    pt = shapely.Point(float(px), float(py))
    outlines = shapely.from_wkb([a.footprint for a in addrs])  # None where an address has none
    found: list[tuple[Any, ...]] = []
    for a, fp in zip(addrs, outlines, strict=True):
        d_fp = fp.distance(pt) if fp is not None else a.distance  # 0 inside the building
        own = street_d.get(a.street_id)
        if a.is_poi:  # a shop with an address: only when the point is on it
            key = d_fp if d_fp <= 2.0 else d_fp + FAR_PENALTY_M
        elif d_fp <= ON_ADDRESS_M or nearest_d is None or (own is not None and own <= nearest_d + OWN_STREET_SLACK_M):
            key = d_fp
        else:
            key = d_fp + FAR_PENALTY_M
        found.append((key, a.distance, a.feature_id, None, d_fp))
    n_streets = 0
    for d, sid, piece in streets:
        if sid in minor:
            found.append((d + STREET_BIAS_M + MINOR_PENALTY_M, d, sid, piece, d))
        elif n_streets < max(3, params.limit):
            n_streets += 1
            found.append((d + STREET_BIAS_M, d, sid, piece, d))
    found.sort(key=lambda t: (t[0], t[1], t[2]))
    return found


def _candidates(
    index: SearchIndex, region: str, found: list[tuple[Any, ...]], params: ReverseParams
) -> Iterator[dict[str, Any]]:
    """The answers of one dataset's ranked addresses and streets (:func:`_ranked`), best first,
    each built when the caller asks for it: a street's point on the map is found only for the
    streets a request answers with."""
    top = found[: params.limit + 5]  # more than the limit: an address may repeat another
    # the first ``limit`` rows read first, the spares only when the caller asks past them: each
    # row is a page of ``features`` of its own from a cold page cache
    for part in (top[: params.limit], top[params.limit :]):
        feats = index.features(t[2] for t in part)
        for _key, _d, fid, piece, dist in part:
            f = feats.get(fid)
            if f is None:
                continue
            if piece is None:
                yield _cand(f, region, f["type"], f["lat"], f["lng"], dist)
            else:
                yield _cand(f, region, "street", *street_point(index, piece, dist, params.lat, params.lng), dist)


def run(datasets: DatasetRegistry, params: ReverseParams) -> dict[str, Any]:
    margin = params.radius / 111_000.0
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    admin: list[dict[str, Any]] = []
    for ds in datasets.covering(params.lat, params.lng, margin_deg=margin):
        found = _ranked(ds.search, params)
        if not found:
            continue
        if len(out) < params.limit:  # the first datasets' answers come first
            for c in _candidates(ds.search, ds.region, found, params):
                key = (c["type"], c["address"]["street"], c["address"]["number"])
                if key in seen:
                    continue
                seen.add(key)
                out.append(c)
                if len(out) >= params.limit:
                    break
        if not admin:
            admin = [
                {"name": a.name, "level": a.level, **({"country": a.country} if a.level == 2 else {})}
                for a in ds.admin.containing(params.lat, params.lng)
            ]
    if not out:
        return {"candidates": [], "admin": []}
    return {"candidates": out, "admin": admin}
