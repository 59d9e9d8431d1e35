"""Geofencing: a point against the fences of one account, with per-device transitions.

The caller (gateway or core face) resolves the key's account to its
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.settings import DEFAULT_LIMITS, Limits
from engine.errors import InvalidParameter
from engine.geofence.index import FenceIndex
from engine.geofence.transitions import DeviceTransitions

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
) -> dict:
    limits = limits or DEFAULT_LIMITS
    _check_point(params.lat, params.lng)
    _check_fence_ids(params.fence_ids, limits)
    if params.device is not None:
        _check_device(params.device, "device")
        if transitions is None:
            raise ValueError("a device was given but no DeviceTransitions store")
    statuses = index.check(params.lat, params.lng, params.fence_ids)
    result = None
    if params.device is not None:
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
) -> dict:
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
    if params.fence_ids is not None:
        ids = index.ids
        subset = {ids[i] for i in index.positions(params.fence_ids).tolist()}
    inside_lists = index.containing_many([p.lat for p in points], [p.lng for p in points])
    if subset is not None:
        inside_lists = [[f for f in lst if f in subset] for lst in inside_lists]
    checked = None if subset is None else list(dict.fromkeys(params.fence_ids))
    with_device = [i for i, p in enumerate(points) if p.device is not None]
    updates = {}
    if with_device:
        res = transitions.update_many([(points[i].device, inside_lists[i], checked) for i in with_device])
        updates = dict(zip(with_device, res, strict=True))
    results = []
    for i, p in enumerate(points):
        item = {"index": i, "device": p.device, "inside": inside_lists[i]}
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


def _check_fence_ids(fence_ids, limits: Limits) -> None:
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
