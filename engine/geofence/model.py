"""Fence definitions and their validation.

A fence is one of three kinds, each parsed from a JSON body by :func:`parse_fence`:

* ``polygon`` -- a GeoJSON Feature (or bare geometry) of type ``Polygon`` or ``MultiPolygon``,
  holes allowed. Positions are ``[lng, lat]`` (GeoJSON order). Edges are straight lines in
  longitude/latitude (the same planar semantics as a PostGIS ``geometry`` column); a polygon
  crossing the antimeridian is not supported.
* ``circle`` -- ``{"type": "circle", "center": {"lat", "lng"}, "radius": metres}``. Kept as a true
  circle (centre + radius): a point is inside when its WGS84 geodesic distance to the centre is at
  most the radius.
* ``admin`` -- ``{"type": "admin", "osm_id": N}``: an administrative area of the dataset, whose
  geometry the caller resolves with the ``resolve_admin(osm_id)`` callback.

Every kind takes an optional ``name`` (string) and ``metadata`` (JSON object, bounded size), at
the top level of the body or, for a GeoJSON Feature, in ``properties``. Invalid input raises
:class:`~engine.errors.InvalidParameter` naming the reason and the parameter (``geometry``,
``center``, ``radius``, ``osm_id``, ``name``, ``metadata``, ``type``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely
from shapely.geometry import MultiPolygon, Polygon, mapping, shape
from shapely.geometry.base import BaseGeometry
from shapely.validation import explain_validity

from engine.errors import InvalidParameter
from engine.limits import DEFAULT_LIMITS, Limits

KINDS = ("polygon", "circle", "admin")

# resolve_admin(osm_id) -> Polygon/MultiPolygon (shapely or GeoJSON mapping), or None if unknown
AdminResolver = Callable[[int], "BaseGeometry | Mapping[str, Any] | None"]


@dataclass(frozen=True, eq=False)
class Fence:
    """One validated fence. ``geometry`` (lon/lat) is set for polygons and admin areas,
    ``center`` ``(lat, lng)`` and ``radius`` (metres) for circles."""

    id: str | None
    kind: str
    name: str | None = None
    geometry: BaseGeometry | None = None
    center: tuple[float, float] | None = None
    radius: float | None = None
    osm_id: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_circle(self) -> bool:
        return self.kind == "circle"

    @property
    def vertices(self) -> int:
        """Positions of the geometry (every ring, closing positions included); 0 for a circle.
        What the per-account cap (``plans.max_fence_vertices``) counts."""
        return 0 if self.geometry is None else int(shapely.get_num_coordinates(self.geometry))

    def to_body(self) -> dict[str, Any]:
        """The canonical body: ``parse_fence(fence.to_body())`` gives the same fence back
        (admin areas are re-resolved, so store the resolved geometry if the dataset may change)."""
        common: dict[str, Any] = {"name": self.name, "metadata": dict(self.metadata)}
        if self.kind == "circle":
            lat, lng = self.center  # type: ignore[misc]
            return {"type": "circle", "center": {"lat": lat, "lng": lng}, "radius": self.radius, **common}
        if self.kind == "admin":
            return {"type": "admin", "osm_id": self.osm_id, **common}
        return {"type": "Feature", "geometry": self._geometry_mapping(), "properties": common}

    def _geometry_mapping(self) -> dict[str, Any]:
        if self.geometry is None:  # polygons and admin areas always carry one
            raise ValueError(f"fence {self.id} ({self.kind}) has no geometry")
        return dict(mapping(self.geometry))

    def to_feature(self) -> dict[str, Any]:
        """A GeoJSON Feature for listings: the polygon, or the centre Point of a circle with
        ``radius`` in the properties."""
        props: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.kind}
        if self.kind == "circle":
            lat, lng = self.center  # type: ignore[misc]
            geometry: dict[str, Any] = {"type": "Point", "coordinates": [lng, lat]}
            props["radius"] = self.radius
        else:
            geometry = self._geometry_mapping()
            if self.osm_id is not None:
                props["osm_id"] = self.osm_id
        props["metadata"] = dict(self.metadata)
        return {"type": "Feature", "geometry": geometry, "properties": props}


# --------------------------------------------------------------------------------------------
# parsing


def parse_fence(
    body: Any,
    *,
    fence_id: str | None = None,
    resolve_admin: AdminResolver | None = None,
    limits: Limits | None = None,
    check_validity: bool = True,
) -> Fence:
    """Validate a fence body (see the module docstring) and return a :class:`Fence`.

    ``check_validity=False`` skips the costly ring-validity test for bodies that were validated
    before being stored (rebuilding an index from SQL); everything else is still checked.
    """
    limits = limits or DEFAULT_LIMITS
    if not isinstance(body, Mapping):
        raise InvalidParameter("a fence must be a JSON object", parameter="type")
    kind = body.get("type")
    name, metadata = _name_and_metadata(body, limits)
    fid = None if fence_id is None else str(fence_id)

    if kind == "circle":
        lat, lng = _parse_center(body.get("center"))
        radius = _parse_radius(body.get("radius"), limits)
        return Fence(fid, "circle", name, center=(lat, lng), radius=radius, metadata=metadata)

    if kind == "admin":
        osm_id = body.get("osm_id")
        if isinstance(osm_id, bool) or not isinstance(osm_id, int):
            raise InvalidParameter("osm_id must be an integer", parameter="osm_id")
        if resolve_admin is None:
            raise InvalidParameter("admin-area fences are not available here", parameter="osm_id")
        resolved = resolve_admin(osm_id)
        if resolved is None:
            raise InvalidParameter(f"no administrative area with osm_id {osm_id}", parameter="osm_id")
        geom = resolved if isinstance(resolved, BaseGeometry) else shape(dict(resolved))
        if not isinstance(geom, Polygon | MultiPolygon) or geom.is_empty:
            raise InvalidParameter(f"administrative area {osm_id} has no area geometry", parameter="osm_id")
        if not geom.is_valid:  # dataset geometry: repair rather than refuse
            geom = shapely.make_valid(geom)
            geom = _polygonal_part(geom)
        return Fence(fid, "admin", name, geometry=geom, osm_id=osm_id, metadata=metadata)

    if kind == "Feature":
        geometry = body.get("geometry")
        if not isinstance(geometry, Mapping):
            raise InvalidParameter("the Feature has no geometry object", parameter="geometry")
    elif kind in ("Polygon", "MultiPolygon"):
        geometry = body
    else:
        raise InvalidParameter(
            "type must be 'Feature' (GeoJSON Polygon or MultiPolygon), 'circle' or 'admin'",
            parameter="type",
        )
    geom = parse_polygonal(geometry, limits=limits, check_validity=check_validity)
    return Fence(fid, "polygon", name, geometry=geom, metadata=metadata)


def parse_polygonal(geometry: Mapping[str, Any], *, limits: Limits, check_validity: bool = True):
    """A GeoJSON Polygon/MultiPolygon mapping -> shapely geometry, or InvalidParameter("geometry")."""
    gtype = geometry.get("type")
    coords = geometry.get("coordinates")
    if gtype == "Polygon":
        polys = [coords]
    elif gtype == "MultiPolygon":
        if not isinstance(coords, list | tuple) or not coords:
            raise InvalidParameter("MultiPolygon coordinates must be a non-empty array", parameter="geometry")
        polys = list(coords)
    else:
        raise InvalidParameter(f"geometry type must be Polygon or MultiPolygon, got {gtype!r}", parameter="geometry")
    budget = [limits.geofence_max_vertices, limits.geofence_max_vertices]
    parsed = [_parse_polygon(p, i, budget, gtype == "MultiPolygon") for i, p in enumerate(polys)]
    shells = [Polygon(shell, holes) for shell, holes in parsed]
    geom = shells[0] if gtype == "Polygon" else MultiPolygon(shells)
    if check_validity and not geom.is_valid:
        raise InvalidParameter(_validity_message(geom), parameter="geometry")
    return geom


def _parse_polygon(rings: Any, index: int, budget: list[int], multi: bool):
    where = f"polygon {index}" if multi else "polygon"
    if not isinstance(rings, list | tuple) or not rings:
        raise InvalidParameter(f"{where} must be a non-empty array of rings", parameter="geometry")
    out = [_parse_ring(r, f"{where}, ring {j}", budget) for j, r in enumerate(rings)]
    return out[0], out[1:]


def _parse_ring(ring: Any, where: str, budget: list[int]) -> np.ndarray:
    if not isinstance(ring, list | tuple):
        raise InvalidParameter(f"{where} must be an array of positions", parameter="geometry")
    budget[0] -= len(ring)
    if budget[0] < 0:
        raise InvalidParameter(
            f"too many vertices: the geometry has more than the maximum of {budget[1]}",
            parameter="geometry",
        )
    if len(ring) < 4:
        raise InvalidParameter(
            f"{where} has {len(ring)} positions; a ring needs at least 4 (closed, first = last)",
            parameter="geometry",
        )
    pts = _fast_positions(ring)
    if pts is None:  # something is wrong: find it position by position, for the message
        pts = np.array([_position(p, where) for p in ring], dtype=float)
    if not np.array_equal(pts[0], pts[-1]):
        raise InvalidParameter(f"{where} is not closed: its first and last positions differ", parameter="geometry")
    return pts


def _fast_positions(ring: list | tuple) -> np.ndarray | None:
    """The ring as an (n, 2) array of [lng, lat] if every position is 2-3 plain numbers, finite and
    in range; None otherwise (booleans and numeric strings are not numbers here)."""
    try:
        if not {type(v) for p in ring for v in p} <= {int, float} or not {len(p) for p in ring} <= {2, 3}:
            return None
    except TypeError:  # a position that is not a sequence
        return None
    arr = np.array([p[:2] for p in ring], dtype=float)
    if not np.isfinite(arr).all() or (np.abs(arr[:, 0]) > 180).any() or (np.abs(arr[:, 1]) > 90).any():
        return None
    return arr


def _position(p: Any, where: str) -> tuple[float, float]:
    if not isinstance(p, list | tuple) or len(p) not in (2, 3):
        raise InvalidParameter(f"{where}: a position must be [lng, lat]", parameter="geometry")
    lng, lat = p[0], p[1]
    if not (_is_number(lng) and _is_number(lat)):
        raise InvalidParameter(f"{where}: coordinates must be finite numbers", parameter="geometry")
    lng, lat = float(lng), float(lat)
    if not -180.0 <= lng <= 180.0:
        raise InvalidParameter(
            f"{where}: coordinate out of range: longitude {lng} not in [-180, 180]", parameter="geometry"
        )
    if not -90.0 <= lat <= 90.0:
        raise InvalidParameter(
            f"{where}: coordinate out of range: latitude {lat} not in [-90, 90]", parameter="geometry"
        )
    return lng, lat


_AT = re.compile(r"\[\s*(-?[\d.eE+-]+)\s+(-?[\d.eE+-]+)\s*\]")


def _validity_message(geom: BaseGeometry) -> str:
    reason = explain_validity(geom)
    m = _AT.search(reason)
    at = f" near lng {float(m.group(1)):.7f}, lat {float(m.group(2)):.7f}" if m else ""
    low = reason.lower()
    if "self-intersection" in low:
        return f"self-intersecting ring{at}"
    if "too few points" in low:
        return f"a ring has too few distinct points{at}"
    if "hole lies outside shell" in low:
        return f"a hole lies outside its shell{at}"
    if "nested holes" in low or "nested shells" in low:
        return f"nested rings{at}"
    if "interior is disconnected" in low:
        return f"the polygon interior is disconnected{at}"
    return f"invalid polygon: {_AT.sub('', reason).strip()}{at}"


def _polygonal_part(geom: BaseGeometry) -> BaseGeometry:
    if isinstance(geom, Polygon | MultiPolygon):
        return geom
    parts = [g for g in getattr(geom, "geoms", []) if isinstance(g, Polygon | MultiPolygon)]
    polys: list[Polygon] = []
    for g in parts:
        polys.extend(g.geoms if isinstance(g, MultiPolygon) else [g])
    return MultiPolygon(polys)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _parse_center(center: Any) -> tuple[float, float]:
    if not isinstance(center, Mapping) or not _is_number(center.get("lat")) or not _is_number(center.get("lng")):
        raise InvalidParameter('center must be {"lat": <number>, "lng": <number>}', parameter="center")
    lat, lng = float(center["lat"]), float(center["lng"])
    if not -90.0 <= lat <= 90.0:
        raise InvalidParameter(f"center latitude {lat} out of range [-90, 90]", parameter="center")
    if not -180.0 <= lng <= 180.0:
        raise InvalidParameter(f"center longitude {lng} out of range [-180, 180]", parameter="center")
    return lat, lng


def _parse_radius(radius: Any, limits: Limits) -> float:
    if not _is_number(radius):
        raise InvalidParameter("radius must be a number of metres", parameter="radius")
    radius = float(radius)
    if radius <= 0:
        raise InvalidParameter(f"radius must be > 0 metres, got {radius:g}", parameter="radius")
    if radius > limits.geofence_max_radius_m:
        raise InvalidParameter(
            f"radius {radius:g} m is over the maximum of {limits.geofence_max_radius_m:g} m",
            parameter="radius",
        )
    return radius


def _name_and_metadata(body: Mapping[str, Any], limits: Limits) -> tuple[str | None, dict[str, Any]]:
    props = body.get("properties") if body.get("type") == "Feature" else None
    if props is not None and not isinstance(props, Mapping):
        raise InvalidParameter("Feature properties must be an object or null", parameter="properties")
    props = props or {}
    name = body.get("name", props.get("name"))
    metadata = body.get("metadata", props.get("metadata"))
    if name is not None:
        if not isinstance(name, str):
            raise InvalidParameter("name must be a string", parameter="name")
        name = name.strip() or None
        if name is not None and len(name) > limits.geofence_name_chars:
            raise InvalidParameter(f"name is longer than {limits.geofence_name_chars} characters", parameter="name")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise InvalidParameter("metadata must be a JSON object", parameter="metadata")
    try:
        encoded = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidParameter("metadata must be plain JSON (no NaN or Infinity)", parameter="metadata") from None
    if len(encoded.encode()) > limits.geofence_metadata_bytes:
        raise InvalidParameter(
            f"metadata is larger than {limits.geofence_metadata_bytes} bytes as JSON", parameter="metadata"
        )
    return name, json.loads(encoded)
