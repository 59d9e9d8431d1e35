"""The queue protocol: everything a web process and a Celery worker agree on, in one place.

A queued request, followed through one module per side:

- web side, ``app/dispatch.py`` (synchronous heavy functions) and ``app/jobs.py`` (jobs): compute
  :func:`cache_key`; :func:`claim` (one script, one round trip) answers from it when a record is
  stored, else refuses a full queue, else registers a wake-up list in :func:`waiters_key` and
  claims the :func:`inflight_key` marker (an identical request in flight is joined, not queued
  twice); send the task with :func:`send_heavy` (or :func:`send_heavy_job`,
  :func:`send_geocode_chunk`) and read the record from the wake-up list with :func:`read_result`;
- worker side, ``tasks/heavy.py`` and ``tasks/batch.py``: compute, then :func:`store_result`
  (stores the record, pushes it to every waiter's wake-up list, clears the in-flight marker in one
  script; a large record is stored first and the waiters get a bare wake-up), or write the job
  keys below.

Redis keys (``<ns>`` is ``SERVICE_NAME``):

- ``<ns>:cache:<kind>:<sha256>``  a result record (below), kept ``CACHE_TTL`` (errors
                                  ``ERROR_TTL_S``);
- ``<key>:inflight``              a task computing ``<key>`` is queued or running (``SET NX``,
                                  ``CLAIM_TTL_S`` until the task is sent, then ``INFLIGHT_TTL_S``);
- ``<key>:waiters``               set of the wake-up lists of the requests waiting for ``<key>``;
- ``<key>:wake:<random>``         one waiting request's wake-up list (the worker RPUSHes the record
                                  to it, so the request needs no second read; above
                                  ``PUSH_RECORD_MAX_BYTES`` a bare ``WAKE_UP``);
- ``<ns>:job:<id>``               hash: a job's record (fields ``JOB_*`` below);
- ``<ns>:job:<id>:progress``      hash: chunk index -> addresses done (batch geocoding);
- ``<ns>:job:<id>:chunk:<i>``     JSON list: chunk ``i``'s results (batch geocoding);
- ``<ns>:job:<id>:failed``        hash: chunk index -> message (batch geocoding);
- ``<ns>:job:<id>:result``        a heavy job's result record (a matrix job's: its error, if any);
- ``<ns>:job:<id>:waypoints``     matrix job: JSON ``{"sources": [...], "destinations": [...]}``;
- ``<ns>:job:<id>:rows:<a>:<i>``  matrix job: JSON list of chunk ``i``'s rows of annotation ``a``
                                  (``durations`` | ``distances``); progress: chunk index -> rows.

A result record is one of three, told apart by its first byte:

- a JSON document: ``J<json>`` -- read as :class:`JsonText` (the bytes, sent as stored);
- a binary body: ``B<content type>\\n<bytes>`` -- :class:`~engine.results.BinaryResult`;
- an error: ``J{"__error__": {"kind", "message", "parameter"}}`` -- :class:`ErrorRecord`, which
  :func:`read_result` raises as the :class:`~engine.errors.MeridianError` the worker caught.

No Flask and no Celery here: the web sends tasks through any object with Celery's ``send_task``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
import redis

from engine.codec import canonical, encode, json_bytes
from engine.errors import ErrorKind, MeridianError
from engine.results import BinaryResult

# ---------------------------------------------------------------------------- queues and tasks
DEFAULT_QUEUE = "default"
BATCH_QUEUE = "batch"
# heavy kinds get a queue each
QUEUES = (DEFAULT_QUEUE, "isochrone", "staticmap", "geometry", "matrix", "optimization", BATCH_QUEUE)
SOFT_TIME_LIMIT_S = 60  # a task gets SoftTimeLimitExceeded (stored as an UNAVAILABLE error) ...
HARD_TIME_LIMIT_S = 90  # ... and is killed past this
VISIBILITY_TIMEOUT_S = 300  # the broker redelivers an unacknowledged task after this
INFLIGHT_TTL_S = HARD_TIME_LIMIT_S + 10  # the in-flight marker of a sent task outlives any run of it
# A claimed marker lives this long until its claimer has sent the task and extended it to
# INFLIGHT_TTL_S: a web process that dies between the claim and the send leaves a marker that
# expires within seconds, and the requests that joined it take the claim over (app/dispatch.py).
CLAIM_TTL_S = 3

HEAVY_TASK = "meridian.heavy"
HEAVY_JOB_TASK = "meridian.heavy_job"
MATRIX_JOB_TASK = "meridian.matrix_job"
MATRIX_JOB_SOFT_TIME_LIMIT_S = 3600  # a 10,000 x 10,000 matrix job: its own limits, acknowledged early
MATRIX_JOB_HARD_TIME_LIMIT_S = MATRIX_JOB_SOFT_TIME_LIMIT_S + 60
GEOCODE_CHUNK_TASK = "meridian.geocode_chunk"

ERROR_TTL_S = 30  # a data error (bad parameter, time limit) is cached briefly
INTERNAL_ERROR_TTL_S = 10  # an unexpected failure even more briefly
WAKE_TTL_S = 60  # wake-up lists and the waiters set outlive a waiting request


class TaskSender(Protocol):
    """What the web needs of its Celery app: ``Celery.send_task``."""

    def send_task(self, name: str, args: Any = None, **options: Any) -> Any: ...


@dataclass(frozen=True)
class HeavyCall:
    """One call of a heavy service function: ``kind`` is its queue (isochrone | staticmap |
    geometry), ``service_ref`` is ``"engine.services.<module>:run"``."""

    kind: str
    service_ref: str
    params: object


# ---------------------------------------------------------------------------- keys
def cache_key(namespace: str, call: HeavyCall, dataset_versions: str) -> str:
    """Kind + service + normalised parameters + dataset versions: an identical request of the
    same data has the same key."""
    digest = hashlib.sha256(f"{call.service_ref}|{canonical(call.params)}|{dataset_versions}".encode()).hexdigest()
    return f"{namespace}:cache:{call.kind}:{digest}"


def kind_of(key: str) -> str:
    """The kind (queue) named in a cache key."""
    return key.split(":")[2]


def inflight_key(key: str) -> str:
    return f"{key}:inflight"


def waiters_key(key: str) -> str:
    return f"{key}:waiters"


def new_wake_key(key: str) -> str:
    return f"{key}:wake:{uuid.uuid4().hex}"


def job_key(namespace: str, job_id: str) -> str:
    return f"{namespace}:job:{job_id}"


def job_result_key(job: str) -> str:
    return f"{job}:result"


def job_progress_key(job: str) -> str:
    return f"{job}:progress"


def job_failed_key(job: str) -> str:
    return f"{job}:failed"


def job_chunk_key(job: str, index: int) -> str:
    return f"{job}:chunk:{index}"


def job_waypoints_key(job: str) -> str:
    return f"{job}:waypoints"


def job_rows_key(job: str, annotation: str, index: int) -> str:
    return f"{job}:rows:{annotation}:{index}"


# ---------------------------------------------------------------------------- job records
# The fields of a job's hash (job_key): the web writes them at submission, a worker adds started.
JOB_KIND = "kind"  # BATCH_JOB | HEAVY_JOB | MATRIX_JOB
JOB_FUNCTION = "function"  # the function's cmd
JOB_ACCOUNT = "account"  # the account that submitted it: no other account reads the job
JOB_TOTAL = "total"  # items: the addresses of a batch, 1 for a heavy job, a matrix's rows
JOB_CHUNKS = "chunks"  # batch: its geocode_chunk tasks; matrix: its chunks of rows
JOB_CHUNK_ROWS = "chunk_rows"  # matrix: rows per chunk
JOB_ANNOTATIONS = "annotations"  # matrix: the stored annotations, comma-separated
JOB_LIMIT = "limit"  # batch: candidates per address
JOB_CREATED = "created"  # submission (now_iso)
JOB_STARTED = "started"  # a worker's first start on it (now_iso)
BATCH_JOB = "batch"
HEAVY_JOB = "heavy"
MATRIX_JOB = "matrix"


def now_iso() -> str:
    """A job's timestamps: UTC to the second, ``2026-11-22T10:00:00Z``."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


