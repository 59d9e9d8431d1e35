"""Session-wide fixtures: the sample datasets are built once per test session.

Integration fixtures (Redis, Celery worker, gunicorn) live in ``tests/fixtures_live.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.settings import PROJECT_ROOT
from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf

pytest_plugins = ["tests.fixtures_live"]

SAMPLES = PROJECT_ROOT / "data" / "samples"
SAMPLE_REGIONS = {"monaco": SAMPLES / "monaco.osm.pbf", "helsinki": SAMPLES / "helsinki.osm.pbf"}


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """A DATA_DIR with both samples imported (once per session).

    MERIDIAN_TEST_DATA_DIR reuses an existing directory (imports are idempotent: an up-to-date
    region is not rebuilt), which saves the build when running a single test file by hand.
    """
    reuse = os.environ.get("MERIDIAN_TEST_DATA_DIR")
    root = Path(reuse) if reuse else tmp_path_factory.mktemp("data")
    for region, pbf in SAMPLE_REGIONS.items():
        import_pbf(pbf, root, region)
    return root


@pytest.fixture(scope="session")
def datasets(data_dir) -> DatasetRegistry:
    return DatasetRegistry(data_dir)
