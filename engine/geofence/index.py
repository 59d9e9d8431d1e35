"""FenceIndex: which fences contain a point, and how far their boundaries are, in metres.

Built once from a list of :class:`~engine.geofence.model.Fence` (typically the fences of one
account; see :class:`~engine.geofence.registry.FenceIndexCache` for one lazily built index per
account) and then read-only, safe to share between threads: everything GEOS would build lazily
is built in the constructor, and no prepared geometry is kept (see ``_build_lazy_parts``).

* A shapely 2 ``STRtree`` holds every fence: polygons by their lon/lat geometry, circles by a
  lon/lat box that surely contains them. The tree only pre-selects by bounding box.
* Polygons are then tested with GEOS ``intersects`` on their plain geometry (the candidates of
  the tree only), circles exactly by WGS84 geodesic distance to their centre (``pyproj.Geod``).

Conventions (the API documents them as is):

* **Boundary counts as inside.** A point on an edge or vertex of a polygon (or of one of its
  holes), or at exactly ``radius`` metres from a circle's centre, is ``inside``; a point strictly
  inside a hole is outside.
* **distance >= 0 always**: metres (WGS84 geodesic) from the point to the nearest point of the
  fence's boundary, hole rings included, 0 on the boundary; whether that is from the inside or
  from the outside is told by ``inside``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
import shapely
import shapely.lib
from shapely import STRtree

from engine.errors import InvalidParameter
from engine.geofence.distance import GEOD, Frames, circle_bbox
from engine.geofence.model import Fence

_GEOD_INV = GEOD.inv


def _point_factory():
    """Fastest way to make a one-element array holding Point(x, y) (shapely.Point costs ~5 us)."""
    try:
        handle = np.intc(0)
        shapely.lib.points(np.zeros((1, 2)), handle)  # shapely >= 2.1 signature
        return lambda x, y: shapely.lib.points(np.array(((x, y),)), handle)
    except Exception:  # noqa: BLE001 - older shapely: public API
        return lambda x, y: shapely.points(np.array(((x, y),)))


_points1 = _point_factory()


class FenceStatus(NamedTuple):
    """One fence as seen from a point: ``inside`` (boundary included) and ``distance`` (metres to
    the boundary, >= 0)."""

    id: str
    name: str | None
    inside: bool
    distance: float

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "inside": self.inside, "distance": round(self.distance, 2)}


class FenceIndex:
    """A spatial index over fences. ``fences`` must carry unique string ids."""

    def __init__(self, fences: Iterable[Fence]) -> None:
        self._fences: list[Fence] = list(fences)
        n = len(self._fences)
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        for i, f in enumerate(self._fences):
            if f.id is None:
                raise ValueError("every fence in an index needs an id")
            if f.id in self._pos:
                raise ValueError(f"duplicate fence id {f.id!r}")
            self._ids.append(f.id)
            self._pos[f.id] = i
        self._names = [f.name for f in self._fences]
        # per position: (lat, lng, radius) for circles, None for polygons (hot-path lookups)
        # (a circle always has a center and radius: Fence.is_circle does not tell mypy so)
        self._circles: list[tuple[float, float, float] | None] = [
            (f.center[0], f.center[1], f.radius) if f.is_circle else None  # type: ignore[index, misc]
            for f in self._fences
        ]
        self._is_circle = np.array([c is not None for c in self._circles], dtype=bool)
        self._clat = np.array([c[0] if c else np.nan for c in self._circles])
        self._clng = np.array([c[1] if c else np.nan for c in self._circles])
        self._crad = np.array([c[2] if c else np.nan for c in self._circles])
        tree_geoms = np.empty(n, dtype=object)
        for i, f in enumerate(self._fences):
            tree_geoms[i] = shapely.box(*circle_bbox(*f.center, f.radius)) if f.is_circle else f.geometry  # type: ignore[call-arg, misc]
        self._geoms = tree_geoms
        self._poly_pos = np.flatnonzero(~self._is_circle)
        self._frame_row = np.full(n, -1, dtype=np.int64)
        self._frame_row[self._poly_pos] = np.arange(len(self._poly_pos))
        self._frames = Frames(tree_geoms[self._poly_pos])
        self._tree = STRtree(tree_geoms) if n else None
        self._build_lazy_parts()

    def _build_lazy_parts(self) -> None:
        """Build the STRtree's nodes now (GEOS builds them on the first query, without a lock),
        before the index is shared between threads; afterwards queries only read it.

        Polygons are deliberately not prepared (``shapely.prepare``): a prepared polygon's
        indexes are built on first use and even once built, concurrent ``intersects`` calls on
        one prepared polygon corrupt the heap (GEOS 3.14, libgeos/geos#825; reproduced by
        tests/engine/geofence_stress.py). Plain geometries are only read by GEOS, so threads may
        share them; distances never touch GEOS (``Frames`` is numpy arrays)."""
        if self._tree is not None:
            self._tree.query(self._geoms[:1])

    def _query_one(self, pt: np.ndarray) -> np.ndarray:
        """Positions of the fences whose tree geometry ``pt[0]`` (a point) meets: shapely's
        public ``STRtree.query``."""
        return self._tree.query(pt[0]) if self._tree is not None else np.empty(0, dtype=np.intp)

    @property
    def vertices(self) -> int:
        """Boundary vertices held by the index (polygons; a circle counts as one): what the
        per-process cache weighs it by."""
        return self._frames.vertex_count + int(self._is_circle.sum())

    # --- collection -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._fences)

    def __iter__(self):
        return iter(self._fences)

    def __contains__(self, fence_id: object) -> bool:
        return fence_id in self._pos

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._ids)

    def get(self, fence_id: str) -> Fence | None:
        i = self._pos.get(fence_id)
        return None if i is None else self._fences[i]

    def positions(self, fence_ids: Sequence[str]) -> np.ndarray:
        """Index positions of ``fence_ids`` (duplicates dropped, order kept); unknown ids raise
        InvalidParameter naming ``fences`` (another account's fence is just as unknown)."""
        seen: dict[str, int] = {}
        unknown: list[str] = []
        for fid in fence_ids:
            i = self._pos.get(fid)
            if i is None:
                if fid not in unknown:
                    unknown.append(fid)
            elif fid not in seen:
                seen[fid] = i
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise InvalidParameter(f"unknown fence id(s): {shown}", parameter="fences")
        return np.fromiter(seen.values(), dtype=np.int64, count=len(seen))

    # --- hot path ---------------------------------------------------------------------------

    def containing(self, lat: float, lng: float) -> list[str]:
        """Ids of the fences containing the point (boundary included), in index order."""
        if self._tree is None:
            return []
        pt = _points1(lng, lat)
        p = pt[0]
        out = []
        circles, geoms, ids = self._circles, self._geoms, self._ids
        for i in sorted(self._query_one(pt).tolist()):
            c = circles[i]
            if c is None:
                if geoms[i].intersects(p):
                    out.append(ids[i])
            elif _GEOD_INV(c[1], c[0], lng, lat)[2] <= c[2]:
                out.append(ids[i])
        return out

    def containing_many(self, lats, lngs) -> list[list[str]]:
        """:meth:`containing` for many points at once, vectorised (fleets, batch checks)."""
        lats = np.asarray(lats, dtype=float)
        lngs = np.asarray(lngs, dtype=float)
        out: list[list[str]] = [[] for _ in range(len(lats))]
        if self._tree is None or len(lats) == 0:
            return out
        points = shapely.points(lngs, lats)
        pt_idx, fence_idx = self._tree.query(points)
        hit = np.zeros(len(pt_idx), dtype=bool)
        circ = self._is_circle[fence_idx]
        poly = ~circ
        if poly.any():
            hit[poly] = shapely.intersects(self._geoms[fence_idx[poly]], points[pt_idx[poly]])
        if circ.any():
            f, p = fence_idx[circ], pt_idx[circ]
            d = GEOD.inv(self._clng[f], self._clat[f], lngs[p], lats[p])[2]
            hit[circ] = d <= self._crad[f]
        order = np.lexsort((fence_idx[hit], pt_idx[hit]))
        ids = self._ids
        for p, f in zip(pt_idx[hit][order].tolist(), fence_idx[hit][order].tolist(), strict=True):
            out[p].append(ids[f])
        return out

    # --- full answer ------------------------------------------------------------------------

    def check(
        self,
        lat: float,
        lng: float,
        fence_ids: Sequence[str] | None = None,
        *,
        within_m: float | None = None,
    ) -> list[FenceStatus]:
        """Every requested fence with ``inside`` and ``distance`` (see the module docstring).

        ``fence_ids=None`` means all fences of the index, ordered inside first, then by distance
        (ties in index order); with ``fence_ids`` the answer keeps their order (duplicates dropped) and an
        unknown id raises InvalidParameter("fences"). ``within_m`` keeps only fences that contain
        the point or whose boundary is at most that many metres away (pre-selected by the tree).
        """
        if fence_ids is not None:
            pos = self.positions(fence_ids)
        elif within_m is not None and self._tree is not None:
            pos = np.unique(self._tree.query(_near_box(lat, lng, within_m)))
        else:
            pos = np.arange(len(self._fences), dtype=np.int64)
        if len(pos) == 0:
            return []
        inside, dist = self._inside_and_distance(pos, lat, lng)
        if within_m is not None:
            keep = inside | (dist <= within_m)
            pos, inside, dist = pos[keep], inside[keep], dist[keep]
        if fence_ids is None:
            order = np.lexsort((pos, dist, ~inside))
            pos, inside, dist = pos[order], inside[order], dist[order]
        ids, names, pl = self._ids, self._names, pos.tolist()
        rows = zip([ids[p] for p in pl], [names[p] for p in pl], inside.tolist(), dist.tolist(), strict=True)
        return list(map(FenceStatus._make, rows))

    def _inside_and_distance(self, pos: np.ndarray, lat: float, lng: float):
        n = len(pos)
        inside = np.zeros(n, dtype=bool)
        circ = self._is_circle[pos]
        poly = ~circ
        # one geodesic call for all: circle centres and the polygons' nearest boundary points
        to_lng, to_lat = np.empty(n), np.empty(n)
        fc = pos[circ]
        to_lng[circ], to_lat[circ] = self._clng[fc], self._clat[fc]
        fp = pos[poly]
        if len(fp):
            to_lng[poly], to_lat[poly] = self._frames.nearest_boundary_points(self._frame_row[fp], lat, lng)
            pt = _points1(lng, lat)
            cand = np.zeros(len(self._fences), dtype=bool)  # bbox candidates: only those can contain
            cand[self._query_one(pt)] = True
            maybe = cand[fp]
            if maybe.any():
                sub = np.zeros(len(fp), dtype=bool)
                sub[maybe] = shapely.intersects(self._geoms[fp[maybe]], pt[0])
                inside[poly] = sub
        dist = GEOD.inv(np.full(n, lng), np.full(n, lat), to_lng, to_lat)[2]
        if len(fc):
            radius = self._crad[fc]
            inside[circ] = dist[circ] <= radius
            dist[circ] = np.abs(dist[circ] - radius)
        return inside, dist


def warm_up() -> None:
    """Load the numba kernel of the distances (from numba's on-disk cache, compiled on a miss)
    with a tiny index holding a small and a large fence, so a process's first check does not
    pay for it."""
    ring = [(24.94 + 0.01 * np.cos(a), 60.17 + 0.005 * np.sin(a)) for a in np.linspace(0, 2 * np.pi, 600)]
    ring[-1] = ring[0]
    fences = [
        Fence("large", "polygon", geometry=shapely.Polygon(ring)),
        Fence("small", "polygon", geometry=shapely.box(24.93, 60.16, 24.95, 60.18)),
    ]
    FenceIndex(fences).check(60.17, 24.94)


def _near_box(lat: float, lng: float, metres: float):
    """A lon/lat box around the point, at least ``metres`` in every direction."""
    return shapely.box(*circle_bbox(lat, lng, max(metres, 0.0) + 1.0))