JOB_EXPIRED = {"ok": False, "skipped": "job expired"}


def start_job(client: redis.Redis, job: str) -> bool:
    """A worker starts on the job: False when its record has expired (the task is skipped, its
    result would have no reader); else ``started`` is set by the job's first task only."""
    if not client.exists(job):
        return False
    client.hsetnx(job, JOB_STARTED, now_iso())
    return True


# ---------------------------------------------------------------------------- records
class JsonText:
    """A JSON document as stored: the gateway sends the bytes as they are (no parse and
    re-encode of a large GeoJSON); ``data`` parses it when a face needs the object."""

    __slots__ = ("body", "_data")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self._data: Any = None

    @property
    def data(self) -> Any:
        if self._data is None:
            self._data = orjson.loads(self.body)
        return self._data


@dataclass(frozen=True)
class ErrorRecord:
    """A worker's :class:`MeridianError`, stored so that the waiting request raises it."""

    kind: ErrorKind
    message: str
    parameter: str | None = None

    @classmethod
    def of(cls, exc: MeridianError) -> ErrorRecord:
        return cls(exc.kind, exc.message, exc.parameter)

    def exception(self) -> MeridianError:
        return MeridianError(self.message, kind=self.kind, parameter=self.parameter)


Record = JsonText | BinaryResult | ErrorRecord
_JSON, _BINARY = b"J", b"B"
_ERROR_FIELD = "__error__"
_ERROR_PREFIX = b'J{"' + _ERROR_FIELD.encode() + b'"'


