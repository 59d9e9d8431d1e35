"""Geofences per account and their webhook deliveries, in SQL (same database and ``Base`` as the
accounts; ``AccountStore.create_schema()`` creates these tables too).

Tables:

* ``geofences`` -- one fence: its id (``gf_<16 hex>``), owning account, the key that created it
  (its API Secret signs the webhooks), kind, name, the canonical body (``Fence.to_body()``; an
  admin-area fence stores its *resolved* geometry, so a reload never needs the dataset; the body
  also carries ``vertices``, the count the per-account cap adds up in SQL) and an optional
  webhook URL.
* ``geofence_events`` -- one enter/exit transition to deliver to a fence's webhook: the delivery
  id (the idempotency key sent as ``X-Meridian-Delivery``, unique), the exact JSON body sent,
  its status (``pending`` -> ``delivered`` | ``failed``) and the number of attempts.
* ``geofence_webhook_attempts`` -- every HTTP attempt of a delivery (time, status code or error,
  duration).

:class:`FenceStore` is Flask-free; the web layer and the Celery task share it. Records are plain
immutable dataclasses, never ORM objects.
"""

from __future__ import annotations

import builtins
import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, overload

from shapely.geometry import mapping
from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from accounts.models import Account, ApiKey, Base, Plan, utcnow
from engine.errors import InvalidParameter
from engine.geofence.model import Fence, parse_fence

FENCE_ID_PREFIX = "gf_"
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


class FenceRow(Base):
    __tablename__ = "geofences"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), index=True, nullable=False)
    key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"), nullable=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    name: Mapped[str | None] = mapped_column(String(256), nullable=True)
    osm_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    webhook_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WebhookEvent(Base):
    __tablename__ = "geofence_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    fence_id: Mapped[str] = mapped_column(String(32), index=True, nullable=False)
    account_id: Mapped[int] = mapped_column(Integer, index=True, nullable=False)
    device: Mapped[str] = mapped_column(String(128), nullable=False)
    transition: Mapped[str] = mapped_column(String(8), nullable=False)
    lat: Mapped[float] = mapped_column(Float, nullable=False)
    lng: Mapped[float] = mapped_column(Float, nullable=False)
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    payload: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(String(16), default=PENDING, nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    occurred_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class WebhookAttempt(Base):
    __tablename__ = "geofence_webhook_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("geofence_events.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer, nullable=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)


@overload
def _aware(value: datetime) -> datetime: ...
@overload
def _aware(value: None) -> None: ...
def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:  # SQLite drops tzinfo
        return value.replace(tzinfo=UTC)
    return value


def iso(value: datetime | None) -> str | None:
    value = _aware(value)
    return None if value is None else value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class FenceRecord:
    id: str
    account_id: int
    key_id: int | None
    kind: str
    name: str | None
    osm_id: int | None
    body: dict[str, Any]
    webhook_url: str | None
    created_at: datetime

    @property
    def metadata(self) -> dict[str, Any]:
        props = self.body.get("properties") if self.body.get("type") == "Feature" else self.body
        return dict((props or {}).get("metadata") or {})

    def fence(self) -> Fence:
        """The engine's Fence (stored bodies were validated at creation: no validity re-check)."""
        fence = parse_fence(self.body, fence_id=self.id, check_validity=False)
        if self.kind == "admin":
            fence = replace(fence, kind="admin", osm_id=self.osm_id)
        return fence

    def as_dict(self, *, geometry: bool = True) -> dict[str, Any]:
        """The API form: ``id, type, name, metadata, webhook_url, created_at`` and the shape:
        ``center`` + ``radius`` (circle) or ``geometry`` (GeoJSON; polygon and admin) and
        ``osm_id`` (admin). ``geometry=False`` leaves the polygon out (listings)."""
        out: dict[str, Any] = {"id": self.id, "type": self.kind, "name": self.name, "metadata": self.metadata}
        if self.kind == "circle":
            out["center"] = dict(self.body["center"])
            out["radius"] = self.body["radius"]
        else:
            if self.kind == "admin":
                out["osm_id"] = self.osm_id
            if geometry:
                out["geometry"] = self.body.get("geometry")
        out["webhook_url"] = self.webhook_url
        out["created_at"] = iso(self.created_at)
        return out


