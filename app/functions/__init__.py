"""The registry of functions both faces serve.

A :class:`Function` ties together, for one location function: the service name (plans, scopes,
quotas), the core ``cmd``, the query schemas of each face, how to compute it in process, and how
the gateway forwards it to a remote core. Each function's module (``app/functions/<name>.py``)
defines one and its gateway view; :data:`REGISTRY` is filled by importing them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from marshmallow import Schema


@dataclass(frozen=True)
class Function:
    service: str  # name in plans and scopes, and the quota's usage counter
    cmd: str  # the core API's command
    core_schema: type[Schema]  # core query parameters -> params
    run: Callable[[Any, Any], Any]  # (runtime, params) -> dict | BinaryResult
    gateway_to_core: Mapping[str, str] = field(default_factory=dict)  # renamed parameters
    empty_key: str | None = None  # result list whose emptiness means 404 on the gateway
    empty_message: str = "no results found"
    remote: str = "base"  # which backend URL serves it remotely: base | suggest
    cacheable: bool = True  # public HTTP caching (ETag, Cache-Control)
    queue: str | None = None  # heavy functions: the Celery queue (and kind) that computes them
    service_ref: str | None = None  # heavy functions: "engine.services.<module>:run"


def heavy_function(
    *, service: str, cmd: str, core_schema: type[Schema], queue: str, service_ref: str, **options: Any
) -> Function:
    """A function computed by Celery workers on ``queue`` (answered from the Redis cache when it
    can be); its gateway view also accepts ``async=true`` (202 + job)."""
    from app.runtime import heavy

    return Function(
        service=service,
        cmd=cmd,
        core_schema=core_schema,
        run=heavy(queue, service_ref),
        queue=queue,
        service_ref=service_ref,
        **options,
    )


REGISTRY: dict[str, Function] = {}


def register(function: Function) -> Function:
    if function.cmd in REGISTRY:
        raise ValueError(f"function {function.cmd!r} registered twice")
    REGISTRY[function.cmd] = function
    return function
