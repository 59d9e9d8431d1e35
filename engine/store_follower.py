"""Follow a dataset store: a background thread that pulls every newly published version.

Web processes (``app/runtime.py``) and Celery worker main processes (``tasks/follow.py``) each run
one when ``DATASET_STORE`` is set, passing in what their settings say (the engine reads no
configuration of its own). Every ``DATASET_POLL_INTERVAL`` seconds (with a little jitter,
so a fleet does not poll in step) it reads each region's ``latest.json`` and, when it names a
version that ``DATA_DIR`` does not serve, pulls it (:meth:`engine.store.DatasetStore.pull`:
verified, atomic, one puller per ``DATA_DIR`` at a time). Whenever the local ``current`` links
changed since its last look, whoever pulled them, it calls ``on_change`` (the web reloads its
registry there), so each process serves a new version at most one poll interval plus the pull
after it was published. A failed poll is logged and retried at the next interval; the version
already served keeps serving.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import layout
from engine.errors import DatasetError
from engine.store import DatasetStore, PullResult, local_version

log = logging.getLogger("meridian.store")

JITTER = 0.1  # each wait is the interval +- 10 %


class StoreFollower:
    def __init__(
        self,
        store: DatasetStore,
        data_dir: Path,
        interval_s: float,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.data_dir = Path(data_dir)
        self.interval_s = interval_s
        self.on_change = on_change
        self._seen = self._local_versions()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _local_versions(self) -> dict[str, str | None]:
        root = layout.regions_dir(self.data_dir)
        if not root.is_dir():
            return {}
        return {d.name: local_version(self.data_dir, d.name) for d in sorted(root.iterdir()) if d.is_dir()}

    def poll_once(self) -> list[PullResult]:
        """Pull what changed in the store; call ``on_change`` if the local versions moved."""
        pulled: list[PullResult] = []
        self.store.refresh()
        for region in self.store.regions():
            try:
                latest = self.store.latest(region)
                if latest is None or latest == local_version(self.data_dir, region):
                    continue
                result = self.store.pull(region, self.data_dir, latest)
            except DatasetError as exc:
                log.error("dataset store %s: region %s not pulled: %s", self.store.url, region, exc)
                continue
            if result.pulled:
                log.info(
                    "dataset store: pulled %s %s (%d files, %d bytes) in %.1f s",
                    region,
                    result.version,
                    result.files,
                    result.bytes,
                    result.seconds,
                )
            pulled.append(result)
        now = self._local_versions()
        if now != self._seen:
            self._seen = now
            if self.on_change is not None:
                self.on_change()
        return pulled

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # store unreachable, ...: keep serving, try again later
                log.error("dataset store %s: poll failed: %s: %s", self.store.url, type(exc).__name__, exc)
            self._stop.wait(self.interval_s * random.uniform(1 - JITTER, 1 + JITTER))

    def start(self) -> StoreFollower:
        self._thread = threading.Thread(target=self._run, name="meridian-store-follower", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


def follow(
    store_url: str | None,
    data_dir: Path,
    interval_s: float,
    on_change: Callable[[], None] | None = None,
    options: dict[str, Any] | None = None,
) -> StoreFollower | None:
    """Start following ``store_url`` (None when no store is configured)."""
    if not store_url:
        return None
    return StoreFollower(DatasetStore(store_url, **(options or {})), data_dir, interval_s, on_change).start()
