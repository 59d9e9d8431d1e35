"""Geofence webhooks: the task that delivers one enter/exit to a fence's webhook URL, and the one
definition of its name, queue and message (:func:`enqueue`, which the web's ``FenceService``
calls for every :class:`~engine.geofence.webhooks.Delivery`).

What a receiver sees (body, headers, signature, retries, at-least-once) is documented once, in the
README ("Geofencing and webhooks"). The task:

1. records the event in SQL on its first run (``geofence_events``, unique by delivery id, so a
   redelivered task reuses it) and returns at once if it was already delivered, or if the fence
   was deleted meanwhile;
2. POSTs the recorded body signed with the key that created the fence, through
   ``tasks/webhook_http.py`` (only to an address ``engine.netguard`` allows: public ones plus
   ``WEBHOOK_ALLOWED_NETWORKS``, checked again on every attempt; no redirects followed; at most
   64 KiB of the answer read);
3. records the attempt (``geofence_webhook_attempts``); a 2xx answer marks the event
   ``delivered``; anything else is retried with exponential backoff (``webhook_backoff_s * 2**n``,
   capped, with +-20 % jitter) up to ``webhook_max_retries`` times (``MERIDIAN_WEBHOOK_*``), then
   the event is ``failed``. A destination the guard refuses fails the event at once (no retry),
   with the reason in the attempt.

The task is acknowledged late and rejected on worker loss: a delivery id may arrive twice.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import threading
import time
from datetime import datetime
from typing import Any

from celery import Task, shared_task

from accounts.fences import DELIVERED, FenceStore
from engine.geofence.webhooks import Delivery
from queueing.protocol import DEFAULT_QUEUE, TaskSender
from tasks import base, webhook_http
from tasks.base import settings

log = logging.getLogger("meridian.webhooks")

TASK_NAME = "meridian.geofence_webhook"
QUEUE = DEFAULT_QUEUE
BACKOFF_CAP_S = 600.0
USER_AGENT = "Meridian-Webhooks/1"

_lock = threading.Lock()
_state: dict[str, Any] = {}


def enqueue(sender: TaskSender, delivery: Delivery) -> None:
    """Queue the delivery; the message is the :class:`Delivery`'s fields as a JSON object. A
    broker outage is logged, not raised: the check that caused the transition has succeeded."""
    try:
        sender.send_task(TASK_NAME, args=[dataclasses.asdict(delivery)], queue=QUEUE)
    except Exception:  # noqa: BLE001 - whatever the broker client raises
        log.exception("could not queue webhook %s of fence %s", delivery.id, delivery.fence_id)


def fence_store() -> FenceStore:
    with _lock:
        if "store" not in _state:
            store = FenceStore(settings().database_url)
            store.create_schema()
            _state["store"] = store
        store_: FenceStore = _state["store"]
        return store_


def sign(body: bytes, secret_hash: str) -> str:
    """The ``X-Meridian-Signature`` value of a body."""
    return "sha256=" + hmac.new(secret_hash.encode(), body, hashlib.sha256).hexdigest()


def backoff_s(retries: int) -> float:
    return base.backoff_s(retries, settings().webhook_backoff_s, BACKOFF_CAP_S)


@shared_task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver(self: Task[Any, Any], message: dict[str, Any]) -> dict[str, Any]:
    """``message``: a :class:`Delivery` as sent by :func:`enqueue`."""
    delivery = Delivery(**message)
    store = fence_store()
    secret_hash, exists = store.signing_key(delivery.fence_id)
    if not exists:
        log.info("webhook %s dropped: fence %s was deleted", delivery.id, delivery.fence_id)
        return {"ok": False, "reason": "fence deleted"}
    event = store.open_event(
        delivery_id=delivery.id,
        fence_id=delivery.fence_id,
        account_id=int(delivery.account_id),
        device=delivery.device,
        transition=delivery.transition,
        lat=float(delivery.lat),
        lng=float(delivery.lng),
        url=delivery.url,
        payload=delivery.payload,
        occurred_at=datetime.fromisoformat(delivery.occurred_at.replace("Z", "+00:00")),
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
    t0 = time.perf_counter()
    outcome = webhook_http.post(event.url, body, headers, settings().webhook_allowed_networks)
    ok, status, error = outcome.ok, outcome.status, outcome.error
    duration_ms = (time.perf_counter() - t0) * 1000
    max_retries = settings().webhook_max_retries
    final = not ok and (outcome.blocked or self.request.retries >= max_retries)
    attempt = store.record_attempt(
        event.delivery_id, status_code=status, error=error, duration_ms=duration_ms, delivered=ok, final=final
    )
    if ok:
        return {"ok": True, "attempt": attempt}
    if final:
        log.warning(
            "webhook %s to %s failed after %d attempts: %s",
            event.delivery_id,
            webhook_http.loggable(event.url),
            attempt,
            error,
        )
        return {"ok": False, "attempt": attempt, "error": error}
    countdown = backoff_s(self.request.retries)
    log.info("webhook %s attempt %d failed (%s); retry in %.1f s", event.delivery_id, attempt, error, countdown)
    raise self.retry(countdown=countdown, max_retries=max_retries)
