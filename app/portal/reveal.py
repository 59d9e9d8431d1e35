"""A new key and its API Secret, shown once after a redirect (post/redirect/get).

The POST that issues a key stores what the next page shows and redirects to it; that page reads
it and deletes it in one Redis command (``GETDEL``), so a reload says "shown once" instead of
posting the form again and issuing another key.

Neither store alone holds a usable secret: Redis keeps the text XOR-ed with a random pad of the
same length, for :data:`TTL_S` at most, under a random id bound to the account; the pad travels
in the user's signed session cookie. Whoever reads Redis sees random bytes; whoever has the
cookie but not Redis (or comes after the first read) sees nothing."""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any

import redis
from flask import session

TTL_S = 300  # long enough to follow the redirect, short enough that an abandoned page expires
SESSION_FIELD = "reveal_pad"


def _xor(data: bytes, pad: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, pad, strict=True))


class Reveal:
    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self.client = client
        self.ns = namespace

    def _key(self, account_id: int, token: str) -> str:
        return f"{self.ns}:portal:reveal:{account_id}:{token}"

    def put(self, account_id: int, payload: dict[str, Any]) -> str:
        """Store ``payload`` for one read by ``account_id``; the id of the page that shows it.
        Raises ``redis.RedisError`` when Redis cannot take it (the caller then shows it at once)."""
        data = json.dumps(payload).encode()
        pad = secrets.token_bytes(len(data))
        token = secrets.token_urlsafe(18)
        self.client.set(self._key(account_id, token), _xor(data, pad), ex=TTL_S)
        session[SESSION_FIELD] = {"token": token, "pad": base64.b64encode(pad).decode()}
        return token

    def take(self, account_id: int, token: str) -> dict[str, Any] | None:
        """The payload of ``token``, once; None when it was read already, expired, belongs to
        another account or session, or Redis is away."""
        stored = session.get(SESSION_FIELD)
        if not isinstance(stored, dict) or stored.get("token") != token:
            return None
        session.pop(SESSION_FIELD, None)
        try:
            data = self.client.getdel(self._key(account_id, token))
        except redis.RedisError:
            return None
        if not isinstance(data, bytes):
            return None
        pad = base64.b64decode(stored.get("pad", ""))
        if len(pad) != len(data):
            return None
        payload: dict[str, Any] = json.loads(_xor(data, pad))
        return payload
