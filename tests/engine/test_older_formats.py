"""A release opens the datasets older releases imported (engine.layout.READ_FORMAT_VERSIONS) and
answers reverse geocoding from them exactly as from the same dataset in today's format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine import layout
from engine.dataset import DatasetRegistry
from engine.search import address_points, street_parts
from engine.services import reverse_geocoding
from engine.services.reverse_geocoding import ReverseParams
from tests.engine.dataset_copies import copy_region
from tests.engine.older_formats import as_format


@pytest.mark.parametrize("version", [1, 2])
def test_a_dataset_of_an_older_format_is_served_with_the_same_reverse_answers(
    datasets, data_dir: Path, tmp_path: Path, version: int
):
    """Format 1 holds its addresses and its street pieces in R*Trees (``points_rtree``,
    ``parts_rtree``), format 2 its street pieces only; both answer as format 3."""
    version_dir = copy_region(data_dir, tmp_path / "data")
    as_format(version_dir / layout.SEARCH_DB, version)
    manifest = json.loads((version_dir / layout.MANIFEST).read_text())
    assert manifest["format_version"] == layout.FORMAT_VERSION == 3
    manifest["format_version"] = version
    (version_dir / layout.MANIFEST).write_text(json.dumps(manifest))
    old = DatasetRegistry(tmp_path / "data")
    dataset = old.get("helsinki")
    assert dataset is not None and not dataset.search.has_table(street_parts.TABLE_NAME)
    assert dataset.search.has_table(address_points.TABLE_NAME) == (version == 2)

    rng = np.random.default_rng(2)
    lo_lng, lo_lat, hi_lng, hi_lat = manifest["bbox"]
    addresses = streets = 0
    for _ in range(300):
        lat, lng, radius = rng.uniform(lo_lat, hi_lat), rng.uniform(lo_lng, hi_lng), rng.choice([30.0, 100.0, 400.0])
        params = ReverseParams(lat=lat, lng=lng, radius=float(radius), limit=3)
        answer = reverse_geocoding.run(old, params)
        assert answer == reverse_geocoding.run(datasets, params)
        addresses += any(c["type"] == "address" for c in answer["candidates"])
        streets += any(c["type"] == "street" for c in answer["candidates"])
    assert addresses > 100 and streets > 100  # both kinds of answer compared, not empty lists
