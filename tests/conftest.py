"""Session-wide fixtures and the suite's split into fast and data/live tests.

- ``data_dir``/``datasets``: both samples imported, once per test session.
- ``bare_*`` (``tests/fixtures_live.py``): the Flask app over an empty DATA_DIR, for web tests that
  answer before any dataset is read (validation, error bodies): they need no import.
- Markers set here from the fixtures a test uses (directly or through other fixtures):
  ``needs_data`` for ``data_dir``, ``integration`` for the live servers. ``make test-fast`` runs
  ``-m "not needs_data and not integration"``.

Integration fixtures (Redis, Celery worker, gunicorn) live in ``tests/fixtures_live.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.settings import PROJECT_ROOT
from engine.dataset import DatasetRegistry

pytest_plugins = ["tests.fixtures_live"]

SAMPLES = PROJECT_ROOT / "data" / "samples"
SAMPLE_REGIONS = {"monaco": SAMPLES / "monaco.osm.pbf", "helsinki": SAMPLES / "helsinki.osm.pbf"}

# A test using any of these (directly or through another fixture) gets the marker.
DATA_FIXTURES = frozenset({"data_dir"})
LIVE_FIXTURES = frozenset({"celery_worker", "live_server", "postgres_url"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & DATA_FIXTURES:
            item.add_marker(pytest.mark.needs_data)
        if used & LIVE_FIXTURES:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DATA_DIR with both samples imported (once per session).

    MERIDIAN_TEST_DATA_DIR reuses an existing directory (imports are idempotent: an up-to-date
    region is not rebuilt), which saves the build when running a single test file by hand.
    """
    from engine.ingest.pipeline import import_pbf

    reuse = os.environ.get("MERIDIAN_TEST_DATA_DIR")
    root = Path(reuse) if reuse else tmp_path_factory.mktemp("data")
    for region, pbf in SAMPLE_REGIONS.items():
        import_pbf(pbf, root, region)
    return root


@pytest.fixture(scope="session")
def datasets(data_dir: Path) -> DatasetRegistry:
    return DatasetRegistry(data_dir)
