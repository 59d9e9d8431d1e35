"""Batch geocoding jobs end to end: real Redis, a real Celery worker consuming the ``batch`` queue.

- ~200 Helsinki and Monaco addresses come back in input order, each equal to the synchronous
  /v1/geocoding answer's first candidate;
- JSON list, CSV body and multipart CSV upload;
- each address counts against the quota (a batch larger than the remainder gets 429);
- another account cannot read the job; validation names the parameter.
"""

from __future__ import annotations

import json
import time

import pytest

from config.settings import PROJECT_ROOT
from engine.limits import Limits

pytestmark = pytest.mark.integration

BENCH_DATA = PROJECT_ROOT / "bench" / "data"


def sample_addresses(per_region: int = 100) -> list[str]:
    """Real addresses of the two samples (the geocoding quality sets), interleaved."""
    lists = []
    for region in ("helsinki", "monaco"):
        items = json.loads((BENCH_DATA / f"{region}-geocode.json").read_text())
        lists.append([it["query"] for it in items][:per_region])
    out = []
    for a, b in zip(*lists, strict=False):
        out += [a, b]
    return out


def wait_job(client, job_id: str, key: str, timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        resp = client.get(f"/v1/jobs/{job_id}", headers={"X-API-Key": key})
        assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
        body = resp.get_json()
        assert body["status"] in ("queued", "running", "done", "failed")
        assert 0 <= body["progress"]["done"] <= body["progress"]["total"]
        if body["status"] in ("done", "failed") or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def submit(client, key, headers=None, **kwargs):
    return client.post("/v1/geocoding/batch", headers={"X-API-Key": key, **(headers or {})}, **kwargs)


def test_batch_results_in_input_order_equal_synchronous(client, api_key, celery_worker):
    addresses = sample_addresses()
    assert len(addresses) >= 150
    addresses.append("Qwxzzy Nowhere 99999")  # matches nothing: empty candidates, not an error
    resp = submit(client, api_key, json={"addresses": addresses})
    assert resp.status_code == 202, resp.get_data(as_text=True)[:300]
    accepted = resp.get_json()
    assert accepted["status"] == "queued" and accepted["total"] == len(addresses)
    assert accepted["status_url"] == f"/v1/jobs/{accepted['job_id']}" == resp.headers["Location"]
    body = wait_job(client, accepted["job_id"], api_key)
    assert body["status"] == "done", body
    assert body["progress"] == {"done": len(addresses), "total": len(addresses)}
    results = body["results"]
    assert [r["index"] for r in results] == list(range(len(addresses)))
    assert [r["query"] for r in results] == addresses
    matched = 0
    for address, item in zip(addresses, results, strict=True):
        sync = client.get("/v1/geocoding", query_string={"query": address}, headers={"X-API-Key": api_key})
        if sync.status_code == 404:
            assert item["candidates"] == [], address
            continue
        assert sync.status_code == 200
        assert len(item["candidates"]) == 1  # default limit 1
        assert item["candidates"][0] == sync.get_json()["candidates"][0], address
        matched += 1
    assert matched >= len(addresses) * 0.9
    assert results[-1]["candidates"] == []
    # The result endpoint serves the same list.
    again = client.get(f"/v1/jobs/{accepted['job_id']}/result", headers={"X-API-Key": api_key})
    assert again.status_code == 200 and again.get_json()["results"] == results


def test_plain_list_csv_body_and_multipart_upload(client, api_key, celery_worker):
    addresses = sample_addresses(3)
    jobs = []
    resp = submit(client, api_key, json=addresses)
    assert resp.status_code == 202
    jobs.append((resp.get_json()["job_id"], addresses))
    csv_text = "address\n" + "".join(f'"{a}"\n' for a in addresses) + "\n"
    resp = submit(client, api_key, data=csv_text.encode(), content_type="text/csv", query_string={"limit": "2"})
    assert resp.status_code == 202, resp.get_data(as_text=True)
    assert resp.get_json()["total"] == len(addresses)
    jobs.append((resp.get_json()["job_id"], addresses))
    import io

    # Two columns (street + city), header row of known words: joined with ", ".
    rows = "street,city\nMannerheimintie 5,Helsinki\nQuai Antoine 1er 6,Monaco\n"
    resp = submit(
        client,
        api_key,
        data={"file": (io.BytesIO(rows.encode("utf-8-sig")), "a.csv")},
        content_type="multipart/form-data",
    )
    assert resp.status_code == 202, resp.get_data(as_text=True)
    jobs.append((resp.get_json()["job_id"], ["Mannerheimintie 5, Helsinki", "Quai Antoine 1er 6, Monaco"]))
    for job_id, expected in jobs:
        body = wait_job(client, job_id, api_key)
        assert body["status"] == "done"
        assert [r["query"] for r in body["results"]] == expected
        assert all(r["candidates"] for r in body["results"])
    limited = wait_job(client, jobs[1][0], api_key)
    assert max(len(r["candidates"]) for r in limited["results"]) == 2
    assert wait_job(client, jobs[2][0], api_key)["results"][0]["candidates"][0]["address"]["city"] == "Helsinki"


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        ({"json": {"addresses": []}}, "addresses"),
        ({"json": []}, "addresses"),
        ({"json": {"addresses": ["x"] * (Limits().batch_geocode_max + 1)}}, "addresses"),
        ({"json": {"addresses": ["Mannerheimintie 5", 42]}}, "addresses"),
        ({"json": {"addresses": ["Mannerheimintie 5", "   "]}}, "addresses"),
        ({"json": {"addresses": "Mannerheimintie 5"}}, "addresses"),
        ({"json": {"addresses": ["a"], "limit": 0}}, "limit"),
        ({"json": {"addresses": ["a"], "colour": "red"}}, "colour"),
        ({"json": {"limit": 1}}, "addresses"),
        ({"json": "just a string"}, "addresses"),
        ({"data": b"{not json", "content_type": "application/json"}, "addresses"),
        ({"data": b'a,b\n"unterminated', "content_type": "text/csv"}, "file"),
        ({"data": b"\xff\xfe\x00bad", "content_type": "text/csv"}, "file"),
        ({"data": b"address\n\n", "content_type": "text/csv"}, "file"),
        ({"data": {"other": "x"}, "content_type": "multipart/form-data"}, "file"),
        ({"data": b"Mannerheimintie 5", "content_type": "text/plain"}, "addresses"),
    ],
)
def test_invalid_bodies_name_the_parameter(client, api_key, kwargs, parameter):
    resp = submit(client, api_key, **kwargs)
    assert resp.status_code == 400, resp.get_data(as_text=True)[:300]
    body = resp.get_json()
    assert body["parameter"] == parameter, body
    assert parameter in body["message"]


