"""Celery on Redis, end to end with a real worker process (not eager mode)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_worker_loads_datasets(settings, celery_worker):
    from workers.celery_app import make_celery

    result = make_celery(settings).send_task("meridian.ping").get(timeout=60)
    assert result["regions"] == ["helsinki", "monaco"]
    assert result["pid"] != celery_worker.pid  # a prefork child did the work


def test_geocode_many_runs_on_worker(settings, celery_worker, datasets):
    from engine.services import geocoding
    from workers.celery_app import make_celery

    queries = ["Aleksanterinkatu 52", "Xqzvbnmwq Pzxqjkv"]
    out = make_celery(settings).send_task("meridian.geocode_many", args=[queries]).get(timeout=60)
    assert [o["query"] for o in out] == queries
    local = geocoding.run(datasets, geocoding.GeocodeParams(query=queries[0], limit=1))["candidates"]
    assert out[0]["candidates"][0]["coord"] == local[0]["coord"]
    assert out[1]["candidates"] == []
