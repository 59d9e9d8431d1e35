"""What a service function returns: a JSON document (a dict), or :class:`BinaryResult` for a body
that is not JSON (a static map's image). The same type crosses the queue
(``queueing/protocol.py``) and reaches the web layer, which sends its bytes as they are."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BinaryResult:
    content_type: str
    body: bytes
