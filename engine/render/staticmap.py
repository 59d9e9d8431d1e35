"""The static map renderer: matplotlib ``Figure`` + Agg canvas, never pyplot.

The figure has no axes: every base-map artist is the figure's own, with one affine transform from
Web Mercator metres to device pixels, so every layer is drawn straight from the stored geometries
(an axes would add ticks, spines and a clip path to build and apply per map, for nothing drawn).
The figure is ``width/72`` x ``height/72`` inches at ``72 * scale`` dpi: one point is one CSS
pixel, so the style's pixel widths and font sizes are point sizes and ``scale=2`` doubles every
device pixel without changing what is shown.

Speed: the base map (every layer but the labels) is drawn in squares of METATILE_PX device
pixels on the zoom's pixel grid, kept per process (bounded, dropped when a dataset version
changes; a piece is drawn for the second map that needs it, the first is drawn whole), as tile
servers keep metatiles. A map is cut out of the pieces it meets (its viewport moved by under half
a device pixel onto the grid), then its labels (placed for this map: never cut by its edges, clear
of its markers), paths, markers and the attribution are drawn on it. A piece is one R*Tree window
query per dataset, geometry simplified to half a pixel below zoom 16, and one matplotlib artist
per style (all polygons of a class are one compound ``Path``; all lines of a class one ``Path`` of
MOVETO/LINETO runs), so Agg does the work in C.

matplotlib is not thread-safe, so renders in one process are serialised by a lock (Celery
workers are processes; a thread-pooled web worker would queue renders rather than crash).
"""

from __future__ import annotations

import io
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np
import shapely
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import PathPatch, Rectangle
from matplotlib.path import Path as MplPath
from matplotlib.text import Text
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D, IdentityTransform
from PIL import Image

from engine.render import style as S
from engine.render.layers import Features, LayerStore
from engine.render.mercator import ORIGIN_SHIFT, Viewport, metres_per_pixel, to_mercator
from engine.render.overlays import Marker, Path, parse_color

_LOCK = threading.Lock()
_IDENT = IdentityTransform()
FORMATS = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg"}
PIN_HEAD_PX = 23.0  # a marker pin's head: its centre this many CSS pixels above the marked point

# ---------------------------------------------------------------- geometry -> matplotlib paths


def _polygon_path(geoms: np.ndarray) -> MplPath | None:
    """All (multi)polygons as one compound path; holes wind the other way (non-zero fill)."""
    if not len(geoms):
        return None
    polys = shapely.get_parts(geoms)
    polys = polys[shapely.get_type_id(polys) == 3]
    if not len(polys):
        return None
    polys = shapely.orient_polygons(polys)
    rings = shapely.get_rings(polys)
    rings = rings[shapely.get_num_coordinates(rings) >= 4]
    if not len(rings):
        return None
    coords, idx = shapely.get_coordinates(rings, return_index=True)
    codes = np.full(len(coords), MplPath.LINETO, dtype=np.uint8)
    starts = np.r_[0, np.flatnonzero(np.diff(idx)) + 1]
    ends = np.r_[starts[1:] - 1, len(coords) - 1]
    codes[starts] = MplPath.MOVETO
    codes[ends] = MplPath.CLOSEPOLY
    return MplPath(coords, codes)


def _line_path(geoms: np.ndarray) -> MplPath | None:
    """All (multi)lines (polygons contribute their rings) as one path of MOVETO/LINETO runs."""
    if not len(geoms):
        return None
    parts = shapely.get_parts(geoms)
    polys = shapely.get_type_id(parts) == 3
    if polys.any():
        parts = np.concatenate([parts[~polys], shapely.get_rings(parts[polys])])
    parts = parts[shapely.get_num_coordinates(parts) >= 2]
    if not len(parts):
        return None
    coords, idx = shapely.get_coordinates(parts, return_index=True)
    codes = np.full(len(coords), MplPath.LINETO, dtype=np.uint8)
    codes[np.r_[0, np.flatnonzero(np.diff(idx)) + 1]] = MplPath.MOVETO
    return MplPath(coords, codes)