def pack(result: dict[str, Any] | BinaryResult | ErrorRecord) -> bytes:
    """A service function's result (a JSON document or a binary body), or an error, as stored."""
    if isinstance(result, BinaryResult):
        return _BINARY + result.content_type.encode() + b"\n" + result.body
    if isinstance(result, ErrorRecord):
        error = {"kind": result.kind.name, "message": result.message, "parameter": result.parameter}
        return _JSON + json_bytes({_ERROR_FIELD: error})
    return _JSON + json_bytes(result)


def unpack(raw: bytes | str) -> Record:
    if isinstance(raw, str):
        raise TypeError("result records are bytes: use a Redis client without decode_responses")
    if raw[:1] == _BINARY:
        content_type, _, body = raw[1:].partition(b"\n")
        return BinaryResult(content_type.decode(), body)
    if raw.startswith(_ERROR_PREFIX):
        error = orjson.loads(raw[1:])[_ERROR_FIELD]
        return ErrorRecord(ErrorKind[error["kind"]], error["message"], error.get("parameter"))
    return JsonText(raw[1:])


def is_record(raw: bytes | str) -> bool:
    """Whether ``raw`` is a result record (a wake-up list may also hold a bare wake-up)."""
    return isinstance(raw, bytes) and raw[:1] in (_JSON, _BINARY)


def read_result(raw: bytes | str) -> JsonText | BinaryResult:
    """A stored record for the web layer: an error is raised, a result returned."""
    record = unpack(raw)
    if isinstance(record, ErrorRecord):
        raise record.exception()
    return record


