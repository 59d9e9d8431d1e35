"""How deeply a JSON document nests, found without parsing it.

The body guard (``app/bodies.py``) refuses bodies nested deeper than a limit before any parser
sees them: deep nesting makes Python's JSON decoder and encoders raise ``RecursionError``.
Parsing a body only to measure it would build its whole object graph a second time (the endpoint
parses it again), so the depth is read off the brackets: string literals are cut out first (a
bracket inside a string does not nest), then every ``[``/``{`` counts +1 and every ``]``/``}`` -1,
and the deepest running sum is the answer. For valid JSON this is exactly the nesting depth; for
invalid JSON it is some number, and the endpoint's own parser reports the syntax error.
"""

from __future__ import annotations

import re

import numpy as np

# A JSON string literal, escapes included (the unrolled form: linear, no backtracking).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPENING = np.zeros(256, dtype=np.int8)
_OPENING[list(b"]}")] = -1
_OPENING[list(b"[{")] = 1


def nesting_depth(document: bytes) -> int:
    """The deepest nesting of arrays and objects in ``document`` (0 for a scalar)."""
    brackets = _STRING.sub(b"", document).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    steps = _OPENING[np.frombuffer(brackets, dtype=np.uint8)]
    return max(0, int(np.cumsum(steps, dtype=np.int64).max()))
