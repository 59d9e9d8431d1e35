"""Geofencing engine: fences (model), their spatial index (index), metres (distance), device
transitions in Redis (transitions) and per-account index caching (registry). Framework-free."""

from engine.geofence.index import FenceIndex, FenceStatus
from engine.geofence.model import Fence, parse_fence
from engine.geofence.registry import FenceIndexCache, RedisFenceVersions
from engine.geofence.transitions import CheckResult, DeviceTransitions

__all__ = [
    "CheckResult",
    "DeviceTransitions",
    "Fence",
    "FenceIndex",
    "FenceIndexCache",
    "FenceStatus",
    "RedisFenceVersions",
    "parse_fence",
]
