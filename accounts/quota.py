"""Per-account quotas counted in Redis, atomically, shared by every web process and both faces.

A plan's windows are counted for the **account**: all its keys spend from one bucket, so an
account that makes more keys gets no more requests. Windows (one Lua script checks and spends all
of them in one round trip):

- **per minute: exact sliding window.** A sorted set of request timestamps per account; entries
  older than 60 s are dropped, the request passes if fewer than ``per_minute`` remain. Exact
  (no boundary bursts), memory bounded by ``per_minute`` entries per account.
- **per day and per month: calendar windows in UTC** (counters that expire at the window's end),
  the way plans are usually billed; ``Retry-After`` is the time to the next window.

A bucket (:func:`bucket_of`) is an account (``KeyRecord.account_ref``: its id and creation time,
unique across databases that share a Redis) and the plan of the key: the keys of an account share
one plan (the portal issues them all on the account's plan, ``meridian accounts set-plan`` moves
them together), and keys that an operator gave other plans count apart. A denied request spends
nothing. Usage per key, service and UTC day is kept in a hash for the portal and ``meridian
usage`` (kept 400 days): the decision is the account's, the statistics stay per key, and so
does the time of each key's last counted request (:meth:`QuotaCounter.last_used`).
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import redis

from accounts.store import KeyRecord, PlanRecord

_SCRIPT = """
local now = tonumber(ARGV[1])
local per_minute = tonumber(ARGV[2])
local per_day = tonumber(ARGV[3])
local per_month = tonumber(ARGV[4])
local day_ttl = tonumber(ARGV[5])
local month_ttl = tonumber(ARGV[6])
local member = ARGV[7]
local service = ARGV[8]
local cost = tonumber(ARGV[9])
local reserve = tonumber(ARGV[10] or '0')

local minute_used = 0
if per_minute > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
  minute_used = redis.call('ZCARD', KEYS[1])
end
local day_used = tonumber(redis.call('GET', KEYS[2]) or '0')
local month_used = tonumber(redis.call('GET', KEYS[3]) or '0')

local denied = ''
local retry_ms = 0
if per_minute > 0 and minute_used + cost > per_minute then
  denied = 'minute'
  local idx = minute_used + cost - per_minute - 1
  if idx >= minute_used then idx = minute_used - 1 end
  if idx < 0 then idx = 0 end
  local entry = redis.call('ZRANGE', KEYS[1], idx, idx, 'WITHSCORES')
  if entry[2] then retry_ms = tonumber(entry[2]) + 60000 - now else retry_ms = 60000 end
elseif per_day > 0 and day_used + cost > per_day then
  denied = 'day'
  retry_ms = day_ttl * 1000
elseif per_month > 0 and month_used + cost > per_month then
  denied = 'month'
  retry_ms = month_ttl * 1000
end

if denied ~= '' then
  reserve = 0
elseif reserve > 0 then
  -- units reserved for the caller's later requests: only what every window still has
  if per_minute > 0 then reserve = math.min(reserve, per_minute - minute_used - cost) end
  if per_day > 0 then reserve = math.min(reserve, per_day - day_used - cost) end
  if per_month > 0 then reserve = math.min(reserve, per_month - month_used - cost) end
  if reserve < 0 then reserve = 0 end
end

if denied == '' then
  local units = cost + reserve
  if per_minute > 0 then
    for i = 1, units do
      redis.call('ZADD', KEYS[1], now, member .. ':' .. i)
    end
    redis.call('PEXPIRE', KEYS[1], 61000)
    minute_used = minute_used + units
  end
  day_used = redis.call('INCRBY', KEYS[2], units)
  redis.call('EXPIRE', KEYS[2], day_ttl + 60)
  month_used = redis.call('INCRBY', KEYS[3], units)
  redis.call('EXPIRE', KEYS[3], month_ttl + 60)
  redis.call('HINCRBY', KEYS[4], service, cost)
  redis.call('EXPIRE', KEYS[4], 34560000)
  redis.call('SET', KEYS[5], now, 'EX', 34560000)
