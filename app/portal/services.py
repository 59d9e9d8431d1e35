"""What the portal's views share in one process: its settings, the account directory and key
store (the same :class:`~accounts.store.AccountStore` as the API and the CLI), the mail token
signer, the attempt limiter, the quota counters (read only) and the mail queue."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from celery import Celery
from flask import current_app

from accounts.quota import QuotaCounter
from accounts.store import AccountStore
from accounts.tokens import TokenSigner
from accounts.users import UserDirectory
from app.portal.ratelimit import RateLimiter
from app.runtime import runtime
from config.portal import PortalSettings
from tasks.mail import enqueue

log = logging.getLogger("meridian.portal")


@dataclass
class Portal:
    settings: PortalSettings
    store: AccountStore
    users: UserDirectory
    signer: TokenSigner
    limiter: RateLimiter
    quota: QuotaCounter  # reads the usage and the current windows of the user's keys
    celery: Celery

    def queue_mail(self, mail: dict[str, str]) -> bool:
        """Hand a finished message to the mail worker (stored in Redis, its id queued: the links
        never travel in a Celery message, ``tasks/mail.py``); False when Redis or the queue is
        unreachable (the page then says so, and the user can ask again)."""
        rt = runtime()
        return enqueue(self.celery, rt.redis, rt.settings.service_name, mail)


def portal() -> Portal:
    found: Portal = current_app.extensions["portal"]
    return found
