"""Celery on Redis. Worker entry point: ``celery -A workers.celery_app worker`` (``meridian worker``).

Heavy kinds get a queue each so a flood of one cannot starve another; workers prefetch one task
at a time (CPU-bound work), acknowledge late and reject on worker loss so that a killed worker's
task is redelivered; soft < hard time limit < the broker's visibility timeout.

Workers send task events (Flower shows received, started, succeeded, failed); the web does not
send ``task-sent`` events: publishing one costs the waiting request about half a millisecond (a
second Redis client and a PUBLISH per task), and a queued task is visible as queue depth in
``/metrics`` and ``/v1/health/ready``.
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue

from config.settings import Settings

QUEUES = ("default", "isochrone", "staticmap", "geometry", "batch")
SOFT_TIME_LIMIT_S = 60
HARD_TIME_LIMIT_S = 90
VISIBILITY_TIMEOUT_S = 300


def make_celery(settings: Settings) -> Celery:
    app = Celery("meridian", broker=settings.redis_url, backend=settings.redis_url, include=["tasks"])
    app.conf.update(
        task_default_queue="default",
        task_queues=[Queue(name) for name in QUEUES],
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=settings.worker_concurrency,
        task_soft_time_limit=SOFT_TIME_LIMIT_S,
        task_time_limit=HARD_TIME_LIMIT_S,
        result_expires=3600,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        result_backend_transport_options={"retry_policy": {"timeout": 5.0}},
        broker_connection_retry_on_startup=True,
        worker_send_task_events=True,
        task_send_sent_event=False,
        worker_hijack_root_logger=False,
    )
    return app


app = make_celery(Settings.from_env())
