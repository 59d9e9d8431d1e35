"""Golden images of the static map renderer: the cases, the similarity check and ``bless``.

``tests/engine/test_render_golden.py`` renders every case and compares it with
``tests/engine/golden/<case>.png``; a missing reference fails the test. After an intended change
of the style, look at the new images, then update the references on purpose::

    .venv/bin/python -m tests.engine.bless_golden          # re-render and overwrite all
    MERIDIAN_BLESS=1 .venv/bin/python -m pytest tests/engine/test_render_golden.py   # same

The samples are imported into ``MERIDIAN_TEST_DATA_DIR`` (or a temporary directory).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from engine.render.overlays import Marker
from engine.render.overlays import Path as MapPath
from engine.services.staticmap import StaticMapParams, run

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"

# a pixel "matches" when no channel differs by more than PIXEL_TOLERANCE; an image matches when
# at least MIN_SIMILARITY of its pixels do (fonts and antialiasing may shift a little).
PIXEL_TOLERANCE = 32
MIN_SIMILARITY = 0.97

CASES: dict[str, StaticMapParams] = {
    "monaco-z15": StaticMapParams(center=(43.7384, 7.4246), zoom=15, width=400, height=300),
    "monaco-z17-markers": StaticMapParams(
        center=(43.7395, 7.4272),
        zoom=17,
        width=400,
        height=300,
        markers=(Marker(43.7397, 7.4263, "red", "A"), Marker(43.7389, 7.4287, "blue", "1")),
        paths=(MapPath(((43.7404, 7.4250), (43.7397, 7.4263), (43.7389, 7.4287)), "0x00a000", 4),),
    ),
    "helsinki-z16": StaticMapParams(center=(60.1699, 24.9440), zoom=16, width=400, height=300),
    "outside": StaticMapParams(center=(10.0, 10.0), zoom=12, width=200, height=150),
}


def render_case(datasets, name: str) -> bytes:
    return run(datasets, CASES[name]).body


def similarity(a: bytes, b: bytes) -> float:
    """Fraction of pixels within PIXEL_TOLERANCE (0 when the sizes differ)."""
    ia = np.asarray(Image.open(io.BytesIO(a)).convert("RGB"), dtype=np.int16)
    ib = np.asarray(Image.open(io.BytesIO(b)).convert("RGB"), dtype=np.int16)
    if ia.shape != ib.shape:
        return 0.0
    return float((np.abs(ia - ib).max(axis=2) <= PIXEL_TOLERANCE).mean())


def bless(datasets) -> list[Path]:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for name in CASES:
        path = GOLDEN_DIR / f"{name}.png"
        path.write_bytes(render_case(datasets, name))
        written.append(path)
    return written


def main() -> int:
    from engine.dataset import DatasetRegistry
    from engine.ingest.pipeline import import_pbf
    from tests.conftest import SAMPLE_REGIONS

    root = Path(os.environ.get("MERIDIAN_TEST_DATA_DIR") or tempfile.mkdtemp(prefix="golden-"))
    for region, pbf in SAMPLE_REGIONS.items():
        import_pbf(pbf, root, region)
    for path in bless(DatasetRegistry(root)):
        print(f"blessed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
