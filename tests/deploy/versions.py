"""Dataset versions for deployment tests without a second import (an import of a sample takes
minutes): a copy of an imported version under a new version name, with its manifest saying so.
The rollout machinery only sees a new, complete, self-consistent version directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from engine import layout
from engine.ingest.pipeline import swap_current


def copy_region(source_data_dir: Path, region: str, data_dir: Path) -> str:
    """Copy ``region``'s current version into ``data_dir`` (made current there); its version."""
    src = layout.current_link(source_data_dir, region).resolve()
    dst = layout.versions_dir(data_dir, region) / src.name
    shutil.copytree(src, dst)
    swap_current(layout.current_link(data_dir, region), dst)
    return src.name


def derive_version(data_dir: Path, region: str, suffix: str) -> str:
    """A new version of ``region`` in ``data_dir`` (current's data, version ``<current>-<suffix>``),
    made current; its version name."""
    src = layout.current_link(data_dir, region).resolve()
    version = f"{src.name.split('-r', 1)[0]}-r{suffix}"
    dst = layout.versions_dir(data_dir, region) / version
    shutil.copytree(src, dst)
    manifest = json.loads((dst / layout.MANIFEST).read_text(encoding="utf-8"))
    manifest["version"] = version
    (dst / layout.MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    swap_current(layout.current_link(data_dir, region), dst)
    return version
