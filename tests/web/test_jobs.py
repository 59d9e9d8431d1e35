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
    resp = client.get("/v1/staticmaps?center=60.1699,24.9384&zoom=15&size=100x100&async=true",
                      headers={"X-API-Key": api_key})
    job_id = resp.get_json()["job_id"]
    assert wait_job(client, job_id, api_key)["status"] == "done"
    stranger = store.create_key("async-stranger", "pro").key
    assert client.get(f"/v1/jobs/{job_id}", headers={"X-API-Key": stranger}).status_code == 404
    assert client.get(f"/v1/jobs/{job_id}/result", headers={"X-API-Key": stranger}).status_code == 404
