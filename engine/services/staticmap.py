"""Static map images (``cmd=staticmap``, ``/v1/staticmaps``).

The window is, in order of precedence: ``center`` + ``zoom``; ``bbox`` (centred on it, at the
given ``zoom`` or the largest zoom that shows all of it); or the markers and paths (plus
``center`` when given, kept in the middle) fitted at the largest zoom that shows them all, at
most 17. ``width`` x ``height`` are CSS pixels (each at most ``Limits.staticmap_max_size``); the
image is ``scale`` times larger. Result: a :class:`~engine.results.BinaryResult`
(``content_type`` ``image/png`` | ``image/jpeg``, ``body`` bytes).

The web layer parses ``size=<w>x<h>``, ``center=<lat>,<lng>``, ``bbox=<minlng>,<minlat>,<maxlng>,
<maxlat>`` and uses :func:`engine.render.overlays.parse_markers` / ``parse_path`` for the
``markers`` / ``path`` strings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from engine.dataset import DatasetRegistry
from engine.errors import DatasetError, InvalidParameter
from engine.limits import DEFAULT_LIMITS, Limits
from engine.render.layers import LayerStore
from engine.render.mercator import MAX_LAT, MAX_ZOOM, MIN_ZOOM, Viewport, fit_zoom, to_mercator
from engine.render.overlays import Marker, Path, parse_color
from engine.render.staticmap import FORMATS, render
from engine.results import BinaryResult

__all__ = ["Marker", "Path", "StaticMapParams", "run", "viewport_for"]

log = logging.getLogger("meridian.staticmap")

FIT_MAX_ZOOM = 17  # auto-fit to overlays never zooms in further than this
BBOX_MAX_ZOOM = 18
SINGLE_POINT_ZOOM = 15
PIN_HEIGHT_PX = 34


@dataclass(frozen=True)
class StaticMapParams:
    center: tuple[float, float] | None = None  # (lat, lng)
    zoom: int | None = None
    bbox: tuple[float, float, float, float] | None = None  # (min_lng, min_lat, max_lng, max_lat)
    width: int = 600
    height: int = 400
    scale: int = 1
    markers: tuple[Marker, ...] = ()
    paths: tuple[Path, ...] = ()
    format: str = "png"  # png | jpg (jpeg accepted)


def _check_point(lat: float, lng: float, parameter: str) -> None:
    if not (-MAX_LAT <= lat <= MAX_LAT and -180.0 <= lng <= 180.0):
        raise InvalidParameter(
            f"{lat},{lng} is outside the Web Mercator range (|lat| <= 85.05, |lng| <= 180)",
            parameter=parameter,
        )


def validate(params: StaticMapParams, limits: Limits | None = None) -> None:
    limits = limits or DEFAULT_LIMITS
    top = limits.staticmap_max_size
    if not (1 <= params.width <= top and 1 <= params.height <= top):
        raise InvalidParameter(f"size must be between 1x1 and {top}x{top}", parameter="size")
    if params.scale not in (1, 2):
        raise InvalidParameter("scale must be 1 or 2", parameter="scale")
    if params.format.lower() not in FORMATS:
        raise InvalidParameter("format must be png or jpg", parameter="format")
    if params.zoom is not None and not (MIN_ZOOM <= params.zoom <= MAX_ZOOM):
        raise InvalidParameter(f"zoom must be between {MIN_ZOOM} and {MAX_ZOOM}", parameter="zoom")
    if params.center is not None:
        _check_point(params.center[0], params.center[1], "center")
    if params.bbox is not None:
        w, s, e, n = params.bbox
        if not (-180 <= w < e <= 180 and -MAX_LAT <= s < n <= MAX_LAT):
            raise InvalidParameter(
                "bbox must be min_lng,min_lat,max_lng,max_lat with min < max, within the Web Mercator range",
                parameter="bbox",
            )
    if len(params.markers) > limits.staticmap_markers:
        raise InvalidParameter(f"at most {limits.staticmap_markers} markers", parameter="markers")
    for m in params.markers:
        _check_point(m.lat, m.lng, "markers")
        parse_color(m.color, "markers")
        if m.label is not None and (len(m.label) != 1 or not m.label.isalnum()):
            raise InvalidParameter("a marker label is one letter or digit", parameter="markers")
    total = sum(len(p.points) for p in params.paths)
    if total > limits.staticmap_path_points:
        raise InvalidParameter(f"at most {limits.staticmap_path_points} path points in all", parameter="path")
    for p in params.paths:
        if len(p.points) < 2:
            raise InvalidParameter("a path needs at least 2 points", parameter="path")
        parse_color(p.color, "path")
        if not 1 <= p.weight <= 20:
            raise InvalidParameter("path weight must be between 1 and 20", parameter="path")
        for lat, lng in p.points:
            _check_point(lat, lng, "path")


def viewport_for(params: StaticMapParams) -> Viewport:
    """The window the parameters ask for (see the module docstring)."""
    w, h, scale = params.width, params.height, params.scale
    if params.center is not None and params.zoom is not None:
        return Viewport.from_center(params.center[0], params.center[1], params.zoom, w, h, scale)
    if params.bbox is not None:
        min_lng, min_lat, max_lng, max_lat = params.bbox
        (x0, x1), (y0, y1) = to_mercator([min_lng, max_lng], [min_lat, max_lat])
        zoom = params.zoom if params.zoom is not None else fit_zoom(x1 - x0, y1 - y0, w, h, max_zoom=BBOX_MAX_ZOOM)
        return Viewport((x0 + x1) / 2, (y0 + y1) / 2, zoom, w, h, scale)
    lats = [m.lat for m in params.markers] + [pt[0] for p in params.paths for pt in p.points]
    lngs = [m.lng for m in params.markers] + [pt[1] for p in params.paths for pt in p.points]
    if not lats:
        if params.center is not None:
            raise InvalidParameter("zoom is required with center (or give markers or a path)", parameter="zoom")
        raise InvalidParameter("give center and zoom, a bbox, or markers or a path to fit", parameter="center")
    x, y = to_mercator(np.array(lngs), np.array(lats))
    pin = PIN_HEIGHT_PX if params.markers else 0
    pad = 16
    avail_w, avail_h = max(w - 2 * pad, 1), max(h - 2 * pad - pin, 1)
    if params.center is not None:
        cx, cy = (float(v) for v in to_mercator(params.center[1], params.center[0]))
        span_x = 2 * float(np.max(np.abs(x - cx)))
        span_y = 2 * float(np.max(np.abs(y - cy)))
    else:
        cx, cy = float(x.min() + x.max()) / 2, float(y.min() + y.max()) / 2
        span_x, span_y = float(x.max() - x.min()), float(y.max() - y.min())
    if params.zoom is not None:
        zoom = params.zoom
    elif span_x == 0 and span_y == 0:
        zoom = SINGLE_POINT_ZOOM
    else:
        zoom = fit_zoom(span_x, span_y, avail_w, avail_h, max_zoom=FIT_MAX_ZOOM)
    vp = Viewport(cx, cy, zoom, w, h, scale)
    if params.center is None and pin:
        vp = Viewport(cx, cy + pin / 2 * vp.mpp, zoom, w, h, scale)  # room for the pin heads
    return vp


def _stores(datasets: DatasetRegistry) -> list[LayerStore]:
    stores = []
    for ds in datasets.all():
        try:
            stores.append(ds.component("layers"))
        except (DatasetError, OSError) as exc:
            log.warning("region %s has no usable layers: %s", ds.region, exc)
    return stores


def run(datasets: DatasetRegistry, params: StaticMapParams) -> BinaryResult:
    validate(params)
    fmt = params.format.lower()
    vp = viewport_for(params)
    body = render(_stores(datasets), vp, params.markers, params.paths, fmt)
    return BinaryResult(FORMATS[fmt], body)