def _dashed(path: MplPath, on: float, off: float) -> MplPath:
    """The dashes of a path of MOVETO/LINETO runs, each dash a run of its own: ``on`` long,
    ``off`` apart (path units), the pattern starting at each run's first vertex.

    Agg's own dashing restarts the pattern where a line enters the canvas (its clipping makes a
    new run there), so two neighbouring base-map pieces would dash a line crossing their border
    out of step; dashes made here are the same on every piece and every map."""
    v = np.asarray(path.vertices, dtype=float)
    codes = np.asarray(path.codes)
    period = on + off
    run = np.cumsum(codes == MplPath.MOVETO) - 1
    first = np.flatnonzero(codes == MplPath.MOVETO)
    step = np.hypot(*np.diff(v, axis=0).T)
    step[run[1:] != run[:-1]] = 0.0
    at = np.r_[0.0, np.cumsum(step)]  # arc length from the path's start
    s = at - at[first][run]  # arc length from the run's start
    length = np.r_[s[first[1:] - 1], s[-1]]
    g = at + run * 2.0 * period  # along the path, runs kept apart (for interpolation)
    n = np.ceil(length / period).astype(np.int64)
    dash0 = np.r_[0, np.cumsum(n)[:-1]]  # first dash of each run
    d_run = np.repeat(np.arange(len(n)), n)
    a = (np.arange(n.sum()) - dash0[d_run]) * period
    b = np.minimum(a + on, length[d_run])
    base = g[first][d_run]
    k = np.floor(s / period)
    inside = (s - k * period < on) & (s > 0) & (k * period < length[run])  # in a dash, not at its start
    ids = np.r_[np.arange(len(a)), np.arange(len(a)), dash0[run[inside]] + k[inside].astype(np.int64)]
    pos = np.r_[a + base, b + base, g[inside]]
    kind = np.r_[np.zeros(len(a)), np.full(len(a), 2.0), np.ones(int(inside.sum()))]
    ends = pos[: 2 * len(a)]
    xy = np.concatenate([np.column_stack([np.interp(ends, g, v[:, 0]), np.interp(ends, g, v[:, 1])]), v[inside]])
    order = np.lexsort((kind, pos, ids))
    out_codes = np.where(kind[order] == 0, MplPath.MOVETO, MplPath.LINETO).astype(np.uint8)
    return MplPath(xy[order], out_codes)


_FIGURES: dict[tuple[int, int, int], tuple[Figure, FigureCanvasAgg]] = {}
_FIGURES_KEPT = 6  # sizes whose figure is kept between renders (the base-map pieces' among them)


def _figure(width: int, height: int, scale: int) -> tuple[Figure, FigureCanvasAgg]:
    """The process's figure and canvas of this size, reused from one map to the next (under
    ``_LOCK``): the canvas keeps its Agg renderer, and with it matplotlib's text metrics cache
    (keyed by renderer), so a street name measured on one map is not laid out again on the next."""
    key = (width, height, scale)
    found = _FIGURES.get(key)
    if found is None:
        if len(_FIGURES) >= _FIGURES_KEPT:
            _FIGURES.clear()
        fig = Figure(figsize=(width / 72.0, height / 72.0), dpi=72.0 * scale)
        found = _FIGURES[key] = (fig, FigureCanvasAgg(fig))
    return found


