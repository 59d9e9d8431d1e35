"""Attempt limits for the portal's forms, counted in Redis per client IP and per address in fixed
windows (one pipeline: INCR + EXPIRE of both counters).

The address counter is either global (sign-up, reset: they send mail to the address, so the
address is what needs protecting) or per source, one counter per client IP and address (sign-in,
the current-password check of the settings page): a stranger's wrong passwords slow the
stranger down, never the owner signing in from elsewhere.

When Redis cannot be reached the caller decides: sign-in is let through (an outage must not lock
everyone out), sign-up and reset are refused (fail closed: they send mail to any address).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import redis

from config.portal import RateLimit


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: int = 0
    unavailable: bool = False  # Redis could not be asked


class RateLimiter:
    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self.client = client
        self.ns = namespace

    def hit(
        self,
        action: str,
        limit: RateLimit,
        *,
        ip: str,
        address: str | None,
        fail_open: bool,
        per_source: bool = False,
    ) -> Verdict:
        """Count one attempt; ``per_source``: the address counter is the (IP, address) pair's."""
        window, elapsed = divmod(int(time.time()), limit.window_s)
        retry = limit.window_s - elapsed
        keys = [(f"{self.ns}:portal:rl:{action}:ip:{ip}:{window}", limit.per_ip)]
        if address:
            # the address is hashed: the counters name no one
            address = address.strip().lower()
            scope, subject = ("src", f"{ip} {address}") if per_source else ("addr", address)
            digest = hashlib.sha256(subject.encode()).hexdigest()[:24]
            keys.append((f"{self.ns}:portal:rl:{action}:{scope}:{digest}:{window}", limit.per_address))
        try:
            pipe = self.client.pipeline()
            for key, _ in keys:
                pipe.incr(key)
                pipe.expire(key, limit.window_s + 5)
            counts = pipe.execute()[0::2]
        except redis.RedisError:
            return Verdict(fail_open, 0 if fail_open else 30, unavailable=True)
        if any(int(count) > allowed for count, (_, allowed) in zip(counts, keys, strict=True)):
            return Verdict(False, retry)
        return Verdict(True)
