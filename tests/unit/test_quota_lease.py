"""Quota reservations (accounts/quota_lease.py) against a real Redis: busy accounts are counted a
batch at a time, the plan is never exceeded (whatever the number of keys), unspent units come
back, usage is complete per key."""

from __future__ import annotations

import time
from collections import Counter

import redis

from accounts.quota import Counts, QuotaCounter
from accounts.quota_lease import LeasedQuota, reserve_size
from accounts.store import PlanRecord


def _plan(per_minute=0, per_day=0, per_month=0) -> PlanRecord:
    return PlanRecord("lease-test", per_minute, per_day, per_month, ("*",))


def _counter(redis_url: str, ns: str) -> QuotaCounter:
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(f"{ns}:*"):
        client.delete(key)
    return QuotaCounter(client, ns)


def _counted(counter: QuotaCounter, bucket: str, key_ref: str | None = None) -> tuple[int, int, dict]:
    """(the account's minute-window entries and day counter, the key's usage today) in Redis;
    the key is the account's only one unless named."""
    counts = counter.current(bucket)
    usage = next(iter(counter.usage(key_ref or bucket, days=1).values()), {})
    return counts.minute, counts.day, usage


def test_reserve_size_follows_the_plan():
    assert reserve_size(_plan(per_minute=3, per_day=1000), 1) == 0  # small plans: exact
    assert reserve_size(_plan(per_minute=600, per_day=100_000, per_month=2_000_000), 1) == 29
    assert reserve_size(_plan(), 1) == 63  # unlimited: the cap
    assert reserve_size(_plan(per_minute=6000), 64) == 0  # a request as big as the cap


def test_busy_key_is_counted_in_batches_and_settles_exactly(redis_url):
    counter = _counter(redis_url, "leasetest1")
    calls = []
    spend = counter.spend
    counter.spend = lambda *a, **k: calls.append(k.get("reserve", 0)) or spend(*a, **k)
    quota = LeasedQuota(counter, ttl_s=30)
    plan = _plan(per_minute=600, per_day=100_000)
    decisions = [quota.spend("k1", "k1", plan, "routing" if i % 2 else "geocoding") for i in range(50)]
    assert all(d.allowed for d in decisions)
    assert len(calls) < 5, calls  # the first request exact, then reservations of 29
    remaining = [d.tightest.remaining for d in decisions]
    assert remaining == list(range(599, 549, -1))  # still one less per request
    minute, day, _ = _counted(counter, "k1")
    assert minute == day > 50  # reserved units count before they are spent
    quota.settle_all()
    assert _counted(counter, "k1") == (50, 50, {"geocoding": 25, "routing": 25})


def test_quiet_key_is_counted_request_by_request(redis_url):
    counter = _counter(redis_url, "leasetest2")
    quota = LeasedQuota(counter, ttl_s=0.0)  # no request counts as "recent": never busy
    for _ in range(5):
        assert quota.spend("k2", "k2", _plan(per_minute=600), "poi").reservation is None
    assert _counted(counter, "k2") == (5, 5, {"poi": 5})


def test_processes_holding_reservations_never_exceed_the_plan(redis_url):
    counter = _counter(redis_url, "leasetest3")
    processes = [LeasedQuota(QuotaCounter(counter.client, "leasetest3"), ttl_s=30) for _ in range(3)]
    plan = _plan(per_minute=100)  # reservations of up to 4 units
    allowed = sum(processes[i % 3].spend("k3", "k3", plan, "geocoding").allowed for i in range(300))
    assert allowed <= 100
    minute, _, _ = _counted(counter, "k3")
    assert minute == 100  # every unit of the window is counted, spent or held
    for p in processes:
        p.settle_all()
    assert _counted(counter, "k3")[0] == allowed  # the held units came back
    more = sum(processes[0].spend("k3", "k3", plan, "geocoding").allowed for _ in range(200))
    assert allowed + more == 100  # and can be spent: the window ends exactly at the plan


def test_used_up_reservation_is_settled_by_the_settler_not_by_the_request(redis_url):
    import threading

    counter = _counter(redis_url, "leasetest-deferred")
    settled_in: list[str] = []
    settle = counter.settle
    counter.settle = lambda *a, **k: settled_in.append(threading.current_thread().name) or settle(*a, **k)
    quota = LeasedQuota(counter, ttl_s=30)
    plan = _plan()  # unlimited: reservations of 63
    for _ in range(200):  # three reservations used up on the way
        assert quota.spend("k5", "k5", plan, "routing").allowed
    assert threading.current_thread().name not in settled_in  # none settled inline by a request
    quota.settle_all()
    assert _counted(counter, "k5")[2] == {"routing": 200}


def test_keys_of_one_account_share_its_windows_and_keep_their_own_usage(redis_url):
    """Issue 26, finding 1: ten keys of one account get the plan's quota once, not ten times."""
    counter = _counter(redis_url, "leasetest-account")
    processes = [LeasedQuota(QuotaCounter(counter.client, "leasetest-account"), ttl_s=30) for _ in range(2)]
    plan = _plan(per_minute=60, per_day=2500, per_month=50_000)  # the free plan's windows
    keys = [f"key{i}" for i in range(10)]
    allowed = Counter()
    for round_ in range(60):
        for i, key in enumerate(keys):
            if processes[(round_ + i) % 2].spend("acct-1", key, plan, "geocoding").allowed:
                allowed[key] += 1
    assert sum(allowed.values()) <= 60  # 600 asked with 10 keys: one plan's minute, not ten
    assert len(allowed) > 1  # every key spends from the same bucket
    for p in processes:
        p.settle_all()
    minute, day, _ = _counted(counter, "acct-1")
    assert minute == day == sum(allowed.values())  # the held units came back
    for key in keys:  # usage statistics stay per key
        assert _counted(counter, "acct-1", key)[2] == ({"geocoding": allowed[key]} if allowed[key] else {})
    assert counter.current("acct-2") == Counts(0, 0, 0)  # another account's windows are its own


def test_last_used_is_kept_per_key_also_for_units_spent_from_a_reservation(redis_url):
    """The portal's "Last used" (issue 28 item 6): the time of each key's last counted request,
    from a plain count and from a settled reservation spent by the account's other key."""
    counter = _counter(redis_url, "leasetest-last")
    quota = LeasedQuota(counter, ttl_s=30)
    plan = _plan(per_minute=600, per_day=100_000)
    before = time.time()
    for _ in range(3):
        quota.spend("acct", "first", plan, "geocoding")  # counted at once, then with a reservation
    for _ in range(3):
        quota.spend("acct", "second", plan, "geocoding")  # from the reservation, in memory
    assert set(counter.last_used(["first", "second"])) == {"first"}
    quota.settle_all()
    stamps = counter.last_used(["first", "second", "never"])
    assert set(stamps) == {"first", "second"}
    assert all(before - 1 <= s.timestamp() <= time.time() + 1 for s in stamps.values())