@dataclass(frozen=True)
class EventRecord:
    delivery_id: str
    fence_id: str
    device: str
    transition: str
    lat: float
    lng: float
    url: str
    payload: str
    status: str
    attempts: int
    occurred_at: datetime
    delivered_at: datetime | None
    attempt_log: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.delivery_id,
            "fence_id": self.fence_id,
            "device": self.device,
            "transition": self.transition,
            "point": {"lat": self.lat, "lng": self.lng},
            "occurred_at": iso(self.occurred_at),
            "status": self.status,
            "delivered_at": iso(self.delivered_at),
            "attempts": list(self.attempt_log),
        }


def new_fence_id() -> str:
    return FENCE_ID_PREFIX + secrets.token_hex(8)


def stored_body(fence: Fence) -> dict[str, Any]:
    """What is stored for a fence: its canonical body (admin areas as their resolved polygon) and,
    for polygons, ``vertices`` (``parse_fence`` ignores it)."""
    body: dict[str, Any]
    if fence.kind == "admin" and fence.geometry is not None:
        body = {
            "type": "Feature",
            "geometry": mapping(fence.geometry),
            "properties": {"name": fence.name, "metadata": dict(fence.metadata)},
        }
    else:
        body = fence.to_body()
    if fence.geometry is not None:
        body[VERTICES] = fence.vertices
    return body


VERTICES = "vertices"  # key of a stored polygon body: its number of positions


def body_vertices(body: dict[str, Any]) -> int:
    """Positions of a stored body's Polygon/MultiPolygon geometry (0 for a circle)."""
    geometry = body.get("geometry") or {}
    coords = geometry.get("coordinates") or []
    polygons = coords if geometry.get("type") == "MultiPolygon" else [coords]
    return sum(len(ring) for polygon in polygons for ring in polygon)


def _vertex_cap(s: Session, account_id: int, key_id: int | None) -> int:
    """``max_fence_vertices`` of the plan of the key making the fence (of the account's own plan
    without a key); 0: no cap."""
    if key_id is not None:
        plan = select(ApiKey.plan_id).where(ApiKey.id == key_id).scalar_subquery()
    else:
        plan = select(Account.plan_id).where(Account.id == account_id).scalar_subquery()
    return int(s.scalar(select(Plan.max_fence_vertices).where(Plan.id == plan)) or 0)


def _account_vertices(s: Session, account_id: int) -> int:
    """Vertices of all the account's fences, summed in SQL from the bodies' ``vertices``; bodies
    stored without it (before the cap) are counted once here and written back."""
    count = FenceRow.body[VERTICES].as_integer()
    mine = FenceRow.account_id == account_id
    for fence_id, body in s.execute(
        select(FenceRow.id, FenceRow.body).where(mine, FenceRow.kind != "circle", count.is_(None))
    ):
        s.execute(update(FenceRow).where(FenceRow.id == fence_id).values(body={**body, VERTICES: body_vertices(body)}))
    return int(s.scalar(select(func.coalesce(func.sum(count), 0)).where(mine)) or 0)


