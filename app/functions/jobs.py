"""Jobs: ``GET /v1/jobs/{id}`` (state, progress, results) and ``GET /v1/jobs/{id}/result`` (the
finished result as such: an image's bytes, or JSON).

Polling needs a valid key of the account that submitted the job (another account gets 404) and
spends no quota: the submission was counted. Jobs are kept ``app.jobs.JOB_TTL_S`` (24 h).
"""

from __future__ import annotations

from flask import Response, g, request
from flask.views import MethodView
from marshmallow import fields

from app import jobs
from app.access import gateway_key
from app.calls import json_body
from app.functions.geocoding import CandidateSchema
from app.gateway.base import ErrorBodySchema, GatewayBlueprint
from app.results import BinaryResult
from app.runtime import runtime
from app.schemas.common import ResponseSchema
from engine.errors import InvalidParameter

blp = GatewayBlueprint(
    "Jobs",
    __name__,
    url_prefix="/v1",
    description="Asynchronous jobs: batch geocoding and heavy functions called with `async=true`.",
)

JOB_ID_PARAM = [
    {
        "in": "path",
        "name": "job_id",
        "description": "The job id returned on submission.",
        "schema": {"type": "string", "maxLength": 64},
        "example": "q2Vx0dVNv5bWkZ3hBqjJmA",
    }
]


class JobProgressSchema(ResponseSchema):
    done = fields.Integer(required=True, metadata={"example": 150})
    total = fields.Integer(required=True, metadata={"example": 200})


class JobErrorSchema(ResponseSchema):
    statusCode = fields.Integer(required=True, metadata={"example": 500})
    code = fields.String(required=True, metadata={"example": "INTERNAL_ERROR"})
    message = fields.String(required=True, metadata={"example": "chunk 3 failed: internal error in a worker"})
    parameter = fields.String(metadata={"example": "center"})


class BatchGeocodeItemSchema(ResponseSchema):
    index = fields.Integer(required=True, metadata={"description": "Position in the submitted list.", "example": 0})
    query = fields.String(required=True, metadata={"example": "Mannerheimintie 5, Helsinki"})
    candidates = fields.List(
        fields.Nested(CandidateSchema),
        required=True,
        metadata={"description": "Best candidates first (empty when nothing matched)."},
    )
    error = fields.String(metadata={"description": "Why this address could not be geocoded."})


class JobStatusSchema(ResponseSchema):
    job_id = fields.String(required=True, metadata={"example": "q2Vx0dVNv5bWkZ3hBqjJmA"})
    kind = fields.String(required=True, metadata={"enum": ["batch", "heavy", "matrix"], "example": "batch"})
    function = fields.String(metadata={"example": "geocoding"})
    status = fields.String(required=True, metadata={"enum": ["queued", "running", "done", "failed"], "example": "done"})
    created = fields.String(metadata={"format": "date-time", "example": "2026-11-22T10:00:00Z"})
    progress = fields.Nested(JobProgressSchema, required=True)
    results = fields.List(
        fields.Nested(BatchGeocodeItemSchema),
        metadata={"description": "Batch jobs, when done: one entry per address, in input order."},
    )
    result = fields.Dict(metadata={"description": "Heavy jobs with a JSON result, when done."})
    result_url = fields.String(
        metadata={
            "description": "Heavy jobs with a binary result (images), when done.",
            "example": "/v1/jobs/q2Vx0dVNv5bWkZ3hBqjJmA/result",
        }
    )
    csv_url = fields.String(
        metadata={
            "description": "Matrix jobs, when done: the result as CSV (`result_url` gives it as JSON).",
            "example": "/v1/jobs/q2Vx0dVNv5bWkZ3hBqjJmA/result?format=csv",
        }
    )
    content_type = fields.String(metadata={"example": "image/png"})
    error = fields.Nested(JobErrorSchema, metadata={"description": "Why the job failed."})


def _account() -> str:
    record = runtime().access.authenticate(gateway_key())
    g.api_key = record
    return str(record.account_id)


