"""What every task shares: the settings and the datasets, loaded once per worker process."""

from __future__ import annotations

import threading

from config.settings import Settings
from engine.dataset import DatasetRegistry

_lock = threading.Lock()
_state: dict = {}


def settings() -> Settings:
    if "settings" not in _state:
        _state["settings"] = Settings.from_env()
    return _state["settings"]


def redis_client():
    """The worker process's Redis client (results cache), created once."""
    if "redis" not in _state:
        import redis

        _state["redis"] = redis.Redis.from_url(settings().redis_url, socket_timeout=5, socket_connect_timeout=2)
    return _state["redis"]


def datasets() -> DatasetRegistry:
    """The worker's registry, opened once per process (not per task) and reloaded when a region
    was re-imported."""
    with _lock:
        registry = _state.get("datasets")
        if registry is None:
            registry = _state["datasets"] = DatasetRegistry(settings().data_dir)
        else:
            registry.reload()
        return registry

