"""Per-process state shared by all requests: settings, datasets, accounts, Redis, Celery, backend."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, cast

import redis
from celery import Celery
from flask import current_app
from sqlalchemy.exc import SQLAlchemyError

from accounts.access import AccessControl, QuotaOutagePolicy
from accounts.quota import QuotaCounter
from accounts.quota_lease import LeasedQuota
from accounts.store import AccountStore
from app.backend import RemoteCore
from app.dispatch import Dispatcher
from app.registry import Function
from config.settings import Settings
from engine.dataset import DatasetRegistry
from engine.store_follower import follow
from engine.warmup import WarmState, warm_dataset
from workers.celery_app import make_celery

DATASET_RECHECK_S = 10.0
log = logging.getLogger("meridian.runtime")


def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_timeout=1.0, socket_connect_timeout=1.0, health_check_interval=30, retry_on_timeout=False
    )


@dataclass
class Runtime:
    settings: Settings
    datasets: DatasetRegistry
    store: AccountStore
    redis: redis.Redis
    access: AccessControl
    backend: RemoteCore | None
    celery: Celery
    dispatcher: Dispatcher
    started: float = field(default_factory=time.time)
    # the process's warm-up (config/gunicorn.py starts it): readiness waits for it
    warm: WarmState = field(default_factory=WarmState)
    _datasets_checked: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        store = AccountStore(settings.database_url)
        try:
            store.create_schema()
        except SQLAlchemyError as exc:
            # a web worker (re)started while the database is down must still boot: gunicorn stops
            # the whole server when a worker fails to boot. Requests needing the database answer
            # 503 until it is back; the schema exists already unless this is the first start.
            log.warning("database unreachable at start-up (%s): schema not checked", type(exc).__name__)
        client = redis_client(settings.redis_url)
        access = AccessControl(
            store,
            LeasedQuota(QuotaCounter(client, namespace=settings.service_name)),
            cache_ttl_s=settings.auth_cache_ttl_s,
            outage_policy=QuotaOutagePolicy(settings.quota_fail_open, frozenset(settings.quota_fail_closed_plans)),
        )
        backend = RemoteCore(settings, settings.service_name) if settings.remote_backend else None
        celery = make_celery(settings)  # this process's one Celery app: it sends, never runs, tasks
        dispatcher = Dispatcher(
            client, celery, settings.service_name, settings.task_wait_timeout_s, settings.queue_max_depth_for
        )
        # a version pulled or re-imported later is opened and warmed before it is served
        registry = DatasetRegistry(settings.data_dir, prepare=warm_dataset)
        follow(  # DATASET_STORE: pull published versions
            settings.dataset_store,
            settings.data_dir,
            settings.dataset_poll_interval_s,
            registry.reload,
            settings.dataset_store_options,
        )
        return cls(settings, registry, store, client, access, backend, celery, dispatcher)

    def run(self, function: Function, params: object) -> Any:
        """Compute ``function`` for ``params``: a queued function from the Redis cache, else by a
        Celery worker on its queue while the caller waits (``app/dispatch.py``); any other, and a
        queued one whose ``inline(params)`` holds, in this process. The one place that tells the two apart."""
        small = function.inline is not None and function.inline(params)
        if function.queued and not small:
            return self.dispatcher.run(function, params, self.dataset_versions())
        assert function.run is not None  # Function checks: run, or a queue
        return function.run(self, params)

    def dataset_versions(self) -> str:
        return self.datasets.versions()

    def refresh_datasets(self) -> None:
        """Pick up a re-imported region (its ``current`` link moved) within DATASET_RECHECK_S:
        in a thread of its own, so no request waits while a new version is opened and warmed."""
        now = time.monotonic()
        if now - self._datasets_checked < DATASET_RECHECK_S:
            return
        with self._lock:
            if now - self._datasets_checked >= DATASET_RECHECK_S:
                self._datasets_checked = now
                threading.Thread(target=self.datasets.reload, name="meridian-reload", daemon=True).start()


def runtime() -> Runtime:
    return cast(Runtime, current_app.extensions["meridian"])
