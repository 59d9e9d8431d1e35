"""What a function returns to the web layer: JSON (a dict), JSON text already serialised (a
cached heavy result, sent as stored), or bytes with a content type."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BinaryResult:
    content_type: str
    body: bytes


class JsonText:
    """A JSON document as stored in the cache: the gateway sends the bytes as they are (no parse
    and re-encode of a large GeoJSON); ``data`` parses it when a face needs the object."""

    __slots__ = ("body", "_data")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self._data = None

    @property
    def data(self):
        if self._data is None:
            import json

            self._data = json.loads(self.body)
        return self._data
