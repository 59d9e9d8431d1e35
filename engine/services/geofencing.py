"""Geofencing: a point against the fences of one account, with per-device transitions, and the
per-process :class:`FenceService` that binds it to the accounts' stored fences and webhooks.

:func:`run` and :func:`run_batch` are the function itself: the caller resolves the key's account to its
:class:`~engine.geofence.index.FenceIndex` (``FenceIndexCache.get(account_id)``) and, when a
device is given, to a :class:`~engine.geofence.transitions.DeviceTransitions` of that account.

Result of :func:`run`::

    {"fences": [{"id": "f1", "name": "Depot", "inside": true, "distance": 12.5,
                 "transition": "enter"}, ...]}

* ``inside``: the point is in the fence, boundary included.
* ``distance``: metres (WGS84 geodesic, >= 0, 2 decimals) from the point to the fence's boundary,
  whichever side the point is on.
* ``transition``: ``enter`` / ``exit`` / ``inside`` / ``outside`` since the device's previous
  check, or ``null`` when no ``device`` was given.
* Order: with ``fence_ids``, their order; by default (all the account's fences) the fences
  containing the point first, then by increasing distance.
* Unknown ``fence_ids`` (including another account's ids) raise InvalidParameter("fences").

:class:`FenceService` (one per web process) keeps an index per account (``FenceIndexCache``,
refreshed through a Redis version counter bumped on every create/delete), the device states
(``DeviceTransitions``), and turns every enter/exit of a fence with a webhook into a
:class:`~engine.geofence.webhooks.Delivery` handed to its ``send`` callback (the web passes
``tasks.webhooks.enqueue``). The fences themselves live in SQL (``accounts/fences.py``), reached
through the :class:`FenceRecords` protocol.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis
from shapely.geometry.base import BaseGeometry

from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter, NotFound
from engine.geofence.index import FenceIndex
from engine.geofence.model import Fence, parse_fence
from engine.geofence.registry import FenceIndexCache, RedisFenceVersions
from engine.geofence.transitions import ENTER, EXIT, CheckResult, DeviceTransitions
from engine.geofence.webhooks import Delivery, delivery
from engine.limits import DEFAULT_LIMITS, Limits

log = logging.getLogger("meridian.geofencing")

DEVICE_MAX_CHARS = 128


@dataclass(frozen=True)
class GeofenceCheckParams:
    lat: float
    lng: float
    fence_ids: tuple[str, ...] | None = None  # None: all fences of the account
    device: str | None = None


@dataclass(frozen=True)
class GeofencePoint:
    lat: float
    lng: float
    device: str | None = None


@dataclass(frozen=True)
class GeofenceBatchParams:
    points: tuple[GeofencePoint, ...]
    fence_ids: tuple[str, ...] | None = None


def run(
    index: FenceIndex,
    params: GeofenceCheckParams,
    transitions: DeviceTransitions | None = None,
    *,
    limits: Limits | None = None,
) -> dict[str, Any]:
    limits = limits or DEFAULT_LIMITS
    _check_point(params.lat, params.lng)
    _check_fence_ids(params.fence_ids, limits)
    if params.device is not None:
        _check_device(params.device, "device")
        if transitions is None:
            raise ValueError("a device was given but no DeviceTransitions store")
    statuses = index.check(params.lat, params.lng, params.fence_ids)
    result = None
    if params.device is not None and transitions is not None:
        inside = [s.id for s in statuses if s.inside]
        checked = None if params.fence_ids is None else [s.id for s in statuses]
        result = transitions.update(params.device, inside, checked)
    fences = []
    for s in statuses:
        d = s.as_dict()
        d["transition"] = result.of(s.id) if result is not None else None
        fences.append(d)
    return {"fences": fences}


def run_batch(
    index: FenceIndex,
    params: GeofenceBatchParams,
    transitions: DeviceTransitions | None = None,
    *,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """Many points (a fleet) in one call. Per point: the ids of the fences containing it and, for
    points with a ``device``, only the changes (``enter``/``exit``) since that device's previous
    check; a device listed twice is updated in list order.

    ``{"results": [{"index": 0, "device": "truck-1", "inside": ["f1"],
                    "transitions": [{"id": "f1", "transition": "enter"}]}, ...]}``
    """
    limits = limits or DEFAULT_LIMITS
    points = params.points
    if not points:
        raise InvalidParameter("points must list at least one point", parameter="points")
    if len(points) > limits.geofence_batch_points:
        raise InvalidParameter(
            f"at most {limits.geofence_batch_points} points per batch, got {len(points)}", parameter="points"
        )
    _check_fence_ids(params.fence_ids, limits)
    for i, p in enumerate(points):
        _check_point(p.lat, p.lng, where=f"points[{i}]")
        if p.device is not None:
            _check_device(p.device, f"points[{i}].device")
    if transitions is None and any(p.device is not None for p in points):
        raise ValueError("devices were given but no DeviceTransitions store")
    subset = None
    checked = None
    if params.fence_ids is not None:
        ids = index.ids
        subset = {ids[i] for i in index.positions(params.fence_ids).tolist()}
        checked = list(dict.fromkeys(params.fence_ids))
    inside_lists = index.containing_many([p.lat for p in points], [p.lng for p in points])
    if subset is not None:
        inside_lists = [[f for f in lst if f in subset] for lst in inside_lists]
    devices = {i: p.device for i, p in enumerate(points) if p.device is not None}
    updates: dict[int, CheckResult] = {}
    if devices and transitions is not None:
        res = transitions.update_many([(device, inside_lists[i], checked) for i, device in devices.items()])
        updates = dict(zip(devices, res, strict=True))
    results = []
    for i, p in enumerate(points):
        item: dict[str, Any] = {"index": i, "device": p.device, "inside": inside_lists[i]}
        if i in updates:
            changes = updates[i].changes
            if subset is None:  # fences deleted since the previous check are not reported
                changes = {f: t for f, t in changes.items() if f in index}
            item["transitions"] = [{"id": f, "transition": t} for f, t in changes.items()]
        else:
            item["transitions"] = None
        results.append(item)
    return {"results": results}


def _check_point(lat: float, lng: float, where: str = "") -> None:
    prefix = f"{where}." if where else ""
    if not isinstance(lat, int | float) or not math.isfinite(lat) or not -90.0 <= lat <= 90.0:
        raise InvalidParameter("lat must be a number in [-90, 90]", parameter=f"{prefix}lat")
    if not isinstance(lng, int | float) or not math.isfinite(lng) or not -180.0 <= lng <= 180.0:
        raise InvalidParameter("lng must be a number in [-180, 180]", parameter=f"{prefix}lng")


def _check_fence_ids(fence_ids: Sequence[str] | None, limits: Limits) -> None:
    if fence_ids is None:
        return
    if len(fence_ids) == 0:
        raise InvalidParameter("fences must list at least one fence id", parameter="fences")
    if len(fence_ids) > limits.geofence_max_per_account:
        raise InvalidParameter(
            f"at most {limits.geofence_max_per_account} fence ids, got {len(fence_ids)}", parameter="fences"
        )


def _check_device(device: str, parameter: str) -> None:
    if not isinstance(device, str) or not device.strip() or len(device) > DEVICE_MAX_CHARS:
        raise InvalidParameter(
            f"device must be a non-empty string of at most {DEVICE_MAX_CHARS} characters", parameter=parameter
        )
    if any(ord(c) < 32 for c in device):
        raise InvalidParameter("device must not contain control characters", parameter=parameter)


# ------------------------------------------------------------------------------ per-process service
REFRESH_S = 0.5  # how often a process re-reads an account's fence version (change visible < 1 s)


class StoredFence(Protocol):
    """A fence as stored (``accounts.fences.FenceRecord``)."""

    @property
    def id(self) -> str: ...

    @property
    def webhook_url(self) -> str | None: ...

    def fence(self) -> Fence: ...

    def as_dict(self, *, geometry: bool = True) -> dict[str, Any]: ...


class FenceRecords(Protocol):
    """The fences and webhook events of every account (``accounts.fences.FenceStore``)."""

    def load(self, account_id: int) -> Sequence[StoredFence]: ...

    def create(
        self, account_id: int, fence: Fence, *, key_id: int | None, webhook_url: str | None, max_fences: int
    ) -> StoredFence: ...

    def get(self, account_id: int, fence_id: str) -> StoredFence | None: ...

    def list(self, account_id: int, *, limit: int, offset: int) -> tuple[Sequence[StoredFence], int]: ...

    def delete(self, account_id: int, fence_id: str) -> bool: ...

    def events(self, account_id: int, fence_id: str, *, limit: int, offset: int) -> tuple[Sequence[Any], int]: ...


Change = tuple[str, str | None, str, float | None]  # (fence id, name, transition, distance)


class FenceService:
    """Fences of every account for one process: checks with transitions and webhooks, and the
    management operations. Accounts are given as their id; ``send`` receives each webhook
    delivery (it must not raise for a broker outage: the check has succeeded)."""

    def __init__(
        self,
        store: FenceRecords,
        client: redis.Redis,
        datasets: DatasetRegistry,
        send: Callable[[Delivery], None],
        *,
        prefix: str,
        limits: Limits = DEFAULT_LIMITS,
        cache_vertices: int = 0,
    ) -> None:
        self.store = store
        self.redis = client
        self.datasets = datasets
        self.send = send
        self.prefix = prefix
        self.limits = limits
        self.versions = RedisFenceVersions(client, prefix=prefix)
        # at most ``cache_vertices`` boundary vertices of all accounts' indexes in this process (0: no bound)
        self.cache = FenceIndexCache(
            self._load, self.versions.get, check_interval_s=REFRESH_S, max_vertices=cache_vertices
        )
        self.hooks: dict[str, dict[str, str]] = {}  # account -> fence id -> webhook URL
        self._transitions: dict[str, DeviceTransitions] = {}

    # ---------------------------------------------------------------- checks
    def check(self, account_id: str, params: GeofenceCheckParams) -> dict[str, Any]:
        index = self.cache.get(account_id)
        tr = self._device_states(account_id) if params.device is not None else None
        result = run(index, params, tr, limits=self.limits)
        if params.device is not None:
            changes = ((x["id"], x["name"], x["transition"], x["distance"]) for x in result["fences"])
            self._notify(account_id, params.device, params.lat, params.lng, changes)
        return result

    def check_batch(self, account_id: str, params: GeofenceBatchParams) -> dict[str, Any]:
        index = self.cache.get(account_id)
        tr = self._device_states(account_id) if any(p.device is not None for p in params.points) else None
        result = run_batch(index, params, tr, limits=self.limits)
        if self.hooks.get(account_id):
            for item, point in zip(result["results"], params.points, strict=True):
                if item["transitions"] and point.device is not None:
                    changes = [self._change(index, point, t["id"], t["transition"]) for t in item["transitions"]]
                    self._notify(account_id, point.device, point.lat, point.lng, changes)
        return result

    # ---------------------------------------------------------------- management
    def create(self, account_id: str, body: Mapping[str, Any], *, key_id: int | None) -> dict[str, Any]:
        """``body``: the fence as the client sent it, ``webhook_url`` included."""
        body = dict(body)
        webhook_url = body.pop("webhook_url", None)
        body.pop("id", None)
        body.pop("bbox", None)
        fence = parse_fence(body, resolve_admin=self._admin_geometry, limits=self.limits)
        record = self.store.create(
            int(account_id),
            fence,
            key_id=key_id,
            webhook_url=webhook_url,
            max_fences=self.limits.geofence_max_per_account,
        )
        self._changed(account_id)
        return record.as_dict()

    def list_fences(self, account_id: str, *, limit: int, offset: int) -> dict[str, Any]:
        records, total = self.store.list(int(account_id), limit=limit, offset=offset)
        return {
            "fences": [r.as_dict(geometry=False) for r in records],
            "total": total,
            "limit": limit,
            "offset": offset,
        }

    def get_fence(self, account_id: str, fence_id: str) -> dict[str, Any]:
        record = self.store.get(int(account_id), fence_id)
        if record is None:
            raise NotFound(f"no fence {fence_id!r} in this account")
        return record.as_dict()

    def delete_fence(self, account_id: str, fence_id: str) -> dict[str, Any]:
        if not self.store.delete(int(account_id), fence_id):
            raise NotFound(f"no fence {fence_id!r} in this account")
        self._changed(account_id)
        return {"id": fence_id, "deleted": True}

    def fence_events(self, account_id: str, fence_id: str, *, limit: int, offset: int) -> dict[str, Any]:
        if self.store.get(int(account_id), fence_id) is None:
            raise NotFound(f"no fence {fence_id!r} in this account")
        events, total = self.store.events(int(account_id), fence_id, limit=limit, offset=offset)
        return {"events": [e.as_dict() for e in events], "total": total, "limit": limit, "offset": offset}

    # ---------------------------------------------------------------- internals
    def _load(self, account_id: str) -> list[Fence]:
        records = self.store.load(int(account_id))
        self.hooks[account_id] = {r.id: r.webhook_url for r in records if r.webhook_url}
        return [r.fence() for r in records]

    def _device_states(self, account_id: str) -> DeviceTransitions:
        tr = self._transitions.get(account_id)
        if tr is None:
            tr = self._transitions[account_id] = DeviceTransitions(self.redis, account_id, prefix=self.prefix)
        return tr

    def _changed(self, account_id: str) -> None:
        """After a create/delete: every process rebuilds the account's index within REFRESH_S."""
        self.versions.bump(account_id)
        self.cache.invalidate(account_id)

    def _admin_geometry(self, osm_id: int) -> BaseGeometry | None:
        for ds in self.datasets.all():
            area = ds.admin.by_osm_id(osm_id)
            if area is not None:
                geometry: BaseGeometry = area.geometry
                return geometry
        return None

    @staticmethod
    def _change(index: FenceIndex, point: GeofencePoint, fence_id: str, transition: str) -> Change:
        fence = index.get(fence_id)
        if fence is None:
            return fence_id, None, transition, None
        status = index.check(point.lat, point.lng, [fence_id])[0]
        return fence_id, fence.name, transition, round(status.distance, 2)

    def _notify(self, account_id: str, device: str, lat: float, lng: float, changes: Iterable[Change]) -> None:
        """One webhook delivery per (fence with a webhook, enter/exit) in ``changes``."""
        hooks = self.hooks.get(account_id)
        if not hooks:
            return
        for fence_id, name, transition, distance in changes:
            url = hooks.get(fence_id)
            if url is None or transition not in (ENTER, EXIT):
                continue
            self.send(
                delivery(
                    fence_id=fence_id,
                    fence_name=name,
                    account_id=int(account_id),
                    device=device,
                    transition=transition,
                    lat=lat,
                    lng=lng,
                    distance=distance,
                    url=url,
                )
            )
