"""Flask glue for access control: read the key from each face's header, then let
``accounts.access.AccessControl`` decide. The decisions are the same on both faces.

- Core: only ``Authorization: Bearer <key>``. Another scheme (``Basic ...``), ``Bearer`` without a
  token, or an ``X-API-Key`` header instead -> 401 naming the expected format.
- Gateway: only ``X-API-Key: <key>``.
"""

from __future__ import annotations

from flask import g, request

from accounts.access import unauthorized
from app.runtime import runtime

CORE_HINT = "expected header 'Authorization: Bearer <API_KEY>'"
GATEWAY_HINT = "expected header 'X-API-Key: <API_KEY>'"


def core_key() -> str:
    header = request.headers.get("Authorization")
    if header is None:
        raise unauthorized(f"missing API key: {CORE_HINT}")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized(f"wrong authentication header format: {CORE_HINT}")
    return token.strip()


def gateway_key() -> str:
    key = (request.environ.get("HTTP_X_API_KEY") or "").strip()  # the raw header: no Headers object
    if not key:
        raise unauthorized(f"missing API key: {GATEWAY_HINT}")
    return key


def admit(service: str, key: str, cost: int = 1) -> None:
    """Authenticate, authorize and count one request (raises 401/403/429)."""
    access = runtime().access
    record = g.api_key = access.authenticate(key)  # known before a 403/429, for the request log
    g.quota = access.admit(record, service, cost)
