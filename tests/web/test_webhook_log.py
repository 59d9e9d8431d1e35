"""Webhook URLs in the logs (issue 26, low): a receiver's URL may carry its secret in the query
string (``?token=...``); the worker that gives up on a delivery logs scheme, host and path only.
A real worker, a real receiver on loopback that always answers 500, no retries."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from engine.netguard import parse_networks
from tasks.webhook_http import loggable
from tests.fixtures_live import redis_url_db, start_worker, stop, wait_worker
from tests.web.test_geofencing import MONACO, YARD, offset
from tests.web.test_webhook_guard import Receiver

pytestmark = [pytest.mark.integration]

WEBHOOK_REDIS_DB = 9  # this test's own database: its deliveries must reach its own worker


def test_loggable_keeps_scheme_host_port_and_path_only():
    assert loggable("https://user:pw@hooks.example.com:8443/in/fences?token=s3cret#x") == (
        "https://hooks.example.com:8443/in/fences"
    )
    assert loggable("http://[2001:db8::1]/h?sig=abc") == "http://[2001:db8::1]/h"


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    r = Receiver(status=500)
    yield r
    r.close()


def test_failed_delivery_logs_the_url_without_its_query(settings, store, receiver, tmp_path):
    from app import create_app

    local = settings.with_overrides(
        redis_url=redis_url_db(settings.redis_url, WEBHOOK_REDIS_DB),
        webhook_allowed_networks=parse_networks("127.0.0.0/8"),  # the receiver, as an operator allows
    )
    redis.Redis.from_url(local.redis_url).flushdb()
    log_path = tmp_path / "worker.log"
    worker = start_worker(local, log_path, queues="default", name="hooklog", MERIDIAN_WEBHOOK_MAX_RETRIES="0")
    secret = f"s3cret-{uuid.uuid4().hex}"
    url = f"http://127.0.0.1:{receiver.port}/hooks/fences?token={secret}"
    try:
        wait_worker(local, worker)
        client = create_app(local).test_client()
        headers = {"X-API-Key": store.create_key(f"hooklog-{uuid.uuid4().hex[:8]}", "pro").key}
        resp = client.post("/v1/geofences", json={**YARD, "webhook_url": url}, headers=headers)
        assert resp.status_code == 200, resp.get_data(as_text=True)
        fid = resp.get_json()["id"]
        device = f"van-{uuid.uuid4().hex[:6]}"
        for east, north in ((-20, 40), (10, 40)):  # outside, then enter: one delivery
            lat, lng = offset(MONACO, east, north)
            check = client.get(f"/v1/geofencing?lat={lat}&lng={lng}&fences={fid}&device={device}", headers=headers)
            assert check.status_code == 200, check.get_data(as_text=True)
        deadline = time.monotonic() + 30
        while "failed after" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        text = log_path.read_text()
        assert len(receiver.seen) == 1 and "failed after" in text, text[-2000:]
        assert f"to http://127.0.0.1:{receiver.port}/hooks/fences failed after" in text
        assert secret not in text
    finally:
        stop(worker)
