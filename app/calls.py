"""Running a function for a face and shaping its HTTP answer.

Both faces run the same engine service function (``Runtime.run``: in process or by a worker). The gateway forwards to the
remote core instead when ``SERVICE_BASE_URL`` is set. Cacheable answers carry an ``ETag`` made
of the dataset versions and the normalised parameters, and ``Cache-Control: private, max-age=N``
with ``Vary: X-API-Key, Authorization``; a matching ``If-None-Match`` gets 304 before any
computation. Every such answer needs a key, so it is ``private``: a shared cache (a CDN, a
company proxy) must not store it and hand it out without one, past the key check and the quota;
the client's own cache still may.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from flask import Request, Response, g, request

from app.core_format import to_core
from app.registry import Function
from app.results import BinaryResult, JsonText
from app.runtime import Runtime, runtime
from app.validation import TRANSPORT_PARAMETERS
from engine.codec import json_bytes
from engine.errors import NotFound


def _etag(rt: Runtime, function: Function, req: Request) -> str:
    """The same for the same parameters in any order (the core's ``cmd`` left out, so both faces
    agree) on the same data. Made of the raw ``name=value`` pieces of the query string, sorted:
    unambiguous, as a piece cannot hold the ``&`` that separates them, and no decoding needed; a
    value written with other escapes gets another ETag (a cache miss, never a wrong match). A
    request with a body (``POST /v1/matrix``) has its parameters there: its bytes are part of it."""
    pieces = sorted(
        piece
        for piece in req.environ.get("QUERY_STRING", "").split("&")
        if piece and piece.partition("=")[0] not in TRANSPORT_PARAMETERS
    )
    raw = f"{function.cmd}|{rt.dataset_versions()}|{'&'.join(pieces)}"
    digest = hashlib.sha1(raw.encode())
    body = req.get_data(cache=True)
    if body:
        digest.update(b"|")
        digest.update(body)
    return digest.hexdigest()


def _cache_headers(rt: Runtime, resp: Response, function: Function, etag: str | None) -> Response:
    if function.cacheable and etag:
        resp.set_etag(etag)
        resp.headers["Cache-Control"] = f"private, max-age={rt.settings.http_max_age_s}"
        resp.headers["Vary"] = "X-API-Key, Authorization"
    else:
        resp.headers["Cache-Control"] = "private, no-store"
    return resp


def _not_modified(rt: Runtime, function: Function) -> tuple[str | None, Response | None]:
    if not function.cacheable:
        return None, None
    etag = _etag(rt, function, request)
    if "HTTP_IF_NONE_MATCH" in request.environ and request.if_none_match.contains(etag):
        return etag, _cache_headers(rt, Response(status=304), function, etag)
    return etag, None


def json_body(body: Any, status: int = 200) -> Response:
    """A JSON answer (orjson: compact UTF-8, numpy scalars as numbers, NaN as null)."""
    return Response(json_bytes(body), status=status, content_type="application/json")


def _answer(rt: Runtime, function: Function, compute: Callable[[], Any], render: Callable[[Any], Response]) -> Response:
    """Both faces: 304 for a matching ``If-None-Match`` before any work, binary bodies as they
    are, caching headers on every answer; ``render`` shapes a JSON result for its face."""
    etag, early = _not_modified(rt, function)
    if early is not None:
        return early
    result = compute()
    if isinstance(result, BinaryResult):
        return _cache_headers(rt, Response(result.body, mimetype=result.content_type), function, etag)
    return _cache_headers(rt, render(result), function, etag)


def gateway_answer(function: Function, params: Any) -> Response:
    rt = runtime()

    def compute() -> Any:
        if rt.backend is None:
            return rt.run(function, params)
        args = [(k, v) for k, v in request.args.items(multi=True) if k not in TRANSPORT_PARAMETERS]
        return rt.backend.call(function, args, getattr(g, "request_id", None))

    def render(result: Any) -> Response:
        if function.empty_key is not None:  # only then is a stored document parsed (a matrix's is MBs)
            data = result.data if isinstance(result, JsonText) else result
            if not data.get(function.empty_key):
                raise NotFound(function.empty_message)
        if isinstance(result, JsonText):  # a stored document, sent as it is
            return Response(result.body, mimetype="application/json")
        return json_body(result)

    return _answer(rt, function, compute, render)


def core_answer(function: Function, params: Any) -> Response:
    rt = runtime()

    def render(result: Any) -> Response:
        data = result.data if isinstance(result, JsonText) else result
        return json_body({rt.settings.service_name: {"cmd": function.cmd, "version": "1", "response": to_core(data)}})

    return _answer(rt, function, lambda: rt.run(function, params), render)
