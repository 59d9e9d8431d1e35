"""tasks/warmup.py: a Celery worker warms the services its queues run, and everything on a queue
that may run any function."""

from __future__ import annotations

from engine.warmup import EVERY_GROUP, WARM_GROUPS
from queueing.protocol import QUEUES
from tasks.warmup import QUEUE_GROUPS, groups_for


def test_each_heavy_queue_warms_its_own_services() -> None:
    assert groups_for(["isochrone"]) == {"isochrone"}
    assert groups_for(["staticmap"]) == {"staticmap"}
    assert groups_for(["matrix"]) == groups_for(["optimization"]) == {"routing"}
    assert groups_for(["geometry", "batch"]) == {"search"}


def test_a_worker_on_the_default_queue_warms_everything() -> None:
    assert groups_for(["default"]) == EVERY_GROUP
    assert groups_for(["default", "batch", "geometry"]) == EVERY_GROUP
    assert groups_for(["a-queue-added-later"]) == EVERY_GROUP


def test_the_table_names_known_queues_and_groups() -> None:
    assert set(QUEUE_GROUPS) <= set(QUEUES)
    assert all(groups <= set(WARM_GROUPS) for groups in QUEUE_GROUPS.values())
