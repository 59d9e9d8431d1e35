"""Geometry download: admin boundaries by name (+level), by OSM id, or all areas containing a
point, as a GeoJSON FeatureCollection or WKT; optional simplification in metres that keeps the
(multi)polygons valid (simplified in a local metric projection, then made valid)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from numpy.typing import NDArray
from shapely.geometry import GeometryCollection, MultiPolygon, Polygon, mapping
from shapely.geometry.base import BaseGeometry

from engine.admin import AdminArea
from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter, NotFound
from engine.geo import LocalProjection


@dataclass(frozen=True)
class GeometryParams:
    name: str | None = None
    level: int | None = None
    osm_id: int | None = None
    lat: float | None = None
    lng: float | None = None
    format: str = "geojson"  # geojson | wkt
    simplify: float | None = None  # metres


def simplify_m(geom: BaseGeometry, tolerance_m: float) -> BaseGeometry:
    """Simplify a lon/lat (multi)polygon by a tolerance in metres; the result stays valid."""
    c = geom.centroid
    proj = LocalProjection(c.y, c.x)

    def back(coords: NDArray[np.float64]) -> NDArray[np.float64]:
        lat, lng = proj.to_latlng(coords[:, 0], coords[:, 1])
        return np.column_stack([lng, lat])

    metric = shapely.transform(geom, proj.coords_to_xy)
    simple = shapely.simplify(metric, tolerance_m, preserve_topology=True)
    if not simple.is_valid:
        simple = shapely.make_valid(simple)
    out = shapely.transform(simple, back)
    if not out.is_valid:
        out = shapely.make_valid(out)
    if isinstance(out, GeometryCollection):
        polys = [g for g in out.geoms if isinstance(g, (Polygon, MultiPolygon))]
        out = shapely.union_all(polys) if polys else geom
    if out.is_empty:
        return geom
    return out


def _as_multi(g: BaseGeometry) -> BaseGeometry:
    return MultiPolygon([g]) if isinstance(g, Polygon) else g


def _properties(a: AdminArea, region: str) -> dict[str, Any]:
    return {
        "name": a.name,
        "names": a.names,
        "admin_level": a.level,
        "iso3166_1": a.iso3166_1,
        "iso3166_2": a.iso3166_2,
        "country": a.country,
        "osm": {"type": a.osm_type, "id": a.osm_id},
        "clipped": a.clipped,  # the boundary extends beyond the region's extract
        "region": region,
    }


def run(datasets: DatasetRegistry, params: GeometryParams) -> dict[str, Any]:
    fmt = (params.format or "geojson").lower()
    if fmt not in ("geojson", "wkt"):
        raise InvalidParameter("format must be geojson or wkt", parameter="format")
    if params.simplify is not None and params.simplify < 0:
        raise InvalidParameter("simplify must be >= 0 (metres)", parameter="simplify")
    point = (params.lat, params.lng) if params.lat is not None and params.lng is not None else None
    if not (params.name or params.osm_id is not None or point):
        raise InvalidParameter("give name (+level), osm_id, or lat and lng", parameter="name")
    found = []
    seen: set[int] = set()
    for ds in datasets.all():
        admin = ds.admin
        hits: list[AdminArea] = []
        if params.osm_id is not None:
            hits = [a for a in [admin.by_osm_id(params.osm_id)] if a is not None]
        elif params.name:
            hits = admin.by_name(params.name, params.level)
        elif point is not None:
            hits = admin.containing(*point)
            if params.level is not None:
                hits = [a for a in hits if a.level == params.level]
        for a in hits:
            # the same boundary in two regions: keep the unclipped (or larger) one
            if a.osm_id in seen:
                continue
            seen.add(a.osm_id)
            found.append((a, ds.region))
    if not found:
        raise NotFound("no admin area matches")
    found.sort(key=lambda t: (t[0].level, t[0].name))
    features = []
    for a, region in found:
        geom = a.geometry
        if params.simplify:
            geom = simplify_m(geom, params.simplify)
        features.append((_as_multi(geom), _properties(a, region)))
    if fmt == "wkt":
        return {"wkt": [{**props, "wkt": shapely.to_wkt(g, rounding_precision=7)} for g, props in features]}
    return {
        "type": "FeatureCollection",
        "features": [{"type": "Feature", "geometry": mapping(g), "properties": props} for g, props in features],
    }
