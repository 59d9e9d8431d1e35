"""Isochrones: areas reachable by car, on foot or by bicycle from a point within times (minutes)
or distances (m).

``profile`` (:mod:`engine.routing.profiles`, aliases accepted) picks the profile's graph: its
ways, directions, speeds and turn costs; a region imported without it is a 400 naming ``profile``.

Exactly one of ``times`` / ``distances`` (1..``Limits.isochrone_contours`` values, each
``<= isochrone_max_minutes`` / ``isochrone_max_distance_m``). The origin is snapped like a
route origin (nearest edge of the well-connected network within ``Limits.snap_max_distance_m``,
else 400 naming ``lat``). See :mod:`engine.isochrone.compute` for the method.

Result: a GeoJSON FeatureCollection, one (Multi)Polygon feature per contour, largest first::

    {"type": "FeatureCollection",
     "features": [{"type": "Feature",
                   "properties": {"contour": 15.0, "metric": "time", "area_m2": 2345678.0},
                   "geometry": {"type": "Polygon", "coordinates": [[[lng, lat], ...], ...]}}],
     "origin": {"lat", "lng"}}          # the snapped origin
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from shapely.geometry import GeometryCollection, MultiPolygon, Polygon
from shapely.geometry.base import BaseGeometry

from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter
from engine.geo import round_coord
from engine.isochrone.compute import IsoOptions, contours, reach
from engine.limits import DEFAULT_LIMITS, Limits
from engine.matching.network import RoadNetwork
from engine.routing.profiles import canonical
from engine.services.snaptoroad import component_for


@dataclass(frozen=True)
class IsochroneParams:
    lat: float
    lng: float
    times: tuple[float, ...] = ()  # minutes
    distances: tuple[float, ...] = ()  # metres
    profile: str = "car"


def _validate(p: IsochroneParams, limits: Limits) -> tuple[str, tuple[float, ...], str]:
    if not (math.isfinite(p.lat) and -90 <= p.lat <= 90):
        raise InvalidParameter("lat must be a latitude in [-90, 90]", parameter="lat")
    if not (math.isfinite(p.lng) and -180 <= p.lng <= 180):
        raise InvalidParameter("lng must be a longitude in [-180, 180]", parameter="lng")
    canonical(p.profile)
    if bool(p.times) == bool(p.distances):
        raise InvalidParameter("give exactly one of time (minutes) or distance (m)", parameter="time")
    if p.times:
        metric, values, name, top = "time", p.times, "time", limits.isochrone_max_minutes
    else:
        metric, values, name, top = "distance", p.distances, "distance", limits.isochrone_max_distance_m
    if len(values) > limits.isochrone_contours:
        raise InvalidParameter(f"{name}: at most {limits.isochrone_contours} contours", parameter=name)
    for v in values:
        if not (math.isfinite(v) and 0 < v <= top):
            raise InvalidParameter(f"{name}: each value must be in (0, {top:g}]", parameter=name)
    return metric, tuple(sorted(set(float(v) for v in values), reverse=True)), name


def _geojson(geom: BaseGeometry, net: RoadNetwork) -> dict[str, Any]:
    """GeoJSON of a local (Multi)Polygon in WGS84, coordinates rounded to 6 decimals (~0.1 m).
    Every ring is projected in one vectorised call, then split back into rings."""
    if geom.is_empty:
        return {"type": "Polygon", "coordinates": []}
    if isinstance(geom, GeometryCollection):  # make_valid may add stray lines
        polys = [g for g in geom.geoms if isinstance(g, (Polygon, MultiPolygon))]
        geom = shapely.union_all(polys) if polys else shapely.Polygon()
        if geom.is_empty:
            return {"type": "Polygon", "coordinates": []}
    if isinstance(geom, MultiPolygon):
        polygons = list(geom.geoms)
    elif isinstance(geom, Polygon):
        polygons = [geom]
    else:
        return {"type": "Polygon", "coordinates": []}
    rings_per_polygon = [[p.exterior, *p.interiors] for p in polygons]
    rings = [r for rs in rings_per_polygon for r in rs]
    xy = shapely.get_coordinates(rings)
    lat, lng = net.proj.to_latlng(xy[:, 0], xy[:, 1])
    coords = np.round(np.column_stack([lng, lat]), 6).tolist()
    ends = np.cumsum(shapely.get_num_coordinates(rings)).tolist()
    starts = [0, *ends[:-1]]
    ring_coords = iter([coords[a:b] for a, b in zip(starts, ends, strict=True)])
    nested = [[next(ring_coords) for _ in rs] for rs in rings_per_polygon]
    if len(nested) == 1:
        return {"type": "Polygon", "coordinates": nested[0]}
    return {"type": "MultiPolygon", "coordinates": nested}


def run(
    datasets: DatasetRegistry, params: IsochroneParams, limits: Limits | None = None, options: IsoOptions | None = None
) -> dict[str, Any]:
    limits = limits or DEFAULT_LIMITS
    options = options or IsoOptions()
    metric, values, name = _validate(params, limits)
    comp = component_for(datasets, params.lat, params.lng, "lat", canonical(params.profile))
    net = comp.network
    hit = comp.snapper.snap(params.lat, params.lng, limits.snap_max_distance_m)
    if hit is None:
        raise InvalidParameter(
            f"lat: no road within {limits.snap_max_distance_m:.0f} m of {params.lat},{params.lng}",
            parameter="lat",
        )
    edge = int(hit.edge)
    offset = float(hit.fraction) * float(net.length[edge])
    twin = int(comp.twin[edge])
    if metric == "time":
        cost, budgets, use_turns = net.duration, [v * 60.0 for v in values], True
    else:
        cost, budgets, use_turns = net.length, list(values), False
    entry = reach(net, comp.turns, cost, use_turns, edge, offset, twin, max(budgets))
    polys = contours(net, entry, cost, budgets, options)
    features = []
    for value, poly in zip(values, polys, strict=False):
        features.append(
            {
                "type": "Feature",
                "properties": {"contour": value, "metric": metric, "area_m2": round(float(poly.area), 1)},
                "geometry": _geojson(poly, net),
            }
        )
    return {
        "type": "FeatureCollection",
        "features": features,
        "origin": {"lat": round_coord(hit.lat), "lng": round_coord(hit.lng)},
    }
