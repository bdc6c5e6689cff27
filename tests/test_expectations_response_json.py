"""`harness.expectations.response_json`: RFC 6901 pointers admitted only when well formed
with finite values, and compared type-strictly against the response's JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    MODES,
    admit,
    base,
    live_trace,
    only,
    record,
    refuse_one,
    shape_at,
    strict_expects,
    with_expects,
    write_fixture,
)

from harness.expectations.base import Grade
from harness.expectations.registry import grade
from harness.expectations.response_json import json_equal

# --- admission: expects.response_json -------------------------------------------------------------


@MODES
@pytest.mark.parametrize("pointer", ["a/b", "#/a", " /a", "a"])
def test_pointer_not_starting_with_a_slash_is_refused(
    tmp_path: Path, mode: str, pointer: str
) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"response_json": {"/ok": 1, pointer: 1}}),
        "$.expects.response_json.a"
        if pointer == "a"
        else f"$.expects.response_json[{json.dumps(pointer)}]",
        f'JSON pointer {pointer!r} must be "" (the whole response) or start with "/" (RFC 6901)',
        mode,
    )


@MODES
@pytest.mark.parametrize("pointer", ["/a~", "/a~2", "/~x/b", "/a/~/b"])
def test_pointer_with_a_bad_escape_is_refused(tmp_path: Path, mode: str, pointer: str) -> None:
    refuse_one(
        tmp_path,
        with_expects(mode, {"response_json": {pointer: "x"}}),
        f"$.expects.response_json[{json.dumps(pointer)}]",
        f"JSON pointer {pointer!r} has a '~' not followed by 0 or 1 "
        "(RFC 6901: ~0 stands for '~', ~1 for '/')",
        mode,
    )


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_expected_value_is_refused(tmp_path: Path, constant: str) -> None:
    text = json.dumps(live_trace(expects={"response_json": {"/a": ["PLACEHOLDER"]}}))
    text = text.replace('"PLACEHOLDER"', constant)
    refuse_one(
        tmp_path,
        text,
        '$.expects.response_json["/a"]',
        "NaN and Infinity are not JSON: no response can equal them",
        "live",
    )


def test_response_json_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        live_trace(expects={"response_json": ["/a"]}),
        "$.expects.response_json",
        "Expected `object`, got `array`",
        "live",
    )


@MODES
@pytest.mark.parametrize(
    "expected",
    [
        {"": {"city": "Paris"}},
        {"/city": "Paris", "/tags/0": "capital", "/a~1b": 1, "/m~0n": None, "/": False},
        {"/count": 1.0},
    ],
)
def test_response_json_alone_is_admitted(
    tmp_path: Path, mode: str, expected: dict[str, Any]
) -> None:
    case = admit(
        write_fixture(tmp_path, "case.json", base(mode, expects={"response_json": expected})), mode
    )  # type: ignore[arg-type]
    assert case.trace.expects is not None
    assert case.trace.expects.response_json == expected
    # Types survive parsing: 1.0 stays a float, so grading can keep 1 and 1.0 apart.
    if "/count" in expected:
        assert type(case.trace.expects.response_json["/count"]) is float


# --- grading: response_json -----------------------------------------------------------------------


def rj(response: str, pointers: dict[str, Any]) -> list[Grade]:
    return grade(strict_expects({"response_json": pointers}), record(response))


def test_whole_response_as_json() -> None:
    g = only(rj('  {"city": "Paris", "n": [1, 2]}\n', {"/city": "Paris"}))
    assert shape_at(g) == (
        'response_json("/city")',
        True,
        'got "Paris"',
        "response",
        '$.expects.response_json["/city"]',
    )


def test_empty_pointer_is_the_whole_document() -> None:
    g = only(rj('{"a": [1, {"b": null}]}', {"": {"a": [1, {"b": None}]}}))
    assert (g.passed, g.detail, g.field) == (
        True,
        'got {"a":[1,{"b":null}]}',
        '$.expects.response_json[""]',
    )


def test_fenced_json_block_is_used_when_the_response_is_not_json() -> None:
    response = 'Here you go:\n```json\n{"city": "Paris"}\n```\nAnything else?'
    assert only(rj(response, {"/city": "Paris"})).passed


def test_only_the_first_fenced_json_block_counts() -> None:
    response = '```json\n{"v": 1}\n```\nand\n```json\n{"v": 2}\n```'
    assert only(rj(response, {"/v": 1})).passed
    assert not only(rj(response, {"/v": 2})).passed


def test_unclosed_fence_takes_the_rest() -> None:
    assert only(rj('Result:\n```json\n{"v": true}\n', {"/v": True})).passed


@pytest.mark.parametrize(
    "response",
    [
        "",
        "The city is Paris.",
        '```\n{"city": "Paris"}\n```',  # a fence without the json tag
        '```json\n{"city": }\n```',
        '{"city": NaN}',
        "{'city': 'Paris'}",
    ],
)
def test_response_that_is_not_json_fails_every_pointer(response: str) -> None:
    grades = rj(response, {"/city": "Paris", "": {}})
    assert [(g.passed, g.detail) for g in grades] == [(False, "response is not JSON")] * 2


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("1", 1.0),
        ("1.0", 1),
        ("true", 1),
        ("1", True),
        ("false", 0),
        ("0", False),
        ('"1"', 1),
        ("null", False),
        ("[1, 2]", [1.0, 2]),
        ("[1, 2]", [1, 2, 3]),
        ('{"a": 1}', {"a": True}),
        ('{"a": 1}', {"a": 1, "b": None}),
        ('{"a": [{"b": 2}]}', {"a": [{"b": 2.0}]}),
    ],
)
def test_equality_is_type_strict(document: str, expected: Any) -> None:
    g = only(rj(json.dumps({"v": json.loads(document)}), {"/v": expected}))
    assert not g.passed
    assert g.detail.startswith(f"got {json.dumps(json.loads(document), separators=(',', ':'))}")
    assert g.detail.endswith(f"; expected {json.dumps(expected, separators=(',', ':'))}")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("1", 1),
        ("1.5", 1.5),
        ("1e2", 100.0),
        ("-0.0", 0.0),
        ("true", True),
        ("null", None),
        ('"ünï ☃"', "ünï ☃"),
        ('{"b": [1, 2.5, {"c": false}], "a": null}', {"a": None, "b": [1, 2.5, {"c": False}]}),
    ],
)
def test_equal_values_pass(document: str, expected: Any) -> None:
    assert only(rj('{"v": ' + document + "}", {"/v": expected})).passed


def test_json_equal_directly() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1, 2.0]})
    assert not json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal(None, False)
    assert not json_equal([1], (1,))


def test_pointer_escapes() -> None:
    document = json.dumps({"a/b": 1, "m~n": 2, "~1": 3, "": 4, " ": 5})
    grades = rj(document, {"/a~1b": 1, "/m~0n": 2, "/~01": 3, "/": 4, "/ ": 5, "/a~1c": 1})
    assert [(g.check, g.passed) for g in grades] == [
        ('response_json("/a~1b")', True),
        ('response_json("/m~0n")', True),
        ('response_json("/~01")', True),
        ('response_json("/")', True),
        ('response_json("/ ")', True),
        ('response_json("/a~1c")', False),
    ]
    assert grades[-1].detail == "pointer not present"


@pytest.mark.parametrize(
    ("pointer", "detail"),
    [
        ("/items/0", 'got "a"'),
        ("/items/2/k", "got [10,20]"),
        ("/items/2/k/1", "got 20"),
        ("/items/3", "pointer not present"),
        ("/items/01", "pointer not present"),
        ("/items/-", "pointer not present"),
        ("/items/+1", "pointer not present"),
        ("/items/-1", "pointer not present"),
        ("/items/ 1", "pointer not present"),
        ("/items/0/x", "pointer not present"),
        ("/missing", "pointer not present"),
        ("/items/2/k/0/deeper", "pointer not present"),
    ],
)
def test_array_indices_and_missing_pointers(pointer: str, detail: str) -> None:
    document = json.dumps({"items": ["a", "b", {"k": [10, 20]}]})
    g = only(rj(document, {pointer: "never equal"}))
    assert not g.passed
    assert g.detail.split("; expected")[0] == detail


def test_array_index_that_exists_passes() -> None:
    document = json.dumps({"items": ["a", "b", {"k": [10, 20]}]})
    assert only(rj(document, {"/items/2/k/1": 20})).passed


def test_pointer_into_a_top_level_array() -> None:
    assert only(rj("[[0, 1], [2, 3]]", {"/1/0": 2})).passed


def test_invalid_pointer_fails_when_graded_directly() -> None:
    g = only(rj('{"a": 1}', {"a": 1}))
    assert (g.passed, g.detail) == (False, "invalid JSON pointer")


def test_long_values_are_clipped_in_details() -> None:
    g = only(rj(json.dumps({"v": "x" * 5000}), {"/v": "y"}))
    assert not g.passed
    assert len(g.detail) < 1200


@pytest.mark.skipif(sys.getrecursionlimit() > 100_000, reason="recursion limit too high")
def test_deeply_nested_response_fails_rather_than_crashing() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    grades = rj(deep, {"": []})
    assert not only(grades).passed
