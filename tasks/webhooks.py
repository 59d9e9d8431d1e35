"""Geofence webhooks: deliver one enter/exit transition to the fence's webhook URL.

The web process sends ``meridian.geofence_webhook`` (queue ``default``) once per transition of a
fence that has a ``webhook_url``, with a fresh delivery id. The task:

1. records the event in SQL on its first run (``geofence_events``, unique by delivery id, so a
   redelivered task reuses it) and returns at once if it was already delivered;
2. POSTs the JSON body -- byte-for-byte the same on every attempt -- with the headers
   ``Content-Type: application/json``,
   ``X-Meridian-Delivery: <delivery id>`` (idempotency key, stable across retries),
   ``X-Meridian-Event: geofence.enter | geofence.exit``,
   ``X-Meridian-Timestamp: <unix seconds of this attempt>``,
   ``X-Meridian-Signature: sha256=<hex HMAC-SHA256 of the raw body>``, keyed with the SHA-256 hex
   digest of the API Secret of the key that created the fence (``sha256(secret).hexdigest()``,
   which the client computes from its secret and the server stores instead of the secret);
3. records the attempt (``geofence_webhook_attempts``); a 2xx answer marks the event
   ``delivered``; anything else (other status, connection error, timeout) is retried with
   exponential backoff (``BACKOFF_BASE_S * 2**n``, capped, with +-20 % jitter) up to
   ``MAX_RETRIES`` times, then the event is ``failed``.

At-least-once: the task is acknowledged late and rejected on worker loss, so a receiver may see
a delivery id twice and must treat ``X-Meridian-Delivery`` as an idempotency key. A fence deleted
before its delivery ran is not called any more.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import random
import threading
import time
from datetime import datetime

import requests
from celery import shared_task

from accounts.fences import DELIVERED, FenceStore
from tasks.base import settings

log = logging.getLogger("meridian.webhooks")

TASK_NAME = "meridian.geofence_webhook"
QUEUE = "default"
MAX_RETRIES = int(os.environ.get("MERIDIAN_WEBHOOK_MAX_RETRIES", "6"))  # 7 attempts in all
BACKOFF_BASE_S = float(os.environ.get("MERIDIAN_WEBHOOK_BACKOFF_S", "2.0"))
BACKOFF_CAP_S = 600.0
TIMEOUT_S = (3.05, 10.0)  # connect, read
USER_AGENT = "Meridian-Webhooks/1"

_lock = threading.Lock()
_state: dict = {}


def fence_store() -> FenceStore:
    with _lock:
        if "store" not in _state:
            store = FenceStore(settings().database_url)
            store.create_schema()
            _state["store"] = store
            _state["http"] = requests.Session()
        return _state["store"]


def sign(body: bytes, secret_hash: str) -> str:
    """The ``X-Meridian-Signature`` value of a body."""
    return "sha256=" + hmac.new(secret_hash.encode(), body, hashlib.sha256).hexdigest()


def backoff_s(retries: int) -> float:
    base = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**retries)
    return round(base * random.uniform(0.8, 1.2), 3)


@shared_task(
    name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=MAX_RETRIES, ignore_result=True
)
def deliver(self, delivery: dict) -> dict:
    """``delivery``: ``{id, fence_id, account_id, device, transition, lat, lng, url, payload,
    occurred_at}`` (``payload`` is the JSON body as text)."""
    store = fence_store()
    secret_hash, exists = store.signing_key(delivery["fence_id"])
    if not exists:
        log.info("webhook %s dropped: fence %s was deleted", delivery["id"], delivery["fence_id"])
        return {"ok": False, "reason": "fence deleted"}
    event = store.open_event(
        delivery_id=delivery["id"],
        fence_id=delivery["fence_id"],
        account_id=int(delivery["account_id"]),
        device=delivery["device"],
        transition=delivery["transition"],
        lat=float(delivery["lat"]),
        lng=float(delivery["lng"]),
        url=delivery["url"],
        payload=delivery["payload"],
        occurred_at=datetime.fromisoformat(delivery["occurred_at"].replace("Z", "+00:00")),
    )
    if event.status == DELIVERED:
        return {"ok": True, "duplicate": True}
    body = event.payload.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Meridian-Delivery": event.delivery_id,
        "X-Meridian-Event": f"geofence.{event.transition}",
        "X-Meridian-Timestamp": str(int(time.time())),
        "X-Meridian-Signature": sign(body, secret_hash or ""),
    }
    status, error = None, None
    t0 = time.perf_counter()
    try:
        resp = _state["http"].post(event.url, data=body, headers=headers, timeout=TIMEOUT_S, allow_redirects=False)
        status = resp.status_code
        resp.close()
        ok = 200 <= status < 300
        if not ok:
            error = f"HTTP {status}"
    except requests.RequestException as exc:
        ok, error = False, f"{type(exc).__name__}: {exc}"[:500]
    duration_ms = (time.perf_counter() - t0) * 1000
    final = not ok and self.request.retries >= self.max_retries
    attempt = store.record_attempt(
        event.delivery_id, status_code=status, error=error, duration_ms=duration_ms, delivered=ok, final=final
    )
    if ok:
        return {"ok": True, "attempt": attempt}
    if final:
        log.warning("webhook %s to %s failed after %d attempts: %s", event.delivery_id, event.url, attempt, error)
        return {"ok": False, "attempt": attempt, "error": error}
    countdown = backoff_s(self.request.retries)
    log.info("webhook %s attempt %d failed (%s); retry in %.1f s", event.delivery_id, attempt, error, countdown)
    raise self.retry(countdown=countdown)
