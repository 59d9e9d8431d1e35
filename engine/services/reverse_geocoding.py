"""Reverse geocoding: the nearest address within ``radius``, else the nearest street, plus the
admin hierarchy of the point. Outside every dataset, or nothing within the radius (at sea):
an empty result."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely

from engine.dataset import DatasetRegistry
from engine.geo import haversine_m, round_coord


@dataclass(frozen=True)
class ReverseParams:
    lat: float
    lng: float
    radius: float = 100.0  # metres
    limit: int = 1


def _box(lat, lng, radius):
    dlat = radius / 111_000.0
    dlng = dlat / max(0.05, math.cos(math.radians(lat)))
    return lng - dlng, lat - dlat, lng + dlng, lat + dlat


def _address(f: dict) -> dict:
    return {"country": f["country"], "city": f["city"], "district": f["district"],
            "street": f["street"], "number": f["housenumber"] if f["type"] in ("address", "poi") else None,
            "postcode": f["postcode"]}


def _cand(f: dict, region: str, t: str, lat: float, lng: float, distance: float) -> dict:
    return {
        "id": f"{region}:{f['id']}", "type": t, "score": round(max(0.0, 1.0 - distance / 1000.0), 4),
        "interpolated": False, "name": f["name"] if t != "address" else f["name"],
        "address": _address(f) if t != "street" else {**_address(f), "street": f["name"], "number": None},
        "coord": {"lat": round_coord(lat), "lng": round_coord(lng)},
        "osm": {"type": f["osm_type"], "id": f["osm_id"]} if f["osm_id"] else None,
        "region": region, "distance": round(distance, 1),
    }


def nearest_streets(index, lat, lng, radius):
    """[(distance m, street_id, (lat, lng) of the nearest point)] within radius, nearest first."""
    rows = index.street_parts_in_box(*_box(lat, lng, radius))
    if not rows:
        return []
    proj = index.proj
    px, py = proj.to_xy(lat, lng)
    p = shapely.Point(float(px), float(py))
    geoms = shapely.from_wkb([r[1] for r in rows])
    out: dict[int, tuple[float, tuple[float, float]]] = {}
    for (sid, _), g in zip(rows, geoms, strict=True):
        arr = np.asarray(g.coords)
        x, y = proj.to_xy(arr[:, 1], arr[:, 0])
        line = shapely.LineString(np.column_stack([x, y]))
        d = line.distance(p)
        if d <= radius and (sid not in out or d < out[sid][0]):
            q = line.interpolate(line.project(p))
            qlat, qlng = proj.to_latlng(q.x, q.y)
            out[sid] = (d, (float(qlat), float(qlng)))
    return sorted(((d, sid, pt) for sid, (d, pt) in out.items()), key=lambda t: t[0])


def run(datasets: DatasetRegistry, params: ReverseParams) -> dict:
    margin = params.radius / 111_000.0
    cands: list[dict] = []
    admin: list[dict] = []
    for ds in datasets.covering(params.lat, params.lng, margin_deg=margin):
        index = ds.search
        addrs = []
        for f in index.points_in_box(*_box(params.lat, params.lng, params.radius), types=("address",)):
            d = haversine_m(params.lat, params.lng, f["lat"], f["lng"])
            if d <= params.radius:
                addrs.append((d, f))
        addrs.sort(key=lambda t: (t[0], t[1]["id"]))
        streets = nearest_streets(index, params.lat, params.lng, params.radius)
        near_street_ids = {sid for d, sid, _ in streets if d <= streets[0][0] + 15.0} if streets else set()
        found: list[tuple[float, dict]] = []
        for d, f in addrs:
            # an address of a street clearly farther than the nearest street comes after it
            key = d if (not streets or f["street_id"] in near_street_ids or d <= 25.0) else d + 50.0
            found.append((key, _cand(f, ds.region, "address", f["lat"], f["lng"], d)))
        if streets:
            feats = index.features(sid for _, sid, _ in streets[: max(3, params.limit)])
            for d, sid, (qlat, qlng) in streets[: max(3, params.limit)]:
                f = feats.get(sid)
                if f is not None:
                    key = d + (10.0 if addrs else 0.0)
                    found.append((key, _cand(f, ds.region, "street", qlat, qlng, d)))
        if found:
            found.sort(key=lambda t: t[0])
            cands.extend(c for _, c in found)
            if not admin:
                admin = [{"name": a.name, "level": a.level, **({"country": a.country} if a.level == 2 else {})}
                         for a in ds.admin.containing(params.lat, params.lng)]
    if not cands:
        return {"candidates": [], "admin": []}
    seen, out = set(), []
    for c in cands:
        key = (c["type"], c["address"]["street"], c["address"]["number"])
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) >= params.limit:
            break
    return {"candidates": out, "admin": admin}
