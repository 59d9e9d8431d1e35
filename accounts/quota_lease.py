"""Quota reservations: a busy account's requests counted in Redis a batch at a time, never over the plan.

Counting every request with a Redis script costs a round trip per request (about 0.1-0.25 ms of
a light request on these machines). When an account sends requests back to back (with one key
or several: its keys share the reservation as they share the quota), the web process asks the
quota script to count a few more units than the request needs — a *reservation*, as many as
every window still has, at most ``1/RESERVE_SHARE`` of the minute window and ``MAX_RESERVED``
units — and spends the following requests from it in memory. A reservation lives ``ttl_s`` (one
second); then, or when it is used up, it is *settled* in one more script call: the usage of the
units spent is recorded per key and service and the units not spent are given back to every
window. A reservation used up has nothing to give back: the process's settler thread
settles it, and the request that found it used up waits only for its own count.

What this keeps and what it changes:

- The plan is never exceeded: reserved units are counted in Redis before they are spent.
- ``RateLimit-Remaining`` still goes down by one per request in a process (the units a process
  holds unspent are reported as remaining).
- An account near the end of a window may get a 429 from one process while another holds reserved
  units; those are given back within ``ttl_s``.
- Plans with small windows (fewer than ``2 * RESERVE_SHARE`` requests a minute, fewer than 2000 a
  day...) and accounts that are not busy (no request in the last ``ttl_s`` in this process) are
  counted request by request, exactly as before.
- Usage of the units spent from a reservation reaches Redis when it is settled (within about
  ``1.5 * ttl_s``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from accounts.quota import QuotaCounter, QuotaDecision, QuotaUnavailable, Reservation, Window
from accounts.store import PlanRecord
from common.ticker import ProcessTicker

log = logging.getLogger("meridian.quota")

MAX_RESERVED = 64
RESERVE_SHARE = 20  # a reservation holds at most 1/20 of the minute window
DAY_SHARE = 1000
MONTH_SHARE = 10_000
MAX_SETTLE_ATTEMPTS = 1200  # about ten minutes of retries while Redis is away


def reserve_size(plan: PlanRecord, cost: int) -> int:
    """Units to reserve beyond ``cost`` for a busy account of ``plan`` (0: count exactly)."""
    caps = [MAX_RESERVED]
    for limit, share in ((plan.per_minute, RESERVE_SHARE), (plan.per_day, DAY_SHARE), (plan.per_month, MONTH_SHARE)):
        if limit:
            caps.append(limit // share)
    return max(0, min(caps) - cost)


def _limits(plan: PlanRecord) -> tuple[int, int, int]:
    return plan.per_minute, plan.per_day, plan.per_month


@dataclass
class _Lease:
    reservation: Reservation
    limits: tuple[int, int, int]
    decision: QuotaDecision  # as answered when the units were reserved (they count as used)
    expires: float  # time.monotonic()
    left: int
    usage: Counter[tuple[str, str]] = field(default_factory=Counter)  # (key_ref, service) -> units
    failed_settlements: int = 0

    def serves(self, plan: PlanRecord, cost: int, now: float) -> bool:
        return now < self.expires and self.left >= cost and self.limits == _limits(plan)

    def take(self, key_ref: str, service: str, cost: int) -> QuotaDecision:
        self.left -= cost
        self.usage[key_ref, service] += cost
        return self.answer()

    def answer(self) -> QuotaDecision:
        """The decision with the units still held counted as remaining."""
        left = self.left
        # every request of a busy account asks: the constructor, not ``dataclasses.replace`` (which
        # inspects the fields each time)
        windows = tuple(Window(w.name, w.limit, w.remaining + left, w.reset_s) for w in self.decision.windows)
        return QuotaDecision(True, windows)


class LeasedQuota:
    """``QuotaCounter.spend`` with reservations for busy accounts (see the module doc)."""

    def __init__(self, counter: QuotaCounter, ttl_s: float = 1.0) -> None:
        self.counter = counter
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._leases: dict[str, _Lease] = {}
        self._last_call: dict[str, float] = {}
        # settled by the settler thread: used-up leases, and leases whose settlement failed (Redis away)
        self._unsettled: list[_Lease] = []
        self._settler = ProcessTicker("meridian-quota-settle", ttl_s / 2, self._settle_expired, self._settle_at_exit)

    def spend(self, bucket: str, key_ref: str, plan: PlanRecord, service: str, cost: int = 1) -> QuotaDecision:
        """Count a request of key ``key_ref`` against its account's windows (``bucket``)."""
        now = time.monotonic()
        with self._lock:
            lease = self._leases.get(bucket)
            if lease is not None and lease.serves(plan, cost, now):
                return lease.take(key_ref, service, cost)
            busy = now - self._last_call.get(bucket, -1e9) < self.ttl_s
            self._last_call[bucket] = now
            ended = self._leases.pop(bucket, None)
        if ended is not None:
            if ended.left:
                self._settle(ended)  # its unspent units go back before this request is counted
            else:
                self._defer(ended)  # used up: only its usage to record, off the request's path
        reserve = reserve_size(plan, cost) if busy else 0
        decision = self.counter.spend(bucket, key_ref, plan, service, cost, reserve=reserve)
        if decision.reservation is None:
            return decision
        lease = _Lease(decision.reservation, _limits(plan), decision, now + self.ttl_s, decision.reservation.units)
        with self._lock:
            replaced = self._leases.get(bucket)
            self._leases[bucket] = lease
        if replaced is not None:  # another thread of this process reserved at the same time
            self._settle(replaced)
        self._settler.ensure_started()
        return lease.answer()

    def settle_all(self) -> None:
        """Settle every reservation now (process exit, tests)."""
        with self._lock:
            leases, self._leases = list(self._leases.values()), {}
        for lease in leases:
            self._settle(lease)
        self._retry_unsettled()

    def _settle_at_exit(self) -> None:
        """Last chance for the reservations of a process that exits; quiet when Redis is away."""
        with self._lock:
            leases = list(self._leases.values()) + self._unsettled
            self._leases, self._unsettled = {}, []
        for lease in leases:
            with contextlib.suppress(QuotaUnavailable):
                self.counter.settle(lease.reservation, lease.left, dict(lease.usage))

    def _settle(self, lease: _Lease) -> None:
        try:
            self.counter.settle(lease.reservation, lease.left, dict(lease.usage))
        except QuotaUnavailable as exc:
            lease.failed_settlements += 1
            if lease.failed_settlements == 1:
                log.warning("quota reservation not settled yet (retried every %.1f s): %s", self.ttl_s / 2, exc)
            if lease.failed_settlements >= MAX_SETTLE_ATTEMPTS:
                log.error(
                    "quota reservation dropped after %d attempts: %d units stay counted, usage of %d "
                    "requests not recorded",
                    lease.failed_settlements,
                    lease.left,
                    sum(lease.usage.values()),
                )
                return
            self._defer(lease)

    def _defer(self, lease: _Lease) -> None:
        """Leave ``lease`` to the settler thread (its next tick)."""
        with self._lock:
            self._unsettled.append(lease)
        self._settler.ensure_started()

    def _retry_unsettled(self) -> None:
        with self._lock:
            pending, self._unsettled = self._unsettled, []
        for lease in pending:
            self._settle(lease)

    def _settle_expired(self) -> None:
        now = time.monotonic()
        with self._lock:
            expired = [k for k, lease in self._leases.items() if lease.expires <= now]
            leases = [self._leases.pop(k) for k in expired]
            idle = [k for k, t in self._last_call.items() if now - t > 60 * self.ttl_s]
            for k in idle:
                del self._last_call[k]
        for lease in leases:
            self._settle(lease)
        self._retry_unsettled()
