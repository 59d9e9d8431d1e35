"""A private DATA_DIR holding a copy of a region the session imported, for tests that change it."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine import layout


def copy_region(data_dir: Path, dst: Path, region: str = "helsinki") -> Path:
    """Copy the session's build of a region under ``dst`` as its current version (fast); the
    copy's version directory."""
    src = layout.current_link(data_dir, region).resolve()
    target = layout.versions_dir(dst, region) / src.name
    shutil.copytree(src, target)
    (layout.region_dir(dst, region) / "current").symlink_to(f"versions/{src.name}")
    return target
