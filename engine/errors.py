"""The one error table of the engine.

Every failure a client can cause or see is one of these kinds. The web layer renders them
(HTTP status, core error envelope, gateway error body) from this table alone; the engine never
talks HTTP, it only picks the kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class _Kind:
    status: int
    code: str


class ErrorKind(Enum):
    INVALID_PARAMETER = _Kind(400, "INVALID_PARAMETER")
    UNAUTHORIZED = _Kind(401, "UNAUTHORIZED")
    FORBIDDEN = _Kind(403, "FORBIDDEN")
    NOT_FOUND = _Kind(404, "NOT_FOUND")
    METHOD_NOT_ALLOWED = _Kind(405, "METHOD_NOT_ALLOWED")
    NOT_ACCEPTABLE = _Kind(406, "NOT_ACCEPTABLE")
    CONFLICT = _Kind(409, "CONFLICT")
    PAYLOAD_TOO_LARGE = _Kind(413, "PAYLOAD_TOO_LARGE")
    URI_TOO_LONG = _Kind(414, "URI_TOO_LONG")
    UNSUPPORTED_MEDIA_TYPE = _Kind(415, "UNSUPPORTED_MEDIA_TYPE")
    QUOTA_EXCEEDED = _Kind(429, "QUOTA_EXCEEDED")
    INTERNAL = _Kind(500, "INTERNAL_ERROR")
    BAD_GATEWAY = _Kind(502, "BAD_GATEWAY")
    UNAVAILABLE = _Kind(503, "SERVICE_UNAVAILABLE")
    TIMEOUT = _Kind(504, "GATEWAY_TIMEOUT")

    @property
    def status(self) -> int:
        return self.value.status

    @property
    def code(self) -> str:
        return self.value.code

    @classmethod
    def for_status(cls, status: int) -> ErrorKind:
        for kind in cls:
            if kind.status == status:
                return kind
        return cls.INTERNAL if status >= 500 else cls.INVALID_PARAMETER


class MeridianError(Exception):
    """A failure with a kind from the table, a message for humans and, when one parameter is to
    blame, its name. ``retry_after`` (seconds) is sent as ``Retry-After`` on 429/503."""

    kind: ErrorKind = ErrorKind.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        parameter: str | None = None,
        kind: ErrorKind | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.parameter = parameter
        if kind is not None:
            self.kind = kind
        self.retry_after = retry_after

    @property
    def status(self) -> int:
        return self.kind.status


class InvalidParameter(MeridianError):
    kind = ErrorKind.INVALID_PARAMETER


class NotFound(MeridianError):
    kind = ErrorKind.NOT_FOUND


class Unavailable(MeridianError):
    kind = ErrorKind.UNAVAILABLE


class DatasetError(Exception):
    """A dataset cannot be built or loaded (bad input file, wrong format version)."""
