"""How heavy results sit in Redis: JSON documents and binary bodies (images) in one format.

``J<json>`` for a dict, ``B<content-type>\\n<bytes>`` for a binary body. Shared by the tasks
(writers) and the web dispatch (reader)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis


@dataclass(frozen=True)
class Binary:
    content_type: str
    body: bytes


def pack(result: Any) -> bytes:
    if isinstance(result, dict) and set(result) == {"content_type", "body"} and isinstance(result["body"], bytes):
        return b"B" + result["content_type"].encode() + b"\n" + result["body"]
    if isinstance(result, Binary):
        return b"B" + result.content_type.encode() + b"\n" + result.body
    return b"J" + json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode()


def unpack(raw: bytes) -> Any:
    if raw[:1] == b"B":
        content_type, _, body = raw[1:].partition(b"\n")
        return Binary(content_type.decode(), body)
    return json.loads(raw[1:])


WAKE_TTL_S = 60


def waiters_key(key: str) -> str:
    return f"{key}:waiters"


def store_result(client: redis.Redis, key: str, result: Any, ttl_s: int) -> None:
    """Store the result, then wake every web request waiting for it.

    A waiter adds its own wake-up list to ``<key>:waiters`` *before* it looks at the cache, and the
    result is stored *before* the waiters are read here: whichever comes first, no waiter sleeps
    past a stored result."""
    client.set(key, pack(result), ex=max(1, ttl_s))
    waiters = client.smembers(waiters_key(key))
    if waiters:
        pipe = client.pipeline(transaction=False)
        for wake in waiters:
            pipe.rpush(wake, 1)
            pipe.expire(wake, WAKE_TTL_S)
        pipe.delete(waiters_key(key))
        pipe.execute()
