"""Back-pressure (issue 21): past the configured depth of a heavy queue, a request that would
queue more work gets 503 with ``Retry-After`` at once, synchronous or async; a job accepted
before stays queued. The app uses a Redis database of its own where no worker consumes, so the
queue fills for real."""

from __future__ import annotations

import time

import pytest
import redis

from app.backpressure import queue_depth
from tests.fixtures_live import redis_url_db


@pytest.fixture()
def full_app(settings, store):
    url = redis_url_db(settings.redis_url, 13)
    redis.Redis.from_url(url).flushdb()
    from app import create_app

    own = settings.with_overrides(
        redis_url=url, queue_max_depth=100, queue_max_depths=(("staticmap", 3), ("batch", 1)), task_wait_timeout_s=20
    )
    yield create_app(own).test_client(), redis.Redis.from_url(url)
    redis.Redis.from_url(url).flushdb()


def staticmap(zoom_x: int) -> str:
    return f"/v1/staticmaps?center=43.7384,7.42{zoom_x:02d}&zoom=15&size=64x64"


def test_full_heavy_queue_refuses_at_once(full_app, api_key):
    client, r = full_app
    headers = {"X-API-Key": api_key}
    for i in range(3):  # three distinct maps queued as jobs; nobody consumes them
        resp = client.get(staticmap(i) + "&async=true", headers=headers)
        assert resp.status_code == 202, resp.get_data(as_text=True)
    assert queue_depth(r, "staticmap") == 3

    t0 = time.monotonic()
    resp = client.get(staticmap(10), headers=headers)
    assert resp.status_code == 503 and time.monotonic() - t0 < 1.0  # not after TASK_WAIT_TIMEOUT (20 s)
    body = resp.get_json()
    assert resp.headers["Retry-After"] and "staticmap queue is full" in body["message"], body
    resp = client.get(staticmap(11) + "&async=true", headers=headers)
    assert resp.status_code == 503 and resp.headers["Retry-After"]
    assert queue_depth(r, "staticmap") == 3  # nothing more was queued


def test_full_batch_queue_refuses_new_jobs(full_app, api_key):
    client, r = full_app
    headers = {"X-API-Key": api_key}
    first = client.post("/v1/geocoding/batch", json={"addresses": ["Aleksanterinkatu 52, Helsinki"]}, headers=headers)
    assert first.status_code == 202, first.get_data(as_text=True)
    second = client.post("/v1/geocoding/batch", json={"addresses": ["Mannerheimintie 1, Helsinki"]}, headers=headers)
    assert second.status_code == 503 and second.headers["Retry-After"]
    assert "batch queue is full" in second.get_json()["message"]
    assert queue_depth(r, "batch") == 1


def test_depth_settings_from_the_environment():
    from config.settings import ConfigError, Settings

    s = Settings.from_env({"QUEUE_MAX_DEPTH": "50", "QUEUE_MAX_DEPTH_STATICMAP": "5"})
    assert (s.queue_max_depth_for("staticmap"), s.queue_max_depth_for("isochrone")) == (5, 50)
    assert Settings.from_env({}).queue_max_depth_for("batch") == 200
    with pytest.raises(ConfigError, match="QUEUE_MAX_DEPTH_BATCH"):
        Settings.from_env({"QUEUE_MAX_DEPTH_BATCH": "many"})
