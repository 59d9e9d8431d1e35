"""Static maps: images of the right size and format, real map content, overlays, validation."""

from __future__ import annotations

import io

import numpy as np
import osmium
import pytest
from PIL import Image

from config.settings import PROJECT_ROOT
from engine import polyline
from engine.errors import InvalidParameter
from engine.geo import haversine_m
from engine.limits import Limits
from engine.render import style
from engine.render.mercator import Viewport, metres_per_pixel, to_lnglat, to_mercator
from engine.render.overlays import Marker, Path, parse_color, parse_markers, parse_path
from engine.results import BinaryResult
from engine.services.staticmap import StaticMapParams, run, viewport_for

MONACO = (43.7384, 7.4246)
HELSINKI = (60.1699, 24.9440)
SAMPLES = PROJECT_ROOT / "data" / "samples"


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)


def _image(result: BinaryResult) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(result.body)).convert("RGB"), dtype=np.int16)


def _near(img: np.ndarray, col: float, row: float, colour: np.ndarray, tol: int = 28, radius: int = 1) -> bool:
    r, c = int(round(row)), int(round(col))
    patch = img[max(r - radius, 0) : r + radius + 1, max(c - radius, 0) : c + radius + 1]
    return bool((np.abs(patch - colour).max(axis=2) <= tol).any())


# ------------------------------------------------------------------------------ mercator


def test_mercator_round_trip_and_zoom_scale():
    x, y = to_mercator(7.4246, 43.7384)
    lng, lat = to_lnglat(x, y)
    assert abs(lng - 7.4246) < 1e-9 and abs(lat - 43.7384) < 1e-9
    assert metres_per_pixel(0) == pytest.approx(156_543.03392804097)
    assert metres_per_pixel(15) == pytest.approx(4.777314267823516)
    vp = Viewport.from_center(*MONACO, 15, 600, 400, 2)
    col, row = vp.to_pixel(*MONACO)
    assert (col, row) == (pytest.approx(600), pytest.approx(400))


# ------------------------------------------------------------------------------- images


@pytest.mark.parametrize("center", [MONACO, HELSINKI])
@pytest.mark.parametrize("zoom", [13, 15, 17])
def test_png_decodes_with_size_and_content(datasets, center, zoom):
    result = run(datasets, StaticMapParams(center=center, zoom=zoom, width=320, height=240))
    assert result.content_type == "image/png"
    img = Image.open(io.BytesIO(result.body))
    assert img.format == "PNG" and img.size == (320, 240)
    arr = np.asarray(img.convert("RGB"), dtype=np.int16)
    data_area = arr[60:180, 80:240]  # the middle of the image, inside coverage for both samples
    # not a blank image: several map colours that each cover a real share of the area
    _, counts = np.unique(data_area.reshape(-1, 3), axis=0, return_counts=True)
    assert (counts >= 0.005 * counts.sum()).sum() >= 4
    land = (np.abs(data_area - _rgb(style.LAND)).max(axis=2) <= 3).mean()
    assert land < 0.9
    assert data_area.std() > 10


def test_scale_2_and_jpeg(datasets):
    result = run(datasets, StaticMapParams(center=MONACO, zoom=16, width=300, height=200, scale=2, format="jpg"))
    assert result.content_type == "image/jpeg"
    img = Image.open(io.BytesIO(result.body))
    assert img.format == "JPEG" and img.size == (600, 400)


def test_max_size_renders(datasets):
    top = Limits().staticmap_max_size
    result = run(datasets, StaticMapParams(center=HELSINKI, zoom=15, width=top, height=top))
    assert Image.open(io.BytesIO(result.body)).size == (top, top)


def test_outside_coverage_is_a_neutral_valid_image(datasets):
    result = run(datasets, StaticMapParams(center=(-33.0, -60.0), zoom=12, width=300, height=200))
    arr = _image(result)
    assert arr.shape == (200, 300, 3)
    neutral = (np.abs(arr - _rgb(style.NEUTRAL)).max(axis=2) <= 2).mean()
    assert neutral > 0.9  # all but the attribution corner


