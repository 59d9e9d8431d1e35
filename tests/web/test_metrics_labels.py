"""Metric label flood (issue 26, finding 6): requests with random methods and random unknown paths,
unauthenticated, against gunicorn. Every label comes from a bounded set, so neither the series of
``/metrics`` nor the fields of the Redis hash behind them grow with what clients send, and the
hash expires once it goes quiet."""

from __future__ import annotations

import random
import string
import time

import pytest
import redis
import requests
from prometheus_client.parser import text_string_to_metric_families

from app.metrics import HTTP_BUCKETS, METHODS
from app.metrics_buffer import FLUSH_INTERVAL_S
from queueing.metrics import HASH_TTL_S, http_key

pytestmark = pytest.mark.integration

FLOOD = 150  # requests with a method or a path of their own


def _word(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(n))


def _send(session: requests.Session, base: str, method: str, path: str) -> None:
    resp = session.request(method, f"{base}{path}", timeout=10)
    assert resp.status_code in (400, 404, 405), (method, path, resp.status_code)


def _series(base: str) -> set[tuple]:
    """Label sets of ``meridian_http_requests_total`` in a scrape (which flushes its process)."""
    resp = requests.get(f"{base}/metrics", timeout=10)
    assert resp.status_code == 200
    return {
        tuple(sorted(sample.labels.items()))
        for family in text_string_to_metric_families(resp.text)
        if family.name == "meridian_http_requests"
        for sample in family.samples
        if sample.name == "meridian_http_requests_total"
    }


def _count_fields(client: redis.Redis, key: str) -> int:
    """The hash's label sets: its count fields ``n|<labels>``."""
    fields = [f.decode() if isinstance(f, bytes) else f for f in client.hkeys(key)]
    return len([field for field in fields if field.startswith("n|")])


def _round(session: requests.Session, base: str, rng: random.Random) -> None:
    """One request of each kind: an unknown method on an unknown path and on a known route, and
    every known method on an unknown path."""
    unknown = "X" + _word(rng, rng.randint(4, 12))
    _send(session, base, unknown, f"/{_word(rng, 10).lower()}/{rng.getrandbits(64):x}")
    _send(session, base, unknown, "/v1/geocoding")
    _send(session, base, rng.choice(sorted(METHODS)), f"/v1/{_word(rng, 8).lower()}")


def test_random_methods_and_paths_add_no_series(live_server, settings):
    rng = random.Random(26)
    client = redis.Redis.from_url(settings.redis_url)
    key = http_key(settings.service_name)
    with requests.Session() as session:
        for method in sorted(METHODS):  # every bounded series this test can reach, once
            _send(session, live_server, method, f"/warm/{rng.getrandbits(64):x}")
        for _ in range(4):
            _round(session, live_server, rng)
        _series(live_server)  # a scrape is a request too: its series exists before the baseline
        time.sleep(3 * FLUSH_INTERVAL_S)  # both web processes have sent their sums
        series_before = _series(live_server)
        fields_before = _count_fields(client, key)
        for _ in range(FLOOD // 3):
            _round(session, live_server, rng)
        time.sleep(3 * FLUSH_INTERVAL_S)
        series_after = _series(live_server)
    fields_after = _count_fields(client, key)
    methods = {dict(labels)["method"] for labels in series_after}
    assert methods <= METHODS | {"OTHER"}, sorted(methods - METHODS)[:5]
    assert len(series_after) == len(series_before), sorted(series_after - series_before)[:5]
    assert fields_after == fields_before
    assert client.hlen(key) <= fields_after * (len(HTTP_BUCKETS) + 3)  # n, s and one field per bucket
    assert 0 < client.ttl(key) <= HASH_TTL_S
    assert {"OTHER"} <= methods and any(dict(labels)["function"] == "unmatched" for labels in series_after)
