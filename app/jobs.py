"""Asynchronous jobs: batch geocoding and ``async=true`` on heavy functions.

A job is a set of Redis keys under ``<ns>:job:<id>`` that all expire ``JOB_TTL_S`` (24 h) after
submission:

- ``<ns>:job:<id>``             hash: kind, function, account, total, chunks, created, started
- ``<ns>:job:<id>:progress``    hash: chunk index -> addresses done (batch; HSET is idempotent,
                                so a redelivered chunk does not count twice)
- ``<ns>:job:<id>:chunk:<i>``   JSON list: chunk i's results (batch)
- ``<ns>:job:<id>:failed``      hash: chunk index -> message (batch)
- ``<ns>:job:<id>:result``      the result record of a heavy job

(key names and the record format: ``queueing/protocol.py``). Workers write these keys directly
(``tasks/batch.py``); the web process only reads them, so any
number of web processes answer ``GET /v1/jobs/{id}`` without a result backend. A job belongs to
the account of the key that submitted it: another account's key gets 404, like an unknown id.

Heavy functions get ``async=true`` in two steps (``app/functions/staticmap.py`` is the example):

1. the query schema declares the parameter: ``async_ = jobs.async_field()`` and drops it before
   building the engine's params (``data.pop("async_", None)`` in its own ``post_load``), or simply
   derives from :class:`AsyncParamsSchema` instead of ``ParamsSchema`` when it has no ``post_load``;
2. the view answers through :func:`answer` instead of ``gateway_answer``::

       def get(self, params):
           return jobs.answer(FUNCTION, HeavyCall(KIND, SERVICE_REF, params))

   and documents the 202 (``GatewayBlueprint.function_route`` does both for a function with a queue).
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any

import redis
from flask import Response, g, request
from marshmallow import fields as ma_fields
from marshmallow import post_load

from app import backpressure
from app.calls import gateway_answer, json_body
from app.functions import Function
from app.runtime import runtime
from app.schemas.common import ResponseSchema
from app.validation import ParamsSchema
from engine.errors import ErrorKind, InvalidParameter, MeridianError, NotFound, Unavailable
from engine.results import BinaryResult
from queueing import protocol
from queueing.protocol import HeavyCall

JOB_TTL_S = 24 * 3600  # every key of a job expires 24 h after submission
BATCH_CHUNK = 50  # addresses per meridian.geocode_chunk task
JOB_ID_BYTES = 16  # 128 random bits, URL-safe

_ASYNC_FIELD = ma_fields.Boolean()
ASYNC_DESCRIPTION = (
    f"`true`: answer 202 with a job id at once instead of waiting; poll `/v1/jobs/{{id}}` (kept {JOB_TTL_S // 3600} h)."
)


def async_field() -> ma_fields.Boolean:
    """The ``async`` query parameter of a heavy function (gateway only; the core face ignores it)."""
    return ma_fields.Boolean(
        data_key="async",
        load_default=False,
        metadata={"description": "Gateway only. " + ASYNC_DESCRIPTION, "example": False},
    )


class AsyncParamsSchema(ParamsSchema):
    """``ParamsSchema`` with the ``async`` parameter, dropped before the params class is built."""

    async_ = async_field()

    @post_load
    def _build(self, data: dict[str, Any], **kwargs: Any) -> Any:
        data.pop("async_", None)
        return super()._build(data, **kwargs)


class JobAcceptedSchema(ResponseSchema):
    """The 202 body of every job submission."""

    job_id = ma_fields.String(required=True, metadata={"example": "q2Vx0dVNv5bWkZ3hBqjJmA"})
    status = ma_fields.String(
        required=True, metadata={"enum": ["queued", "running", "done", "failed"], "example": "queued"}
    )
    total = ma_fields.Integer(required=True, metadata={"description": "Items in the job.", "example": 2})
    status_url = ma_fields.String(required=True, metadata={"example": "/v1/jobs/q2Vx0dVNv5bWkZ3hBqjJmA"})


def _ns() -> str:
    return runtime().settings.service_name


def job_key(job_id: str, ns: str | None = None) -> str:
    return protocol.job_key(ns or _ns(), job_id)


def new_job_id() -> str:
    return secrets.token_urlsafe(JOB_ID_BYTES)


def status_url(job_id: str) -> str:
    return f"/v1/jobs/{job_id}"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _unavailable(exc: Exception) -> Unavailable:
    return Unavailable(f"job store unavailable ({type(exc).__name__}); retry shortly", retry_after=5)


def account_of_request() -> str:
    record = g.get("api_key")
    return str(record.account_id) if record is not None else ""


# ------------------------------------------------------------------------------------ submit
def submit_batch(addresses: list[str], limit: int, *, account: str, function: str = "geocoding") -> dict[str, Any]:
    """Create a batch geocoding job and queue its chunks on the ``batch`` queue."""
    rt = runtime()
    job_id = new_job_id()
    key = job_key(job_id)
    chunks = [addresses[i : i + BATCH_CHUNK] for i in range(0, len(addresses), BATCH_CHUNK)]
    try:
        backpressure.admit(rt.redis, protocol.BATCH_QUEUE, rt.settings.queue_max_depth_for)
        rt.redis.hset(
            key,
            mapping={
                "kind": "batch",
                "function": function,
                "account": account,
                "total": len(addresses),
                "chunks": len(chunks),
                "limit": limit,
                "created": _now_iso(),
            },
        )
        rt.redis.expire(key, JOB_TTL_S)
        for index, chunk in enumerate(chunks):  # progress is kept in the job hash
            protocol.send_geocode_chunk(rt.celery, key, index, chunk, limit, JOB_TTL_S)
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc
    return {"job_id": job_id, "status": "queued", "total": len(addresses), "status_url": status_url(job_id)}


def async_requested() -> bool:
    """The ``async`` query parameter (already validated by the function's schema)."""
    raw = request.args.get("async")
    if raw is None:
        return False
    try:
        return bool(_ASYNC_FIELD.deserialize(raw))
    except Exception:
        raise InvalidParameter("async: expected a boolean (true/false)", parameter="async") from None


def submit_heavy(function: Function, call: HeavyCall) -> dict[str, Any]:
    """Queue a heavy computation as a job (answered from the cache at once when possible)."""
    rt = runtime()
    if rt.backend is not None:
        raise InvalidParameter(
            "async=true is not available when the gateway forwards to a remote core", parameter="async"
        )
    job_id = new_job_id()
    key = job_key(job_id)
    try:
        rt.redis.hset(
            key,
            mapping={
                "kind": "heavy",
                "function": function.cmd,
                "account": account_of_request(),
                "total": 1,
                "created": _now_iso(),
            },
        )
        rt.redis.expire(key, JOB_TTL_S)
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc
    done = rt.dispatcher.submit_job(call, rt.dataset_versions(), key, JOB_TTL_S)
    return {"job_id": job_id, "status": "done" if done else "queued", "total": 1, "status_url": status_url(job_id)}


def accepted(body: dict[str, Any]) -> Response:
    resp = json_body(body, status=202)
    resp.headers["Location"] = body["status_url"]
    resp.headers["Cache-Control"] = "private, no-store"
    return resp


def answer(function: Function, call: HeavyCall) -> Response:
    """A heavy function's gateway answer: synchronous, or a 202 job with ``async=true``."""
    if async_requested():
        return accepted(submit_heavy(function, call))
    return gateway_answer(function, call.params)


# ------------------------------------------------------------------------------------ read
def _decode(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


def load(job_id: str, account: str) -> dict[str, str]:
    """The job's record; NotFound for an unknown, expired or another account's job."""
    if not job_id or len(job_id) > 64:
        raise NotFound("no such job")
    try:
        raw = runtime().redis.hgetall(job_key(job_id))
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc
    record = {_decode(k): _decode(v) for k, v in raw.items()}
    if not record or not secrets.compare_digest(record.get("account", ""), account):
        raise NotFound(f"no such job (jobs are kept {JOB_TTL_S // 3600} h after submission)")
    return record


def _error_body(err: MeridianError) -> dict[str, Any]:
    body = {"statusCode": err.status, "code": err.kind.code, "message": err.message}
    if err.parameter:
        body["parameter"] = err.parameter
    return body


def _batch_state(job_id: str, record: dict[str, str], with_results: bool) -> dict[str, Any]:
    client = runtime().redis
    key = job_key(job_id)
    total, chunks = int(record["total"]), int(record["chunks"])
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(protocol.job_progress_key(key))
    pipe.hgetall(protocol.job_failed_key(key))
    progress, failed = pipe.execute()
    done = sum(int(v) for v in progress.values())
    body: dict[str, Any] = {
        "job_id": job_id,
        "kind": "batch",
        "function": record.get("function", "geocoding"),
        "created": record.get("created"),
        "progress": {"done": done, "total": total},
    }
    if failed:
        body["status"] = "failed"
        first = min(failed, key=lambda k: int(k))
        body["error"] = {
            "statusCode": 500,
            "code": "INTERNAL_ERROR",
            "message": f"chunk {int(first)} failed: {_decode(failed[first])}",
        }
    elif len(progress) >= chunks:
        body["status"] = "done"
        if with_results:
            parts = client.mget([protocol.job_chunk_key(key, i) for i in range(chunks)])
            if any(p is None for p in parts):
                body["status"] = "failed"
                body["error"] = {"statusCode": 500, "code": "INTERNAL_ERROR", "message": "results expired"}
            else:
                results = []
                for part in parts:
                    results.extend(json.loads(part))  # type: ignore[arg-type]
                body["results"] = [{"index": i, **item} for i, item in enumerate(results)]
    else:
        body["status"] = "running" if (record.get("started") or progress) else "queued"
    return body


def _heavy_state(job_id: str, record: dict[str, str]) -> tuple[dict[str, Any], object]:
    raw = runtime().redis.get(protocol.job_result_key(job_key(job_id)))
    body: dict[str, Any] = {
        "job_id": job_id,
        "kind": "heavy",
        "function": record.get("function"),
        "created": record.get("created"),
    }
    value = None
    if raw is None:
        body["status"] = "running" if record.get("started") else "queued"
        body["progress"] = {"done": 0, "total": 1}
        return body, None
    body["progress"] = {"done": 1, "total": 1}
    try:
        value = protocol.read_result(raw)
    except MeridianError as err:
        body["status"] = "failed"
        body["error"] = _error_body(err)
        return body, err
    body["status"] = "done"
    if isinstance(value, BinaryResult):
        body["result_url"] = f"{status_url(job_id)}/result"
        body["content_type"] = value.content_type
    else:
        value = value.data  # JsonText
        body["result"] = value
    return body, value


def state(job_id: str, account: str) -> dict[str, Any]:
    record = load(job_id, account)
    try:
        if record.get("kind") == "batch":
            return _batch_state(job_id, record, with_results=True)
        return _heavy_state(job_id, record)[0]
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc


def result(job_id: str, account: str) -> object:
    """The finished job's result: (BinaryResult | dict). Raises the job's error when it failed,
    and 409 while it is not finished."""
    record = load(job_id, account)
    try:
        if record.get("kind") == "batch":
            body = _batch_state(job_id, record, with_results=True)
            if body["status"] == "done":
                return {"results": body["results"]}
            if body["status"] == "failed":
                raise MeridianError(body["error"]["message"])
            value = None
        else:
            body, value = _heavy_state(job_id, record)
            if isinstance(value, MeridianError):
                raise value
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc
    if body["status"] != "done":
        raise MeridianError(
            f"the job is not finished (status {body['status']}); poll {status_url(job_id)}",
            kind=ErrorKind.CONFLICT,
            retry_after=1,
        )
    return value
