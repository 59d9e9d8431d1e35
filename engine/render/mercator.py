"""Web Mercator (EPSG:3857) and slippy-map zoom maths.

Coordinates are metres on the spherical Mercator plane (x east, y north, origin at lng 0 / lat 0).
Zoom ``z`` follows the 256-pixel tile convention: the whole world is ``256 * 2**z`` pixels wide,
so one pixel spans :func:`metres_per_pixel` (``z``) Mercator metres (ground metres are that times
``cos(lat)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

EARTH_RADIUS = 6_378_137.0  # the WGS84 semi-major axis, used as sphere radius by EPSG:3857
ORIGIN_SHIFT = math.pi * EARTH_RADIUS  # x (and y) of the world's edge
WORLD_SIZE = 2.0 * ORIGIN_SHIFT
TILE_SIZE = 256
MAX_LAT = 85.0511287798066  # the latitude where the square world ends
MIN_ZOOM, MAX_ZOOM = 0, 20


def metres_per_pixel(zoom: float) -> float:
    """Mercator metres covered by one (CSS) pixel at ``zoom``."""
    return WORLD_SIZE / (TILE_SIZE * 2.0**zoom)


def to_mercator(lng: ArrayLike, lat: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """lng/lat degrees (scalars or arrays) -> x/y Mercator metres; latitude clamped to MAX_LAT."""
    lng_deg = np.asarray(lng, dtype=float)
    lat_deg = np.clip(np.asarray(lat, dtype=float), -MAX_LAT, MAX_LAT)
    x = np.radians(lng_deg) * EARTH_RADIUS
    y = np.log(np.tan(np.pi / 4.0 + np.radians(lat_deg) / 2.0)) * EARTH_RADIUS
    return x, y


def to_lnglat(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """x/y Mercator metres -> lng/lat degrees."""
    lng = np.degrees(np.asarray(x, dtype=float) / EARTH_RADIUS)
    lat = np.degrees(2.0 * np.arctan(np.exp(np.asarray(y, dtype=float) / EARTH_RADIUS)) - np.pi / 2.0)
    return lng, lat


def coords_to_mercator(coords: np.ndarray) -> np.ndarray:
    """An (n, 2) array of lng/lat -> (n, 2) Mercator metres (for ``shapely.transform``)."""
    x, y = to_mercator(coords[:, 0], coords[:, 1])
    return np.column_stack([x, y])


def fit_zoom(span_x: float, span_y: float, width_px: float, height_px: float, max_zoom: int = 18) -> int:
    """The largest integer zoom at which a Mercator extent fits in ``width_px`` x ``height_px``."""
    need = max(span_x / max(width_px, 1.0), span_y / max(height_px, 1.0))
    if need <= 0:
        return max_zoom
    zoom = math.floor(math.log2(WORLD_SIZE / (TILE_SIZE * need)))
    return int(min(max(zoom, MIN_ZOOM), max_zoom))


@dataclass(frozen=True)
class Viewport:
    """The window a static map shows: centre (Mercator metres), zoom, size in CSS pixels, scale.

    Device pixels are ``width * scale`` by ``height * scale``; :meth:`to_pixel` gives image
    coordinates (origin top-left, y down), which is what tests and overlays need.
    """

    cx: float
    cy: float
    zoom: int
    width: int
    height: int
    scale: int = 1

    @classmethod
    def from_center(cls, lat: float, lng: float, zoom: int, width: int, height: int, scale: int = 1) -> Viewport:
        x, y = to_mercator(lng, lat)
        return cls(float(x), float(y), int(zoom), int(width), int(height), int(scale))

    @property
    def mpp(self) -> float:
        """Mercator metres per CSS pixel."""
        return metres_per_pixel(self.zoom)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """(minx, miny, maxx, maxy) in Mercator metres."""
        hw, hh = self.width * self.mpp / 2.0, self.height * self.mpp / 2.0
        return (self.cx - hw, self.cy - hh, self.cx + hw, self.cy + hh)

    @property
    def lnglat_bounds(self) -> tuple[float, float, float, float]:
        minx, miny, maxx, maxy = self.bounds
        (w, e), (s, n) = to_lnglat([minx, maxx], [miny, maxy])
        return (float(w), float(s), float(e), float(n))

    def to_pixel(self, lat: ArrayLike, lng: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """lat/lng -> image pixel (col, row) in device pixels, origin top-left."""
        x, y = to_mercator(lng, lat)
        minx, _, _, maxy = self.bounds
        k = self.scale / self.mpp
        return (x - minx) * k, (maxy - y) * k

    def merc_to_display(self, x, y):
        """Mercator metres -> matplotlib display coordinates (device pixels, origin bottom-left)."""
        minx, miny, _, _ = self.bounds
        k = self.scale / self.mpp
        return (np.asarray(x) - minx) * k, (np.asarray(y) - miny) * k
