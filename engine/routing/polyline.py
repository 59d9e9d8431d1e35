"""Google encoded polylines (precision 5 or 6), ``lat,lng`` order, encoder in numba."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _encode(lat, lng, factor, out):
    n = 0
    plat = 0
    plng = 0
    for i in range(lat.shape[0]):
        ilat = int(np.floor(lat[i] * factor + 0.5))
        ilng = int(np.floor(lng[i] * factor + 0.5))
        for d in (ilat - plat, ilng - plng):
            v = d << 1
            if d < 0:
                v = ~v
            while v >= 0x20:
                out[n] = (0x20 | (v & 0x1F)) + 63
                n += 1
                v >>= 5
            out[n] = v + 63
            n += 1
        plat = ilat
        plng = ilng
    return n


def encode(lat, lng, precision: int = 5) -> str:
    lat = np.ascontiguousarray(lat, dtype=np.float64)
    lng = np.ascontiguousarray(lng, dtype=np.float64)
    out = np.empty(lat.shape[0] * 2 * 7 + 8, dtype=np.uint8)
    n = _encode(lat, lng, float(10**precision), out)
    return out[:n].tobytes().decode("ascii")


def decode(text: str, precision: int = 5) -> list[tuple[float, float]]:
    """``[(lat, lng), ...]`` (pure Python; for parameters and tests)."""
    factor = 10.0**precision
    points: list[tuple[float, float]] = []
    i = lat = lng = 0
    n = len(text)
    while i < n:
        vals = []
        for _ in range(2):
            shift = result = 0
            while True:
                if i >= n:
                    raise ValueError("truncated polyline")
                b = ord(text[i]) - 63
                i += 1
                result |= (b & 0x1F) << shift
                shift += 5
                if b < 0x20:
                    break
            vals.append(~(result >> 1) if result & 1 else result >> 1)
        lat += vals[0]
        lng += vals[1]
        points.append((lat / factor, lng / factor))
    return points
