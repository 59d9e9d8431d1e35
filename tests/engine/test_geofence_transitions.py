"""Device transitions in the test session's Redis (db 14, keys under "test:geofence:"): sequences of points,
subset checks, TTL, concurrent checks of one device, the service with a device, index refresh."""

from __future__ import annotations

import threading

import pytest
import redis

from engine.errors import InvalidParameter
from engine.geofence.index import FenceIndex
from engine.geofence.model import parse_fence
from engine.geofence.registry import FenceIndexCache, RedisFenceVersions
from engine.geofence.transitions import DeviceTransitions
from engine.services.geofencing import (
    GeofenceBatchParams,
    GeofenceCheckParams,
    GeofencePoint,
    run,
    run_batch,
)
from tests.fixtures_live import redis_url_db

pytestmark = pytest.mark.integration

PREFIX = "test:geofence:"


@pytest.fixture
def client(redis_server):
    c = redis.Redis.from_url(redis_url_db(redis_server, 14))
    c.ping()
    yield c
    keys = list(c.scan_iter(match=PREFIX + "*", count=1000))
    if keys:
        c.delete(*keys)
    c.close()


def circle(fid, lat, lng, r, name=None):
    return parse_fence({"type": "circle", "center": {"lat": lat, "lng": lng}, "radius": r, "name": name}, fence_id=fid)


# Two overlapping 100 m circles on a west-east line in Helsinki: A centred at x=0, B at x=150 m.
LAT0, LNG0 = 60.1699, 24.9384
M_PER_DEG_LNG = 111_320 * 0.4977  # ~cos(60.17); only used to place points, not to check them


def east(metres: float) -> tuple[float, float]:
    return LAT0, LNG0 + metres / M_PER_DEG_LNG


@pytest.fixture
def index():
    return FenceIndex([circle("A", *east(0), 100, "Alpha"), circle("B", *east(150), 100, "Beta")])


def test_transitions_across_a_sequence_of_points(client, index):
    tr = DeviceTransitions(client, "acct-1", prefix=PREFIX, ttl_s=60)
    # x (m east):  -300      -50        90 (A and B)    200 (B)    500
    expected = [
        (-300, {"A": "outside", "B": "outside"}),
        (-50, {"A": "enter", "B": "outside"}),
        (90, {"A": "inside", "B": "enter"}),
        (200, {"A": "exit", "B": "inside"}),
        (500, {"A": "outside", "B": "exit"}),
        (500, {"A": "outside", "B": "outside"}),
        (0, {"A": "enter", "B": "outside"}),
    ]
    for x, want in expected:
        lat, lng = east(x)
        out = run(index, GeofenceCheckParams(lat=lat, lng=lng, device="truck-7"), tr)
        got = {f["id"]: f["transition"] for f in out["fences"]}
        assert got == want, x
        for f in out["fences"]:
            assert f["inside"] is (want[f["id"]] in ("enter", "inside"))
    ttl = client.ttl(tr.key("truck-7"))
    assert 0 < ttl <= 60


def test_device_state_is_per_account_and_per_device(client, index):
    lat, lng = east(0)
    a = DeviceTransitions(client, "acct-1", prefix=PREFIX)
    b = DeviceTransitions(client, "acct-2", prefix=PREFIX)
    assert a.update("d", ["A"]).of("A") == "enter"
    assert a.update("d", ["A"]).of("A") == "inside"
    assert b.update("d", ["A"]).of("A") == "enter"  # same device name, other account
    assert a.update("other", ["A"]).of("A") == "enter"


def test_subset_check_keeps_state_of_other_fences(client, index):
    tr = DeviceTransitions(client, "acct-1", prefix=PREFIX)
    lat, lng = east(90)  # in A and B
    run(index, GeofenceCheckParams(lat=lat, lng=lng, device="d"), tr)  # enter A, enter B
    # far away, but only B is checked: B exits, A's state is untouched
    lat, lng = east(1000)
    out = run(index, GeofenceCheckParams(lat=lat, lng=lng, fence_ids=("B",), device="d"), tr)
    assert [(f["id"], f["transition"]) for f in out["fences"]] == [("B", "exit")]
    out = run(index, GeofenceCheckParams(lat=lat, lng=lng, device="d"), tr)
    assert {f["id"]: f["transition"] for f in out["fences"]} == {"A": "exit", "B": "outside"}


def test_state_expires(client, index):
    tr = DeviceTransitions(client, "acct-1", prefix=PREFIX, ttl_s=60)
    assert tr.update("d", ["A"]).of("A") == "enter"
    client.delete(tr.key("d"))  # what the TTL does after 60 s of silence
    assert tr.update("d", ["A"]).of("A") == "enter"


