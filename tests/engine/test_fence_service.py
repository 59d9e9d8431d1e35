"""engine.services.geofencing.FenceService without Flask or Celery: fences stored in SQL
(accounts.fences.FenceStore on SQLite), device states in a real Redis, webhook deliveries
collected from its ``send`` callback."""

from __future__ import annotations

import json
import uuid

import pytest
import redis

from accounts.fences import FenceStore
from accounts.store import AccountStore
from engine.errors import InvalidParameter, NotFound
from engine.geofence.webhooks import Delivery
from engine.services.geofencing import FenceService, GeofenceBatchParams, GeofenceCheckParams, GeofencePoint

pytestmark = pytest.mark.integration

CENTER = {"lat": 43.7350, "lng": 7.4200}
INSIDE = (43.7350, 7.4200)
OUTSIDE = (43.7400, 7.4200)  # about 556 m north of the centre


@pytest.fixture()
def fixture(tmp_path, redis_url, datasets):
    accounts = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}")
    accounts.create_schema()
    account_id = accounts.create_key(f"svc-{uuid.uuid4().hex[:6]}", "pro").record.account_id
    sent: list[Delivery] = []
    service = FenceService(
        FenceStore(accounts.engine),
        redis.Redis.from_url(redis_url),
        datasets,
        sent.append,
        prefix=f"meridiantest:svc-{uuid.uuid4().hex}:",
    )
    return service, str(account_id), sent


def test_checks_transitions_and_deliveries(fixture):
    service, account, sent = fixture
    hooked = service.create(
        account,
        {"type": "circle", "center": CENTER, "radius": 100, "name": "Depot", "webhook_url": "https://example.com/h"},
        key_id=None,
    )
    quiet = service.create(account, {"type": "circle", "center": CENTER, "radius": 200}, key_id=None)

    def check(point, device="van"):
        return service.check(account, GeofenceCheckParams(*point, device=device))["fences"]

    assert {f["id"]: f["transition"] for f in check(OUTSIDE)} == {hooked["id"]: "outside", quiet["id"]: "outside"}
    assert sent == []
    assert {f["id"]: f["transition"] for f in check(INSIDE)} == {hooked["id"]: "enter", quiet["id"]: "enter"}
    assert [(d.fence_id, d.transition, d.url) for d in sent] == [(hooked["id"], "enter", "https://example.com/h")]
    body = json.loads(sent[0].payload)
    assert body["fence"] == {"id": hooked["id"], "name": "Depot"} and body["device"] == "van"
    assert body["point"] == {"lat": INSIDE[0], "lng": INSIDE[1]} and body["distance"] == pytest.approx(100, abs=0.5)
    check(INSIDE)
    assert len(sent) == 1  # inside again: no delivery

    points = (GeofencePoint(*OUTSIDE, device="van"), GeofencePoint(*INSIDE, device=None))
    batch = service.check_batch(account, GeofenceBatchParams(points))["results"]
    assert {t["transition"] for t in batch[0]["transitions"]} == {"exit"} and batch[1]["transitions"] is None
    assert [(d.fence_id, d.transition) for d in sent[1:]] == [(hooked["id"], "exit")]
    assert json.loads(sent[1].payload)["fence"]["name"] == "Depot"


def test_management_is_per_account(fixture):
    service, account, _ = fixture
    fence = service.create(account, {"type": "circle", "center": CENTER, "radius": 50, "name": "A"}, key_id=None)
    assert service.get_fence(account, fence["id"])["name"] == "A"
    listed = service.list_fences(account, limit=10, offset=0)
    assert listed["total"] == 1 and listed["fences"][0]["id"] == fence["id"]
    assert service.fence_events(account, fence["id"], limit=10, offset=0)["events"] == []
    other = str(int(account) + 1000)
    with pytest.raises(NotFound):
        service.get_fence(other, fence["id"])
    with pytest.raises(NotFound):
        service.delete_fence(other, fence["id"])
    assert service.delete_fence(account, fence["id"]) == {"id": fence["id"], "deleted": True}
    with pytest.raises(NotFound):
        service.get_fence(account, fence["id"])
    with pytest.raises(InvalidParameter) as caught:
        service.check(account, GeofenceCheckParams(*INSIDE, fence_ids=(fence["id"],)))
    assert caught.value.parameter == "fences"
