"""A worker that has not yet pulled the dataset version a web node keyed its cache with (a
roll-out in progress) still answers, and the cache keeps that answer only briefly."""

from __future__ import annotations

import redis

import tasks.heavy as heavy
from engine.codec import encode
from engine.services.isochrone import IsochroneParams

PARAMS = IsochroneParams(lat=60.17, lng=24.944, times=(2.0,))


def run(monkeypatch, datasets, settings, key: str, versions: str) -> int:
    client = redis.Redis.from_url(settings.redis_url)
    monkeypatch.setattr(heavy, "redis_client", lambda: client)
    monkeypatch.setattr(heavy, "settings", lambda: settings)
    monkeypatch.setattr(heavy, "datasets", lambda expected=None: datasets)
    client.delete(key)
    assert heavy.run_heavy.run("engine.services.isochrone:run", encode(PARAMS), key, versions) == {"ok": True}
    return int(client.ttl(key))


def test_same_versions_cached_for_the_cache_ttl(monkeypatch, datasets, settings):
    ttl = run(monkeypatch, datasets, settings, "meridiantest:skew:same", datasets.versions())
    assert ttl > heavy.VERSION_SKEW_TTL_S and ttl <= settings.cache_ttl_s


def test_other_versions_answered_but_cached_briefly(monkeypatch, datasets, settings):
    newer = datasets.versions().replace("helsinki:", "helsinki:9") + "-r2"
    ttl = run(monkeypatch, datasets, settings, "meridiantest:skew:other", newer)
    assert 0 < ttl <= heavy.VERSION_SKEW_TTL_S
