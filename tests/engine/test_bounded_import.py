"""An import that takes every bounded-memory path of a country-size import (tests/engine/
bounded_import.py) writes the same dataset as the ordinary import of the same sample: the paths
a country needs to fit in memory change how the dataset is built, never what it holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_REGIONS
from tests.dataset_fingerprint import ROOT, fingerprint

BOUNDED_IMPORT = Path(__file__).with_name("bounded_import.py")


@pytest.mark.slow
def test_bounded_import_writes_the_same_dataset(data_dir: Path, tmp_path: Path) -> None:
    region = "helsinki"  # turn restrictions, three profiles, addresses, streets and POIs
    bounded_dir = tmp_path / "bounded"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}  # parked and spilled files: the test's
    out = subprocess.run(
        [sys.executable, str(BOUNDED_IMPORT), str(SAMPLE_REGIONS[region]), str(bounded_dir), region],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out.splitlines()[-1]) == {"child": {"spill_min_arcs": 0, "park_min_turns": 0}}
    ordinary = fingerprint(data_dir, region)
    bounded = fingerprint(bounded_dir, region)
    assert len(ordinary) > 100  # every table and array, not an empty version
    assert bounded == ordinary
