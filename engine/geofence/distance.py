"""Metres for fences: WGS84 geodesic distances and per-fence local frames.

Distances to a fence boundary are computed in two steps, correct at any latitude:

1. each polygon is stored once in its own local equirectangular frame (metres east/north of the
   centre of its bounding box); the query point is mapped into each candidate's frame with a few
   vectorised multiplications, and shapely finds the nearest boundary point in that frame
   (``shapely.shortest_line`` on arrays, no Python loop);
2. that boundary point is mapped back to lon/lat and the reported distance is the WGS84 geodesic
   distance (``pyproj.Geod``) from the query point to it.

The frame's scale error (a few 1e-4 for a fence a kilometre tall at 60 degrees north) only moves
*which* boundary point is taken, a second-order effect on the distance; the distance itself is
always a true geodesic length. Circles need no frame: the distance to their boundary is
``|geodesic(point, centre) - radius|``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import shapely
from numpy.typing import NDArray
from pyproj import Geod

from engine.geo import EARTH_RADIUS_M

GEOD = Geod(ellps="WGS84")

M_PER_DEG = math.pi * EARTH_RADIUS_M / 180.0
# A degree of latitude is at most 111.7 km on the WGS84 ellipsoid and a degree of longitude at
# most cos(lat) * 111.7 km; the sphere above gives 111.2 km. Circle bounding boxes are widened by
# this factor (plus a centimetre) so that they always contain the true geodesic circle.
_BBOX_SAFETY = 1.01


def circle_bbox(lat: float, lng: float, radius_m: float) -> tuple[float, float, float, float]:
    """A lon/lat box (min_lng, min_lat, max_lng, max_lat) that surely contains the circle.

    Near a pole or across the antimeridian the longitude range becomes the whole [-180, 180]
    (the box is only a pre-filter; the exact test is geodesic)."""
    dlat = radius_m * _BBOX_SAFETY / M_PER_DEG + 1e-7
    min_lat, max_lat = max(-90.0, lat - dlat), min(90.0, lat + dlat)
    widest = max(abs(min_lat), abs(max_lat))
    cos_min = math.cos(math.radians(widest))
    if widest >= 89.9 or cos_min <= 0:
        return -180.0, min_lat, 180.0, max_lat
    dlng = radius_m * _BBOX_SAFETY / (M_PER_DEG * cos_min) + 1e-7
    if lng - dlng < -180.0 or lng + dlng > 180.0:
        return -180.0, min_lat, 180.0, max_lat
    return lng - dlng, min_lat, lng + dlng, max_lat


# Fences with at most this many boundary vertices are also kept as flat numpy segment arrays, so
# that distances to many of them cost a few vectorised operations (no geometry allocated per
# fence and query). Larger ones (administrative areas) use shapely on their prepared boundary.
SEGMENT_MAX_VERTICES = 512


def _to_local(lng0: float, lat0: float, kx: float) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    """lon/lat coordinates -> metres east/north of (lng0, lat0) (``kx`` metres per degree of longitude)."""

    def transform(coords: NDArray[np.float64]) -> NDArray[np.float64]:
        return (coords - (lng0, lat0)) * (kx, M_PER_DEG)

    return transform


class Frames:
    """Local equirectangular frames of many polygons, with vectorised distance queries.

    ``geometries`` are lon/lat Polygon/MultiPolygon; the frame of geometry ``i`` is centred on its
    bounding-box centre ``(lat0[i], lng0[i])`` with ``kx[i]`` metres per degree of longitude.
    """

    def __init__(self, geometries) -> None:
        geoms = np.asarray(geometries, dtype=object)
        n = len(geoms)
        bounds = shapely.bounds(geoms) if n else np.zeros((0, 4))
        self.lng0 = (bounds[:, 0] + bounds[:, 2]) / 2.0
        self.lat0 = (bounds[:, 1] + bounds[:, 3]) / 2.0
        self.kx = np.cos(np.radians(self.lat0)) * M_PER_DEG
        self.small = np.zeros(n, dtype=bool)
        self.seg_start = np.zeros(n, dtype=np.int64)
        self.seg_count = np.zeros(n, dtype=np.int64)
        self.boundaries = np.full(n, None, dtype=object)  # large fences only
        starts, ends, total = [], [], 0
        for i, g in enumerate(geoms):
            projected = shapely.transform(g, _to_local(self.lng0[i], self.lat0[i], self.kx[i]))
            boundary = shapely.boundary(projected)
            if shapely.get_num_coordinates(boundary) > SEGMENT_MAX_VERTICES:
                shapely.prepare(boundary)
                self.boundaries[i] = boundary
                continue
            rings = [shapely.get_coordinates(part) for part in shapely.get_parts(boundary)]
            a = np.concatenate([r[:-1] for r in rings])
            b = np.concatenate([r[1:] for r in rings])
            starts.append(a)
            ends.append(b)
            self.small[i] = True
            self.seg_start[i], self.seg_count[i] = total, len(a)
            total += len(a)
        a = np.concatenate(starts) if starts else np.zeros((0, 2))
        b = np.concatenate(ends) if ends else np.zeros((0, 2))
        self.ax, self.ay = np.ascontiguousarray(a[:, 0]), np.ascontiguousarray(a[:, 1])
        self.dx, self.dy = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1]
        len2 = self.dx**2 + self.dy**2
        self.len2 = np.where(len2 > 0, len2, 1.0)  # a zero-length segment: t = 0, its start point

    def nearest_boundary_points(self, idx: np.ndarray, lat: float, lng: float):
        """(lngs, lats) of the boundary point of each polygon ``idx`` nearest to (lat, lng)."""
        n = len(idx)
        if n == 0:
            return np.zeros(0), np.zeros(0)
        px = (lng - self.lng0[idx]) * self.kx[idx]
        py = (lat - self.lat0[idx]) * M_PER_DEG
        small = self.small[idx]
        if small.all():
            nx, ny = self._nearest_segments(idx, px, py)
        else:
            nx, ny = np.empty(n), np.empty(n)
            if small.any():
                nx[small], ny[small] = self._nearest_segments(idx[small], px[small], py[small])
            large = ~small
            nx[large], ny[large] = self._nearest_shapely(idx[large], px[large], py[large])
        return nx / self.kx[idx] + self.lng0[idx], ny / M_PER_DEG + self.lat0[idx]

    def _nearest_segments(self, idx, px, py):
        """Nearest boundary point (frame metres) of each small polygon ``idx``: project the point
        on every segment of the polygon, keep the closest (first on ties)."""
        counts = self.seg_count[idx]
        starts = self.seg_start[idx]
        offs = np.cumsum(counts) - counts  # first segment of each polygon in the gathered arrays
        total = int(counts.sum())
        group = np.repeat(np.arange(len(idx)), counts)
        if total == len(self.ax) and (len(idx) < 2 or bool(np.all(idx[1:] > idx[:-1]))):
            ax, ay, dx, dy, len2 = self.ax, self.ay, self.dx, self.dy, self.len2  # all, in order
        else:
            seg = np.repeat(starts - offs, counts) + np.arange(total)
            ax, ay, dx, dy, len2 = self.ax[seg], self.ay[seg], self.dx[seg], self.dy[seg], self.len2[seg]
        gx, gy = px[group], py[group]
        t = np.clip(((gx - ax) * dx + (gy - ay) * dy) / len2, 0.0, 1.0)
        qx, qy = ax + t * dx, ay + t * dy
        d2 = (gx - qx) ** 2 + (gy - qy) ** 2
        mins = np.minimum.reduceat(d2, offs)
        # first segment reaching each polygon's minimum
        first = np.minimum.reduceat(np.where(d2 == mins[group], np.arange(total), total), offs)
        return qx[first], qy[first]

    def _nearest_shapely(self, idx, px, py):
        lines = shapely.shortest_line(self.boundaries[idx], shapely.points(px, py))
        near = shapely.get_coordinates(lines).reshape(-1, 2, 2)[:, 0, :]
        return near[:, 0], near[:, 1]
