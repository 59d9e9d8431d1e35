"""app.json_depth: the nesting depth read off the brackets equals the depth of the parsed document."""

from __future__ import annotations

import json
import random

import pytest

from app.json_depth import nesting_depth


def parsed_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((parsed_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((parsed_depth(v) for v in value), default=0)
    return 0


def random_document(rng: random.Random, depth: int) -> object:
    """Nested objects and arrays whose strings hold brackets, quotes and backslashes."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([1, 2.5, None, True, "plain", '{"[', 'a \\"] }', "\\", "]]]}}}", "ünïcode ["])
    if rng.random() < 0.5:
        return [random_document(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {
        rng.choice(["k", "[", '"}', "\\"]) + str(i): random_document(rng, depth - 1) for i in range(rng.randint(0, 3))
    }


@pytest.mark.parametrize("seed", range(200))
def test_depth_matches_the_parsed_document(seed):
    rng = random.Random(seed)
    document = random_document(rng, rng.randint(0, 12))
    for text in (json.dumps(document), json.dumps(document, ensure_ascii=False, indent=2)):
        assert nesting_depth(text.encode()) == parsed_depth(json.loads(text)), text


@pytest.mark.parametrize(
    "body, depth",
    [
        (b"1", 0),
        (b'"[[[{{{"', 0),
        (b"[]", 1),
        (b'{"a": "\\"]"}', 1),
        (b'[[["\\\\"], {"b": [1]}]]', 4),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, 5000),
        (b"", 0),
    ],
)
def test_depth_of_known_documents(body, depth):
    assert nesting_depth(body) == depth


def test_invalid_json_gives_a_depth_and_no_error():
    assert nesting_depth(b'{"unterminated: [[[') == 4  # an unterminated string cuts nothing
    assert nesting_depth(b"]]]] [") == 0
    assert nesting_depth(b"\xff\xfe[{") == 2
