"""The Celery application factory: ``make_celery(settings)``, nothing built at import time.

The web process builds one app from its Settings (``app/runtime.py``) to send tasks; a worker
builds its own in ``workers/main.py``, the module ``celery -A workers.main`` loads
(``meridian worker``, ``meridian monitor``, the tests' fixtures).

Tasks are declared with ``@shared_task(name=...)`` in the modules of ``TASK_MODULES`` (a new task
module is added there), so they never import an app; queue names and time limits are the queue
protocol's (``queueing/protocol.py``).

Heavy kinds get a queue each so a flood of one cannot starve another; workers prefetch one task
at a time (CPU-bound work), acknowledge late and reject on worker loss so that a killed worker's
task is redelivered; soft < hard time limit < the broker's visibility timeout.

Task events are off until something asks for them: Flower (``meridian monitor``) does, with its
``enable_events`` option (on by default), which sends the ``enable_events`` control command every
few seconds while it runs, and ``celery control enable_events`` does by hand. Sent on every task,
they were the worker main process's largest cost between taking a task from Redis and handing it
to a pool process (a PUBLISH of ``task-received`` before the hand-over; docs/engineering-history.md,
"workers/celery_app.py"). The web never sends ``task-sent`` events: publishing one costs the
waiting request about half a millisecond, and a queued task is visible as queue depth in
``/metrics`` and ``/v1/health/ready``.
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue

from config.settings import Settings
from queueing.protocol import (
    DEFAULT_QUEUE,
    HARD_TIME_LIMIT_S,
    QUEUES,
    SOFT_TIME_LIMIT_S,
    VISIBILITY_TIMEOUT_S,
)

TASK_MODULES = (
    "tasks.heavy",
    "tasks.batch",
    "tasks.geocoding",
    "tasks.webhooks",
    "tasks.ops",
    "tasks.warmup",
    "tasks.signals",
    "tasks.follow",  # follows DATASET_STORE from the worker's main process
    "tasks.mail",
)


def make_celery(settings: Settings) -> Celery:
    app = Celery("meridian", broker=settings.redis_url, backend=settings.redis_url, include=list(TASK_MODULES))
    app.conf.update(
        task_default_queue=DEFAULT_QUEUE,
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
        worker_send_task_events=False,  # Flower enables them while it runs (see above)
        task_send_sent_event=False,
        worker_hijack_root_logger=False,
    )
    return app
