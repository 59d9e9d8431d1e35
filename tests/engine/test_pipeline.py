"""Import is idempotent and atomic: a failed import exits with a clear message and leaves the
previous dataset serving."""

from __future__ import annotations

import json
import subprocess
import sys

import osmium
import pytest

from config.settings import PROJECT_ROOT
from engine import layout
from engine.dataset import DatasetRegistry
from engine.errors import DatasetError
from engine.identical_files import sha256_of
from engine.ingest.pipeline import import_pbf
from tests.engine.dataset_copies import copy_region

HELSINKI = PROJECT_ROOT / "data" / "samples" / "helsinki.osm.pbf"


def test_manifest_records_source_counts_and_stages(data_dir):
    for region in ("monaco", "helsinki"):
        version_dir = layout.current_link(data_dir, region).resolve()
        manifest = json.loads((version_dir / layout.MANIFEST).read_text())
        assert manifest["format_version"] == layout.FORMAT_VERSION
        assert len(manifest["source"]["sha256"]) == 64
        assert manifest["bbox"] and len(manifest["bbox"]) == 4
        assert manifest["counts"] and all(isinstance(v, int) for v in manifest["counts"].values())
        assert set(manifest["stages"]) == set(manifest["stages_run"])
        for stage in manifest["stages"].values():
            for written in stage["writes"]:
                assert (version_dir / written).exists(), written


def test_files_of_equal_content_are_stored_once(data_dir):
    """The profiles' graphs repeat columns (foot's weight is its duration, its node offsets in and
    out are the same array, the grids' headers are alike in every profile): each content is one
    inode, which the manifest accounts for."""
    for region in ("monaco", "helsinki"):
        version_dir = layout.current_link(data_dir, region).resolve()
        by_content: dict[str, set[int]] = {}
        for path in (p for p in version_dir.rglob("*") if p.is_file()):
            by_content.setdefault(sha256_of(path), set()).add(path.stat().st_ino)
        assert all(len(inodes) == 1 for inodes in by_content.values()), region
        linked = json.loads((version_dir / layout.MANIFEST).read_text())["identical_files"]
        files = sum(1 for p in version_dir.rglob("*") if p.is_file())
        assert linked["linked"] > 0 and files - linked["linked"] == len(by_content), region
        assert linked["bytes_saved"] > 0


def test_reimport_same_file_is_a_no_op(data_dir, tmp_path):
    from engine.ingest.pipeline import code_fingerprint

    before = copy_region(data_dir, tmp_path)
    manifest = json.loads((before / layout.MANIFEST).read_text())
    manifest["code"] = code_fingerprint()  # as if built by this very code (the tree may be edited meanwhile)
    (before / layout.MANIFEST).write_text(json.dumps(manifest))
    result = import_pbf(HELSINKI, tmp_path, "helsinki")
    assert result.skipped and result.path == before


def _bad_inputs(tmp_path):
    truncated = tmp_path / "truncated.osm.pbf"
    truncated.write_bytes(HELSINKI.read_bytes()[: HELSINKI.stat().st_size // 2])
    not_pbf = tmp_path / "notes.osm.pbf"
    not_pbf.write_text("this is not a PBF file\n" * 10)
    empty_file = tmp_path / "zero.osm.pbf"
    empty_file.write_bytes(b"")
    empty_extract = tmp_path / "empty.osm.pbf"
    writer = osmium.SimpleWriter(str(empty_extract))
    writer.close()
    return {
        "missing": (tmp_path / "nope.osm.pbf", "not found"),
        "not a pbf": (not_pbf, "not an OSM PBF"),
        "zero bytes": (empty_file, "empty"),
        "truncated": (truncated, "failed"),
        "empty extract": (empty_extract, "empty extract"),
    }


def test_failed_imports_leave_previous_version_serving(data_dir, tmp_path):
    dst = tmp_path / "data"
    good = copy_region(data_dir, dst)
    for label, (path, message) in _bad_inputs(tmp_path).items():
        with pytest.raises(DatasetError, match=message):
            import_pbf(path, dst, "helsinki", force=True)
        assert layout.current_link(dst, "helsinki").resolve() == good, label
        leftovers = [p.name for p in layout.versions_dir(dst, "helsinki").iterdir() if p.name != good.name]
        assert leftovers == [], (label, leftovers)
    registry = DatasetRegistry(dst)
    assert registry.get("helsinki").version == good.name


def test_cli_import_failure_exits_nonzero_with_message(tmp_path):
    not_pbf = tmp_path / "bad.osm.pbf"
    not_pbf.write_text("garbage")
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "import", str(not_pbf)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={"DATA_DIR": str(tmp_path / "d"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert proc.returncode != 0
    assert "import failed" in proc.stderr and "not an OSM PBF" in proc.stderr


def test_loader_refuses_other_format_version(data_dir, tmp_path):
    from engine.dataset import Dataset

    copy = copy_region(data_dir, tmp_path / "d")
    manifest = json.loads((copy / layout.MANIFEST).read_text())
    manifest["format_version"] = layout.FORMAT_VERSION + 1
    (copy / layout.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match="re-import"):
        Dataset(copy)