class _Canvas:
    """A figure without axes: the base map's artists are the figure's own, drawn through one
    affine transform from the viewport's Mercator metres to device pixels (what an axes filling
    the figure would apply, without building the axes' ticks, spines and clip paths per map)."""

    def __init__(self, vp: Viewport) -> None:
        self.vp = vp
        self.fig, self.canvas = _figure(vp.width, vp.height, vp.scale)
        self.fig.clear()
        self.fig.patch.set_facecolor(S.NEUTRAL)
        minx, miny, _, _ = vp.bounds
        k = vp.scale / vp.mpp  # device pixels per metre
        self.data = Affine2D.from_values(k, 0.0, 0.0, k, -minx * k, -miny * k)
        self.z = 0  # artists' zorder, increasing in draw order

    def add(self, artist: Artist) -> None:
        """A base-map artist, in Mercator metres."""
        artist.set_transform(self.data)
        self.fig.add_artist(artist)

    def _next(self) -> int:
        self.z += 1
        return self.z

    def fill(self, path: MplPath | None, colour, edge=None, edge_px: float = 0.0, alpha: float = 1.0) -> None:
        if path is None:
            return
        self.add(
            PathPatch(
                path,
                facecolor=colour,
                edgecolor=edge if edge else "none",
                linewidth=edge_px if edge else 0.0,
                alpha=alpha,
                zorder=self._next(),
                antialiased=True,
            )
        )

    def stroke(
        self, path: MplPath | None, colour, width_px: float, *, dash=None, alpha: float = 1.0, cap: str = "round"
    ) -> None:
        if path is None or width_px <= 0:
            return
        if dash is not None:
            path = _dashed(path, dash[0] * self.vp.mpp, dash[1] * self.vp.mpp)
            cap = "butt"
        self.add(
            PathPatch(
                path,
                facecolor="none",
                edgecolor=colour,
                linewidth=width_px,
                alpha=alpha,
                capstyle=cap,
                joinstyle="round",
                zorder=self._next(),
            )
        )

    def backdrop(self, rgba: np.ndarray) -> None:
        """An image of the canvas's size (rows top to bottom) under every artist."""
        self.fig.add_artist(_Backdrop(rgba))

    def encode(self, fmt: str) -> bytes:
        self.canvas.draw()
        w, h = self.canvas.get_width_height()
        img = Image.frombuffer("RGBA", (w, h), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        img = _stamp_attribution(img.copy(), self.vp).convert("RGB")
        out = io.BytesIO()
        if fmt == "png":
            # 8-bit palette PNG ("png256" of tile servers): a map has few colours, so this is
            # visually the same, ~4x smaller and faster to compress than 24-bit
            img = img.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
            # zlib level 3: 600x400 Monaco maps 2.9 ms and 71 KB against level 6's 7.3 ms and 65 KB
            img.save(out, format="PNG", compress_level=3)
        else:
            img.save(out, format="JPEG", quality=88, optimize=False)
        return out.getvalue()


class _Backdrop(Artist):
    """Device pixels copied as they are onto the canvas, below everything else (no resampling)."""

    def __init__(self, rgba: np.ndarray) -> None:
        super().__init__()
        self.rgba = np.ascontiguousarray(rgba[::-1])  # Agg's image origin is the bottom row
        self.set_zorder(-1)

    def draw(self, renderer) -> None:
        gc = renderer.new_gc()
        renderer.draw_image(gc, 0, 0, self.rgba)
        gc.restore()


# ---------------------------------------------------------------------------- the base map


def _simplify(feats: Features, zoom: int, mpp: float) -> Features:
    if zoom >= 16 or not len(feats):
        return feats
    lines_or_polys = shapely.get_type_id(feats.geom) != 0
    geom = feats.geom.copy()
    geom[lines_or_polys] = shapely.simplify(geom[lines_or_polys], 0.5 * mpp, preserve_topology=False)
    ok = ~shapely.is_empty(geom)
    return Features(feats.layer, feats.cls, feats.name, feats.flags, geom).select(ok)


def _draw_base(c: _Canvas, store: LayerStore, feats: Features) -> None:
    """One dataset's base map: its coverage in land colour, then every layer in draw order.
    (Regions are assumed not to overlap: a second region's land would cover the first's map.)"""
    z = c.vp.zoom
    if store.coverage is not None:
        x0, y0, x1, y1 = store.coverage
        c.add(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=S.LAND, edgecolor="none", zorder=c._next()))
    layer, cls = feats.layer, feats.cls
    # per layer once: its features' indices and classes (comparing strings in object arrays is
    # what costs, and the map selects ~60 times from a few layers)
    by_layer: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def sel(
        layer_name: str, class_name: str | None = None, flags_mask: int | None = None, flags_none: int | None = None
    ) -> np.ndarray:
        if layer_name not in by_layer:
            at = np.flatnonzero(layer == layer_name)
            by_layer[layer_name] = (at, cls[at])
        at, at_cls = by_layer[layer_name]
        m = np.ones(len(at), dtype=bool)
        if class_name is not None:
            m &= at_cls == class_name
        if flags_mask is not None:
            m &= (feats.flags[at] & flags_mask) != 0
        if flags_none is not None:
            m &= (feats.flags[at] & flags_none) == 0
        return feats.geom[at[m]]

    for name, colour in S.LANDUSE_FILL.items():
        c.fill(_polygon_path(sel("landuse", name)), colour)
    for name, colour in S.WATER_FILL.items():
        c.fill(_polygon_path(sel("water", name)), colour)
    for name, stops in S.WATERWAY.items():
        c.stroke(_line_path(sel("waterway", name)), S.WATER, S.interp(stops, z))
    if z >= 14:
        edge = S.BUILDING_EDGE if z >= 16 else None
        c.fill(_polygon_path(sel("building")), S.BUILDING, edge=edge, edge_px=0.6, alpha=1.0 if z >= 15 else 0.8)

    # tunnels: faded, no casing; underground footpaths are left out (passages, metro corridors)
    if z >= 13:
        for name in S.ROAD_ORDER:
            st = S.ROADS[name]
            if st.dash is not None:
                continue
            g = sel("road", name, flags_mask=1)
            if len(g):
                path = _line_path(g)
                w = S.interp(st.width, z)
                c.stroke(path, st.casing or st.fill, w + 1.0, alpha=0.18)
                c.stroke(path, st.fill, w, alpha=0.45)
    # rail below roads
    for name, (colour, stops) in S.RAIL.items():
        g = sel("rail", name, flags_none=1)
        w = S.interp(stops, z)
        c.stroke(_line_path(g), colour, w)
        if name == "rail" and z >= 15 and len(g):
            c.stroke(_line_path(g), "#ffffff", w * 0.5, dash=(6, 6), cap="butt")

    def roads(bridges: bool) -> None:
        layers = [(name, S.ROADS[name]) for name in S.ROAD_ORDER]
        paths = {}
        for name, _ in layers:
            g = sel("road", name, flags_mask=2 if bridges else None, flags_none=1 if bridges else 3)
            paths[name] = _line_path(g)
        for name, st in layers:  # casings first, minor to major
            if st.casing and z >= st.casing_from and paths[name] is not None:
                w = S.interp(st.width, z)
                c.stroke(
                    paths[name],
                    st.casing if not bridges else "#6e6e6e",
                    w + 2 * S.interp(st.casing_px, z),
                    cap="butt" if bridges else "round",
                )
        for name, st in layers:
            if paths[name] is not None:
                c.stroke(paths[name], st.fill, S.interp(st.width, z), dash=st.dash)

    roads(False)
    roads(True)
    # admin borders, dashed
    for level in sorted({int(v) for v in cls[layer == "admin"]}, reverse=True):
        bucket = S.admin_bucket(level)
        g = sel("admin", str(level))
        w = S.interp(S.ADMIN_WIDTH[bucket], z)
        if bucket == 2 and z >= 10:
            c.stroke(_line_path(g), S.ADMIN_COLOUR, w * 3.5, alpha=0.15, cap="butt")
        c.stroke(_line_path(g), S.ADMIN_COLOUR, w, dash=(6.0, 3.0) if bucket <= 4 else (4, 2.5), alpha=0.8)


