"""The checks every file rtgauge reads goes through (rtgauge/store/validate.py), at their
limits: the nesting depth read from the text agrees with the depth of the parsed value
(brackets inside strings, escaped quotes), a NUL is found and placed, 64-bit integers."""

from __future__ import annotations

import json

import pytest

from rtgauge.errors import UserError
from rtgauge.store.validate import (MAX_DEPTH, depth_exceeds, loads_strict, nul_at, parse_document,
                                    text_depth_exceeds)


def nested(depth: int, inner: str = "1") -> str:
    """`depth` containers, lists and objects alternating, around `inner`."""
    text = inner
    for i in range(depth):
        text = f"[{text}]" if i % 2 else f'{{"k": {text}}}'
    return text


@pytest.mark.parametrize("inner", ["1", '"a [[[ { string"', '"an \\" escaped quote [[["', '"\\\\\\\\"', "[]"])
@pytest.mark.parametrize("depth", [1, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_the_texts_depth_is_the_values_depth(depth, inner):
    text = nested(depth, inner)
    value = json.loads(text)
    assert text_depth_exceeds(text) == depth_exceeds(value)
    containers = depth + (1 if inner == "[]" else 0)
    assert text_depth_exceeds(text) == (containers > MAX_DEPTH)


def test_a_deep_document_is_one_sentence_and_a_string_of_brackets_is_not_deep():
    with pytest.raises(UserError, match="nests deeper"):
        parse_document(nested(MAX_DEPTH + 1).encode(), "doc.json")
    doc = parse_document(json.dumps({"name": "[" * 10_000}).encode(), "doc.json")
    assert doc == {"name": "[" * 10_000}


def test_a_nul_is_found_and_placed_and_an_escaped_backslash_u_is_not_one():
    assert nul_at(json.loads('{"a": [1, {"b": "x\\u0000y"}]}')) == "a/1/b"
    assert nul_at(json.loads('{"a\\u0000": 1}')) == "'a\\x00'"
    assert nul_at({"a": "\\u0000 written out"}) is None       # six characters, no NUL
    assert nul_at({"a": list(range(1000))}) is None


@pytest.mark.parametrize("text, ok", [("9223372036854775807", True), ("-9223372036854775807", True),
                                      ("9223372036854775808", False), ("-9223372036854775808", False),
                                      ("1" * 25, False), ("-0", True)])
def test_integers_beyond_64_bits_are_refused(text, ok):
    if ok:
        assert loads_strict(text) == int(text)
    else:
        with pytest.raises(ValueError, match="does not fit 64 bits"):
            loads_strict(text)
