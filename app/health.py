"""Health: ``/health`` and ``/v1/health`` (status, version, uptime, regions), ``/v1/health/live``
(the process answers) and ``/v1/health/ready`` (the process warm: kernels compiled and datasets
opened, ``engine/warmup.py``; datasets loaded, Redis reachable, a Celery worker answering, the
backend and the suggest backend accepting ``SERVICE_API_KEY``; 503 naming the failing checks).
No key needed."""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypedDict

from flask import Blueprint, Response, current_app

from app.backend import RemoteCore
from app.calls import json_body
from app.errors import error_response
from app.metrics import queue_check
from app.runtime import runtime

# One readiness check: {"ok": bool, "detail": why not (when failing), ...what was checked}.
Check = dict[str, Any]


class _WorkerCheckCache(TypedDict):
    at: float  # time.monotonic() of the check
    result: Check | None


class _BackendCheckCache(TypedDict):
    backend: RemoteCore | None  # the backend that was checked
    at: float
    result: Check | None


bp = Blueprint("health", __name__)
WORKER_CHECK_TTL_S = 2.0
_worker_cache: _WorkerCheckCache = {"at": 0.0, "result": None}
BACKEND_CHECK_TTL_S = 5.0
_backend_cache: _BackendCheckCache = {"backend": None, "at": 0.0, "result": None}

try:
    VERSION = version("meridian")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    VERSION = "0.0.0"


def _status() -> dict[str, Any]:
    rt = runtime()
    return {
        "status": "ok",
        "service": rt.settings.service_name,
        "version": VERSION,
        "environment": rt.settings.environment,
        "uptime_s": round(time.time() - rt.started, 1),
        "backend": rt.settings.service_base_url or "in-process",
        "regions": rt.datasets.summary(),
    }


@bp.get("/health")
@bp.get("/v1/health")
def health() -> Response:
    return json_body(_status())


@bp.get("/v1/health/live")
def live() -> Response:
    return json_body({"status": "ok"})


def _check_workers() -> Check:
    now = time.monotonic()
    if _worker_cache["result"] is not None and now - _worker_cache["at"] < WORKER_CHECK_TTL_S:
        return _worker_cache["result"]
    celery = current_app.extensions.get("celery")
    try:
        replies = celery.control.ping(timeout=1.0, limit=1) if celery else []
        result: dict[str, Any] = {"ok": bool(replies), "workers": len(replies)}
        if not replies:
            result["detail"] = "no Celery worker answered within 1 s"
    except Exception as exc:  # broker down, ...
        result = {"ok": False, "detail": f"Celery unreachable: {type(exc).__name__}"}
    _worker_cache.update({"at": now, "result": result})
    return result


def _check_backend(backend: RemoteCore) -> Check:
    """The backend probed with the service key (``RemoteCore.check``), cached briefly: a probe of
    the suggest URL spends one unit of the service key's quota."""
    now = time.monotonic()
    fresh = now - _backend_cache["at"] < BACKEND_CHECK_TTL_S
    if _backend_cache["backend"] is backend and fresh:
        cached = _backend_cache["result"]
        assert cached is not None  # stored together with its backend
        return cached
    result = backend.check()
    _backend_cache.update({"backend": backend, "at": now, "result": result})
    return result


def readiness() -> dict[str, Check]:
    rt = runtime()
    checks: dict[str, Check] = {"warm": rt.warm.check()}
    regions = rt.datasets.regions()
    checks["datasets"] = {"ok": bool(regions) or rt.backend is not None, "regions": regions}
    if not checks["datasets"]["ok"]:
        checks["datasets"]["detail"] = "no dataset loaded: run `meridian import PATH.osm.pbf`"
    try:
        checks["redis"] = {"ok": bool(rt.redis.ping())}
    except Exception as exc:
        checks["redis"] = {"ok": False, "detail": f"Redis unreachable: {type(exc).__name__}"}
    checks["workers"] = _check_workers()
    checks["queues"] = queue_check()  # depth per queue and active workers (informative)
    if rt.backend is not None:
        checks["backend"] = _check_backend(rt.backend)
    else:
        checks["backend"] = {"ok": True, "mode": "in-process"}
    return checks


@bp.get("/v1/health/ready")
def ready() -> Response:
    checks = readiness()
    failing = [name for name, c in checks.items() if not c["ok"]]
    if failing:
        resp = error_response(
            503, "not ready: " + ", ".join(f"{n} ({checks[n].get('detail', 'failed')})" for n in failing)
        )
        resp.headers["Retry-After"] = "5"
        return resp
    return json_body({"status": "ready", "checks": checks})
