"""Asynchronous jobs: batch geocoding and ``async=true`` on heavy functions.

A job is a set of Redis keys under ``<ns>:job:<id>`` that all expire ``JOB_TTL_S`` (24 h) after
submission:

- ``<ns>:job:<id>``             hash: kind, function, account, total, chunks, limit, created, started
- ``<ns>:job:<id>:progress``    hash: chunk index -> addresses done (batch; HSET is idempotent,
                                so a redelivered chunk does not count twice)
- ``<ns>:job:<id>:chunk:<i>``   JSON list: chunk i's results (batch)
- ``<ns>:job:<id>:failed``      hash: chunk index -> message (batch)
- ``<ns>:job:<id>:result``      the result record of a heavy job (a matrix job's error)
- ``<ns>:job:<id>:waypoints``   matrix job: its sources and destinations (JSON)
- ``<ns>:job:<id>:rows:<a>:<i>`` matrix job: chunk i's rows of annotation a (JSON list); its
                                progress hash: chunk index -> rows done

(key names and the record format: ``queueing/protocol.py``). Workers write these keys directly
(``tasks/batch.py``); the web process only reads them, so any
number of web processes answer ``GET /v1/jobs/{id}`` without a result backend. A job belongs to
the account of the key that submitted it: another account's key gets 404, like an unknown id.

Queued functions get ``async=true`` from their query schema alone: it declares the parameter
(``async_ = jobs.async_field()``, dropped before building the engine's params in its own
``_build``; or it derives from :class:`AsyncParamsSchema` when it builds none of its own).
``GatewayBlueprint.function_route`` does the rest for a function with a queue: its view parses the
query with :func:`gateway_schema` (the same schema, loading :class:`QueuedArgs`: the params and
``async``, parsed once), answers through :func:`answer` and documents the 202. The core face
accepts ``async`` and ignores it.

A function may give its jobs their own storage (:data:`OWN_JOBS`): the matrix's job is computed
by ``meridian.matrix_job`` into chunks of rows (:func:`submit_matrix`), and its result is read
back a chunk at a time as a streamed JSON or CSV body (:class:`MatrixRows`), so neither Redis nor
the web process holds a 10,000 x 10,000 matrix in one piece.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import orjson
import redis
from flask import Response, g
from marshmallow import Schema, post_load
from marshmallow import fields as ma_fields

from app import backpressure
from app.calls import gateway_answer, json_body
from app.registry import Function
from app.runtime import runtime
from app.schemas.common import ResponseSchema
from app.validation import ParamsSchema
from engine.errors import ErrorKind, InvalidParameter, MeridianError, NotFound, Unavailable
from engine.results import BinaryResult
from queueing import protocol

JOB_TTL_S = 24 * 3600  # every key of a job expires 24 h after submission
BATCH_CHUNK = 50  # addresses per meridian.geocode_chunk task
JOB_ID_BYTES = 16  # 128 random bits, URL-safe

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


@dataclass(frozen=True)
class QueuedArgs:
    """What a queued function's gateway view gets: the engine's params and ``async``."""

    params: Any
    async_: bool


def gateway_schema(schema_class: type[Schema]) -> type[ParamsSchema]:
    """The gateway's schema of a queued function: ``schema_class`` (which declares ``async_``),
    loading a :class:`QueuedArgs` instead of the bare params, so that ``async`` is parsed once,
    with the other parameters. The same name and fields: the same OpenAPI parameters."""
    if not issubclass(schema_class, ParamsSchema) or "async_" not in schema_class().fields:
        raise ValueError(
            f"{schema_class.__name__}: a queued function's ParamsSchema declares async_ = jobs.async_field()"
        )

    def _build(self: ParamsSchema, data: dict[str, Any], **kwargs: Any) -> QueuedArgs:
        requested = bool(data.pop("async_", False))
        return QueuedArgs(schema_class._build(self, data, **kwargs), requested)

    namespace = {"_build": post_load(_build), "__module__": schema_class.__module__}
    return cast(type[ParamsSchema], type(schema_class.__name__, (schema_class,), namespace))


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


def _unavailable(exc: Exception) -> Unavailable:
    return Unavailable(f"job store unavailable ({type(exc).__name__}); retry shortly", retry_after=5)


def account_of_request() -> str:
    record = g.get("api_key")
    return str(record.account_id) if record is not None else ""


# ------------------------------------------------------------------------------------ submit
def _create(queue: str, fields: dict[Any, Any]) -> tuple[str, str]:
    """A new job's record with ``fields`` and its creation time, once ``queue`` has room (503
    otherwise): (job id, job key). Raises RedisError for the caller to turn into a 503."""
    rt = runtime()
    backpressure.admit(rt.redis, queue, rt.settings.queue_max_depth_for)
    job_id = new_job_id()
    key = job_key(job_id)
    rt.redis.hset(key, mapping={**fields, protocol.JOB_CREATED: protocol.now_iso()})
    rt.redis.expire(key, JOB_TTL_S)
    return job_id, key


def submit_batch(addresses: list[str], limit: int, *, account: str, function: str = "geocoding") -> dict[str, Any]:
    """Create a batch geocoding job and queue its chunks on the ``batch`` queue."""
    rt = runtime()
    chunks = [addresses[i : i + BATCH_CHUNK] for i in range(0, len(addresses), BATCH_CHUNK)]
    try:
        job_id, key = _create(
            protocol.BATCH_QUEUE,
            {
                protocol.JOB_KIND: protocol.BATCH_JOB,
                protocol.JOB_FUNCTION: function,
                protocol.JOB_ACCOUNT: account,
                protocol.JOB_TOTAL: len(addresses),
                protocol.JOB_CHUNKS: len(chunks),
                protocol.JOB_LIMIT: limit,
            },
        )
        for index, chunk in enumerate(chunks):  # progress is kept in the job hash
            protocol.send_geocode_chunk(rt.celery, key, index, chunk, limit, JOB_TTL_S)
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc
    return {"job_id": job_id, "status": "queued", "total": len(addresses), "status_url": status_url(job_id)}


def submit_heavy(function: Function, params: object) -> dict[str, Any]:
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
                protocol.JOB_KIND: protocol.HEAVY_JOB,
                protocol.JOB_FUNCTION: function.cmd,
                protocol.JOB_ACCOUNT: account_of_request(),
                protocol.JOB_TOTAL: 1,
                protocol.JOB_CREATED: protocol.now_iso(),
            },
        )
        rt.redis.expire(key, JOB_TTL_S)
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc
    done = rt.dispatcher.submit_job(function, params, rt.dataset_versions(), key, JOB_TTL_S)
    return {"job_id": job_id, "status": "done" if done else "queued", "total": 1, "status_url": status_url(job_id)}


def submit_matrix(function: Function, params: Any) -> dict[str, Any]:
    """Queue a matrix (``engine.services.matrix.MatrixParams``) as a job of chunks of rows, each
    chunk about ``Limits.matrix_job_chunk_cells`` cells."""
    rt = runtime()
    if rt.backend is not None:
        raise InvalidParameter(
            "async=true is not available when the gateway forwards to a remote core", parameter="async"
        )
    rows = max(1, rt.settings.limits.matrix_job_chunk_cells // len(params.targets))
    total = len(params.sources)
    call = protocol.HeavyCall(function.queue or protocol.DEFAULT_QUEUE, function.service_ref or "", params)
    try:
        job_id, key = _create(
            call.kind,
            {
                protocol.JOB_KIND: protocol.MATRIX_JOB,
                protocol.JOB_FUNCTION: function.cmd,
                protocol.JOB_ACCOUNT: account_of_request(),
                protocol.JOB_TOTAL: total,
                protocol.JOB_CHUNKS: -(-total // rows),
                protocol.JOB_CHUNK_ROWS: rows,
                protocol.JOB_ANNOTATIONS: ",".join(_ROW_KEYS[a] for a in params.annotations),
            },
        )
        protocol.send_matrix_job(rt.celery, call, key, rows, JOB_TTL_S, rt.dataset_versions())
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc
    return {"job_id": job_id, "status": "queued", "total": total, "status_url": status_url(job_id)}


_ROW_KEYS = {"duration": "durations", "distance": "distances"}  # annotation -> the result's key


@dataclass(frozen=True)
class OwnJob:
    """A function whose jobs are not ``meridian.heavy_job``'s single result record."""

    submit: Callable[[Function, Any], dict[str, Any]]  # (function, params) -> the 202 body
    check_synchronous: Callable[[Any], None]  # raises InvalidParameter beyond the request's limits


