"""Google's encoded polyline algorithm (precision 5, or 6 as used by OSRM/Valhalla).

Points are (lat, lng) tuples. ``encode_arrays`` is the hot path for route geometries (numba, over
numpy arrays); ``decode`` raises ``ValueError`` on a malformed string, and callers turn that into
``InvalidParameter`` naming their parameter.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _encode_arrays(lat, lng, factor, out):
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


def encode_arrays(lat, lng, precision: int = 5) -> str:
    """Encode parallel arrays of latitudes and longitudes."""
    lat = np.ascontiguousarray(lat, dtype=np.float64)
    lng = np.ascontiguousarray(lng, dtype=np.float64)
    out = np.empty(lat.shape[0] * 2 * 7 + 8, dtype=np.uint8)
    n = _encode_arrays(lat, lng, float(10**precision), out)
    return out[:n].tobytes().decode("ascii")


def _encode_value(value: int, out: list[str]) -> None:
    value = ~(value << 1) if value < 0 else value << 1
    while value >= 0x20:
        out.append(chr((0x20 | (value & 0x1F)) + 63))
        value >>= 5
    out.append(chr(value + 63))


def encode(points, precision: int = 5) -> str:
    factor = 10**precision
    out: list[str] = []
    prev_lat = prev_lng = 0
    for lat, lng in points:
        ilat, ilng = round(lat * factor), round(lng * factor)
        _encode_value(ilat - prev_lat, out)
        _encode_value(ilng - prev_lng, out)
        prev_lat, prev_lng = ilat, ilng
    return "".join(out)


def decode(text: str, precision: int = 5) -> list[tuple[float, float]]:
    factor = float(10**precision)
    points: list[tuple[float, float]] = []
    index, lat, lng, n = 0, 0, 0, len(text)
    while index < n:
        deltas = []
        for _ in range(2):
            shift = result = 0
            while True:
                if index >= n:
                    raise ValueError("truncated encoded polyline")
                b = ord(text[index]) - 63
                index += 1
                if b < 0 or b > 63:
                    raise ValueError(f"invalid character in encoded polyline at {index - 1}")
                result |= (b & 0x1F) << shift
                shift += 5
                if b < 0x20:
                    break
                if shift > 60:
                    raise ValueError("encoded polyline value too long")
            deltas.append(~(result >> 1) if result & 1 else result >> 1)
        lat += deltas[0]
        lng += deltas[1]
        points.append((lat / factor, lng / factor))
    return points