# Push ARGV[1] to every registered waiter's wake-up list, forget the waiters and clear the in-flight
# marker: one round trip. With a third key, ARGV[1] is the record, stored there first (EX ARGV[3]),
# and travels in the wake-up itself; with two, it is a bare wake-up for a record stored beforehand.
# The wake-up lists are not declared in KEYS (fine on one Redis; not for Cluster).
_WAKE_SCRIPT = """
if #KEYS == 3 then redis.call('SET', KEYS[3], ARGV[1], 'EX', tonumber(ARGV[3])) end
local waiters = redis.call('SMEMBERS', KEYS[1])
for _, wake in ipairs(waiters) do
  redis.call('RPUSH', wake, ARGV[1])
  redis.call('EXPIRE', wake, tonumber(ARGV[2]))
end
redis.call('DEL', KEYS[1], KEYS[2])
return #waiters
"""

# A record up to this size travels in the wake-up itself (no second read); a larger one (a
# 1,000 x 1,000 matrix: 14 MB) is stored by a plain SET, which Redis keeps as it received it, and
# each waiter reads it with a GET. Passed through the store script, its bytes would be copied
# into a Lua string, into the stored value and into every wake-up list: 0.15 s of Redis's time
# for 14 MB on the 2-core machine, against microseconds for the SET and one more round trip.
PUSH_RECORD_MAX_BYTES = 128 * 1024
WAKE_UP = b"w"  # a bare wake-up: not a record (is_record), the waiter reads the cache key


def store_result(client: redis.Redis, key: str, result: dict[str, Any] | BinaryResult | ErrorRecord, ttl_s: int) -> int:
    """Store the record, then wake every web request waiting for it; returns how many waited.
    A waiter adds its own wake-up list to ``<key>:waiters`` *before* it looks at the cache (both in
    :func:`claim`), and the record is stored *before* the waiters are read here: whichever comes
    first, no waiter sleeps past a stored result. A record of up to ``PUSH_RECORD_MAX_BYTES`` is
    stored and pushed to the waiters in one script (atomically, one round trip); a larger one is
    stored first and the waiters get a bare wake-up (:data:`WAKE_UP`). The in-flight marker goes
    with the waiters, so an identical request that comes later is answered from the cache, not
    joined to a finished task."""
    record = pack(result)
    wake = client.register_script(_WAKE_SCRIPT)  # EVALSHA, loaded on first use by redis-py
    waiters = [waiters_key(key), inflight_key(key)]
    if len(record) > PUSH_RECORD_MAX_BYTES:
        client.set(key, record, ex=max(1, ttl_s))
        return int(wake(keys=waiters, args=[WAKE_UP, WAKE_TTL_S]))
    return int(wake(keys=[*waiters, key], args=[record, WAKE_TTL_S, max(1, ttl_s)]))


# What a heavy request finds, in one round trip: the stored record (or, above ARGV[5] bytes, that
# it is stored: the caller reads it with a GET, as a script's reply would copy it through a Lua
# string); or, when its queue already holds ARGV[4] (> 0) waiting tasks and no identical task is in
# flight, the queue's depth (nothing registered); or else its wake-up list registered in the
# waiters set and whether it claimed the in-flight marker (then it sends the task) or joined the
# identical task in flight.
# KEYS: cache key, waiters key, in-flight key, then the queue's Redis lists (queueing/depth.py).
_CLAIM_SCRIPT = """
local size = redis.call('STRLEN', KEYS[1])
if size > tonumber(ARGV[5]) then return {'stored'} end
if size > 0 then return {'hit', redis.call('GET', KEYS[1])} end
local limit = tonumber(ARGV[4])
if limit > 0 and redis.call('EXISTS', KEYS[3]) == 0 then
  local depth = 0
  for i = 4, #KEYS do depth = depth + redis.call('LLEN', KEYS[i]) end
  if depth >= limit then return {'full', depth} end
end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
if redis.call('SET', KEYS[3], '1', 'NX', 'EX', tonumber(ARGV[3])) then return {'queue'} end
return {'join'}
"""


@dataclass(frozen=True)
class Claim:
    """What :func:`claim` found: ``outcome`` is ``hit`` (``record`` holds the stored bytes),
    ``stored`` (a record above ``PUSH_RECORD_MAX_BYTES`` is stored: read it with a GET), ``full`` (``depth`` tasks wait in the queue; nothing registered), ``queue`` (registered; this
    request sends the task) or ``join`` (registered; an identical task is in flight)."""

    outcome: str
    record: bytes | None = None
    depth: int = 0