# ----------------------------------------------------------------- the base map in pieces

METATILE_PX = 512  # side of a kept base-map piece, device pixels
BASE_CACHE_BYTES = 64 * 2**20  # the pieces kept per process, at most (RGB, 768 KiB a piece)
PIECE_BUFFER = 24  # CSS pixels drawn around a piece and cut off: more than half the widest line
ASKED_KEPT = 65_536  # missing pieces whose maps are counted (then the counts start again)


def _snapped(vp: Viewport) -> tuple[Viewport, int, int]:
    """The viewport moved by less than half a device pixel so that its top-left corner lies on
    the zoom's pixel grid, and that corner's column and row on the grid: a map is then cut out
    of the pieces exactly, without resampling."""
    k = vp.scale / vp.mpp  # device pixels per metre
    minx, _, _, maxy = vp.bounds
    x0 = round((minx + ORIGIN_SHIFT) * k)
    y0 = round((ORIGIN_SHIFT - maxy) * k)
    w, h = vp.width * vp.scale, vp.height * vp.scale
    cx = (x0 + w / 2) / k - ORIGIN_SHIFT
    cy = ORIGIN_SHIFT - (y0 + h / 2) / k
    return Viewport(cx, cy, vp.zoom, vp.width, vp.height, vp.scale), x0, y0


def _piece_viewport(zoom: int, scale: int, col: int, row: int) -> Viewport:
    """The piece at (col, row) of the zoom's grid of METATILE_PX squares (row 0 at the top)."""
    side = METATILE_PX * metres_per_pixel(zoom) / scale
    css = METATILE_PX // scale
    return Viewport((col + 0.5) * side - ORIGIN_SHIFT, ORIGIN_SHIFT - (row + 0.5) * side, zoom, css, css, scale)


def _draw_piece(stores: Sequence[LayerStore], vp: Viewport) -> np.ndarray:
    """The base map (no labels, no overlays) of a piece or of a whole map, as RGB rows top to
    bottom.

    Drawn on a canvas PIECE_BUFFER CSS pixels wider on every side, then cut out: Agg clips a
    line's centre line just outside the canvas before stroking it, which leaves a notch in a wide
    road crossing the canvas edge; the buffer keeps that notch off the piece. The features are
    queried with the same margin as a map's, so a line or area crossing into the next piece is
    drawn there from the same geometry, simplified alike, and meets itself at the seam."""
    buffered = Viewport(vp.cx, vp.cy, vp.zoom, vp.width + 2 * PIECE_BUFFER, vp.height + 2 * PIECE_BUFFER, vp.scale)
    c = _Canvas(buffered)
    window = _window(buffered)
    for st in stores:
        if st.intersects(window):
            _draw_base(c, st, _simplify(st.query(window, vp.zoom), vp.zoom, vp.mpp))
    c.canvas.draw()
    b, w, h = PIECE_BUFFER * vp.scale, vp.width * vp.scale, vp.height * vp.scale
    return np.asarray(c.canvas.buffer_rgba())[b : b + h, b : b + w, :3].copy()


class _Pieces:
    """Base-map pieces drawn once and kept, least recently used first out, within
    BASE_CACHE_BYTES. This is how tile servers keep metatiles: a map is cut out of the pieces it
    meets, then only its labels, paths, markers and attribution are drawn on it. The pieces belong
    to one set of dataset versions (the layer files' paths): when it changes, all are dropped.

    A piece is drawn the second time a map needs it, not the first (``admit``): a piece has ~4x
    a 600x400 map's area, so drawing the pieces of a map nobody asks for again would cost 2-3x
    drawing the map alone; a map whose pieces are not all kept and asked for before is drawn
    whole, as before the pieces, and looks the same."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.kept: OrderedDict[tuple[int, int, int, int], np.ndarray] = OrderedDict()
        self.versions: tuple[str, ...] = ()
        self.drawn = 0  # pieces drawn so far (tests, benchmarks)
        self.asked: dict[tuple[int, int, int, int], int] = {}  # missing pieces: maps that needed them

    def clear(self) -> None:
        self.kept.clear()
        self.asked.clear()
        self.nbytes = 0

    def _check_versions(self, stores: Sequence[LayerStore]) -> None:
        versions = tuple(str(st.path) for st in stores)
        if versions != self.versions:
            self.clear()
            self.versions = versions

    def admit(self, stores: Sequence[LayerStore], keys: Sequence[tuple[int, int, int, int]]) -> bool:
        """Is a map needing these pieces cut out of them? Yes when each is kept or was needed by
        an earlier map (it is then drawn now); this map's need is counted either way."""
        self._check_versions(stores)
        missing = [k for k in keys if k not in self.kept]
        if len(self.asked) + len(missing) > ASKED_KEPT:
            self.asked.clear()
        for k in missing:
            self.asked[k] = self.asked.get(k, 0) + 1
        return all(self.asked[k] >= 2 for k in missing)

    def get(self, stores: Sequence[LayerStore], zoom: int, scale: int, col: int, row: int) -> np.ndarray:
        self._check_versions(stores)
        key = (zoom, scale, col, row)
        piece = self.kept.get(key)
        if piece is not None:
            self.kept.move_to_end(key)
            return piece
        piece = _draw_piece(stores, _piece_viewport(zoom, scale, col, row))
        self.asked.pop(key, None)
        self.drawn += 1
        self.kept[key] = piece
        self.nbytes += piece.nbytes
        while self.nbytes > self.max_bytes and len(self.kept) > 1:
            _, old = self.kept.popitem(last=False)
            self.nbytes -= old.nbytes
        return piece


