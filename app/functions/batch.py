"""Batch geocoding: ``POST /v1/geocoding/batch`` -> 202 with a job id, polled at ``/v1/jobs/{id}``.

Accepted bodies (at most ``Limits.batch_geocode_max`` addresses, 4 MB):

- ``application/json``: ``{"addresses": ["...", ...], "limit": 1}`` or a plain list ``["...", ...]``;
- ``text/csv``: one address per row (``limit`` may be given in the query string);
- ``multipart/form-data``: the CSV as the file field ``file`` (optional form field ``limit``).

CSV: UTF-8 (a BOM is allowed), comma separated, quoted as RFC 4180. The cells of a row are joined
with ", " (so ``street,number,city`` columns work); blank rows are skipped; a first row made only of
header words (address, query, street, number, city, postcode, country, ...) is skipped.

Quota: each address counts as one geocoding request; the whole batch is refused (429) when the
remainder of a window is smaller than the batch. The job runs on the workers in chunks of 50
addresses (queue ``batch``); results come back in input order, each with the first ``limit``
candidates of the synchronous ``/v1/geocoding``. ``Idempotency-Key`` (optional header): repeating
a submission with the same key (same API key, within 24 h) returns the first job with 200 and
costs nothing.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
from collections.abc import Mapping
from typing import Any, cast

import redis
from flask import Request, Response, g, request
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate

from accounts.store import split_key
from app import jobs
from app.gateway.base import GatewayBlueprint, gateway_call
from app.registry import Function
from app.runtime import runtime
from app.schemas.fields import StrList
from app.validation import MeridianParser, ParamsSchema
from engine.errors import InvalidParameter
from engine.limits import DEFAULT_LIMITS

LIMITS = DEFAULT_LIMITS
MAX = LIMITS.batch_geocode_max
MAX_CANDIDATES = 10
CSV_TYPES = ("text/csv", "application/csv")
HEADER_WORDS = {
    "address",
    "addresses",
    "addr",
    "query",
    "q",
    "street",
    "number",
    "housenumber",
    "house_number",
    "city",
    "postcode",
    "zip",
    "country",
}
IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_MAX = 200


def check_addresses(items: object, parameter: str) -> list[str]:
    """The validated list of addresses, or InvalidParameter naming ``parameter``."""
    if not isinstance(items, list):
        raise InvalidParameter(f"{parameter}: expected a list of address strings", parameter=parameter)
    if not items:
        raise InvalidParameter(f"{parameter}: no address given (1 to {MAX})", parameter=parameter)
    if len(items) > MAX:
        raise InvalidParameter(f"{parameter}: at most {MAX} addresses per batch, got {len(items)}", parameter=parameter)
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidParameter(f"{parameter}: item {i} is not a string", parameter=parameter)
        text = item.strip()
        if not text:
            raise InvalidParameter(f"{parameter}: item {i} is empty", parameter=parameter)
        if len(text) > LIMITS.query_length:
            raise InvalidParameter(
                f"{parameter}: item {i} is longer than {LIMITS.query_length} characters", parameter=parameter
            )
        out.append(text)
    return out


def parse_csv(raw: bytes, parameter: str) -> list[str]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidParameter(f"{parameter}: the CSV is not UTF-8 text", parameter=parameter) from None
    try:
        looks_like_json = not isinstance(json.loads(text), str)  # e.g. {"addresses": ...} sent as text/csv
    except ValueError:
        looks_like_json = False
    if looks_like_json:
        raise InvalidParameter(f"{parameter}: this is JSON, not CSV; send it as application/json", parameter=parameter)
    addresses = []
    try:
        for n, row in enumerate(csv.reader(io.StringIO(text, newline=""), strict=True)):
            cells = [c.strip() for c in row if c.strip()]
            if not cells:
                continue
            if n == 0 and all(c.lower() in HEADER_WORDS for c in cells):
                continue
            addresses.append(", ".join(cells))
            if len(addresses) > MAX:
                break
    except csv.Error as exc:
        raise InvalidParameter(f"{parameter}: not a valid CSV file ({exc})", parameter=parameter) from None
    return check_addresses(addresses, parameter)


def _read_body() -> dict[str, Any]:
    mimetype = request.mimetype or ""
    if request.is_json:
        try:
            data = json.loads(request.get_data(cache=True) or b"null")
        except (ValueError, UnicodeDecodeError):
            raise InvalidParameter("addresses: the body is not valid JSON", parameter="addresses") from None
        if isinstance(data, list):
            return {"addresses": data}
        if isinstance(data, dict):
            return data
        raise InvalidParameter(
            'addresses: expected {"addresses": [...]} or a JSON list of addresses', parameter="addresses"
        )
    if mimetype in CSV_TYPES:
        data = {"addresses": parse_csv(request.get_data(cache=True), "file")}
        if "limit" in request.args:
            data["limit"] = request.args["limit"]
        return data
    if mimetype == "multipart/form-data":
        upload = request.files.get("file")
        if upload is None:
            raise InvalidParameter("file: missing the CSV upload field 'file'", parameter="file")
        data = {"addresses": parse_csv(upload.read(), "file")}
        if "limit" in request.form:
            data["limit"] = request.form["limit"]
        return data
    raise InvalidParameter(
        f"addresses: unsupported content type {mimetype or '(none)'!r}; send application/json, text/csv "
        "or multipart/form-data with a CSV file field 'file'",
        parameter="addresses",
    )


def batch_body() -> dict[str, Any]:
    """The request body as a dict, parsed once per request (cost callable and argument parser)."""
    if "batch_body" not in g:
        try:
            g.batch_body = _read_body()
        except InvalidParameter as exc:
            g.batch_body = exc
    if isinstance(g.batch_body, Exception):
        raise g.batch_body
    return cast(dict[str, Any], g.batch_body)


def _idempotency_key() -> str | None:
    value = request.headers.get(IDEMPOTENCY_HEADER)
    if value is None:
        return None
    if not (1 <= len(value) <= IDEMPOTENCY_MAX) or not value.strip():
        raise InvalidParameter(f"{IDEMPOTENCY_HEADER}: 1 to {IDEMPOTENCY_MAX} characters", parameter=IDEMPOTENCY_HEADER)
    return value


def _idempotency_redis_key(value: str) -> str | None:
    prefix = split_key((request.headers.get("X-API-Key") or "").strip())
    if prefix is None:
        return None
    digest = hashlib.sha256(value.encode()).hexdigest()
    return f"{runtime().settings.service_name}:idem:batch:{prefix}:{digest}"


def _replayed_job() -> str | None:
    try:
        value = _idempotency_key()
    except InvalidParameter:
        return None
    rkey = _idempotency_redis_key(value) if value else None
    if rkey is None:
        return None
    try:
        job_id = runtime().redis.get(rkey)
    except redis.RedisError:
        return None
    return job_id.decode() if job_id else None  # type: ignore[union-attr]


def batch_cost() -> int:
    """Quota units of the request: one per address; 1 for a body that will be refused with 400,
    0 for a replay of an earlier submission (Idempotency-Key)."""
    replay = _replayed_job()
    if replay is not None:
        g.batch_replay = replay
        return 0
    try:
        addresses = batch_body().get("addresses")
    except InvalidParameter:
        return 1
    if isinstance(addresses, list) and 1 <= len(addresses) <= MAX:
        return len(addresses)
    return 1


class BatchParser(MeridianParser):
    """The "json" location also reads CSV bodies and multipart uploads (see the module doc)."""

    def load_json(self, req: Request, schema: Schema) -> dict[str, Any]:
        return batch_body()


class AddressList(StrList):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            fields.String(validate=validate.Length(1, LIMITS.query_length)), validate=validate.Length(1, MAX), **kwargs
        )

    # marshmallow types a List's items as optional (list[str | None]); these never are None
    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> list[str]:
        try:
            return check_addresses(value, "addresses")
        except InvalidParameter as exc:
            raise ValidationError(exc.message.removeprefix("addresses: ")) from None


class BatchGeocodingArgs(ParamsSchema):
    addresses = AddressList(
        required=True,
        metadata={
            "description": f"Addresses or places, free text (1 to {MAX}).",
            "example": ["Mannerheimintie 5, Helsinki", "6 Quai Antoine 1er, Monaco"],
        },
    )
    limit = fields.Integer(
        load_default=1,
        validate=validate.Range(1, MAX_CANDIDATES),
        metadata={"description": f"Candidates per address (1-{MAX_CANDIDATES}).", "example": 1},
    )


# Not registered on the core face: batch jobs exist on the gateway only. Counts as "geocoding".
FUNCTION = Function(
    service="geocoding",
    cmd="geocoding_batch",
    core_schema=BatchGeocodingArgs,
    run=lambda rt, params: None,
    cacheable=False,
)

blp = GatewayBlueprint(
    "Batch geocoding",
    __name__,
    url_prefix="/v1",
    description="Geocode up to 1000 addresses in one job, computed by the workers.",
)
blp.ARGUMENTS_PARSER = BatchParser()

CSV_BODY = {
    "schema": {"type": "string"},
    "example": "address\nMannerheimintie 5, Helsinki\n6 Quai Antoine 1er, Monaco\n",
}
MULTIPART_BODY = {
    "schema": {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {"type": "string", "format": "binary", "description": "CSV file, one address per row."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_CANDIDATES,
                "description": "Candidates per address.",
            },
        },
    }
}


def _accepted(body: dict[str, Any], status: int) -> Response:
    resp = jobs.accepted(body)
    resp.status_code = status
    return resp


@blp.route("/geocoding/batch")
class BatchGeocodingView(MethodView):
    @gateway_call(FUNCTION, cost=batch_cost)
    @blp.arguments(BatchGeocodingArgs, location="json", as_kwargs=False)
    @blp.response(
        202,
        jobs.JobAcceptedSchema,
        description="Accepted: poll `status_url`.",
        example={
            "job_id": "q2Vx0dVNv5bWkZ3hBqjJmA",
            "status": "queued",
            "total": 2,
            "status_url": "/v1/jobs/q2Vx0dVNv5bWkZ3hBqjJmA",
        },
    )
    @blp.alt_response(
        200,
        schema=jobs.JobAcceptedSchema,
        description="A repeated submission with the same `Idempotency-Key`: the first job.",
    )
    @blp.error_responses(413)
    @blp.doc(
        summary="Geocode many addresses (asynchronous job)",
        description=(
            f'Up to {MAX} addresses as JSON (`{{"addresses": [...], "limit": 1}}` or a plain list), as a CSV '
            'body (`text/csv`, one address per row, header row optional, cells of a row joined with ", "; '
            "`limit` in the query string) or as a multipart upload (field `file`, optional field `limit`). "
            "Answers 202 with a job id; poll `GET /v1/jobs/{id}` for progress and, when done, the results in "
            "input order. Each address counts as one geocoding request against the plan's quota (the batch is "
            f"refused with 429 when it does not fit). Jobs and results are kept {jobs.JOB_TTL_S // 3600} h and "
            "are visible only to keys of the submitting account. Optional `Idempotency-Key` header: a repeat "
            "returns the first job (200) without spending quota."
        ),
        requestBody={"content": {"text/csv": CSV_BODY, "multipart/form-data": MULTIPART_BODY}},
        parameters=[
            {
                "in": "header",
                "name": IDEMPOTENCY_HEADER,
                "required": False,
                "description": "Client-chosen key making the submission safe to retry (kept 24 h).",
                "schema": {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_MAX},
                "example": "orders-2026-11-22",
            }
        ],
    )
    def post(self, params: dict[str, Any]) -> Response:
        idem = _idempotency_key()
        replay = g.get("batch_replay")
        if replay is not None:
            try:
                body = jobs.state(replay, jobs.account_of_request())
                return _accepted(
                    {k: body[k] for k in ("job_id", "status")}
                    | {"total": body["progress"]["total"], "status_url": jobs.status_url(replay)},
                    200,
                )
            except Exception:  # the earlier job expired or belongs elsewhere: submit anew
                pass
        body = jobs.submit_batch(params["addresses"], params["limit"], account=jobs.account_of_request())
        if idem:
            rkey = _idempotency_redis_key(idem)
            if rkey is not None:
                with contextlib.suppress(redis.RedisError):
                    runtime().redis.set(rkey, body["job_id"], nx=True, ex=jobs.JOB_TTL_S)
        return _accepted(body, 202)