@blp.route("/jobs/<job_id>", parameters=JOB_ID_PARAM)
class JobView(MethodView):
    @blp.response(
        200,
        JobStatusSchema,
        example={
            "job_id": "q2Vx0dVNv5bWkZ3hBqjJmA",
            "kind": "batch",
            "function": "geocoding",
            "status": "done",
            "created": "2026-11-22T10:00:00Z",
            "progress": {"done": 1, "total": 1},
            "results": [{"index": 0, "query": "Mannerheimintie 5, Helsinki", "candidates": []}],
        },
    )
    @blp.error_responses(404)
    @blp.doc(
        summary="State of a job",
        description=(
            "`status` is queued, running, done or failed; `progress` counts finished items. When done: batch "
            "jobs carry `results` in input order; heavy jobs carry `result` (JSON) or `result_url` (images); "
            "matrix jobs (`/v1/matrix` with `async`) carry `result_url` and `csv_url`, and count rows in `progress`. "
            f"Needs a key of the submitting account (others get 404); spends no quota. Jobs expire "
            f"{jobs.JOB_TTL_S // 3600} h after submission."
        ),
    )
    def get(self, job_id: str) -> Response:
        body = jobs.state(job_id, _account())
        resp = json_body(body)
        resp.headers["Cache-Control"] = "private, no-store"
        return resp


IMAGE = {"schema": {"type": "string", "format": "binary"}}
RESULT_FORMATS = ("json", "csv")
FORMAT_PARAM = {
    "in": "query",
    "name": "format",
    "description": (
        "Matrix jobs: `json` (default: the synchronous call's document) or `csv` (one line per cell: "
        "`source,destination,duration,distance`, 0-based indexes, empty where no route exists). Both are "
        "streamed a chunk of rows at a time. Other jobs: `json` only."
    ),
    "schema": {"type": "string", "enum": list(RESULT_FORMATS), "default": "json"},
}


@blp.route("/jobs/<job_id>/result", parameters=[*JOB_ID_PARAM, FORMAT_PARAM])
class JobResultView(MethodView):
    @blp.response(
        200,
        description="The result: an image, or the JSON the synchronous call answers.",
        content_type="application/json",
    )
    @blp.alt_response(
        409, schema=ErrorBodySchema, description="The job is still queued or running: poll `/v1/jobs/{id}` first."
    )
    @blp.error_responses(404)
    @blp.doc(
        summary="Result of a finished job",
        description=(
            "The finished job's result as the synchronous endpoint answers it (image bytes for static maps; "
            '`{"results": [...]}` for batch geocoding; a matrix as JSON or, with `format=csv`, CSV). 409 while '
            "the job is queued or running; a failed job answers its error."
        ),
        responses={
            "200": {
                "description": "The result.",
                "content": {
                    "image/png": IMAGE,
                    "image/jpeg": IMAGE,
                    "application/json": {"schema": {"type": "object"}},
                    "text/csv": {"schema": {"type": "string"}},
                },
            }
        },
    )
    def get(self, job_id: str) -> Response:
        fmt = request.args.get("format", "json")
        if fmt not in RESULT_FORMATS:
            raise InvalidParameter("format must be json or csv", parameter="format")
        value = jobs.result(job_id, _account())
        if fmt == "csv" and not isinstance(value, jobs.MatrixRows):
            raise InvalidParameter("format=csv is for matrix jobs; this job's result is JSON", parameter="format")
        if isinstance(value, jobs.MatrixRows):
            streamed = value.csv() if fmt == "csv" else value.json()
            resp = Response(streamed, mimetype="text/csv" if fmt == "csv" else "application/json")
            if fmt == "csv":
                resp.headers["Content-Disposition"] = f'attachment; filename="matrix-{job_id}.csv"'
        elif isinstance(value, BinaryResult):
            resp = Response(value.body, mimetype=value.content_type)
        else:
            resp = json_body(value)
        resp.headers["Cache-Control"] = "private, no-store"
        return resp
