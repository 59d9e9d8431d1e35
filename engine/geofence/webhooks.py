"""Webhook deliveries: what one enter/exit of a device is turned into for a fence's webhook.

The body a receiver gets, its headers, the signature and the retry policy are documented once, in
the README ("Geofencing and webhooks"); ``tasks/webhooks.py`` sends a :class:`Delivery` and
delivers it. Framework-free.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from engine.geo import round_coord
from engine.geofence.transitions import ENTER, EXIT


@dataclass(frozen=True)
class Delivery:
    """One enter/exit to deliver: the event's facts (recorded in SQL by the task) and ``payload``,
    the JSON body, built once so that every attempt sends the same bytes."""

    id: str  # delivery id: the body's ``id`` and the X-Meridian-Delivery header
    fence_id: str
    account_id: int
    device: str
    transition: str  # enter | exit
    lat: float
    lng: float
    url: str
    occurred_at: str  # ISO 8601, UTC, milliseconds
    payload: str


def utc_timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def delivery(
    *,
    fence_id: str,
    fence_name: str | None,
    account_id: int,
    device: str,
    transition: str,
    lat: float,
    lng: float,
    distance: float | None,
    url: str,
    now: datetime | None = None,
) -> Delivery:
    """The delivery of one transition (``enter`` or ``exit``) with a fresh delivery id."""
    if transition not in (ENTER, EXIT):
        raise ValueError(f"only enter and exit are delivered, not {transition!r}")
    delivery_id = uuid.uuid4().hex
    occurred = utc_timestamp(now or datetime.now(UTC))
    lat, lng = round_coord(lat), round_coord(lng)
    body = {
        "id": delivery_id,
        "event": f"geofence.{transition}",
        "occurred_at": occurred,
        "fence": {"id": fence_id, "name": fence_name},
        "device": device,
        "transition": transition,
        "point": {"lat": lat, "lng": lng},
        "distance": distance,
    }
    return Delivery(
        id=delivery_id,
        fence_id=fence_id,
        account_id=int(account_id),
        device=device,
        transition=transition,
        lat=lat,
        lng=lng,
        url=url,
        occurred_at=occurred,
        payload=json.dumps(body, separators=(",", ":"), ensure_ascii=False),
    )
