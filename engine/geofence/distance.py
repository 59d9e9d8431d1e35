"""Metres for fences: WGS84 geodesic distances and per-fence local frames.

Distances to a fence boundary are computed in two steps, correct at any latitude:

1. each polygon is stored once in its own local equirectangular frame (metres east/north of the
   centre of its bounding box); the query point is mapped into each candidate's frame with a few
   vectorised multiplications, and the nearest boundary point in that frame is found with numpy
   over the polygon's segments (for large polygons only those of the chunks that may hold it);
2. that boundary point is mapped back to lon/lat and the reported distance is the WGS84 geodesic
   distance (``pyproj.Geod``) from the query point to it.

The frame's scale error (a few 1e-4 for a fence a kilometre tall at 60 degrees north) only moves
*which* boundary point is taken, a second-order effect on the distance; the distance itself is
always a true geodesic length. Circles need no frame: the distance to their boundary is
``|geodesic(point, centre) - radius|``.

The frames are plain numpy arrays, never GEOS geometries: GEOS builds the indexes of a prepared
geometry lazily, on its first use, and two threads doing that first use at once corrupt the heap
(GEOS prepared geometries are not thread-safe, libgeos/geos#825).
"""

from __future__ import annotations

import math

import numba
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


# A fence with more boundary vertices than this is also cut into chunks of consecutive segments
# (about sqrt(vertices) each, never across rings) with their bounding boxes: a query measures every
# chunk's box and only the segments of the chunks that may hold the nearest point. Smaller fences
# are measured on all their segments at once, which costs less than the pruning.
SEGMENT_MAX_VERTICES = 512
MIN_CHUNK_SEGMENTS = 32
# Relative slack when comparing a chunk's lower bound with the best upper bound: both are rounded
# squared distances, and a chunk that may hold the minimum must never be dropped.
_PRUNE_SLACK = 1e-9


def _rings(geometry) -> list[NDArray[np.float64]]:
    """Every ring (shells and holes) of a Polygon/MultiPolygon as an (n, 2) lon/lat array, closed."""
    return [shapely.get_coordinates(r) for r in shapely.get_rings(shapely.get_parts(geometry))]


class Frames:
    """Local equirectangular frames of many polygons, with vectorised distance queries.

    ``geometries`` are lon/lat Polygon/MultiPolygon; the frame of geometry ``i`` is centred on its
    bounding-box centre ``(lat0[i], lng0[i])`` with ``kx[i]`` metres per degree of longitude.

    Only numpy arrays, written once here and read-only afterwards, so one instance is safe to
    share between threads (no GEOS object is touched by a query):

    =================  =======  ======================================================================
    array              dtype    meaning
    =================  =======  ======================================================================
    ``vx``, ``vy``     float64  every ring's vertices in its polygon's frame (metres), rings one after
                                another; segment ``j`` goes from vertex ``j`` to vertex ``j + 1``
    ``range_start``    int64    first segment of each ring (a ring of n vertices has n - 1 segments)
    ``range_count``    int64    segments of each ring
    ``ring_first``     int64    per polygon: its first ring; ``ring_count`` its number of rings
    ``chunk_start``    int64    first segment of each chunk of a large polygon (chunks of one ring)
    ``chunk_count``    int64    segments of each chunk
    ``chunk_box``      float64  (n_chunks, 4): x0, y0, x1, y1 of the chunk's segments
    ``chunk_first``    int64    per polygon: its first chunk; ``chunk_n``: its number of chunks (0
                                for a small polygon)
    =================  =======  ======================================================================
    """

    def __init__(self, geometries) -> None:
        geoms = np.asarray(geometries, dtype=object)
        n = len(geoms)
        bounds = shapely.bounds(geoms) if n else np.zeros((0, 4))
        self.lng0 = (bounds[:, 0] + bounds[:, 2]) / 2.0
        self.lat0 = (bounds[:, 1] + bounds[:, 3]) / 2.0
        self.kx = np.cos(np.radians(self.lat0)) * M_PER_DEG
        self.ring_first = np.zeros(n, dtype=np.int64)
        self.ring_count = np.zeros(n, dtype=np.int64)
        self.chunk_first = np.zeros(n, dtype=np.int64)
        self.chunk_n = np.zeros(n, dtype=np.int64)
        total = int(shapely.get_num_coordinates(geoms).sum()) if n else 0
        self.vx, self.vy = np.empty(total), np.empty(total)
        range_start: list[int] = []
        range_count: list[int] = []
        chunk_start: list[NDArray[np.int64]] = []
        chunk_count: list[NDArray[np.int64]] = []
        chunk_box: list[NDArray[np.float64]] = []
        at = n_chunks = 0
        for i, g in enumerate(geoms):
            rings = _rings(g)
            self.ring_first[i], self.ring_count[i] = len(range_start), len(rings)
            large = sum(len(r) for r in rings) > SEGMENT_MAX_VERTICES
            self.chunk_first[i] = n_chunks
            for ring in rings:
                m = len(ring)
                x = self.vx[at : at + m]
                y = self.vy[at : at + m]
                np.multiply(ring[:, 0] - self.lng0[i], self.kx[i], out=x)
                np.multiply(ring[:, 1] - self.lat0[i], M_PER_DEG, out=y)
                range_start.append(at)
                range_count.append(m - 1)
                if large:
                    starts, counts, boxes = _chunks(x, y)
                    chunk_start.append(at + starts)
                    chunk_count.append(counts)
                    chunk_box.append(boxes)
                    n_chunks += len(starts)
                at += m
            self.chunk_n[i] = n_chunks - self.chunk_first[i]
        self.range_start = np.array(range_start, dtype=np.int64)
        self.range_count = np.array(range_count, dtype=np.int64)
        self.chunk_start = np.concatenate(chunk_start) if chunk_start else np.zeros(0, dtype=np.int64)
        self.chunk_count = np.concatenate(chunk_count) if chunk_count else np.zeros(0, dtype=np.int64)
        self.chunk_box = np.concatenate(chunk_box) if chunk_box else np.zeros((0, 4))

    @property
    def vertex_count(self) -> int:
        return len(self.vx)

    def nearest_boundary_points(self, idx: np.ndarray, lat: float, lng: float):
        """(lngs, lats) of the boundary point of each polygon ``idx`` nearest to (lat, lng)."""
        idx = np.asarray(idx, dtype=np.int64)
        px = (lng - self.lng0[idx]) * self.kx[idx]
        py = (lat - self.lat0[idx]) * M_PER_DEG
        nx, ny = np.empty(len(idx)), np.empty(len(idx))
        _nearest_points(
            idx,
            px,
            py,
            self.vx,
            self.vy,
            self.range_start,
            self.range_count,
            self.ring_first,
            self.ring_count,
            self.chunk_start,
            self.chunk_count,
            self.chunk_box,
            self.chunk_first,
            self.chunk_n,
            nx,
            ny,
        )
        return nx / self.kx[idx] + self.lng0[idx], ny / M_PER_DEG + self.lat0[idx]