PIECES = _Pieces(BASE_CACHE_BYTES)
_NEUTRAL_RGB = np.array([int(S.NEUTRAL[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.uint8)


def _compose(stores: Sequence[LayerStore], vp: Viewport, x0: int, y0: int) -> np.ndarray:
    """The map's base (RGBA, rows top to bottom) cut out of the pieces it meets, or drawn whole
    when they are not admitted (see ``_Pieces``); ``vp`` is snapped, ``(x0, y0)`` its top-left
    device pixel on the zoom's grid. A piece no dataset covers is the neutral background, drawn
    without being kept."""
    m, s = METATILE_PX, vp.scale
    w, h = vp.width * s, vp.height * s
    out = np.empty((h, w, 4), dtype=np.uint8)
    out[:, :, 3] = 255
    cells = [
        (col, row, any(st.intersects(_window(_piece_viewport(vp.zoom, s, col, row))) for st in stores))
        for row in range(y0 // m, (y0 + h - 1) // m + 1)
        for col in range(x0 // m, (x0 + w - 1) // m + 1)
    ]
    if not PIECES.admit(stores, [(vp.zoom, s, col, row) for col, row, covered in cells if covered]):
        out[:, :, :3] = _draw_piece(stores, vp)
        return out
    for col, row, covered in cells:
        ax0, ax1 = max(x0, col * m), min(x0 + w, (col + 1) * m)
        ay0, ay1 = max(y0, row * m), min(y0 + h, (row + 1) * m)
        dst = out[ay0 - y0 : ay1 - y0, ax0 - x0 : ax1 - x0, :3]
        if not covered:
            dst[:] = _NEUTRAL_RGB
        else:
            piece = PIECES.get(stores, vp.zoom, s, col, row)
            dst[:] = piece[ay0 - row * m : ay1 - row * m, ax0 - col * m : ax1 - col * m]
    return out


# ---------------------------------------------------------------------------------- labels


_REF_SIZE = 100.0
_REF_HEIGHT = 0.0
_CHAR_WIDTHS: dict[str, dict[str, float]] = {}


def _char_widths(weight: str) -> dict[str, float]:
    return _CHAR_WIDTHS.setdefault(weight, {})


def _char_width(ch: str, weight: str) -> float:
    """Advance of one character at _REF_SIZE px, measured once per process."""
    global _REF_HEIGHT
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    renderer = RendererAgg(10, 10, 72)
    prop = FontProperties(size=_REF_SIZE, weight=weight)
    w, h, _ = renderer.get_text_width_height_descent(f"x{ch}x", prop, ismath=False)
    wx, h2, _ = renderer.get_text_width_height_descent("xx", prop, ismath=False)
    if not _REF_HEIGHT:
        _REF_HEIGHT = renderer.get_text_width_height_descent("Hg", prop, ismath=False)[1]
    _CHAR_WIDTHS.setdefault(weight, {})[ch] = max(w - wx, 0.0)
    return _CHAR_WIDTHS[weight][ch]


class _Labels:
    """Greedy label placement with axis-aligned collision boxes in device pixels."""

    def __init__(self, c: _Canvas) -> None:
        self.c = c
        self.boxes: list[tuple[float, float, float, float]] = []
        self.W, self.H = c.vp.width * c.vp.scale, c.vp.height * c.vp.scale

    def _free(self, box: tuple[float, float, float, float]) -> bool:
        x0, y0, x1, y1 = box
        if x0 < 2 or y0 < 2 or x1 > self.W - 2 or y1 > self.H - 2:
            return False
        return all(not (x0 < a1 and x1 > a0 and y0 < b1 and y1 > b0) for a0, b0, a1, b1 in self.boxes)

    def measure(self, text: str, size_px: float, weight: str = "normal") -> tuple[float, float]:
        """Width and height in device pixels, from cached per-character advances (no kerning:
        a pixel or two off, plenty for collision boxes and fitting labels along roads)."""
        widths = _char_widths(weight)
        unit = size_px * self.c.vp.scale / _REF_SIZE
        w = sum(widths.get(ch) or _char_width(ch, weight) for ch in text) * unit
        return w, _REF_HEIGHT * unit

    def add(
        self,
        x: float,
        y: float,
        text: str,
        size_px: float,
        angle: float = 0.0,
        weight: str = "normal",
        colour: str = S.LABEL,
        pad: float = 3.0,
        style: str = "normal",
    ) -> bool:
        s = self.c.vp.scale
        w, h = self.measure(text, size_px, weight)
        a = math.radians(angle)
        hw = (abs(w * math.cos(a)) + abs(h * math.sin(a))) / 2 + pad * s
        hh = (abs(w * math.sin(a)) + abs(h * math.cos(a))) / 2 + pad * s
        box = (x - hw, y - hh, x + hw, y + hh)
        if not self._free(box):
            return False
        self.boxes.append(box)
        self.c.fig.add_artist(_Label(_glyphs(self.c, text, size_px, weight, style), x, y, angle, colour))
        return True


_GLYPHS: dict[tuple[str, float, str, str, int], MplPath] = {}
_GLYPHS_KEPT = 2_000  # label outlines kept per process (~8 KB each)


def _glyphs(c: _Canvas, text: str, size_px: float, weight: str, style: str) -> MplPath:
    """A label's outline in device pixels, centred on (0, 0) as ``Text(ha="center",
    va="center")`` places it, made once per text and font per process: laying out and outlining
    the glyphs is most of what drawing a label costs."""
    key = (text, size_px, weight, style, c.vp.scale)
    found = _GLYPHS.get(key)
    if found is not None:
        return found
    renderer = c.canvas.get_renderer()
    at = Text(
        0.0, 0.0, text, fontsize=size_px, fontweight=weight, fontstyle=style, transform=_IDENT, ha="center", va="center"
    )
    at.set_figure(c.fig)
    box = at.get_window_extent(renderer)
    at.set_verticalalignment("baseline")
    baseline = at.get_window_extent(renderer)
    outline = TextPath((0.0, 0.0), text, size=renderer.points_to_pixels(size_px), prop=at.get_fontproperties())
    # the baseline's start: left of the centre by half the width, below it by half the height
    # less the descent
    verts = outline.vertices + (box.x0, box.y0 - baseline.y0)
    if len(_GLYPHS) >= _GLYPHS_KEPT:
        _GLYPHS.clear()
    found = _GLYPHS[key] = MplPath(verts, outline.codes)
    return found


class _Label(Artist):
    """A label drawn as ``Text`` with a ``withStroke`` halo draws it: the outline filled and
    stroked 3 px wide in the halo colour, then filled again; rotated about its centre."""

    def __init__(self, outline: MplPath, x: float, y: float, angle: float, colour: str) -> None:
        super().__init__()
        self.outline = outline
        self.at = Affine2D().rotate_deg(angle).translate(x, y)
        self.rgba = to_rgba(colour)
        self.set_zorder(10_000)

    def draw(self, renderer) -> None:
        gc = renderer.new_gc()
        gc.set_antialiased(True)
        gc.set_linewidth(3.0)
        gc.set_foreground(S.LABEL_HALO)
        renderer.draw_path(gc, self.outline, self.at, self.rgba)
        gc.set_linewidth(0.0)
        gc.set_foreground(self.rgba, isRGBA=True)
        renderer.draw_path(gc, self.outline, self.at, self.rgba)
        gc.restore()


def _street_labels(labels: _Labels, feats: Features) -> None:
    vp, z = labels.c.vp, labels.c.vp.zoom
    s = vp.scale
    minx, miny, maxx, maxy = vp.bounds
    road = (feats.layer == "road") & (feats.name != None)  # noqa: E711 - numpy elementwise
    if not road.any():
        return
    order = {name: i for i, name in enumerate(reversed(S.ROAD_ORDER))}  # major first
    by_name: dict[str, list] = {}
    rank: dict[str, int] = {}
    for cls, name, g in zip(feats.cls[road], feats.name[road], feats.geom[road], strict=False):
        st = S.ROADS[cls]
        if st.label_size <= 0:
            continue
        major = cls in ("motorway", "trunk", "primary")
        if z < (S.LABEL_MIN_ZOOM_MAJOR if major else S.LABEL_MIN_ZOOM):
            continue
        by_name.setdefault(name, []).append(g)
        rank[name] = min(rank.get(name, 99), order[cls])
    k = s / vp.mpp
    spacing = 260.0 * s  # the same name is not repeated closer than this (dual carriageways)
    for name in sorted(by_name, key=lambda n: rank[n]):
        placed_at: list[tuple[float, float]] = []
        cls = S.ROAD_ORDER[len(S.ROAD_ORDER) - 1 - rank[name]]
        size = S.ROADS[cls].label_size
        w, _ = labels.measure(name, size)
        need = w * 1.15 + 10 * s
        if shapely.length(by_name[name]).sum() * k < need:
            continue  # no merged and clipped piece can be longer than all the pieces together
        merged = shapely.line_merge(shapely.union_all(by_name[name]))
        clipped = shapely.clip_by_rect(merged, minx, miny, maxx, maxy)
        lines = shapely.get_parts(clipped)
        lines = lines[shapely.get_type_id(lines) == 1]
        if not len(lines):
            continue
        # to device pixels (y up, as matplotlib's display coordinates)
        px = shapely.transform(lines, lambda c: np.column_stack([(c[:, 0] - minx) * k, (c[:, 1] - miny) * k]))
        lengths = shapely.length(px)
        placed = 0
        for i in np.argsort(-lengths):
            line, L = px[i], lengths[i]
            if need > L:
                break
            n_try = max(1, int(L // (300 * s)))
            for j in range(n_try):
                at = L * (j + 0.5) / n_try
                for shift in (0.0, 0.25, -0.25):
                    mid = min(max(at + shift * L / n_try, w / 2), L - w / 2)
                    p0 = shapely.line_interpolate_point(line, mid - w / 2)
                    p1 = shapely.line_interpolate_point(line, mid + w / 2)
                    pm = shapely.line_interpolate_point(line, mid)
                    dx, dy = p1.x - p0.x, p1.y - p0.y
                    if math.hypot(dx, dy) < 0.93 * w:  # too curvy here
                        continue
                    angle = math.degrees(math.atan2(dy, dx))
                    if angle > 90:
                        angle -= 180
                    elif angle < -90:
                        angle += 180
                    if any(math.hypot(pm.x - qx, pm.y - qy) < spacing for qx, qy in placed_at):
                        continue
                    if labels.add(pm.x, pm.y, name, size, angle, pad=2.0):
                        placed_at.append((pm.x, pm.y))
                        placed += 1
                        break
            if placed >= 3:
                break


def _area_labels(labels: _Labels, feats: Features) -> None:
    """Names of parks, woods and lakes at high zoom, inside polygons big enough for them."""
    vp, z = labels.c.vp, labels.c.vp.zoom
    if z < S.AREA_LABEL_MIN_ZOOM:
        return
    m = np.isin(feats.layer, ("landuse", "water")) & np.isin(feats.cls, list(S.AREA_LABELS))
    m &= feats.name != None  # noqa: E711 - numpy elementwise
    if not m.any():
        return
    k = vp.scale / vp.mpp
    geoms = feats.geom[m]
    area_px = shapely.area(geoms) * k * k
    bounds = shapely.bounds(geoms)
    points = shapely.point_on_surface(geoms)
    for i in np.argsort(-area_px):
        name, cls = feats.name[m][i], feats.cls[m][i]
        size = S.AREA_LABEL_SIZE
        w, h = labels.measure(name, size)
        if area_px[i] < 4 * w * h or (bounds[i, 2] - bounds[i, 0]) * k < 1.1 * w:
            continue
        x, y = vp.merc_to_display(points[i].x, points[i].y)
        labels.add(float(x), float(y), name, size, colour=S.AREA_LABELS[cls], style="italic")


def _place_labels(labels: _Labels, feats: Features) -> None:
    vp, z = labels.c.vp, labels.c.vp.zoom
    if z > S.PLACE_MAX_ZOOM:
        return
    m = feats.layer == "place"
    if not m.any():
        return
    rank = list(S.PLACE_FONT)
    items = sorted(
        zip(feats.cls[m], feats.name[m], feats.geom[m], strict=False),
        key=lambda t: rank.index(t[0]) if t[0] in rank else 99,
    )
    for cls, name, g in items:
        x, y = vp.merc_to_display(g.x, g.y)
        labels.add(float(x), float(y), name, S.PLACE_FONT.get(cls, 10.0), weight="bold", colour="#555555")


# -------------------------------------------------------------------------------- overlays


def _pin_path(size: float) -> MplPath:
    """A map pin with its tip at (0, 0), in device pixels (y up)."""
    r, d = 9.5 * size, PIN_HEAD_PX * size
    alpha = math.acos(r / d)
    a0 = -math.pi / 2 + alpha
    a1 = -math.pi / 2 - alpha + 2 * math.pi
    t = np.linspace(a0, a1, 40)
    ring = np.column_stack([r * np.cos(t), d + r * np.sin(t)])
    verts = np.vstack([[0.0, 0.0], ring, [0.0, 0.0]])
    codes = np.full(len(verts), MplPath.LINETO, dtype=np.uint8)
    codes[0], codes[-1] = MplPath.MOVETO, MplPath.CLOSEPOLY
    return MplPath(verts, codes)


def _darker(rgba, f: float = 0.6):
    return (rgba[0] * f, rgba[1] * f, rgba[2] * f, 1.0)


def _draw_paths(c: _Canvas, paths: Sequence[Path]) -> None:
    for p in paths:
        lat = np.array([pt[0] for pt in p.points])
        lng = np.array([pt[1] for pt in p.points])
        x, y = to_mercator(lng, lat)
        rgba = parse_color(p.color, "path")
        if rgba[3] == 1.0:
            rgba = (*rgba[:3], 0.85)
        codes = np.full(len(x), MplPath.LINETO, dtype=np.uint8)
        codes[0] = MplPath.MOVETO
        c.stroke(MplPath(np.column_stack([x, y]), codes), rgba, float(p.weight))


def _draw_markers(c: _Canvas, markers: Sequence[Marker]) -> None:
    s = c.vp.scale
    pin = _pin_path(s)
    # southern markers drawn last so they overlap the ones behind them
    for m in sorted(markers, key=lambda m: -m.lat):
        rgba = parse_color(m.color, "markers")
        x, y = to_mercator(m.lng, m.lat)
        dx, dy = c.vp.merc_to_display(x, y)
        verts = pin.vertices + np.array([float(dx), float(dy)])
        zo = c._next() + 20_000
        c.fig.add_artist(
            PathPatch(
                MplPath(verts, pin.codes),
                facecolor=rgba,
                edgecolor=_darker(rgba),
                linewidth=1.0,
                transform=_IDENT,
                zorder=zo,
            )
        )
        lum = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2]
        ink = "#000000" if lum > 0.6 else "#ffffff"
        cy = float(dy) + PIN_HEAD_PX * s
        if m.label:
            c.fig.text(
                float(dx),
                cy,
                m.label,
                transform=_IDENT,
                fontsize=11,
                fontweight="bold",
                color=ink,
                ha="center",
                va="center_baseline",
                zorder=zo + 0.5,
            )
        else:
            c.fig.add_artist(
                PathPatch(
                    MplPath.circle((float(dx), cy), 3.2 * s),
                    facecolor=_darker(rgba, 0.45),
                    edgecolor="none",
                    transform=_IDENT,
                    zorder=zo + 0.5,
                )
            )


_ATTRIBUTION: dict[tuple[int, int], Image.Image] = {}
_ATTRIBUTION_PX = (220, 24)  # CSS pixels of the corner the attribution is drawn in


def _attribution(fontsize: int, scale: int) -> Image.Image:
    """The attribution in its white box, on a transparent corner image (RGBA, straight alpha),
    drawn once per font size and scale: it is the same on every map, and drawing its glyphs
    costs as much as all the street names of a map."""
    found = _ATTRIBUTION.get((fontsize, scale))
    if found is not None:
        return found
    w, h = _ATTRIBUTION_PX
    fig = Figure(figsize=(w / 72.0, h / 72.0), dpi=72.0 * scale)
    canvas = FigureCanvasAgg(fig)
    fig.patch.set_alpha(0.0)
    fig.text(
        (w - 3) * scale,
        3 * scale,
        S.ATTRIBUTION,
        transform=_IDENT,
        fontsize=fontsize,
        color="#333333",
        ha="right",
        va="bottom",
        bbox={"boxstyle": "square,pad=0.25", "facecolor": "white", "edgecolor": "none", "alpha": 0.75},
    )
    canvas.draw()
    found = _ATTRIBUTION[(fontsize, scale)] = Image.frombuffer(
        "RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1
    ).copy()
    return found


def _stamp_attribution(img: Image.Image, vp: Viewport) -> Image.Image:
    """The attribution over everything, in the bottom-right corner (what a 9 px text anchored
    3 px from the corner draws there; 7 px on maps narrower than 200 px)."""
    corner = _attribution(9 if vp.width >= 200 else 7, vp.scale)
    cw, ch = corner.size
    w, h = img.size
    sx, sy = max(cw - w, 0), max(ch - h, 0)  # a map smaller than the corner shows its bottom right
    img.alpha_composite(corner, dest=(max(w - cw, 0), max(h - ch, 0)), source=(sx, sy))
    return img


# ----------------------------------------------------------------------------------- public


def render(
    stores: Iterable[LayerStore],
    vp: Viewport,
    markers: Sequence[Marker] = (),
    paths: Sequence[Path] = (),
    fmt: str = "png",
) -> bytes:
    """Draw the base map of every store meeting the viewport, then the overlays; image bytes.

    Outside every store's coverage the image is the neutral background (plus overlays and the
    attribution), still a valid image of the requested size.
    """
    fmt = "jpg" if fmt == "jpeg" else fmt
    stores = list(stores)
    vp, x0, y0 = _snapped(vp)
    window = _window(vp)
    # labels are placed per map (never cut by its edges, clear of its markers): only named
    # features are read for them; the rest of the base map comes from the kept pieces
    queried = [
        (st, _simplify(st.query(window, vp.zoom, named=True), vp.zoom, vp.mpp))
        for st in stores
        if st.intersects(window)
    ]
    with _LOCK:
        base = _compose(stores, vp, x0, y0)
        c = _Canvas(vp)
        c.backdrop(base)
        labels = _Labels(c)
        _draw_markers_boxes(labels, markers)
        for _, feats in queried:
            _place_labels(labels, feats)
        for _, feats in queried:
            _street_labels(labels, feats)
        for _, feats in queried:
            _area_labels(labels, feats)
        _draw_paths(c, paths)
        _draw_markers(c, markers)
        return c.encode(fmt)


def _window(vp: Viewport) -> tuple[float, float, float, float]:
    """The viewport's bounds with a margin of 40 CSS pixels: features just outside still reach
    into the picture (line widths, casings)."""
    margin = 40 * vp.mpp
    minx, miny, maxx, maxy = vp.bounds
    return (minx - margin, miny - margin, maxx + margin, maxy + margin)


def _draw_markers_boxes(labels: _Labels, markers: Sequence[Marker]) -> None:
    """Reserve the markers' area and the attribution corner so labels stay clear of them."""
    vp, s = labels.c.vp, labels.c.vp.scale
    for m in markers:
        x, y = to_mercator(m.lng, m.lat)
        dx, dy = vp.merc_to_display(x, y)
        labels.boxes.append((float(dx) - 11 * s, float(dy), float(dx) + 11 * s, float(dy) + 34 * s))
    W = vp.width * s
    labels.boxes.append((W - 180 * s, 0.0, W, 16 * s))
