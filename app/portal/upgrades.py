"""Requests for a bigger plan, from the plan page to the operator (payment is out of scope: the
operator changes the plan in the admin view or with ``meridian accounts set-plan``).

Stored in Redis, in one hash without expiry (``<ns>:portal:upgrade-requests``, one field per
account): every web process and host shares it, the admin view reads it wherever it runs, and a
deployment's Redis keeps it across restarts (``compose.yaml`` runs it with ``--appendonly yes``
and ``noeviction``, so a key without expiry is never dropped to make room). A file under
``DATA_DIR`` would be one host's only. An account has at most one pending request: a new one
replaces it, so the hash is bounded by the number of accounts and a user cannot fill it, and only
a request that had none pending is mailed to the operator. The operator dismisses a request once
handled; the mail is a second copy."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import redis

MAX_MESSAGE = 500


@dataclass(frozen=True)
class UpgradeRequest:
    account_id: int
    email: str
    current_plan: str
    wanted_plan: str
    message: str
    at: str  # ISO 8601, UTC

    @classmethod
    def now(cls, account_id: int, email: str, current_plan: str, wanted_plan: str, message: str) -> UpgradeRequest:
        at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return cls(account_id, email, current_plan, wanted_plan, message.strip()[:MAX_MESSAGE], at)


class UpgradeRequests:
    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self.client = client
        self.key = f"{namespace}:portal:upgrade-requests"

    def add(self, request: UpgradeRequest) -> bool:
        """Store the account's request (replacing its pending one); True when it had none pending."""
        added = self.client.hset(self.key, str(request.account_id), json.dumps(asdict(request)))
        return bool(added)

    def pending_for(self, account_id: int) -> UpgradeRequest | None:
        raw = self.client.hget(self.key, str(account_id))
        return UpgradeRequest(**json.loads(raw)) if isinstance(raw, bytes | str) else None

    def pending(self) -> list[UpgradeRequest]:
        """Every pending request, the newest first."""
        found = [UpgradeRequest(**json.loads(raw)) for raw in self.client.hvals(self.key)]
        return sorted(found, key=lambda r: r.at, reverse=True)

    def dismiss(self, account_id: int) -> None:
        self.client.hdel(self.key, str(account_id))
