"""The registry of functions both faces serve.

A :class:`Function` is a record: for one location function, the service name (plans, scopes,
quotas), the core ``cmd``, the core's query schema, and where it is computed -- in this process
(``run``) or by a Celery worker on its queue (``queue`` + ``service_ref``), or both: in process
when ``inline(params)`` says the request is small (the matrix). Which of the two happens is
decided in one place, :meth:`app.runtime.Runtime.run`. Each function's module
(``app/functions/<name>.py``) defines one and its gateway view; :data:`REGISTRY` is filled by
importing them.
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
    run: Callable[[Any, Any], Any] | None = None  # computed in process: (runtime, params) -> dict | BinaryResult
    queue: str | None = None  # queued functions: the Celery queue (and kind) that computes them
    service_ref: str | None = None  # queued functions: "engine.services.<module>:run"
    gateway_to_core: Mapping[str, str] = field(default_factory=dict)  # renamed parameters
    empty_key: str | None = None  # result list whose emptiness means 404 on the gateway
    empty_message: str = "no results found"
    remote: str = "base"  # which backend URL serves it remotely: base | suggest
    cacheable: bool = True  # public HTTP caching (ETag, Cache-Control)
    inline: Callable[[Any], bool] | None = None  # queued functions with run too: params small enough for run

    def __post_init__(self) -> None:
        both = self.run is not None and self.queue is not None
        if (
            (self.run is None and self.queue is None)
            or (both and self.inline is None)
            or (self.queue is None) != (self.service_ref is None)
        ):
            raise ValueError(
                f"function {self.cmd!r}: give either run, or queue and service_ref (both, with inline, "
                "to compute small requests in process)"
            )

    @property
    def queued(self) -> bool:
        """Computed by a Celery worker (answered from the Redis cache when it can be); its gateway
        view also accepts ``async=true`` (202 + job)."""
        return self.queue is not None


REGISTRY: dict[str, Function] = {}


def register(function: Function) -> Function:
    if function.cmd in REGISTRY:
        raise ValueError(f"function {function.cmd!r} registered twice")
    REGISTRY[function.cmd] = function
    return function
