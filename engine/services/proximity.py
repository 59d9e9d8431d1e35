"""Proximity: the nearest POIs of any of the given categories, by straight-line distance.

Which distance: to the point of a POI mapped as a node; to the outline of a POI mapped as an
area (a park, a parking lot, a shop's building), 0 when the query point is inside it, never to
its centroid (a large park's centroid can be hundreds of metres from its gate). Ranking and the
``distance`` field use the same number, and ``distance_to`` says which ("point" / "outline").
Each item carries ``category`` (the taxonomy id) and ``tag``: its own OSM ``key=value`` that the
query asked for (``shop=optician`` for ``shop=*`` or for the ``shop`` category).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.categories import BY_ID, resolve
from engine.dataset import Dataset, DatasetRegistry
from engine.geo import haversine_m_np
from engine.search.index import PoiArrays, poi_arrays
from engine.services.poi import poi_result


@dataclass(frozen=True)
class NearestParams:
    lat: float
    lng: float
    categories: tuple[str, ...]
    limit: int = 10
    radius: float = 5000.0  # metres


def run(datasets: DatasetRegistry, params: NearestParams) -> dict[str, Any]:
    ids, raw = resolve(params.categories, parameter="categories")
    if not ids and not raw:
        from engine.errors import InvalidParameter  # noqa: PLC0415

        raise InvalidParameter("give at least one category", parameter="categories")
    wanted = [t for cid in sorted(ids) for t in BY_ID[cid].tags] + sorted(raw)
    margin = params.radius / 111_000.0
    found: list[tuple[float, Dataset, int, str | None, bool]] = []
    for ds in datasets.covering(params.lat, params.lng, margin_deg=margin):
        arrays = poi_arrays(ds.search)
        groups = [arrays.arrays.get(cat) for cat in ids] + [arrays.for_tag(tag_needle(t)) for t in raw]
        pos = np.unique(np.concatenate([g for g in groups if g is not None and len(g)] or [np.zeros(0, np.int64)]))
        for p, d, on_outline in _nearest(arrays, pos, params):
            found.append((d, ds, int(arrays.all_ids[p]), precise_tag(arrays.tags(p), wanted), on_outline))
    found.sort(key=lambda t: (t[0], t[2]))
    seen: set[tuple[str, int]] = set()
    results = []
    for d, ds, fid, tag, on_outline in found:
        if (ds.region, fid) in seen:
            continue
        seen.add((ds.region, fid))
        f = ds.search.features([fid])[fid]
        results.append({**poi_result(f, ds.region, d), "tag": tag, "distance_to": "outline" if on_outline else "point"})
        if len(results) >= params.limit:
            break
    return {"results": results}


def _nearest(arrays: PoiArrays, pos: np.ndarray, params: NearestParams) -> list[tuple[int, float, bool]]:
    """(position, distance, measured to an outline) of the ``limit`` nearest POIs among ``pos``
    within the radius. A point POI is measured to its point, an area POI to its outline (0
    inside): never nearer than its point distance less its reach, never farther than its point
    (which lies inside it), so only those whose lower bound beats the limit-th point distance
    need their outline measured."""
    if len(pos) == 0:
        return []
    d = haversine_m_np(params.lat, params.lng, arrays.all_lat[pos], arrays.all_lng[pos])
    low = np.maximum(d - arrays.all_reach[pos], 0.0)
    keep = low <= params.radius
    pos, d, low = pos[keep], d[keep], low[keep]
    if len(pos) > params.limit:
        bound = float(np.partition(d, params.limit - 1)[params.limit - 1])
        keep = low <= bound
        pos, d = pos[keep], d[keep]
    out = []
    for p, dp in zip(pos.tolist(), d.tolist(), strict=True):
        exact = arrays.outline_distance(p, params.lat, params.lng)
        dist = dp if exact is None else min(exact, dp)
        if dist <= params.radius:
            out.append((p, dist, exact is not None))
    return out


def precise_tag(tags: str, wanted: list[str]) -> str | None:
    """The POI's own ``key=value`` that the query asked for (``shop=optician`` for ``shop=*``
    or the ``shop`` category), from its raw tags ``'|k=v|...|'``: the precise class of each item."""
    own = [t for t in tags.strip("|").split("|") if t]
    for w in wanted:
        k, v = w.split("=", 1)
        for t in own:
            if (t.startswith(k + "=")) if v == "*" else t == w:
                return t
    return None


def tag_needle(tag: str) -> str:
    """'amenity=cafe' -> '|amenity=cafe|' ; 'shop=*' -> '|shop=' (features.tags is '|k=v|k=v|')."""
    k, v = tag.split("=", 1)
    return f"|{k}=" if v == "*" else f"|{k}={v}|"


__all__ = ["NearestParams", "precise_tag", "run", "tag_needle"]