class FenceStore:
    """Fences and webhook events of every account. ``engine``: a SQLAlchemy Engine (share the
    AccountStore's) or a database URL."""

    def __init__(self, engine: Engine | str) -> None:
        if isinstance(engine, str):
            from accounts.store import make_engine

            engine = make_engine(engine)
        self.engine = engine
        self._session = sessionmaker(engine, expire_on_commit=False)

    def create_schema(self) -> None:
        Base.metadata.create_all(self.engine)

    # ---------------------------------------------------------------- fences
    def create(
        self,
        account_id: int,
        fence: Fence,
        *,
        key_id: int | None = None,
        webhook_url: str | None = None,
        max_fences: int,
    ) -> FenceRecord:
        """Store a validated fence for the account; InvalidParameter when the account already has
        ``max_fences`` fences, or when its fences would have more vertices together than the
        ``max_fence_vertices`` of the plan of the key (``key_id``; without one, the account's plan).

        The counts and the insert are one transaction that starts by writing the account's row:
        concurrent creates for one account take turns (a row lock on PostgreSQL, the write lock on
        SQLite), so they cannot both pass the check and together exceed a cap."""
        with self._session() as s, s.begin():
            s.execute(update(Account).where(Account.id == account_id).values(name=Account.name))
            count = s.scalar(select(func.count()).select_from(FenceRow).where(FenceRow.account_id == account_id))
            if (count or 0) >= max_fences:
                raise InvalidParameter(
                    f"too many fences: the account already has the maximum of {max_fences}; delete some first"
                )
            cap = _vertex_cap(s, account_id, key_id)
            if cap and fence.vertices:
                total = _account_vertices(s, account_id) + fence.vertices
                if total > cap:
                    raise InvalidParameter(
                        f"too many vertices: the account's fences would have {total} vertices together, over the "
                        f"plan's maximum of {cap} (max_fence_vertices); simplify the geometry or delete fences first",
                        parameter="osm_id" if fence.kind == "admin" else "geometry",
                    )
            row = FenceRow(
                id=new_fence_id(),
                account_id=account_id,
                key_id=key_id,
                kind=fence.kind,
                name=fence.name,
                osm_id=fence.osm_id,
                body=stored_body(fence),
                webhook_url=webhook_url,
                created_at=utcnow(),
            )
            s.add(row)
            s.flush()
            return self._record(row)

    def get(self, account_id: int, fence_id: str) -> FenceRecord | None:
        with self._session() as s:
            row = s.scalar(select(FenceRow).where(FenceRow.id == fence_id, FenceRow.account_id == account_id))
            return self._record(row) if row is not None else None

    def list(self, account_id: int, *, limit: int = 20, offset: int = 0) -> tuple[list[FenceRecord], int]:
        with self._session() as s:
            total = s.scalar(select(func.count()).select_from(FenceRow).where(FenceRow.account_id == account_id))
            rows = s.scalars(
                select(FenceRow)
                .where(FenceRow.account_id == account_id)
                .order_by(FenceRow.created_at, FenceRow.id)
                .limit(limit)
                .offset(offset)
            )
            return [self._record(r) for r in rows], int(total or 0)

    def load(self, account_id: int) -> builtins.list[FenceRecord]:
        """Every fence of the account (to build its index)."""
        with self._session() as s:
            rows = s.scalars(select(FenceRow).where(FenceRow.account_id == account_id).order_by(FenceRow.id))
            return [self._record(r) for r in rows]

    def delete(self, account_id: int, fence_id: str) -> bool:
        """Delete the fence with its events and attempts; False if the account has no such fence."""
        with self._session() as s, s.begin():
            row = s.scalar(select(FenceRow).where(FenceRow.id == fence_id, FenceRow.account_id == account_id))
            if row is None:
                return False
            event_ids = select(WebhookEvent.id).where(WebhookEvent.fence_id == fence_id).scalar_subquery()
            s.execute(delete(WebhookAttempt).where(WebhookAttempt.event_id.in_(event_ids)))
            s.execute(delete(WebhookEvent).where(WebhookEvent.fence_id == fence_id))
            s.delete(row)
            return True

    # ---------------------------------------------------------------- webhooks
    def signing_key(self, fence_id: str) -> tuple[str | None, bool]:
        """(secret_hash of the key that created the fence, whether the fence still exists)."""
        with self._session() as s:
            row = s.execute(
                select(FenceRow.id, ApiKey.secret_hash)
                .outerjoin(ApiKey, ApiKey.id == FenceRow.key_id)
                .where(FenceRow.id == fence_id)
            ).first()
            if row is None:
                return None, False
            return row[1], True

    def open_event(
        self,
        *,
        delivery_id: str,
        fence_id: str,
        account_id: int,
        device: str,
        transition: str,
        lat: float,
        lng: float,
        url: str,
        payload: str,
        occurred_at: datetime,
    ) -> EventRecord:
        """The delivery's event row, inserted on first use (idempotent by ``delivery_id``)."""
        try:
            with self._session() as s, s.begin():
                row = s.scalar(select(WebhookEvent).where(WebhookEvent.delivery_id == delivery_id))
                if row is None:
                    row = WebhookEvent(
                        delivery_id=delivery_id,
                        fence_id=fence_id,
                        account_id=account_id,
                        device=device,
                        transition=transition,
                        lat=lat,
                        lng=lng,
                        url=url,
                        payload=payload,
                        status=PENDING,
                        attempts=0,
                        occurred_at=occurred_at,
                    )
                    s.add(row)
                    s.flush()
                return self._event(row)
        except IntegrityError:  # inserted concurrently by a redelivered task
            with self._session() as s:
                return self._event(s.scalars(select(WebhookEvent).where(WebhookEvent.delivery_id == delivery_id)).one())

    def record_attempt(
        self,
        delivery_id: str,
        *,
        status_code: int | None,
        error: str | None,
        duration_ms: float,
        delivered: bool,
        final: bool,
    ) -> int:
        """Record one HTTP attempt; ``delivered`` marks the event delivered, ``final`` (last retry
        failed) marks it failed. Returns the attempt number."""
        with self._session() as s, s.begin():
            event = s.scalar(select(WebhookEvent).where(WebhookEvent.delivery_id == delivery_id))
            if event is None:
                return 0
            event.attempts = (event.attempts or 0) + 1
            s.add(
                WebhookAttempt(
                    event_id=event.id,
                    number=event.attempts,
                    at=utcnow(),
                    status_code=status_code,
                    error=(error or None) and error[:500],
                    duration_ms=round(duration_ms, 2),
                )
            )
            if delivered:
                event.status, event.delivered_at = DELIVERED, utcnow()
            elif final:
                event.status = FAILED
            return event.attempts

    def events(
        self, account_id: int, fence_id: str, *, limit: int = 20, offset: int = 0
    ) -> tuple[builtins.list[EventRecord], int]:
        """The fence's deliveries, newest first, each with its attempts."""
        with self._session() as s:
            where = (WebhookEvent.fence_id == fence_id, WebhookEvent.account_id == account_id)
            total = s.scalar(select(func.count()).select_from(WebhookEvent).where(*where))
            rows = list(
                s.scalars(
                    select(WebhookEvent).where(*where).order_by(WebhookEvent.id.desc()).limit(limit).offset(offset)
                )
            )
            attempts: dict[int, list[dict[str, Any]]] = {r.id: [] for r in rows}
            if rows:
                for a in s.scalars(
                    select(WebhookAttempt)
                    .where(WebhookAttempt.event_id.in_(list(attempts)))
                    .order_by(WebhookAttempt.event_id, WebhookAttempt.number)
                ):
                    attempts[a.event_id].append(
                        {
                            "number": a.number,
                            "at": iso(a.at),
                            "status_code": a.status_code,
                            "error": a.error,
                            "duration_ms": a.duration_ms,
                        }
                    )
            return [self._event(r, tuple(attempts[r.id])) for r in rows], int(total or 0)

    def event(self, delivery_id: str) -> EventRecord | None:
        with self._session() as s:
            row = s.scalar(select(WebhookEvent).where(WebhookEvent.delivery_id == delivery_id))
            return self._event(row) if row is not None else None

    # ---------------------------------------------------------------- records
    @staticmethod
    def _record(row: FenceRow) -> FenceRecord:
        return FenceRecord(
            id=row.id,
            account_id=row.account_id,
            key_id=row.key_id,
            kind=row.kind,
            name=row.name,
            osm_id=row.osm_id,
            body=row.body,
            webhook_url=row.webhook_url,
            created_at=_aware(row.created_at),
        )

    @staticmethod
    def _event(row: WebhookEvent, attempt_log: tuple[dict[str, Any], ...] = ()) -> EventRecord:
        return EventRecord(
            delivery_id=row.delivery_id,
            fence_id=row.fence_id,
            device=row.device,
            transition=row.transition,
            lat=row.lat,
            lng=row.lng,
            url=row.url,
            payload=row.payload,
            status=row.status,
            attempts=row.attempts or 0,
            occurred_at=_aware(row.occurred_at),
            delivered_at=_aware(row.delivered_at),
            attempt_log=attempt_log,
        )
