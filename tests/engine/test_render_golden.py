"""Golden-image regression of the static map renderer (see tests/engine/bless_golden.py)."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from PIL import Image

from tests.engine.bless_golden import CASES, GOLDEN_DIR, MIN_SIMILARITY, render_case, similarity

BLESS = os.environ.get("MERIDIAN_BLESS", "").lower() in ("1", "true", "yes")


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden(datasets, name):
    got = render_case(datasets, name)
    ref_path = GOLDEN_DIR / f"{name}.png"
    if BLESS:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        ref_path.write_bytes(got)
    assert ref_path.exists(), (
        f"no reference {ref_path}: look at the render, then run `python -m tests.engine.bless_golden`"
    )
    sim = similarity(got, ref_path.read_bytes())
    assert sim >= MIN_SIMILARITY, (
        f"{name}: only {sim:.3f} of the pixels match {ref_path.name}; if the change is "
        "intended, look at the new image and bless it"
    )


def test_similarity_detects_a_different_map():
    """The check is not vacuous: a slightly moved map or a blank image does not pass."""
    ref = (GOLDEN_DIR / "monaco-z15.png").read_bytes()
    img = np.asarray(Image.open(io.BytesIO(ref)).convert("RGB"))
    shifted = np.roll(img, 12, axis=1)
    blank = np.full_like(img, 242)
    for arr in (shifted, blank):
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="PNG")
        assert similarity(buf.getvalue(), ref) < MIN_SIMILARITY
    assert similarity(ref, ref) == 1.0