def test_body_too_large_is_413(client, api_key):
    big = "x" * (Limits().request_body_bytes + 10)
    resp = submit(client, api_key, data=big.encode(), content_type="text/csv")
    assert resp.status_code == 413


def test_quota_counts_each_address(client, store, celery_worker):
    store.set_plan("batch30", per_minute=0, per_day=30, per_month=0, services=["geocoding"])
    key = store.create_key("batch-quota", "batch30").key
    addresses = sample_addresses(10)  # 20
    first = submit(client, key, json={"addresses": addresses})
    assert first.status_code == 202
    assert first.headers["RateLimit-Remaining"] == "10"
    over = submit(client, key, json={"addresses": addresses[:11]})
    assert over.status_code == 429 and int(over.headers["Retry-After"]) > 0
    fits = submit(client, key, json={"addresses": addresses[:10]})
    assert fits.status_code == 202 and fits.headers["RateLimit-Remaining"] == "0"
    assert submit(client, key, json={"addresses": addresses[:1]}).status_code == 429
    # Polling spends nothing.
    assert wait_job(client, fits.get_json()["job_id"], key)["status"] == "done"


def test_idempotency_key_replays_the_first_job_free(client, store, celery_worker):
    store.set_plan("batch5", per_minute=0, per_day=5, per_month=0, services=["geocoding"])
    key = store.create_key("batch-idem", "batch5").key
    headers = {"Idempotency-Key": "upload-1"}
    first = submit(client, key, json={"addresses": sample_addresses(2)}, headers=headers)
    assert first.status_code == 202
    again = submit(client, key, json={"addresses": sample_addresses(2)}, headers=headers)
    assert again.status_code == 200 and again.get_json()["job_id"] == first.get_json()["job_id"]
    assert again.headers["RateLimit-Remaining"] == "1"
    other = submit(client, key, json={"addresses": sample_addresses(1)[:1]}, headers={"Idempotency-Key": "upload-2"})
    assert other.status_code == 202 and other.get_json()["job_id"] != first.get_json()["job_id"]


def test_jobs_belong_to_the_account(client, api_key, store, celery_worker):
    resp = submit(client, api_key, json={"addresses": sample_addresses(1)})
    job_id = resp.get_json()["job_id"]
    assert wait_job(client, job_id, api_key)["status"] == "done"
    stranger = store.create_key("someone-else", "pro").key
    for path in (f"/v1/jobs/{job_id}", f"/v1/jobs/{job_id}/result"):
        denied = client.get(path, headers={"X-API-Key": stranger})
        assert denied.status_code == 404, path
        assert client.get(path).status_code == 401
    # A second key of the same account sees it.
    sibling = store.create_key("tests", "standard").key
    assert client.get(f"/v1/jobs/{job_id}", headers={"X-API-Key": sibling}).status_code == 200
    assert client.get("/v1/jobs/no-such-job", headers={"X-API-Key": api_key}).status_code == 404


def test_plan_without_geocoding_is_403(client, store):
    store.set_plan("routing-only", per_minute=0, per_day=0, per_month=0, services=["routing"])
    key = store.create_key("batch-forbidden", "routing-only").key
    assert submit(client, key, json={"addresses": ["a"]}).status_code == 403
