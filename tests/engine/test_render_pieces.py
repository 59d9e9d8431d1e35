"""The static map's base map in kept pieces: seamless, bounded, dropped with the dataset version,
and its dashes and labels drawn as matplotlib would."""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.path import Path as MplPath
from PIL import Image

from engine.render import staticmap as R
from engine.render.mercator import Viewport
from engine.services.staticmap import StaticMapParams, _stores, run

MONACO = (43.7384, 7.4246)
HELSINKI = (60.1699, 24.9440)


@pytest.fixture
def fresh_pieces(monkeypatch):
    """A cache of pieces of its own for one test."""
    pieces = R._Pieces(R.BASE_CACHE_BYTES)
    monkeypatch.setattr(R, "PIECES", pieces)
    return pieces


@pytest.mark.parametrize(("centre", "zoom", "scale"), [(MONACO, 15, 1), (MONACO, 17, 1), (HELSINKI, 16, 2)])
def test_pieces_meet_without_seams(datasets, fresh_pieces, centre, zoom, scale):
    """Two by two pieces cut and put together are the same window drawn in one go: the lines
    crossing the seams (wide roads, dashed paths) are not notched or out of step there."""
    stores = _stores(datasets)
    m = R.METATILE_PX
    _, x0, y0 = R._snapped(Viewport.from_center(*centre, zoom, m // scale, m // scale, scale))
    col, row = x0 // m, y0 // m
    corner = R._piece_viewport(zoom, scale, col, row)
    whole_vp = Viewport(
        corner.cx + corner.width * corner.mpp / 2,
        corner.cy - corner.height * corner.mpp / 2,
        zoom,
        2 * corner.width,
        2 * corner.height,
        scale,
    )
    whole = R._compose(stores, whole_vp, col * m, row * m)[:, :, :3].astype(np.int16)
    assert fresh_pieces.drawn == 0  # the first map needing them is drawn whole
    composed = R._compose(stores, whole_vp, col * m, row * m)[:, :, :3].astype(np.int16)
    assert fresh_pieces.drawn == 4
    diff = np.abs(whole - composed).max(axis=2)
    assert (diff > 0).mean() < 0.005  # matplotlib's own path simplification, a few pixels
    assert (diff > 32).sum() == 0
    assert whole.std() > 10  # a real map, not two blank images


def test_pieces_are_drawn_for_the_second_map_needing_them(datasets, fresh_pieces):
    """The first map of a place is drawn whole, the second is cut out of new pieces, the third
    out of kept ones: the last two byte for byte alike, the first nearly (the pieces' seams)."""
    wanted = StaticMapParams(center=MONACO, zoom=15, width=300, height=200)
    whole = run(datasets, wanted).body
    assert fresh_pieces.drawn == 0 and not fresh_pieces.kept
    from_new = run(datasets, wanted).body
    drawn = fresh_pieces.drawn
    assert drawn >= 1
    assert run(datasets, wanted).body == from_new
    assert fresh_pieces.drawn == drawn  # every piece it needed was kept
    a, b = (np.asarray(Image.open(io.BytesIO(x)).convert("RGB"), dtype=np.int16) for x in (whole, from_new))
    assert (np.abs(a - b).max(axis=2) > 32).mean() < 0.002


def test_a_map_from_pieces_kept_for_other_maps(datasets, fresh_pieces):
    """Pieces drawn for neighbouring maps make the same map as pieces drawn for this one."""
    wanted = StaticMapParams(center=MONACO, zoom=15, width=300, height=200)
    run(datasets, wanted)
    own = run(datasets, wanted).body
    fresh_pieces.clear()
    for _ in range(2):
        for d in (0.001, -0.001):
            run(datasets, StaticMapParams(center=(MONACO[0] + d, MONACO[1] + 2 * d), zoom=15, width=300, height=200))
    before = fresh_pieces.drawn
    assert run(datasets, wanted).body == own
    assert fresh_pieces.drawn == before


def test_pieces_are_bounded_in_memory(datasets, monkeypatch):
    piece_bytes = R.METATILE_PX * R.METATILE_PX * 3
    pieces = R._Pieces(3 * piece_bytes)
    monkeypatch.setattr(R, "PIECES", pieces)
    for dx in range(6):
        for _ in range(2):
            run(datasets, StaticMapParams(center=(MONACO[0], MONACO[1] + dx * 0.01), zoom=16, width=400, height=300))
    assert pieces.drawn > 3
    assert len(pieces.kept) <= 3
    assert pieces.nbytes == sum(p.nbytes for p in pieces.kept.values()) <= 3 * piece_bytes


def test_pieces_are_dropped_when_the_dataset_version_changes(datasets, fresh_pieces):
    stores = _stores(datasets)
    fresh_pieces.get(stores, 15, 1, 16970, 11950)
    assert len(fresh_pieces.kept) == 1

    class NewVersion:  # the same region's layers at another version directory
        def __init__(self, store):
            self.store = store
            self.path = store.path.parent.parent / "20990101T000000-new" / store.path.name

        def __getattr__(self, name):
            return getattr(self.store, name)

    fresh_pieces.get([NewVersion(st) for st in stores], 15, 1, 16970, 11951)
    assert list(fresh_pieces.kept) == [(15, 1, 16970, 11951)]
    assert fresh_pieces.drawn == 2


def test_what_maps_asked_for_is_bounded(datasets, fresh_pieces, monkeypatch):
    monkeypatch.setattr(R, "ASKED_KEPT", 10)
    stores = _stores(datasets)
    for col in range(25):
        assert not fresh_pieces.admit(stores, [(15, 1, col, 0)])
        assert len(fresh_pieces.asked) <= 10
    assert fresh_pieces.admit(stores, [(15, 1, 24, 0)])  # asked for again


def test_a_map_outside_every_dataset_draws_no_piece(datasets, fresh_pieces):
    body = run(datasets, StaticMapParams(center=(-33.0, -60.0), zoom=12, width=300, height=200)).body
    assert fresh_pieces.drawn == 0 and not fresh_pieces.kept
    assert Image.open(io.BytesIO(body)).size == (300, 200)


def test_the_viewport_moves_less_than_half_a_pixel_onto_the_grid():
    for scale in (1, 2):
        vp = Viewport.from_center(43.73841, 7.42463, 15, 601, 401, scale)
        snapped, x0, y0 = R._snapped(vp)
        k = scale / vp.mpp
        assert abs(snapped.cx - vp.cx) * k <= 0.5 and abs(snapped.cy - vp.cy) * k <= 0.5
        assert (snapped.width, snapped.height, snapped.zoom) == (vp.width, vp.height, vp.zoom)
        again, x1, y1 = R._snapped(snapped)
        assert (x1, y1) == (x0, y0)


def test_dashes_start_at_each_line_start():
    """Two runs: 0-10-(10,5) (15 long) and (100,100)-(105,100); dashes 3 on, 2 off from each
    run's first vertex, a dash crossing a vertex keeps it (the corner at (10, 0))."""
    v = np.array([[0, 0], [10, 0], [10, 5], [100, 100], [105, 100]], dtype=float)
    codes = np.array([1, 2, 2, 1, 2], dtype=np.uint8)
    dashed = R._dashed(MplPath(v, codes), 3.0, 2.0)
    runs, run = [], []
    for (x, y), code in zip(dashed.vertices.tolist(), dashed.codes.tolist(), strict=True):
        if code == MplPath.MOVETO and run:
            runs.append(run)
            run = []
        run.append((round(x, 6), round(y, 6)))
    runs.append(run)
    runs = [[p for i, p in enumerate(r) if i == 0 or p != r[i - 1]] for r in runs]  # repeated vertices
    assert runs == [
        [(0, 0), (3, 0)],
        [(5, 0), (8, 0)],
        [(10, 0), (10, 3)],
        [(100, 100), (103, 100)],
    ]


def test_labels_draw_as_matplotlib_text_with_a_halo():
    """A label (outline made once, rotated and placed per map) is pixel for pixel the
    ``Text`` with a ``withStroke`` halo it replaces."""
    from matplotlib.patheffects import withStroke

    vp = Viewport.from_center(*MONACO, 15, 160, 60, 2)
    pictures = []
    for own in (True, False):
        c = R._Canvas(vp)
        for angle, (x, y) in ((0.0, (150.0, 60.0)), (-33.0, (170.0, 70.0))):
            if own:
                outline = R._glyphs(c, "Rue Grimaldi", 10.0, "normal", "normal")
                c.fig.add_artist(R._Label(outline, x, y, angle, "#333333"))
            else:
                c.fig.text(
                    x,
                    y,
                    "Rue Grimaldi",
                    transform=R._IDENT,
                    fontsize=10.0,
                    color="#333333",
                    rotation=angle,
                    rotation_mode="anchor",
                    ha="center",
                    va="center",
                    path_effects=[withStroke(linewidth=3.0, foreground="#ffffff")],
                )
        c.canvas.draw()
        pictures.append(np.asarray(c.canvas.buffer_rgba()).copy())
    assert (pictures[0] != pictures[0][0, 0]).any()
    assert np.array_equal(pictures[0], pictures[1])
