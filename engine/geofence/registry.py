"""One FenceIndex per account, built lazily and rebuilt when the account's fences change.

The caller gives two functions: ``load(account_id) -> iterable of Fence`` (from SQL) and
``version(account_id) -> token`` (any comparable value that changes whenever the account's fences
change; :class:`RedisFenceVersions` keeps an INCR counter in Redis so that every web process sees
a change). The token is read at most once per ``check_interval_s`` per account, so a change is
visible to every process within that bound, and a check costs no Redis round trip in between.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from engine.geofence.index import FenceIndex
from engine.geofence.model import Fence
from engine.geofence.transitions import DEFAULT_PREFIX

log = logging.getLogger("meridian.geofence")


class RedisFenceVersions:
    """A per-account version counter in Redis: ``bump`` after every fence change, ``get`` as the
    ``version`` callback of :class:`FenceIndexCache`."""

    def __init__(self, client, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix

    def key(self, account_id: str) -> str:
        return f"{self.prefix}version:{account_id}"

    def get(self, account_id: str) -> int:
        raw = self.client.get(self.key(account_id))
        return int(raw) if raw is not None else 0

    def bump(self, account_id: str) -> int:
        return int(self.client.incr(self.key(account_id)))


class _Entry:
    __slots__ = ("version", "index", "checked_at", "vertices")

    def __init__(self, version: Any, index: FenceIndex, checked_at: float) -> None:
        self.version, self.index, self.checked_at = version, index, checked_at
        self.vertices = index.vertices


class FenceIndexCache:
    """Thread-safe cache of per-account indexes (least recently used dropped beyond ``max_accounts``
    indexes or ``max_vertices`` vertices in all, 0: no bound on vertices)."""

    def __init__(
        self,
        load: Callable[[str], Iterable[Fence]],
        version: Callable[[str], Any] | None = None,
        *,
        check_interval_s: float = 0.5,
        max_accounts: int = 1024,
        max_vertices: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._version = version or (lambda account_id: 0)
        self._interval = check_interval_s
        self._max = max_accounts
        self._max_vertices = max_vertices
        self._vertices = 0  # of every cached index
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._build_locks: dict[str, threading.Lock] = {}

    def get(self, account_id: str) -> FenceIndex:
        """The account's index. While one thread rebuilds a changed index, the others keep
        answering from the previous one (they never wait for a rebuild, except the first build)."""
        account_id = str(account_id)
        with self._lock:
            entry = self._entries.get(account_id)
            if entry is not None:
                self._entries.move_to_end(account_id)
                if self._clock() - entry.checked_at < self._interval:
                    return entry.index
            build_lock = self._build_locks.setdefault(account_id, threading.Lock())
        if entry is not None:
            if not build_lock.acquire(blocking=False):
                return entry.index  # being refreshed by another thread
        else:
            build_lock.acquire()
        try:
            with self._lock:
                entry = self._entries.get(account_id)
                if entry is not None and self._clock() - entry.checked_at < self._interval:
                    return entry.index
            # the version is read before loading, so a change made during the load is seen as a
            # new version at the next check and rebuilt then
            try:
                version = self._version(account_id)
            except Exception:  # noqa: BLE001 - e.g. Redis down: keep serving what we have
                if entry is None:
                    raise
                log.warning("fence version of account %s unreadable; serving the cached index", account_id)
                entry.checked_at = self._clock()
                return entry.index
            if entry is not None and entry.version == version:
                entry.checked_at = self._clock()
                return entry.index
            index = FenceIndex(self._load(account_id))
            with self._lock:
                self._drop(account_id)
                new = self._entries[account_id] = _Entry(version, index, self._clock())
                self._vertices += new.vertices
                while len(self._entries) > 1 and (
                    len(self._entries) > self._max or 0 < self._max_vertices < self._vertices
                ):
                    self._drop(next(iter(self._entries)), build_lock=True)
            return index
        finally:
            build_lock.release()

    @property
    def vertices(self) -> int:
        """Boundary vertices of every cached index together."""
        return self._vertices

    def cached(self) -> list[str]:
        """Accounts whose index is cached, least recently used first."""
        with self._lock:
            return list(self._entries)

    def invalidate(self, account_id: str | None = None) -> None:
        """Drop one account's index (or all): the next ``get`` rebuilds it."""
        with self._lock:
            for account in list(self._entries) if account_id is None else [str(account_id)]:
                self._drop(account)

    def _drop(self, account_id: str, *, build_lock: bool = False) -> None:
        """Forget an account's index (and its build lock when evicted); call with ``_lock`` held."""
        entry = self._entries.pop(account_id, None)
        if entry is not None:
            self._vertices -= entry.vertices
        if build_lock:
            self._build_locks.pop(account_id, None)
