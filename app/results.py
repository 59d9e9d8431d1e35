"""What a function returns to the web layer: JSON (a dict) or bytes with a content type."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BinaryResult:
    content_type: str
    body: bytes
