"""Files of equal content in a dataset version become one file under several paths."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from engine.identical_files import distinct_bytes, link_identical


def _inode(path: Path) -> int:
    return path.stat().st_ino


def _write_tree(root: Path) -> dict[str, bytes]:
    contents = {
        "graph/geom.npy": b"A" * 5000,
        "graph-foot/geom.npy": b"A" * 5000,
        "graph-foot/derived/x/geom.npy": b"A" * 5000,
        "graph-foot/other.npy": b"B" * 5000,  # same size, other content
        "graph-bicycle/small.npy": b"A" * 10,
        "manifest.json": b"{}",
    }
    for rel, data in contents.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return contents


def test_equal_files_become_one_inode_and_keep_their_content(tmp_path):
    contents = _write_tree(tmp_path)
    before = distinct_bytes(tmp_path)

    result = link_identical(tmp_path)

    assert result.linked == 2 and result.bytes_saved == 10_000
    same = [tmp_path / p for p in ("graph/geom.npy", "graph-foot/geom.npy", "graph-foot/derived/x/geom.npy")]
    assert len({_inode(p) for p in same}) == 1
    assert _inode(tmp_path / "graph-foot/other.npy") != _inode(same[0])
    assert {rel: (tmp_path / rel).read_bytes() for rel in contents} == contents
    assert distinct_bytes(tmp_path) == before - 10_000
    assert not [p for p in tmp_path.rglob(".*.link")]  # no temporary names left


def test_linking_again_changes_nothing(tmp_path):
    _write_tree(tmp_path)
    link_identical(tmp_path)
    again = link_identical(tmp_path)
    assert (again.linked, again.bytes_saved) == (0, 0)


def test_numpy_arrays_saved_twice_map_the_same_pages(tmp_path):
    array = np.arange(100_000, dtype=np.float64)
    for name in ("a.npy", "b.npy"):
        np.save(tmp_path / name, array)
    link_identical(tmp_path)
    a = np.load(tmp_path / "a.npy", mmap_mode="r")
    b = np.load(tmp_path / "b.npy", mmap_mode="r")
    assert os.path.samefile(tmp_path / "a.npy", tmp_path / "b.npy")
    assert np.array_equal(a, array) and np.array_equal(b, array)


def test_distinct_bytes_counts_a_file_linked_across_directories_once(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "f").write_bytes(b"x" * 1000)
    os.link(tmp_path / "one" / "f", tmp_path / "two" / "f")
    assert distinct_bytes(tmp_path / "one", tmp_path / "two") == 1000
    assert distinct_bytes(tmp_path / "two") == 1000