OWN_JOBS: dict[str, OwnJob] = {}  # cmd -> its jobs; filled by the function's module


def accepted(body: dict[str, Any]) -> Response:
    resp = json_body(body, status=202)
    resp.headers["Location"] = body["status_url"]
    resp.headers["Cache-Control"] = "private, no-store"
    return resp


def answer(function: Function, args: QueuedArgs) -> Response:
    """A queued function's gateway answer: synchronous, or a 202 job with ``async=true``."""
    own = OWN_JOBS.get(function.cmd)
    if args.async_:
        return accepted(own.submit(function, args.params) if own else submit_heavy(function, args.params))
    if own:
        own.check_synchronous(args.params)
    return gateway_answer(function, args.params)


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
    if not record or not secrets.compare_digest(record.get(protocol.JOB_ACCOUNT, ""), account):
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
    total, chunks = int(record[protocol.JOB_TOTAL]), int(record[protocol.JOB_CHUNKS])
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(protocol.job_progress_key(key))
    pipe.hgetall(protocol.job_failed_key(key))
    progress, failed = pipe.execute()
    done = sum(int(v) for v in progress.values())
    body: dict[str, Any] = {
        "job_id": job_id,
        "kind": "batch",
        "function": record.get(protocol.JOB_FUNCTION, "geocoding"),
        "created": record.get(protocol.JOB_CREATED),
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
        body["status"] = "running" if (record.get(protocol.JOB_STARTED) or progress) else "queued"
    return body


def _heavy_state(job_id: str, record: dict[str, str]) -> tuple[dict[str, Any], object]:
    raw = runtime().redis.get(protocol.job_result_key(job_key(job_id)))
    body: dict[str, Any] = {
        "job_id": job_id,
        "kind": "heavy",
        "function": record.get(protocol.JOB_FUNCTION),
        "created": record.get(protocol.JOB_CREATED),
    }
    value = None
    if raw is None:
        body["status"] = "running" if record.get(protocol.JOB_STARTED) else "queued"
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


@dataclass(frozen=True)
class MatrixRows:
    """A finished matrix job's stored chunks, read one at a time by :meth:`json` and :meth:`csv`."""

    client: redis.Redis
    key: str
    chunks: int
    annotations: tuple[str, ...]  # durations, distances

    def _chunk(self, annotation: str, index: int) -> bytes:
        raw = self.client.get(protocol.job_rows_key(self.key, annotation, index))
        if raw is None:  # expired between the state and this read: end the body short, not garbled
            raise MeridianError("the job's results expired")
        return cast(bytes, raw)

    def json(self) -> Iterator[bytes]:
        """The synchronous call's JSON document: ``{"durations": [...], "distances": [...],
        "sources": [...], "destinations": [...]}``, a chunk of rows at a time."""
        sep = b"{"
        for annotation in self.annotations:
            yield sep + b'"' + annotation.encode() + b'":['
            for index in range(self.chunks):
                yield (b"," if index else b"") + self._chunk(annotation, index)[1:-1]
            yield b"]"
            sep = b","
        waypoints = cast(bytes, self.client.get(protocol.job_waypoints_key(self.key)) or b"{}")
        yield sep + waypoints[1:]

    def csv(self) -> Iterator[bytes]:
        """One line per cell: ``source,destination,duration,distance`` (the requested annotations;
        0-based indexes; empty where no route exists), a chunk of rows at a time."""
        names = [a[:-1] for a in self.annotations]  # durations -> duration
        yield ("source,destination," + ",".join(names) + "\r\n").encode()
        row = 0
        for index in range(self.chunks):
            parts = [orjson.loads(self._chunk(a, index)) for a in self.annotations]
            lines = []
            for cells in zip(*parts, strict=True):
                for col, values in enumerate(zip(*cells, strict=True)):
                    lines.append(f"{row},{col}," + ",".join("" if v is None else repr(v) for v in values))
                row += 1
            yield ("\r\n".join(lines) + "\r\n").encode()


def _matrix_state(job_id: str, record: dict[str, str]) -> tuple[dict[str, Any], MatrixRows | MeridianError | None]:
    client = runtime().redis
    key = job_key(job_id)
    chunks = int(record[protocol.JOB_CHUNKS])
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(protocol.job_progress_key(key))
    pipe.get(protocol.job_result_key(key))
    progress, error = pipe.execute()
    body: dict[str, Any] = {
        "job_id": job_id,
        "kind": protocol.MATRIX_JOB,
        "function": record.get(protocol.JOB_FUNCTION),
        "created": record.get(protocol.JOB_CREATED),
        "progress": {"done": sum(int(v) for v in progress.values()), "total": int(record[protocol.JOB_TOTAL])},
    }
    if error is not None:
        err = MeridianError("internal error in a worker")
        try:
            protocol.read_result(error)  # an error record: raises the worker's error
        except MeridianError as exc:
            err = exc
        body["status"] = "failed"
        body["error"] = _error_body(err)
        return body, err
    if len(progress) < chunks:
        body["status"] = "running" if (record.get(protocol.JOB_STARTED) or progress) else "queued"
        return body, None
    body["status"] = "done"
    body["result_url"] = f"{status_url(job_id)}/result"
    body["csv_url"] = f"{status_url(job_id)}/result?format=csv"
    body["content_type"] = "application/json"
    annotations = tuple(a for a in record.get(protocol.JOB_ANNOTATIONS, "").split(",") if a)
    return body, MatrixRows(client, key, chunks, annotations)


def state(job_id: str, account: str) -> dict[str, Any]:
    record = load(job_id, account)
    try:
        if record.get(protocol.JOB_KIND) == protocol.BATCH_JOB:
            return _batch_state(job_id, record, with_results=True)
        if record.get(protocol.JOB_KIND) == protocol.MATRIX_JOB:
            return _matrix_state(job_id, record)[0]
        return _heavy_state(job_id, record)[0]
    except redis.RedisError as exc:
        raise _unavailable(exc) from exc


def result(job_id: str, account: str) -> object:
    """The finished job's result: (BinaryResult | dict | MatrixRows). Raises the job's error when
    it failed, and 409 while it is not finished."""
    record = load(job_id, account)
    value: object
    try:
        if record.get(protocol.JOB_KIND) == protocol.MATRIX_JOB:
            body, value = _matrix_state(job_id, record)
            if isinstance(value, MeridianError):
                raise value
        elif record.get(protocol.JOB_KIND) == protocol.BATCH_JOB:
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
