"""Access decisions shared by both faces: who is calling (401), may they use this service (403),
has their account quota left (429). The web layer only extracts the key from its header.

When Redis cannot count a request, :class:`QuotaOutagePolicy` decides per plan: serve it
uncounted (fail open) or refuse it with 503 and ``Retry-After`` (fail closed). Plans that anyone
can get by signing up fail closed unless the operator says otherwise, so a Redis outage does not
make them unlimited.

Key records are cached in process for ``cache_ttl_s`` seconds (default 5), so a request does not
touch SQL; a revocation or plan change takes effect within that bound in every process. While
the accounts database is unreachable, a key seen in the last ``STALE_MAX_S`` keeps its cached
record (known clients are served through an outage; a revocation then waits for the database).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from sqlalchemy.exc import SQLAlchemyError

from accounts.quota import QuotaCounter, QuotaDecision, QuotaUnavailable, bucket_of
from accounts.quota_lease import LeasedQuota
from accounts.store import AccountStore, KeyRecord, PlanRecord, split_key
from engine.errors import ErrorKind, MeridianError

log = logging.getLogger("meridian.access")
STALE_MAX_S = 300.0


class AccessDenied(MeridianError):
    pass


def unauthorized(message: str) -> AccessDenied:
    return AccessDenied(message, kind=ErrorKind.UNAUTHORIZED)


@dataclass(frozen=True)
class QuotaOutagePolicy:
    """Whether a plan's requests are served uncounted while Redis is unreachable: the plan's own
    ``quota_fail_open`` when set (``meridian plans set``), else closed for the self-service plans
    (``closed_plans``: free and ``PORTAL_DEFAULT_PLAN``), else ``default_open`` (``QUOTA_FAIL_OPEN``)."""

    default_open: bool = True
    closed_plans: frozenset[str] = frozenset({"free"})

    def fails_open(self, plan: PlanRecord) -> bool:
        if plan.quota_fail_open is not None:
            return plan.quota_fail_open
        if plan.name in self.closed_plans:
            return False
        return self.default_open


class AccessControl:
    def __init__(
        self,
        store: AccountStore,
        quota: QuotaCounter | LeasedQuota,
        *,
        cache_ttl_s: float = 5.0,
        outage_policy: QuotaOutagePolicy | None = None,
    ) -> None:
        self.store = store
        self.quota = quota
        self.cache_ttl_s = cache_ttl_s
        self.outage_policy = outage_policy or QuotaOutagePolicy()
        self._cache: dict[str, tuple[float, KeyRecord | None]] = {}
        self._lock = threading.Lock()

    def _record(self, prefix: str) -> KeyRecord | None:
        now = time.monotonic()
        hit = self._cache.get(prefix)
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            record = self.store.lookup(prefix)
        except SQLAlchemyError:
            # database down: a key seen within STALE_MAX_S keeps its last known record (so an
            # outage of the accounts database does not stop known clients); others get the error
            if hit is not None and hit[0] + STALE_MAX_S > now:
                log.warning("accounts database unavailable: key %s served from its cached record", prefix)
                return hit[1]
            raise
        with self._lock:
            if len(self._cache) > 50_000:
                self._cache.clear()
            self._cache[prefix] = (now + self.cache_ttl_s, record)
        return record

    def invalidate(self, prefix: str | None = None) -> None:
        with self._lock:
            if prefix is None:
                self._cache.clear()
            else:
                self._cache.pop(prefix, None)

    def authenticate(self, key: str | None) -> KeyRecord:
        if not key:
            raise unauthorized("missing API key")
        prefix = split_key(key)
        if prefix is None:
            raise unauthorized("malformed API key")
        record = self._record(prefix)
        if record is None or not record.matches(key):
            raise unauthorized("invalid API key")
        if record.revoked:
            raise unauthorized("API key has been revoked")
        if record.account_disabled:
            raise unauthorized("the account of this API key is disabled")
        if record.expired():
            raise unauthorized("API key has expired")
        return record

    @staticmethod
    def authorize(record: KeyRecord, service: str) -> None:
        if not record.allows(service):
            why = "plan" if not record.plan.includes(service) else "scopes"
            raise AccessDenied(
                f"API key is not authorized for the {service} service (not in its {why})",
                kind=ErrorKind.FORBIDDEN,
            )

    def spend(self, record: KeyRecord, service: str, cost: int = 1) -> QuotaDecision | None:
        """Count the request against the key's account; None when Redis is unreachable and the
        key's plan fails open (:class:`QuotaOutagePolicy`), 503 when it fails closed."""
        try:
            decision = self.quota.spend(bucket_of(record), record.prefix, record.plan, service, cost)
        except QuotaUnavailable as exc:
            if self.outage_policy.fails_open(record.plan):
                log.warning("quota store unreachable, request allowed uncounted (fail open): %s", exc)
                return None
            log.warning("quota store unreachable, request refused (plan %s fails closed): %s", record.plan.name, exc)
            raise MeridianError(
                "quota store unreachable; try again shortly", kind=ErrorKind.UNAVAILABLE, retry_after=5
            ) from exc
        if not decision.allowed:
            raise QuotaExceeded(decision)
        return decision

    def admit(self, record: KeyRecord, service: str, cost: int = 1) -> QuotaDecision | None:
        """After authentication: the plan/scope check (403), then the quota (429)."""
        self.authorize(record, service)
        return self.spend(record, service, cost)

    def check(self, key: str | None, service: str, cost: int = 1) -> tuple[KeyRecord, QuotaDecision | None]:
        record = self.authenticate(key)
        return record, self.admit(record, service, cost)


class QuotaExceeded(AccessDenied):
    kind = ErrorKind.QUOTA_EXCEEDED

    def __init__(self, decision: QuotaDecision) -> None:
        super().__init__(
            f"plan quota exceeded ({decision.exceeded} window); retry after "
            f"{decision.retry_after_s} s with exponential backoff",
            retry_after=decision.retry_after_s,
        )
        self.decision = decision
