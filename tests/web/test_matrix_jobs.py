"""Matrix jobs (issue 30): ``/v1/matrix`` with ``async`` beyond the request's limits, computed by a
live worker in chunks of rows, kept in Redis one chunk per value, downloaded as JSON and CSV."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest
import redis

from app import create_app
from engine.services import matrix
from tests.web.test_batch import wait_job
from tests.web.test_matrix import monaco_points, objects

ROWS = 64  # rows per chunk in this test: 300 columns x 64 rows


@pytest.fixture(scope="module")
def chunked_client(settings, store):
    """An app whose matrix jobs are stored in chunks of ROWS rows of a 300-column matrix."""
    limits = dataclasses.replace(settings.limits, matrix_job_chunk_cells=ROWS * 300)
    return create_app(dataclasses.replace(settings, limits=limits)).test_client()


def _cells(expected: dict) -> list[list[str]]:
    """The CSV lines the engine's answer should give: source, destination, duration, distance."""
    lines = []
    for i, (durations, distances) in enumerate(zip(expected["durations"], expected["distances"], strict=True)):
        for j, (d, m) in enumerate(zip(durations, distances, strict=True)):
            lines.append([str(i), str(j), "" if d is None else repr(d), "" if m is None else repr(m)])
    return lines


@pytest.mark.integration
@pytest.mark.slow
def test_a_300_by_300_job_in_chunks_of_64_rows_downloads_as_the_engine_answers(
    chunked_client, api_key, celery_worker, datasets, settings
):
    points = monaco_points(300)
    body = {"sources": objects(points)}
    params = matrix.MatrixParams(tuple((p["lat"], p["lng"]) for p in body["sources"]))
    expected = matrix.run(datasets, params)  # also compiles the kernels into numba's cache first
    headers = {"X-API-Key": api_key}
    job = chunked_client.post("/v1/matrix", json={**body, "async": True}, headers=headers)
    assert job.status_code == 202, job.get_data(as_text=True)[:300]
    assert job.get_json()["total"] == 300
    done = wait_job(chunked_client, job.get_json()["job_id"], api_key, timeout=180)
    assert done["status"] == "done", done
    assert done["progress"] == {"done": 300, "total": 300}

    as_json = chunked_client.get(done["result_url"], headers=headers)
    assert as_json.status_code == 200 and as_json.is_streamed
    assert as_json.headers["Content-Type"].startswith("application/json")
    assert json.loads(as_json.get_data()) == expected

    as_csv = chunked_client.get(done["csv_url"], headers=headers)
    assert as_csv.status_code == 200 and as_csv.is_streamed
    assert as_csv.headers["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(as_csv.get_data(as_text=True))))
    assert lines[0] == ["source", "destination", "duration", "distance"]
    assert lines[1:] == _cells(expected)

    # kept with the job in chunks: ceil(300 / 64) values per annotation, none larger than a chunk
    client = redis.Redis.from_url(settings.redis_url)
    job_key = f"{settings.service_name}:job:{done['job_id']}"
    keys = [k.decode() for k in client.scan_iter(match=f"{job_key}:*", count=1000)]
    rows = sorted(k for k in keys if ":rows:" in k)
    assert len(rows) == 2 * 5, rows
    chunk_bytes = max(client.strlen(k) for k in rows)
    assert chunk_bytes < ROWS * 300 * 12  # 64 rows of 300 numbers: about 8 bytes a number
    for key in keys:
        if client.type(key) == b"string":
            assert client.strlen(key) <= chunk_bytes, key
        assert 0 < client.ttl(key) <= 24 * 3600, key


def test_job_and_request_limits_name_the_parameter(client, api_key):
    headers = {"X-API-Key": api_key}
    over_request = client.post("/v1/matrix", json={"sources": objects(monaco_points(1001))}, headers=headers)
    assert over_request.status_code == 400 and over_request.get_json()["parameter"] == "sources"
    assert "async" in over_request.get_json()["message"]
    over_job = client.post(
        "/v1/matrix", json={"sources": objects(monaco_points(10_001)), "async": True}, headers=headers
    )
    assert over_job.status_code == 400 and over_job.get_json()["parameter"] == "sources"


def test_csv_is_for_matrix_jobs_and_format_is_checked(client, api_key):
    headers = {"X-API-Key": api_key}
    job = client.post("/v1/geocoding/batch", json={"addresses": ["Monaco"]}, headers=headers)
    job_id = job.get_json()["job_id"]
    bad = client.get(f"/v1/jobs/{job_id}/result?format=xml", headers=headers)
    assert bad.status_code == 400 and bad.get_json()["parameter"] == "format"


def test_the_plan_caps_the_cells_of_one_request_before_any_quota_is_spent(client, store):
    store.set_plan("matrixcap", per_minute=0, per_day=100, per_month=0, services=["matrix"], max_matrix_cells=100)
    key = store.create_key("matrix-cap", "matrixcap").key
    headers = {"X-API-Key": key}
    over = client.post("/v1/matrix", json={"sources": objects(monaco_points(11))}, headers=headers)
    assert over.status_code == 400, over.get_data(as_text=True)[:300]
    assert (
        over.get_json()["parameter"] == "sources"
        and "matrixcap plan allows at most 100 cells" in over.get_json()["message"]
    )
    wide = client.get(
        "/v1/matrix?sources="
        + "|".join(f"{a:.6f},{b:.6f}" for a, b in monaco_points(2))
        + "&destinations="
        + "|".join(f"{a:.6f},{b:.6f}" for a, b in monaco_points(51)),
        headers=headers,
    )
    assert wide.status_code == 400 and wide.get_json()["parameter"] == "destinations"
    as_job = client.post("/v1/matrix", json={"sources": objects(monaco_points(11)), "async": True}, headers=headers)
    assert as_job.status_code == 400 and as_job.get_json()["parameter"] == "sources"
    within = client.post("/v1/matrix", json={"sources": objects(monaco_points(10))}, headers=headers)
    assert within.status_code == 200
    assert within.headers["RateLimit-Remaining"] == "99"  # the refused requests spent nothing


def test_a_key_without_the_matrix_service_gets_403_not_the_cap(client, store):
    key = store.create_key("matrix-free", "free").key  # free: no matrix, a cap of 10,000 cells
    over = client.post("/v1/matrix", json={"sources": objects(monaco_points(101))}, headers={"X-API-Key": key})
    assert over.status_code == 403


def test_plans_set_max_matrix_cells(settings, store, monkeypatch):
    from click.testing import CliRunner

    from cli.main import main

    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("DATA_DIR", str(settings.data_dir))
    shown = CliRunner().invoke(
        main, ["plans", "set", "matrix-cli", "--services", "matrix", "--max-matrix-cells", "2500"]
    )
    assert shown.exit_code == 0 and "max_matrix_cells=2500" in shown.output, shown.output
    assert next(p for p in store.list_plans() if p.name == "matrix-cli").max_matrix_cells == 2500
    bad = CliRunner().invoke(main, ["plans", "set", "matrix-cli", "--max-matrix-cells", "-1"])
    assert bad.exit_code != 0