def _chunks(x: NDArray[np.float64], y: NDArray[np.float64]):
    """A ring (closed, frame metres) cut into chunks of about sqrt(segments) segments: their
    first segments, segment counts and boxes (x0, y0, x1, y1, the end vertex included)."""
    segments = len(x) - 1
    size = max(MIN_CHUNK_SEGMENTS, math.isqrt(segments))
    starts = np.arange(0, segments, size, dtype=np.int64)
    counts = np.minimum(size, segments - starts)
    ends = starts + counts
    boxes = np.column_stack(
        (
            np.minimum(np.minimum.reduceat(x[:-1], starts), x[ends]),
            np.minimum(np.minimum.reduceat(y[:-1], starts), y[ends]),
            np.maximum(np.maximum.reduceat(x[:-1], starts), x[ends]),
            np.maximum(np.maximum.reduceat(y[:-1], starts), y[ends]),
        )
    )
    return starts, counts, boxes


@numba.njit(cache=True, nogil=True)
def _nearest_on_segments(x, y, vx, vy, first, count, best, bx, by, best_j):  # pragma: no cover - numba
    """Segments ``first .. first + count - 1`` (segment j: vertex j to j + 1) against the best
    so far (squared distance, point, segment); ties go to the lowest segment."""
    for j in range(first, first + count):
        ax, ay = vx[j], vy[j]
        dx, dy = vx[j + 1] - ax, vy[j + 1] - ay
        len2 = dx * dx + dy * dy
        t = ((x - ax) * dx + (y - ay) * dy) / len2 if len2 > 0 else 0.0  # zero length: its start
        t = min(max(t, 0.0), 1.0)
        qx, qy = ax + t * dx, ay + t * dy
        d2 = (x - qx) ** 2 + (y - qy) ** 2
        if d2 < best or (d2 == best and j < best_j):
            best, bx, by, best_j = d2, qx, qy, j
    return best, bx, by, best_j


@numba.njit(cache=True, nogil=True)
def _nearest_points(
    idx, px, py, vx, vy, range_start, range_count, ring_first, ring_count,
    chunk_start, chunk_count, chunk_box, chunk_first, chunk_n, out_x, out_y,
):  # pragma: no cover - numba  # fmt: skip
    """Nearest boundary point (frame metres) of polygon ``idx[k]`` to (px[k], py[k]): every
    segment of a small polygon; for a large one the chunks by increasing distance of their box,
    stopping at the first box farther than the best point found."""
    for k in range(len(idx)):
        i, x, y = idx[k], px[k], py[k]
        best, bx, by, best_j = np.inf, np.nan, np.nan, -1
        if chunk_n[i] == 0:
            for r in range(ring_first[i], ring_first[i] + ring_count[i]):
                best, bx, by, best_j = _nearest_on_segments(
                    x, y, vx, vy, range_start[r], range_count[r], best, bx, by, best_j
                )
        else:
            c0, n = chunk_first[i], chunk_n[i]
            lower = np.empty(n)
            for c in range(n):
                ex = max(chunk_box[c0 + c, 0] - x, x - chunk_box[c0 + c, 2], 0.0)
                ey = max(chunk_box[c0 + c, 1] - y, y - chunk_box[c0 + c, 3], 0.0)
                lower[c] = ex * ex + ey * ey
            for c in np.argsort(lower):
                if lower[c] > best * (1.0 + _PRUNE_SLACK):
                    break
                best, bx, by, best_j = _nearest_on_segments(
                    x, y, vx, vy, chunk_start[c0 + c], chunk_count[c0 + c], best, bx, by, best_j
                )
        out_x[k], out_y[k] = bx, by
