"""What every task shares: the settings and the datasets, loaded once per worker process."""

from __future__ import annotations

import random
import threading
from typing import Any

import redis

from config.settings import Settings
from engine.dataset import DatasetRegistry

_lock = threading.Lock()
_state: dict[str, Any] = {}


def settings() -> Settings:
    """The worker process's settings, read from the environment on first use."""
    if "settings" not in _state:
        _state["settings"] = Settings.from_env()
    value: Settings = _state["settings"]
    return value


def backoff_s(retries: int, base_s: float, cap_s: float) -> float:
    """The delay before retry ``retries + 1`` of a task: ``base_s * 2**retries``, at most ``cap_s``,
    with +-20 % jitter."""
    return round(min(cap_s, base_s * 2.0**retries) * random.uniform(0.8, 1.2), 3)


def redis_client() -> redis.Redis:
    """The worker process's Redis client (results cache), created once."""
    if "redis" not in _state:
        _state["redis"] = redis.Redis.from_url(settings().redis_url, socket_timeout=5, socket_connect_timeout=2)
    client: redis.Redis = _state["redis"]
    return client


def datasets(expected_versions: str | None = None) -> DatasetRegistry:
    """The worker's registry, opened once per process (not per task). It is reloaded (a region
    was re-imported) when the web process that queued the task saw other dataset versions than
    this worker has, or when the task does not say which versions it expects."""
    with _lock:
        registry = _state.get("datasets")
        if registry is None:
            registry = _state["datasets"] = DatasetRegistry(settings().data_dir)
        elif expected_versions is None or registry.versions() != expected_versions:
            registry.reload()
        return registry