end
return {denied, minute_used, day_used, month_used, retry_ms, reserve}
"""

# Settle a reservation (accounts/quota_lease.py): usage of the units spent from it, per key and
# service, and the units not spent given back to every window (their minute-window entries removed).
# KEYS: the three windows, then the usage hashes of the keys that spent from the reservation, then
# their last-used keys (same order). ARGV: unspent, k, k triples (usage hash index among KEYS[4..],
# service, count), then the minute-window members to remove.
_SETTLE_SCRIPT = """
local unspent = tonumber(ARGV[1])
local k = tonumber(ARGV[2])
local refs = (#KEYS - 3) / 2
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 0, k - 1 do
  local index = tonumber(ARGV[3 + 3 * i])
  local usage = KEYS[3 + index]
  redis.call('HINCRBY', usage, ARGV[4 + 3 * i], tonumber(ARGV[5 + 3 * i]))
  redis.call('EXPIRE', usage, 34560000)
  redis.call('SET', KEYS[3 + refs + index], now, 'EX', 34560000)
end
if unspent > 0 then
  local first = 3 + 3 * k
  if #ARGV >= first and redis.call('EXISTS', KEYS[1]) == 1 then
    redis.call('ZREM', KEYS[1], unpack(ARGV, first, #ARGV))
  end
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DECRBY', KEYS[2], unspent) end
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('DECRBY', KEYS[3], unspent) end
end
return unspent
"""


class QuotaUnavailable(RuntimeError):
    """Redis could not be reached to count the request."""


@dataclass(frozen=True)
class Window:
    name: str  # minute | day | month
    limit: int
    remaining: int
    reset_s: int  # seconds until the window frees capacity


@dataclass(frozen=True)
class Reservation:
    """Units counted in an account's windows beyond the request's own, for the caller to spend
    later (``accounts/quota_lease.py``); ``members`` are their minute-window entries, ``windows``
    the Redis keys they were counted under and ``day`` the UTC day of their usage (so a
    settlement after midnight goes to the right day)."""

    units: int
    members: tuple[str, ...]
    windows: tuple[str, ...]
    day: str


@dataclass(frozen=True)
class Counts:
    """What one account's windows hold now (the portal's dashboard)."""

    minute: int
    day: int
    month: int


@dataclass(frozen=True)
class QuotaDecision:
    allowed: bool
    windows: tuple[Window, ...]
    retry_after_s: int = 0
    exceeded: str | None = None
    reservation: Reservation | None = None

    @property
    def tightest(self) -> Window | None:
        """The window closest to exhaustion: what the RateLimit-* headers report."""
        if not self.windows:
            return None
        return min(self.windows, key=lambda w: (w.remaining, w.reset_s))


def bucket_of(record: KeyRecord) -> str:
    """The quota bucket of a key's requests: its account's, for the key's plan."""
    return f"{record.account_ref}:{record.plan.name}"


def _seconds_to_next_day(now: datetime) -> int:
    tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, int((tomorrow - now).total_seconds()))


def _seconds_to_next_month(now: datetime) -> int:
    first = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = (first + timedelta(days=32)).replace(day=1)
    return max(1, int((nxt - now).total_seconds()))


@dataclass(frozen=True)
class _Calendar:
    """The UTC day and month windows of one wall-clock second (computed once per second)."""

    second: int
    day: str
    month: str
    day_ttl: int
    month_ttl: int

    @classmethod
    def at(cls, second: int) -> _Calendar:
        now = datetime.fromtimestamp(second, UTC)
        return cls(
            second, now.strftime("%Y%m%d"), now.strftime("%Y%m"), _seconds_to_next_day(now), _seconds_to_next_month(now)
        )


class QuotaCounter:
    def __init__(self, client: redis.Redis, namespace: str = "meridian") -> None:
        self.client = client
        self.ns = namespace
        self._script = client.register_script(_SCRIPT)
        self._settle_script = client.register_script(_SETTLE_SCRIPT)
        self._calendar = _Calendar.at(int(time.time()))
        # Minute-window members: unique per counter (random prefix), process (pid: a counter
        # created before a fork) and request (sequence number).
        self._member_prefix = f"{secrets.token_hex(4)}-"
        self._sequence = itertools.count()

    def _calendar_now(self, now_s: float) -> _Calendar:
        calendar = self._calendar
        if int(now_s) != calendar.second:
            calendar = self._calendar = _Calendar.at(int(now_s))
        return calendar

    def _windows(self, bucket: str, calendar: _Calendar) -> list[str]:
        return [
            f"{self.ns}:quota:account:{bucket}:minute",
            f"{self.ns}:quota:account:{bucket}:day:{calendar.day}",
            f"{self.ns}:quota:account:{bucket}:month:{calendar.month}",
        ]

    def _usage_key(self, key_ref: str, day: str) -> str:
        return f"{self.ns}:usage:{key_ref}:{day}"

    def _last_used_key(self, key_ref: str) -> str:
        return f"{self.ns}:usage:{key_ref}:last"

    def spend(
        self, bucket: str, key_ref: str, plan: PlanRecord, service: str, cost: int = 1, reserve: int = 0
    ) -> QuotaDecision:
        """Count ``cost`` units in every window of the account's ``bucket``, or deny (the usage
        goes to the key ``key_ref``); with ``reserve``, also count up to that many more units (as
        many as every window still has) as a :class:`Reservation`."""
        now_s = time.time()
        calendar = self._calendar_now(now_s)
        day_ttl, month_ttl = calendar.day_ttl, calendar.month_ttl
        windows_keys = self._windows(bucket, calendar)
        keys = [*windows_keys, self._usage_key(key_ref, calendar.day), self._last_used_key(key_ref)]
        member = f"{self._member_prefix}{os.getpid()}-{next(self._sequence)}"
        try:
            denied, minute_used, day_used, month_used, retry_ms, reserved = self._script(
                keys=keys,
                args=[
                    int(now_s * 1000),
                    plan.per_minute,
                    plan.per_day,
                    plan.per_month,
                    day_ttl,
                    month_ttl,
                    member,
                    service,
                    cost,
                    reserve,
                ],
            )
        except redis.RedisError as exc:
            raise QuotaUnavailable(str(exc)) from exc
        denied = denied.decode() if isinstance(denied, bytes) else denied
        windows = []
        if plan.per_minute:
            windows.append(Window("minute", plan.per_minute, max(0, plan.per_minute - int(minute_used)), 60))
        if plan.per_day:
            windows.append(Window("day", plan.per_day, max(0, plan.per_day - int(day_used)), day_ttl))
        if plan.per_month:
            windows.append(Window("month", plan.per_month, max(0, plan.per_month - int(month_used)), month_ttl))
        if denied:
            retry = max(1, -(-int(retry_ms) // 1000))
            return QuotaDecision(False, tuple(windows), retry_after_s=retry, exceeded=denied)
        reservation = None
        if int(reserved):
            members = (
                tuple(f"{member}:{i}" for i in range(cost + 1, cost + int(reserved) + 1)) if plan.per_minute else ()
            )
            reservation = Reservation(int(reserved), members, tuple(windows_keys), calendar.day)
        return QuotaDecision(True, tuple(windows), reservation=reservation)

    def settle(self, reservation: Reservation, unspent: int, usage: dict[tuple[str, str], int]) -> None:
        """Record the usage of the units spent from a reservation, ``{(key_ref, service): n}``,
        and give back the rest."""
        members = reservation.members[len(reservation.members) - unspent :] if unspent else ()
        key_refs = sorted({key_ref for key_ref, _ in usage})
        index = {key_ref: i for i, key_ref in enumerate(key_refs, start=1)}
        triples = [x for (key_ref, service), n in usage.items() for x in (index[key_ref], service, n)]
        keys = [
            *reservation.windows,
            *(self._usage_key(k, reservation.day) for k in key_refs),
            *(self._last_used_key(k) for k in key_refs),
        ]
        try:
            self._settle_script(keys=keys, args=[unspent, len(usage), *triples, *members])
        except redis.RedisError as exc:
            raise QuotaUnavailable(str(exc)) from exc

    def current(self, bucket: str) -> Counts:
        """The requests counted now in the bucket's minute, day and month windows (read only)."""
        now_s = time.time()
        minute_key, day_key, month_key = self._windows(bucket, self._calendar_now(now_s))
        pipe = self.client.pipeline()
        pipe.zcount(minute_key, int(now_s * 1000) - 60_000, "+inf")
        pipe.get(day_key)
        pipe.get(month_key)
        minute, day, month = pipe.execute()
        return Counts(int(minute or 0), int(day or 0), int(month or 0))

    def last_used(self, key_refs: list[str]) -> dict[str, datetime]:
        """The time of the last counted request of each key that has one (UTC, to the millisecond)."""
        if not key_refs:
            return {}
        stamps = self.client.mget([self._last_used_key(k) for k in key_refs])
        return {k: datetime.fromtimestamp(int(ms) / 1000, UTC) for k, ms in zip(key_refs, stamps, strict=True) if ms}

    def usage(self, key_ref: str, days: int = 30) -> dict[str, dict[str, int]]:
        """{YYYY-MM-DD: {service: count}} of one key for the last ``days`` UTC days (newest first)."""
        today = datetime.now(UTC)
        pipe = self.client.pipeline()
        dates = [today - timedelta(days=i) for i in range(days)]
        for d in dates:
            pipe.hgetall(self._usage_key(key_ref, d.strftime("%Y%m%d")))
        out: dict[str, dict[str, int]] = {}
        for d, counts in zip(dates, pipe.execute(), strict=True):
            if counts:
                out[d.strftime("%Y-%m-%d")] = {k.decode(): int(v) for k, v in counts.items()}
        return out