def test_attribution_in_the_corner(datasets):
    arr = _image(run(datasets, StaticMapParams(center=(-33.0, -60.0), zoom=12, width=300, height=200)))
    corner = arr[-16:, -170:]
    dark = (corner.max(axis=2) < 120).mean()  # text pixels
    assert dark > 0.02
    assert (arr[:100, :100].max(axis=2) < 120).mean() == 0.0


def test_sea_is_water_coloured_off_monaco(datasets):
    """The sea, assembled from the coastline, is drawn south-east of Monaco."""
    params = StaticMapParams(center=(43.725, 7.445), zoom=14, width=200, height=200)
    arr = _image(run(datasets, params))
    centre = arr[90:110, 90:110]
    assert (np.abs(centre - _rgb(style.WATER)).max(axis=2) <= 6).mean() > 0.9


def _primary_way(pbf) -> list[tuple[float, float]]:
    """The longest primary road way of the extract (not a tunnel/bridge), as (lat, lng)."""
    best: list[tuple[float, float]] = []
    best_len = 0.0
    fp = osmium.FileProcessor(str(pbf)).with_locations().with_filter(osmium.filter.TagFilter(("highway", "primary")))
    for way in fp:
        if not isinstance(way, osmium.osm.Way) or way.tags.get("tunnel", "no") != "no" or "bridge" in way.tags:
            continue
        # the longest run of nodes inside the extract (ways at its edge are cut)
        runs: list[list[tuple[float, float]]] = [[]]
        for n in way.nodes:
            if n.location.valid():
                runs[-1].append((n.location.lat, n.location.lon))
            elif runs[-1]:
                runs.append([])
        pts = max(runs, key=len)
        length = sum(haversine_m(*a, *b) for a, b in zip(pts, pts[1:], strict=False))
        if length > best_len:
            best, best_len = pts, length
    return best


