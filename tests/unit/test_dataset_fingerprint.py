"""scripts/dataset_fingerprint.py on a hand-made version directory: the same content prints the
same fingerprint whatever the insertion order and timings, any changed row or array changes it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np

from engine import layout
from tests.dataset_fingerprint import ROOT, SCRIPT, fingerprint


def make_dataset(data_dir: Path, rows: list[tuple[int, str]], weights: list[int], seconds: float) -> None:
    version = layout.versions_dir(data_dir, "town") / "v1"
    (version / "graph").mkdir(parents=True)
    (version / layout.MANIFEST).write_text(json.dumps({"counts": {"features": len(rows)}, "bbox": [1, 2, 3, 4]}))
    conn = sqlite3.connect(version / layout.SEARCH_DB)
    conn.execute("CREATE TABLE features (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO features VALUES (?, ?)", rows)
    conn.commit()
    conn.close()
    np.save(version / "graph" / "edge_weight.npy", np.asarray(weights, dtype=np.int32))
    meta = {"counts": {"edges": len(weights)}, "seconds": {"ch": seconds}, "source": str(data_dir)}
    (version / "graph" / "meta.json").write_text(json.dumps(meta))
    layout.current_link(data_dir, "town").symlink_to(Path("versions") / "v1")


def test_same_content_same_fingerprint(tmp_path: Path) -> None:
    make_dataset(tmp_path / "a", [(1, "Main Street"), (2, "Harbour")], [5, 7], seconds=1.5)
    make_dataset(tmp_path / "b", [(2, "Harbour"), (1, "Main Street")], [5, 7], seconds=9.0)
    first = fingerprint(tmp_path / "a", "town")
    assert first == fingerprint(tmp_path / "b", "town")
    assert 'counts {"features": 2}' in first
    assert any(line.startswith("search.sqlite:features 2 rows ") for line in first)
    assert any(line.startswith("graph/edge_weight.npy ") for line in first)


def test_a_changed_row_or_array_changes_the_fingerprint(tmp_path: Path) -> None:
    make_dataset(tmp_path / "a", [(1, "Main Street")], [5, 7], seconds=1.0)
    make_dataset(tmp_path / "row", [(1, "Main St")], [5, 7], seconds=1.0)
    make_dataset(tmp_path / "array", [(1, "Main Street")], [5, 8], seconds=1.0)
    base, row, array = (fingerprint(tmp_path / name, "town") for name in ("a", "row", "array"))
    assert base[-1] != row[-1] and base[-1] != array[-1]
    assert [line for line in row if line not in base] == [
        line for line in row if line.startswith(("search.sqlite:features", "total"))
    ]
    assert [line for line in array if line not in base] == [
        line for line in array if line.startswith(("graph/edge_weight.npy", "total"))
    ]


def test_a_region_without_a_current_version_is_an_error(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "town"], env=env, capture_output=True, text=True)
    assert out.returncode == 2
    assert "no current version for region 'town'" in out.stderr