def claim(client: redis.Redis, key: str, wake: str, queue_lists: Sequence[str], max_depth: int) -> Claim:
    """One round trip before a heavy request waits: see ``_CLAIM_SCRIPT``. ``max_depth`` 0 is
    unbounded; a request joining a task in flight adds no task, so it is never refused."""
    script = client.register_script(_CLAIM_SCRIPT)
    reply = script(
        keys=[key, waiters_key(key), inflight_key(key), *queue_lists],
        args=[wake, WAKE_TTL_S, CLAIM_TTL_S, max_depth, PUSH_RECORD_MAX_BYTES],
    )
    outcome = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
    if outcome == "hit":
        return Claim("hit", record=reply[1])
    if outcome == "full":
        return Claim("full", depth=int(reply[1]))
    return Claim(outcome)


# ---------------------------------------------------------------------------- messages
# The web sends these tasks by name; the tasks (tasks/heavy.py, tasks/batch.py) take the same
# arguments in the same order.
#
# Each message carries Celery's ``argsrepr``/``kwargsrepr`` headers (what Flower and the worker's
# log show of a task's arguments). Left to Celery they are ``saferepr`` of the arguments: about
# 0.12 ms of the web request's CPU for an isochrone's (a third of ``send_task``), between the claim
# and the task's LPUSH. The senders write a short label instead: the function and the cache key or
# job, which identify the call (the parameters are what the key hashes).
NO_KWARGS_REPR = "{}"


def args_label(*parts: object) -> str:
    """A task's ``argsrepr``: its identifying arguments, not the parameters or queries."""
    return "(" + ", ".join(repr(part) for part in parts) + ", ...)"


def _send(sender: TaskSender, task: str, args: list[Any], queue: str, *label: object) -> None:
    """One message: no Celery result (the result travels under the cache key or the job's keys)
    and ``label`` as its ``argsrepr``."""
    sender.send_task(
        task, args=args, queue=queue, ignore_result=True, argsrepr=args_label(*label), kwargsrepr=NO_KWARGS_REPR
    )


def send_heavy(sender: TaskSender, call: HeavyCall, key: str, dataset_versions: str) -> None:
    """``meridian.heavy`` on the kind's queue: compute ``call`` into ``key``."""
    args = [call.service_ref, encode(call.params), key, dataset_versions]
    _send(sender, HEAVY_TASK, args, call.kind, call.service_ref, key)


def send_heavy_job(sender: TaskSender, call: HeavyCall, key: str, dataset_versions: str, job: str, ttl_s: int) -> None:
    """``meridian.heavy_job``: as ``meridian.heavy``, and the record copied to the job's result."""
    args = [call.service_ref, encode(call.params), key, job, ttl_s, dataset_versions]
    _send(sender, HEAVY_JOB_TASK, args, call.kind, call.service_ref, job)


def send_matrix_job(
    sender: TaskSender, call: HeavyCall, job: str, rows: int, ttl_s: int, dataset_versions: str
) -> None:
    """``meridian.matrix_job`` on the matrix's queue: the matrix of ``call`` into the job's chunks
    of ``rows`` rows."""
    _send(sender, MATRIX_JOB_TASK, [encode(call.params), job, rows, ttl_s, dataset_versions], call.kind, job, rows)


def send_geocode_chunk(sender: TaskSender, job: str, index: int, queries: list[str], limit: int, ttl_s: int) -> None:
    """``meridian.geocode_chunk`` on queue ``batch``: one chunk of a batch geocoding job (labelled by
    job and index, not the addresses: a client's data stays out of Flower)."""
    _send(sender, GEOCODE_CHUNK_TASK, [job, index, queries, limit, ttl_s], BATCH_QUEUE, job, index)