@pytest.mark.parametrize("region", ["monaco", "helsinki"])
def test_bbox_render_shows_a_known_primary_road(datasets, region):
    pts = _primary_way(SAMPLES / f"{region}.osm.pbf")
    assert len(pts) >= 2
    lats, lngs = [p[0] for p in pts], [p[1] for p in pts]
    bbox = (min(lngs), min(lats), max(lngs), max(lats))
    params = StaticMapParams(bbox=bbox, width=640, height=640)
    arr = _image(run(datasets, params))
    vp = viewport_for(params)
    assert vp.zoom >= 14  # roads are several pixels wide
    fill = _rgb(style.ROADS["primary"].fill)
    # points every ~3 px along the way, those well inside the image
    samples = []
    for (la0, ln0), (la1, ln1) in zip(pts, pts[1:], strict=False):
        c0, r0 = vp.to_pixel(la0, ln0)
        c1, r1 = vp.to_pixel(la1, ln1)
        n = max(int(np.hypot(c1 - c0, r1 - r0) // 3), 1)
        for t in np.linspace(0, 1, n, endpoint=False):
            c, r = c0 + t * (c1 - c0), r0 + t * (r1 - r0)
            if 8 <= c < 632 and 8 <= r < 620:
                samples.append((c, r))
    assert len(samples) >= 20
    on_road = np.mean([_near(arr, c, r, fill) for c, r in samples])
    print(f"{region}: {len(samples)} samples, on road {on_road:.2f}")
    assert on_road >= 0.7, f"only {on_road:.2f} of the points along the road are road-coloured"
    # control: the same test at points 40 px away from the road mostly fails
    rng = np.random.default_rng(7)
    off = []
    for c, r in samples[:: max(len(samples) // 40, 1)]:
        a = rng.uniform(0, 2 * np.pi)
        cc, rr = c + 40 * np.cos(a), r + 40 * np.sin(a)
        if 2 <= cc < 638 and 2 <= rr < 618:
            off.append(_near(arr, cc, rr, fill, radius=0))
    print(f"{region}: 40 px off the road {np.mean(off):.2f}")
    assert np.mean(off) < on_road - 0.3


def test_markers_and_path_are_drawn(datasets):
    a, b = (43.7397, 7.4263), (43.7360, 7.4300)
    params = StaticMapParams(
        center=MONACO,
        zoom=16,
        width=500,
        height=400,
        markers=(Marker(*a, color="0x00ff00", label="A"),),
        paths=(Path((a, b), color="0xff00ffff", weight=6),),
    )
    arr = _image(run(datasets, params))
    vp = viewport_for(params)
    col, row = vp.to_pixel(*a)
    # pin head 23 px above the tip, green
    assert _near(arr, col + 6, row - 23, np.array([0, 255, 0]), tol=20, radius=2)
    magenta = np.array([255, 0, 255])
    c1, r1 = vp.to_pixel(*b)
    hits = [_near(arr, col + t * (c1 - col), row + t * (r1 - row), magenta, tol=30) for t in np.linspace(0.3, 0.95, 12)]
    assert np.mean(hits) > 0.8


def test_fit_to_markers_and_paths(datasets):
    pts = ((43.7300, 7.4150), (43.7450, 7.4350))
    params = StaticMapParams(width=600, height=400, markers=tuple(Marker(*p) for p in pts))
    vp = viewport_for(params)
    assert 12 <= vp.zoom <= 16
    for p in pts:
        col, row = vp.to_pixel(*p)
        assert 0 <= col <= 600 and 34 <= row <= 400  # the pin heads fit too
    one = viewport_for(StaticMapParams(markers=(Marker(*MONACO),)))
    assert one.zoom == 15
    path_only = viewport_for(StaticMapParams(paths=(Path(pts),)))
    assert path_only.zoom >= vp.zoom
    img = Image.open(io.BytesIO(run(datasets, params).body))
    assert img.size == (600, 400)


def test_bbox_fit_contains_the_bbox():
    bbox = (7.40, 43.72, 7.44, 43.75)
    vp = viewport_for(StaticMapParams(bbox=bbox, width=600, height=400))
    w, s, e, n = vp.lnglat_bounds
    assert w <= 7.40 and s <= 43.72 and e >= 7.44 and n >= 43.75
    tighter = Viewport(vp.cx, vp.cy, vp.zoom + 1, 600, 400).lnglat_bounds
    assert tighter[0] > 7.40 or tighter[1] > 43.72 or tighter[2] < 7.44 or tighter[3] < 43.75


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "params, parameter",
    [
        (StaticMapParams(center=MONACO, zoom=15, width=2000), "size"),
        (StaticMapParams(center=MONACO, zoom=15, height=0), "size"),
        (StaticMapParams(center=MONACO, zoom=15, scale=3), "scale"),
        (StaticMapParams(center=MONACO, zoom=15, format="gif"), "format"),
        (StaticMapParams(center=MONACO, zoom=21), "zoom"),
        (StaticMapParams(center=(89.0, 7.0), zoom=3), "center"),
        (StaticMapParams(center=MONACO), "zoom"),
        (StaticMapParams(), "center"),
        (StaticMapParams(bbox=(7.5, 43.7, 7.4, 43.8)), "bbox"),
        (StaticMapParams(markers=(Marker(43.7, 7.4, color="pink"),)), "markers"),
        (StaticMapParams(markers=tuple(Marker(43.7, 7.4) for _ in range(101))), "markers"),
        (StaticMapParams(paths=(Path(((43.7, 7.4),)),)), "path"),
        (StaticMapParams(paths=(Path(tuple((43.7, 7.4 + i * 1e-4) for i in range(1001))),)), "path"),
    ],
)
def test_invalid_parameters_name_the_parameter(datasets, params, parameter):
    with pytest.raises(InvalidParameter) as exc:
        run(datasets, params)
    assert exc.value.parameter == parameter


def test_parse_markers():
    ms = parse_markers("color:red|label:a|43.73,7.42|43.74,7.43")
    assert ms == (Marker(43.73, 7.42, "red", "A"), Marker(43.74, 7.43, "red", "A"))
    assert parse_markers("43.73,7.42") == (Marker(43.73, 7.42),)
    assert parse_markers("color:0x00FF00|-33.5,-70.6")[0].lat == -33.5
    for bad in (
        "",
        "color:red",
        "label:AB|43.7,7.4",
        "color:nope|43.7,7.4",
        "43.7",
        "size:x|shape:star|43.7,7.4",
        "43.7,7.4|color:red",
        "95,7.4",
    ):
        with pytest.raises(InvalidParameter) as exc:
            parse_markers(bad)
        assert exc.value.parameter == "markers", bad


def test_parse_path():
    p = parse_path("color:0x0000ff|weight:5|43.73,7.42|43.74,7.43")
    assert p == Path(((43.73, 7.42), (43.74, 7.43)), "0x0000ff", 5)
    pts = [(43.73, 7.42), (43.735, 7.425), (43.74, 7.43)]
    for text in (
        "enc:" + polyline.encode(pts),
        "polyline:" + polyline.encode(pts),
        "weight:2|polyline6:" + polyline.encode(pts, 6),
    ):
        np.testing.assert_allclose(parse_path(text).points, pts, atol=1e-6)
    # an encoded polyline may contain '|': everything after the prefix is the polyline
    bar = [(38.5, -120.2), (40.7, -120.95), (43.252, -126.453)]
    enc = polyline.encode(bar)
    assert "|" in enc
    np.testing.assert_allclose(parse_path("color:red|enc:" + enc).points, bar)
    for bad in (
        "43.7,7.4",
        "weight:0|43.7,7.4|43.8,7.5",
        "weight:x|43.7,7.4|43.8,7.5",
        "color:zz|43.7,7.4|43.8,7.5",
        "enc:~~~",
        "fill:red|43.7,7.4|43.8,7.5",
        "",
    ):
        with pytest.raises(InvalidParameter) as exc:
            parse_path(bad)
        assert exc.value.parameter == "path", bad


def test_polyline_codec():
    # the example of Google's documentation
    assert polyline.decode("_p~iF~ps|U_ulLnnqC_mqNvxq`@") == [(38.5, -120.2), (40.7, -120.95), (43.252, -126.453)]
    assert polyline.encode([(38.5, -120.2), (40.7, -120.95), (43.252, -126.453)]) == ("_p~iF~ps|U_ulLnnqC_mqNvxq`@")
    rng = np.random.default_rng(1)
    pts = [
        (round(a, 6), round(b, 6)) for a, b in zip(rng.uniform(-80, 80, 50), rng.uniform(-180, 180, 50), strict=False)
    ]
    np.testing.assert_allclose(polyline.decode(polyline.encode(pts, 6), 6), pts, atol=1e-6)
    with pytest.raises(ValueError):
        polyline.decode("_p~iF~ps|U_")


def test_parse_color():
    assert parse_color("red")[3] == 1.0
    assert parse_color("0xff000080") == pytest.approx((1.0, 0.0, 0.0, 128 / 255))
    assert parse_color("#00ff00")[:3] == (0.0, 1.0, 0.0)
    with pytest.raises(InvalidParameter):
        parse_color("0xff00", "path")


def test_concurrent_renders_are_identical_to_serial(datasets):
    """Renders from several threads (shared LayerStore, serialised matplotlib) give the same
    bytes as one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    params = [StaticMapParams(center=MONACO, zoom=z, width=200, height=150) for z in (14, 15, 16)]
    params += [StaticMapParams(center=HELSINKI, zoom=z, width=200, height=150) for z in (15, 17)]
    serial = [run(datasets, p).body for p in params]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda p: run(datasets, p).body, params * 2))
    assert parallel == serial * 2


def test_a_kept_figure_draws_what_a_new_one_does(datasets):
    """The figure of a size is kept from one map to the next: nothing of a map (its layers,
    labels, markers, text metrics) shows on the next. 333x222 is a size no other test draws, so
    the first map below is drawn on a new figure."""
    a = StaticMapParams(center=MONACO, zoom=16, width=333, height=222, markers=(Marker(*MONACO, label="A"),))
    b = StaticMapParams(
        center=HELSINKI,
        zoom=15,
        width=333,
        height=222,
        markers=(Marker(*HELSINKI, color="0x00ff00"),),
        paths=(Path((HELSINKI, (60.1720, 24.9500)), color="0xff00ffff", weight=6),),
    )
    first = run(datasets, a).body
    other = run(datasets, b).body
    assert run(datasets, a).body == first
    assert run(datasets, b).body == other != first
    for w in (101, 102, 103, 104, 105):  # more sizes than are kept: 333x222's figure is new again
        run(datasets, StaticMapParams(center=MONACO, zoom=15, width=w, height=80))
    assert run(datasets, a).body == first
