"""Health endpoints: no key, regions listed; readiness names its failing checks."""

from __future__ import annotations

import pytest


def test_health_lists_regions(client):
    for path in ("/health", "/v1/health"):
        body = client.get(path).get_json()
        assert body["status"] == "ok" and body["uptime_s"] >= 0 and body["version"]
        assert {r["region"] for r in body["regions"]} == {"monaco", "helsinki"}


def test_live(client):
    assert client.get("/v1/health/live").get_json() == {"status": "ok"}


@pytest.mark.integration
def test_ready_with_worker(client, celery_worker):
    from app import health

    health._worker_cache.update(at=0.0, result=None)
    resp = client.get("/v1/health/ready")
    assert resp.status_code == 200, resp.get_json()
    checks = resp.get_json()["checks"]
    assert all(c["ok"] for c in checks.values()) and checks["workers"]["workers"] >= 1


def test_not_ready_names_failing_check(settings, store, tmp_path):
    from app import create_app, health

    broken = create_app(settings.with_overrides(redis_url="redis://127.0.0.1:1/0", data_dir=tmp_path))
    health._worker_cache.update(at=0.0, result=None)
    resp = broken.test_client().get("/v1/health/ready")
    assert resp.status_code == 503
    body = resp.get_json()
    assert body["statusCode"] == 503 and "redis" in body["message"] and "datasets" in body["message"]
    assert resp.headers["Retry-After"]
    health._worker_cache.update(at=0.0, result=None)
