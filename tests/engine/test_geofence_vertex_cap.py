"""Issue 26, finding 5: the vertices of all of an account's fences are capped by plan
(``plans.max_fence_vertices``), checked in the transaction that stores a fence.

Before the cap an account could store 10,000 fences of 10,000 vertices, and every web process
serving its checks loads them all. Real SQLite (accounts.store.AccountStore), no Flask.
"""

from __future__ import annotations

import math
import threading
import uuid

import pytest
from sqlalchemy import select, update

from accounts.fences import FenceRow, FenceStore
from accounts.store import AccountStore
from engine.errors import InvalidParameter
from engine.geofence.model import Fence, parse_fence

CAP = 1_000


def polygon(vertices: int, lat: float = 43.735, lng: float = 7.42) -> Fence:
    """A regular polygon of ``vertices`` positions (closing position included)."""
    n = vertices - 1
    ring = [
        [lng + 0.001 * math.cos(2 * math.pi * i / n), lat + 0.001 * math.sin(2 * math.pi * i / n)] for i in range(n)
    ]
    return parse_fence({"type": "Polygon", "coordinates": [ring + [ring[0]]]})


CIRCLE = parse_fence({"type": "circle", "center": {"lat": 43.735, "lng": 7.42}, "radius": 50})


@pytest.fixture()
def stores(tmp_path):
    accounts = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}")
    accounts.create_schema()
    accounts.set_plan("capped", services=["*"], max_fence_vertices=CAP)
    return accounts, FenceStore(accounts.engine)


def new_key(accounts: AccountStore, plan: str):
    return accounts.create_key(f"cap-{uuid.uuid4().hex[:8]}", plan).record


def create(fences: FenceStore, key, fence: Fence):
    return fences.create(key.account_id, fence, key_id=key.id, max_fences=10_000)


def test_the_plan_caps_the_vertices_of_all_fences_of_an_account(stores):
    accounts, fences = stores
    key = new_key(accounts, "capped")
    first = create(fences, key, polygon(600))
    with pytest.raises(InvalidParameter) as refused:
        create(fences, key, polygon(600))
    assert refused.value.parameter == "geometry"
    assert "1200" in refused.value.message and f"maximum of {CAP}" in refused.value.message
    assert "max_fence_vertices" in refused.value.message
    create(fences, key, polygon(400))  # exactly at the cap
    create(fences, key, CIRCLE)  # circles have no vertices
    assert fences.list(key.account_id)[1] == 3
    fences.delete(key.account_id, first.id)
    create(fences, key, polygon(600))  # room again


def test_the_cap_is_the_plan_of_the_key_and_zero_means_none(stores):
    accounts, fences = stores
    capped = new_key(accounts, "capped")
    accounts.set_plan("unlimited", services=["*"], max_fence_vertices=0)
    free_of_cap = new_key(accounts, "unlimited")
    for _ in range(3):
        create(fences, free_of_cap, polygon(600))
    create(fences, capped, polygon(900))
    with pytest.raises(InvalidParameter):
        create(fences, capped, polygon(200))


def test_the_default_plans_carry_caps(stores):
    accounts, _ = stores
    caps = {p.name: p.max_fence_vertices for p in accounts.list_plans()}
    assert caps["free"] == 20_000 and caps["standard"] == 500_000 and caps["pro"] == 2_000_000


def test_fences_stored_before_the_cap_are_counted(stores):
    """Bodies written without their vertex count (before this release) still count, and get it
    written back by the next create that succeeds."""
    accounts, fences = stores
    key = new_key(accounts, "capped")
    old = create(fences, key, polygon(700))
    with accounts.session() as s, s.begin():
        body = s.scalar(select(FenceRow.body).where(FenceRow.id == old.id))
        del body["vertices"]
        s.execute(update(FenceRow).where(FenceRow.id == old.id).values(body=body))
    with pytest.raises(InvalidParameter):
        create(fences, key, polygon(400))
    create(fences, key, polygon(300))  # fits: the old body is written back with its count
    with accounts.session() as s:
        assert s.scalar(select(FenceRow.body).where(FenceRow.id == old.id))["vertices"] == 700
    assert fences.get(key.account_id, old.id).fence().vertices == 700


def test_concurrent_creates_cannot_pass_the_cap_together(stores):
    """Twelve threads each store a 300-vertex fence under a cap of 1,000: exactly three fit."""
    accounts, fences = stores
    key = new_key(accounts, "capped")
    barrier = threading.Barrier(12)
    outcomes: list[str] = []

    def attempt() -> None:
        fence = polygon(300)
        barrier.wait()
        try:
            create(fences, key, fence)
            outcomes.append("stored")
        except InvalidParameter:
            outcomes.append("refused")
        except Exception as exc:  # noqa: BLE001 - any other failure is the bug
            outcomes.append(f"error: {exc!r}")

    threads = [threading.Thread(target=attempt) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == ["refused"] * 9 + ["stored"] * 3
    assert fences.list(key.account_id)[1] == 3
