"""Proximity: the nearest POIs of any of the given categories, by straight-line distance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.categories import resolve
from engine.dataset import Dataset, DatasetRegistry
from engine.geo import haversine_m_np
from engine.search.index import poi_arrays
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
    margin = params.radius / 111_000.0
    found: list[tuple[float, Dataset, int]] = []
    for ds in datasets.covering(params.lat, params.lng, margin_deg=margin):
        index = ds.search
        arrays = poi_arrays(index)
        groups = [arrays.arrays.get(cat) for cat in ids] + [arrays.for_tag(tag_needle(t)) for t in raw]
        for entry in groups:
            if entry is None or len(entry[0]) == 0:
                continue
            fids, lats, lngs = entry
            d = haversine_m_np(params.lat, params.lng, lats, lngs)
            sel = np.nonzero(d <= params.radius)[0]
            if len(sel) > params.limit:
                sel = sel[np.argpartition(d[sel], params.limit - 1)[: params.limit]]
            found.extend((float(d[i]), ds, int(fids[i])) for i in sel)
    found.sort(key=lambda t: (t[0], t[2]))
    seen: set[tuple[str, int]] = set()
    results = []
    for distance, dataset, fid in found:
        if (dataset.region, fid) in seen:
            continue
        seen.add((dataset.region, fid))
        f = dataset.search.features([fid])[fid]
        results.append(poi_result(f, dataset.region, distance))
        if len(results) >= params.limit:
            break
    return {"results": results}


def tag_needle(tag: str) -> str:
    """'amenity=cafe' -> '|amenity=cafe|' ; 'shop=*' -> '|shop=' (features.tags is '|k=v|k=v|')."""
    k, v = tag.split("=", 1)
    return f"|{k}=" if v == "*" else f"|{k}={v}|"


__all__ = ["NearestParams", "run", "tag_needle"]