@pytest.mark.parametrize("workers", [16])
def test_concurrent_checks_of_one_device_report_one_enter(client, index, workers):
    tr = DeviceTransitions(client, "acct-1", prefix=PREFIX)
    lat, lng = east(0)
    for round_no in range(15):
        device = f"racer-{round_no}"
        barrier = threading.Barrier(workers)
        results: list[str] = []
        lock = threading.Lock()

        def check(device=device, barrier=barrier, results=results, lock=lock):
            barrier.wait()
            out = run(index, GeofenceCheckParams(lat=lat, lng=lng, device=device), tr)
            with lock:
                results.extend(f["transition"] for f in out["fences"] if f["id"] == "A")

        threads = [threading.Thread(target=check) for _ in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert len(results) == workers
        assert results.count("enter") == 1, results
        assert results.count("inside") == workers - 1


def test_batch_for_a_fleet(client, index):
    tr = DeviceTransitions(client, "acct-1", prefix=PREFIX)
    pts = (
        GeofencePoint(*east(0), device="t1"),
        GeofencePoint(*east(200), device="t2"),
        GeofencePoint(*east(600), device="t1"),  # t1 again, later in the same batch: exit A
        GeofencePoint(*east(90)),  # no device: inside list only
    )
    out = run_batch(index, GeofenceBatchParams(points=pts), tr)["results"]
    assert out[0] == {"index": 0, "device": "t1", "inside": ["A"], "transitions": [{"id": "A", "transition": "enter"}]}
    assert out[1]["inside"] == ["B"] and out[1]["transitions"] == [{"id": "B", "transition": "enter"}]
    assert out[2]["inside"] == [] and out[2]["transitions"] == [{"id": "A", "transition": "exit"}]
    assert out[3] == {"index": 3, "device": None, "inside": ["A", "B"], "transitions": None}
    # subset batch: only B considered
    out = run_batch(index, GeofenceBatchParams(points=(GeofencePoint(*east(90), device="t1"),), fence_ids=("B",)), tr)
    assert out["results"][0]["inside"] == ["B"]
    assert out["results"][0]["transitions"] == [{"id": "B", "transition": "enter"}]
    with pytest.raises(InvalidParameter) as err:
        run_batch(index, GeofenceBatchParams(points=()), tr)
    assert err.value.parameter == "points"
    with pytest.raises(InvalidParameter) as err:
        run_batch(index, GeofenceBatchParams(points=(GeofencePoint(100.0, 0.0),)), tr)
    assert err.value.parameter == "points[0].lat"


def test_index_cache_sees_a_change_through_the_redis_version(client):
    store = {"acct-1": [circle("A", *east(0), 100)]}
    versions = RedisFenceVersions(client, prefix=PREFIX)
    now = [0.0]
    loads = []

    def load(account):
        loads.append(account)
        return list(store[account])

    cache = FenceIndexCache(load, versions.get, check_interval_s=0.5, clock=lambda: now[0])
    first = cache.get("acct-1")
    assert first.ids == ("A",) and cache.get("acct-1") is first
    # another process changes the fences and bumps the version
    store["acct-1"].append(circle("B", *east(150), 100))
    versions.bump("acct-1")
    now[0] += 0.2
    assert cache.get("acct-1") is first  # within the check interval: no Redis round trip yet
    now[0] += 0.5
    second = cache.get("acct-1")
    assert second.ids == ("A", "B")
    now[0] += 1.0
    assert cache.get("acct-1") is second  # version unchanged: no rebuild
    assert loads == ["acct-1", "acct-1"]


def test_index_cache_serves_the_old_index_while_rebuilding():
    """Readers never wait for a rebuild (stale while revalidating); an unreadable version keeps
    the cached index."""
    version = [1]
    started, release = threading.Event(), threading.Event()

    def load(account):
        if version[0] == 2:
            started.set()
            release.wait(10)
        return [circle(f"v{version[0]}", *east(0), 100)]

    now = [0.0]
    cache = FenceIndexCache(load, lambda a: version[0], check_interval_s=0.5, clock=lambda: now[0])
    old = cache.get("acct")
    version[0] = 2
    now[0] += 1.0
    result = {}
    builder = threading.Thread(target=lambda: result.setdefault("new", cache.get("acct")))
    builder.start()
    assert started.wait(10)
    assert cache.get("acct") is old  # another reader during the rebuild: answered at once
    release.set()
    builder.join(10)
    assert result["new"].ids == ("v2",)
    assert cache.get("acct") is result["new"]

    def broken(account):
        raise ConnectionError("redis down")

    cache._version = broken
    now[0] += 1.0
    assert cache.get("acct") is result["new"]
    with pytest.raises(ConnectionError):
        cache.get("other-account")  # nothing cached: the failure is the caller's to report
