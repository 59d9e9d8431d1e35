"""``async=true`` on a heavy function (static maps): 202 + job id, then the image from the job,
computed by a real Celery worker; validation still happens before anything is queued."""

from __future__ import annotations

import io
import random
import time

import pytest
from PIL import Image

pytestmark = pytest.mark.integration


def wait_job(client, job_id: str, key: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/v1/jobs/{job_id}", headers={"X-API-Key": key}).get_json()
        if body["status"] in ("done", "failed") or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def test_async_staticmap_202_then_the_image(client, api_key, celery_worker):
    headers = {"X-API-Key": api_key}
    width, height = 300 + random.randrange(100), 200 + random.randrange(100)  # not cached yet
    query = f"center=43.7384,7.4246&zoom=15&size={width}x{height}"
    resp = client.get(f"/v1/staticmaps?{query}&async=true", headers=headers)
    assert resp.status_code == 202, resp.get_data(as_text=True)[:300]
    accepted = resp.get_json()
    assert accepted["status"] == "queued" and accepted["total"] == 1
    job_id = accepted["job_id"]
    # Not finished yet (the render takes a while): the result endpoint says 409.
    early = client.get(f"/v1/jobs/{job_id}/result", headers=headers)
    assert early.status_code in (200, 409)
    body = wait_job(client, job_id, api_key)
    assert body["status"] == "done", body
    assert body["kind"] == "heavy" and body["function"] == "staticmap"
    assert body["result_url"] == f"/v1/jobs/{job_id}/result" and body["content_type"] == "image/png"
    image = client.get(body["result_url"], headers=headers)
    assert image.status_code == 200 and image.mimetype == "image/png"
    assert Image.open(io.BytesIO(image.data)).size == (width, height)
    # The job also filled the cache: the synchronous request answers the same bytes.
    sync = client.get(f"/v1/staticmaps?{query}", headers=headers)
    assert sync.status_code == 200 and sync.data == image.data
    # A cached request submitted asynchronously is done at once.
    cached = client.get(f"/v1/staticmaps?{query}&async=1", headers=headers)
    assert cached.status_code == 202 and cached.get_json()["status"] == "done"
    done = client.get(cached.get_json()["status_url"], headers=headers).get_json()
    assert done["status"] == "done"
    assert client.get(done["result_url"], headers=headers).data == image.data


def test_async_false_is_synchronous_and_validation_comes_first(client, api_key, celery_worker):
    headers = {"X-API-Key": api_key}
    resp = client.get("/v1/staticmaps?center=43.7384,7.4246&zoom=14&size=120x80&async=false", headers=headers)
    assert resp.status_code == 200 and resp.mimetype == "image/png"
    bad = client.get("/v1/staticmaps?center=43.7384,7.4246&zoom=25&async=true", headers=headers)
    assert bad.status_code == 400 and bad.get_json()["parameter"] == "zoom"
    bad = client.get("/v1/staticmaps?center=43.7384,7.4246&zoom=14&async=perhaps", headers=headers)
    assert bad.status_code == 400 and bad.get_json()["parameter"] == "async"


def test_async_job_is_private_to_the_account(client, api_key, store, celery_worker):
    resp = client.get(
        "/v1/staticmaps?center=60.1699,24.9384&zoom=15&size=100x100&async=true", headers={"X-API-Key": api_key}
    )
    job_id = resp.get_json()["job_id"]
    assert wait_job(client, job_id, api_key)["status"] == "done"
    stranger = store.create_key("async-stranger", "pro").key
    assert client.get(f"/v1/jobs/{job_id}", headers={"X-API-Key": stranger}).status_code == 404
    assert client.get(f"/v1/jobs/{job_id}/result", headers={"X-API-Key": stranger}).status_code == 404


def test_a_job_whose_task_fails_reports_failed(client, api_key, store, settings, celery_worker):
    """A task that raises (here: an unknown service function) marks the job failed with a 500 error
    entry; the result endpoint answers that error. The job record is written the way app/jobs.py
    does, and the task is sent the way the dispatcher sends it."""
    import redis

    from accounts.store import split_key
    from workers.celery_app import make_celery

    account = str(store.lookup(split_key(api_key)).account_id)
    job_id = f"failing{random.randrange(10**9)}"
    key = f"{settings.service_name}:job:{job_id}"
    client_redis = redis.Redis.from_url(settings.redis_url)
    client_redis.hset(
        key,
        mapping={
            "kind": "heavy",
            "function": "staticmap",
            "account": account,
            "total": 1,
            "created": "2026-11-22T00:00:00Z",
        },
    )
    client_redis.expire(key, 600)
    make_celery(settings).send_task(
        "meridian.heavy_job",
        args=["engine.services.no_such_module:run", {}, f"{key}:cachekey", key, 600],
        queue="staticmap",
    )
    body = wait_job(client, job_id, api_key)
    assert body["status"] == "failed", body
    assert body["error"]["statusCode"] == 500 and "internal" in body["error"]["message"]
    resp = client.get(f"/v1/jobs/{job_id}/result", headers={"X-API-Key": api_key})
    assert resp.status_code == 500 and resp.get_json()["statusCode"] == 500


def test_async_params_schema_drops_the_flag_before_building_params():
    """The generic schema base for the other heavy functions (isochrone, geometry)."""
    from dataclasses import dataclass

    from marshmallow import ValidationError, fields

    from app.jobs import AsyncParamsSchema

    @dataclass(frozen=True)
    class Params:
        minutes: int = 5

    class Args(AsyncParamsSchema):
        params_class = Params
        minutes = fields.Integer()

    assert Args().load({"minutes": "10", "async": "true"}) == Params(10)
    assert Args().load({"minutes": "10"}) == Params(10)
    with pytest.raises(ValidationError) as err:
        Args().load({"async": "perhaps"})
    assert "async" in err.value.messages


@pytest.mark.parametrize(
    "path", ["/v1/isochrone?lat=60.1690&lng=24.9410&time=3", "/v1/geoment?lat=60.1690&lng=24.9410"]
)
def test_async_json_heavy_functions_match_synchronous(client, api_key, celery_worker, path):
    headers = {"X-API-Key": api_key}
    accepted = client.get(f"{path}&async=true", headers=headers)
    assert accepted.status_code == 202, accepted.get_data(as_text=True)[:300]
    job = wait_job(client, accepted.get_json()["job_id"], api_key)
    assert job["status"] == "done"
    sync = client.get(path, headers=headers)
    assert sync.status_code == 200
    assert job["result"] == sync.get_json()
