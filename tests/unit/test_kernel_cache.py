"""engine/kernel_cache.py: numba's cache directory for a process started from the image."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from engine.kernel_cache import usable_cache_dir


def test_a_writable_image_cache_is_used_in_place(tmp_path: Path) -> None:
    assert usable_cache_dir(str(tmp_path / "numba")) == str(tmp_path / "numba")
    assert usable_cache_dir(None) is None


def test_an_unwritable_cache_dir_falls_back_to_a_writable_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    unwritable = tmp_path / "a-file" / "numba"  # below a regular file: no directory can be made there
    (tmp_path / "a-file").write_text("")
    chosen = usable_cache_dir(str(unwritable))
    assert chosen == str(tmp_path / "numba-cache") and Path(chosen).is_dir()
