"""How heavy results sit in Redis: JSON documents and binary bodies (images) in one format.

``J<json>`` for a dict, ``B<content-type>\\n<bytes>`` for a binary body. Shared by the tasks
(writers) and the web dispatch (reader)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import redis

from engine.codec import json_bytes


@dataclass(frozen=True)
class Binary:
    content_type: str
    body: bytes


def pack(result: Any) -> bytes:
    if isinstance(result, dict) and set(result) == {"content_type", "body"} and isinstance(result["body"], bytes):
        return b"B" + result["content_type"].encode() + b"\n" + result["body"]
    if isinstance(result, Binary):
        return b"B" + result.content_type.encode() + b"\n" + result.body
    return b"J" + json_bytes(result)


def unpack(raw: bytes) -> Any:
    if raw[:1] == b"B":
        content_type, _, body = raw[1:].partition(b"\n")
        return Binary(content_type.decode(), body)
    return orjson.loads(raw[1:])


WAKE_TTL_S = 60


def waiters_key(key: str) -> str:
    return f"{key}:waiters"


# Store, wake every registered waiter, forget the waiters and clear the in-flight marker: one
# round trip. The wake-up lists are not declared in KEYS (fine on one Redis; not for Cluster).
_STORE_SCRIPT = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', tonumber(ARGV[2]))
local waiters = redis.call('SMEMBERS', KEYS[2])
for _, wake in ipairs(waiters) do
  redis.call('RPUSH', wake, 1)
  redis.call('EXPIRE', wake, tonumber(ARGV[3]))
end
redis.call('DEL', KEYS[2], KEYS[3])
return #waiters
"""
_store_scripts: dict[int, redis.commands.core.Script] = {}


def inflight_key(key: str) -> str:
    return f"{key}:inflight"


def store_result(client: redis.Redis, key: str, result: Any, ttl_s: int) -> int:
    """Store the result, then wake every web request waiting for it; returns how many waited.

    A waiter adds its own wake-up list to ``<key>:waiters`` *before* it looks at the cache, and the
    result is stored *before* the waiters are read here (atomically, in one script): whichever
    comes first, no waiter sleeps past a stored result. The in-flight marker goes with it, so an
    identical request that comes later is answered from the cache, not joined to a finished task."""
    script = _store_scripts.get(id(client))
    if script is None:
        script = _store_scripts[id(client)] = client.register_script(_STORE_SCRIPT)
    return int(script(keys=[key, waiters_key(key), inflight_key(key)], args=[pack(result), max(1, ttl_s), WAKE_TTL_S]))
