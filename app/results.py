"""What a function returns to the web layer (:data:`FunctionResult`): JSON (a dict), JSON text
already serialised (a cached heavy result, sent as stored: ``queueing.protocol.JsonText``), or
bytes with a content type (``engine.results.BinaryResult``, the one binary type from the engine
through the queue to the answer)."""

from __future__ import annotations

from typing import Any

from engine.results import BinaryResult
from queueing.protocol import JsonText

FunctionResult = dict[str, Any] | JsonText | BinaryResult

__all__ = ["BinaryResult", "FunctionResult", "JsonText"]
