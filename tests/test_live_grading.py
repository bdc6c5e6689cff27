"""Grading the expectations for live runs: `workspace`, `budget` and `response_json`.

Workspace checks read a real temporary workspace and never follow a path out of it;
budget bounds are inclusive; `response_json` compares type-strictly at RFC 6901 pointers.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _support import echo_call, expects, fixture, record, text_step, trace_of, turn

from harness.admission import empty_run_passes
from harness.expectations.base import Grade
from harness.expectations.registry import Expects, grade
from harness.expectations.response_json import json_equal
from harness.fixture import parse_fixture
from harness.run_record import RunRecord

NO_WORKSPACE = "no workspace to inspect"
ESCAPES = "path escapes workspace"
SYMLINK_ESCAPES = "path escapes workspace: a symlink leads outside the workspace"


def only(grades: list[Grade]) -> Grade:
    assert len(grades) == 1, grades
    return grades[0]


def shape(g: Grade) -> tuple[str, bool, str, str, str]:
    return (g.check, g.passed, g.detail, g.category, g.field)


def ws(**block: Any) -> Expects:
    return expects(workspace=block)


def strict_expects(data: dict[str, Any]) -> Expects:
    """Expectations parsed from JSON text, exactly as admission parses them."""
    trace = parse_fixture(
        json.dumps({"model_name": "m", "turns": [], "expects": data}), "case.json"
    )
    assert trace.expects is not None
    return trace.expects


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


# --- workspace: file_exists -------------------------------------------------------------------


def test_file_exists_passes_for_a_regular_file(workspace: Path) -> None:
    (workspace / "out.txt").write_text("x", encoding="utf-8")
    g = only(grade(ws(file_exists=["out.txt"]), record(), workspace))
    assert shape(g) == (
        'file_exists("out.txt")',
        True,
        "present",
        "side_effect",
        "$.expects.workspace.file_exists[0]",
    )


def test_file_exists_in_a_sub_directory(workspace: Path) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "a" / "b" / "c.txt").write_text("", encoding="utf-8")
    grades = grade(ws(file_exists=["a/b/c.txt", "./a//b/c.txt"]), record(), workspace)
    assert [g.passed for g in grades] == [True, True]


def test_file_exists_fails_when_missing(workspace: Path) -> None:
    g = only(grade(ws(file_exists=["out.txt"]), record(), workspace))
    assert (g.passed, g.detail) == (False, "missing")


def test_file_exists_fails_for_a_directory(workspace: Path) -> None:
    (workspace / "out").mkdir()
    g = only(grade(ws(file_exists=["out"]), record(), workspace))
    assert (g.passed, g.detail) == (False, "present but not a regular file")


def test_file_exists_follows_a_symlink_that_stays_inside(workspace: Path) -> None:
    (workspace / "real.txt").write_text("x", encoding="utf-8")
    (workspace / "alias.txt").symlink_to("real.txt")
    assert only(grade(ws(file_exists=["alias.txt"]), record(), workspace)).passed


# --- workspace: file_absent -------------------------------------------------------------------


def test_file_absent_passes_when_nothing_is_there(workspace: Path) -> None:
    g = only(grade(ws(file_absent=["secret.txt"]), record(), workspace))
    assert shape(g) == (
        'file_absent("secret.txt")',
        True,
        "absent",
        "side_effect",
        "$.expects.workspace.file_absent[0]",
    )


@pytest.mark.parametrize("kind", ["file", "directory", "dangling-symlink"])
def test_file_absent_fails_when_anything_is_there(workspace: Path, kind: str) -> None:
    target = workspace / "secret.txt"
    if kind == "file":
        target.write_text("x", encoding="utf-8")
    elif kind == "directory":
        target.mkdir()
    else:
        target.symlink_to("nowhere.txt")
    g = only(grade(ws(file_absent=["secret.txt"]), record(), workspace))
    assert (g.passed, g.detail) == (False, "unexpectedly present")


# --- workspace: file_contains -----------------------------------------------------------------


def test_file_contains_one_grade_per_needle(workspace: Path) -> None:
    (workspace / "notes.md").write_text("alpha beta ☃\n", encoding="utf-8")
    grades = grade(ws(file_contains={"notes.md": ["alpha", "gamma", "☃"]}), record(), workspace)
    assert [shape(g) for g in grades] == [
        (
            'file_contains("notes.md", "alpha")',
            True,
            "found",
            "side_effect",
            '$.expects.workspace.file_contains["notes.md"][0]',
        ),
        (
            'file_contains("notes.md", "gamma")',
            False,
            'not found in file: "alpha beta ☃\\n"',
            "side_effect",
            '$.expects.workspace.file_contains["notes.md"][1]',
        ),
        (
            'file_contains("notes.md", "☃")',
            True,
            "found",
            "side_effect",
            '$.expects.workspace.file_contains["notes.md"][2]',
        ),
    ]


def test_file_contains_is_case_sensitive(workspace: Path) -> None:
    (workspace / "a.txt").write_text("Hello", encoding="utf-8")
    assert not only(grade(ws(file_contains={"a.txt": ["hello"]}), record(), workspace)).passed


def test_file_contains_identifier_path_uses_a_dot_segment(workspace: Path) -> None:
    (workspace / "README").write_text("ok", encoding="utf-8")
    g = only(grade(ws(file_contains={"README": ["ok"]}), record(), workspace))
    assert g.field == "$.expects.workspace.file_contains.README[0]"


@pytest.mark.parametrize(
    ("make", "detail"),
    [
        (lambda p: None, "cannot read file: missing"),
        (lambda p: p.mkdir(), "cannot read file: not a regular file"),
        (
            lambda p: p.write_bytes(b"ok \xff\xfe"),
            "cannot read file: not UTF-8 (invalid byte at offset 3)",
        ),
    ],
    ids=["missing", "directory", "not-utf8"],
)
def test_file_contains_unreadable_fails_with_the_reason(
    workspace: Path, make: Any, detail: str
) -> None:
    make(workspace / "data")
    grades = grade(ws(file_contains={"data": ["ok", "x"]}), record(), workspace)
    assert [(g.passed, g.detail) for g in grades] == [(False, detail), (False, detail)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_file_contains_never_opens_a_fifo(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    g = only(grade(ws(file_contains={"pipe": ["x"]}), record(), workspace))
    assert (g.passed, g.detail) == (False, "cannot read file: not a regular file")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_file_contains_permission_denied(workspace: Path) -> None:
    target = workspace / "locked.txt"
    target.write_text("secret", encoding="utf-8")
    target.chmod(0)
    try:
        g = only(grade(ws(file_contains={"locked.txt": ["secret"]}), record(), workspace))
    finally:
        target.chmod(0o600)
    assert (g.passed, g.detail) == (False, "cannot read file: Permission denied")


# --- workspace: escapes and no workspace --------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a file the grader must never read."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    return directory


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_symlinked_directory_leading_out_fails_every_check(workspace: Path, outside: Path) -> None:
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    e = ws(
        file_exists=["link/secret.txt"],
        file_absent=["link/secret.txt"],
        file_contains={"link/secret.txt": ["TOP SECRET", "nothing"]},
    )
    grades = grade(e, record(), workspace)
    assert [(g.check, g.passed, g.detail) for g in grades] == [
        ('file_exists("link/secret.txt")', False, SYMLINK_ESCAPES),
        ('file_absent("link/secret.txt")', False, SYMLINK_ESCAPES),
        ('file_contains("link/secret.txt", "TOP SECRET")', False, SYMLINK_ESCAPES),
        ('file_contains("link/secret.txt", "nothing")', False, SYMLINK_ESCAPES),
    ]
    assert all("TOP SECRET" not in g.detail for g in grades)
    assert snapshot(outside) == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlinked_file_leading_out_is_never_read(workspace: Path, outside: Path) -> None:
    (workspace / "notes.txt").symlink_to(outside / "secret.txt")
    g = only(grade(ws(file_contains={"notes.txt": ["TOP"]}), record(), workspace))
    assert (g.passed, g.detail) == (False, SYMLINK_ESCAPES)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_symlink_to_an_outside_fifo_neither_blocks_nor_opens_it(
    workspace: Path, outside: Path
) -> None:
    # Opening the FIFO for reading would block until a writer came: the grade must be
    # decided from the path alone.
    os.mkfifo(outside / "pipe")
    (workspace / "pipe").symlink_to(outside / "pipe")
    result: list[Grade] = []
    worker = threading.Thread(
        target=lambda: result.extend(
            grade(ws(file_contains={"pipe": ["x"]}, file_exists=["pipe"]), record(), workspace)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "grading blocked on a FIFO outside the workspace"
    assert [(g.passed, g.detail) for g in result] == [(False, SYMLINK_ESCAPES)] * 2


@pytest.mark.parametrize("relative", ["../outside/secret.txt", "/etc/passwd", "", "a/../../x"])
def test_lexically_escaping_paths_fail_without_touching_anything(
    workspace: Path, outside: Path, relative: str
) -> None:
    # Admission refuses these; graded directly through the API they still fail closed.
    e = ws(file_exists=[relative], file_absent=[relative], file_contains={relative: ["TOP"]})
    grades = grade(e, record(), workspace)
    assert [(g.passed, g.detail) for g in grades] == [(False, ESCAPES)] * 3


def test_without_a_workspace_every_workspace_check_fails(outside: Path) -> None:
    e = ws(file_exists=["a"], file_absent=["b"], file_contains={"c": ["x", "y"]})
    grades = grade(e, record())
    assert [(g.check, g.passed, g.detail, g.category) for g in grades] == [
        ('file_exists("a")', False, NO_WORKSPACE, "side_effect"),
        ('file_absent("b")', False, NO_WORKSPACE, "side_effect"),
        ('file_contains("c", "x")', False, NO_WORKSPACE, "side_effect"),
        ('file_contains("c", "y")', False, NO_WORKSPACE, "side_effect"),
    ]
    assert [g.field for g in grades] == [
        "$.expects.workspace.file_exists[0]",
        "$.expects.workspace.file_absent[0]",
        "$.expects.workspace.file_contains.c[0]",
        "$.expects.workspace.file_contains.c[1]",
    ]
    assert grade(e, record(), None) == grades


def test_repeated_workspace_entries_get_unique_names(workspace: Path) -> None:
    (workspace / "a").write_text("x", encoding="utf-8")
    grades = grade(ws(file_exists=["a", "a"], file_contains={"a": ["x", "x"]}), record(), workspace)
    assert [g.check for g in grades] == [
        'file_exists("a")',
        'file_exists("a") #2',
        'file_contains("a", "x")',
        'file_contains("a", "x") #2',
    ]
    assert all(g.passed for g in grades)


# --- budget --------------------------------------------------------------------------------------


def run_with(**fields: Any) -> RunRecord:
    return RunRecord(**fields)


@pytest.mark.parametrize(
    ("bound", "fields", "actual"),
    [
        ("max_input_tokens", {"input_tokens": 100, "output_tokens": 7}, 100),
        ("max_output_tokens", {"input_tokens": 7, "output_tokens": 100}, 100),
        ("max_total_tokens", {"input_tokens": 60, "output_tokens": 40}, 100),
        ("max_llm_calls", {"model_calls": 100}, 100),
        ("max_duration_ms", {"duration_ms": 100.0}, 100),
    ],
)
@pytest.mark.parametrize(("limit", "passed"), [(100, True), (101, True), (99, False)])
def test_budget_bound_is_inclusive(
    bound: str, fields: dict[str, Any], actual: int, limit: int, passed: bool
) -> None:
    g = only(grade(expects(budget={bound: limit}), run_with(**fields)))
    assert shape(g) == (
        f"{bound}({limit})",
        passed,
        f"actual {actual}",
        "budget",
        f"$.expects.budget.{bound}",
    )


def test_budget_zero_passes_only_at_zero() -> None:
    e = expects(budget={"max_llm_calls": 0, "max_total_tokens": 0})
    assert all(g.passed for g in grade(e, RunRecord()))
    assert not any(g.passed for g in grade(e, run_with(model_calls=1, output_tokens=1)))


@pytest.mark.parametrize(
    ("duration", "shown"),
    [(12.25, "12.25"), (12.0004, "12.0004"), (12.123456, "12.123")],
)
def test_fractional_duration_is_shown_as_measured(duration: float, shown: str) -> None:
    # Never rounded so that it looks within the bound while it is over it.
    g = only(grade(expects(budget={"max_duration_ms": 12}), run_with(duration_ms=duration)))
    assert (g.passed, g.detail) == (False, f"actual {shown}")


def test_budget_grades_come_in_a_fixed_order() -> None:
    e = expects(
        budget={
            "max_llm_calls": 5,
            "max_duration_ms": 5000,
            "max_total_tokens": 10,
            "max_output_tokens": 5,
            "max_input_tokens": 5,
        }
    )
    grades = grade(e, run_with(input_tokens=4, output_tokens=7, model_calls=2, duration_ms=3.0))
    assert [(g.check, g.passed, g.detail) for g in grades] == [
        ("max_input_tokens(5)", True, "actual 4"),
        ("max_output_tokens(5)", False, "actual 7"),
        ("max_total_tokens(10)", False, "actual 11"),
        ("max_duration_ms(5000)", True, "actual 3"),
        ("max_llm_calls(5)", True, "actual 2"),
    ]


# --- response_json --------------------------------------------------------------------------------


def rj(response: str, pointers: dict[str, Any]) -> list[Grade]:
    return grade(strict_expects({"response_json": pointers}), record(response))


def test_whole_response_as_json() -> None:
    g = only(rj('  {"city": "Paris", "n": [1, 2]}\n', {"/city": "Paris"}))
    assert shape(g) == (
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


# --- order, backstop, two-argument call --------------------------------------------------------


def test_new_families_follow_the_existing_ones_in_order(workspace: Path) -> None:
    (workspace / "out.txt").write_text("done", encoding="utf-8")
    e = strict_expects(
        {
            "response_json": {"/ok": True},
            "budget": {"max_llm_calls": 3},
            "workspace": {"file_contains": {"out.txt": ["done"]}, "file_exists": ["out.txt"]},
            "response_matches": ["ok"],
            "tools_used": ["echo"],
            "response_contains": ["ok"],
        }
    )
    run = RunRecord(final_response='{"ok": true}', calls=[echo_call("a")], model_calls=2)
    grades = grade(e, run, workspace)
    assert [(g.check, g.category) for g in grades] == [
        ('response_contains("ok")', "response"),
        ('tools_used("echo")', "tool"),
        ('response_matches("ok")', "response"),
        ('file_exists("out.txt")', "side_effect"),
        ('file_contains("out.txt", "done")', "side_effect"),
        ("max_llm_calls(3)", "budget"),
        ('response_json("/ok")', "response"),
    ]
    assert all(g.passed for g in grades)


def test_two_argument_call_still_grades_the_old_families() -> None:
    g = only(grade(expects(tools_used=["echo"]), record(calls=[echo_call("a")])))
    assert g.passed


def test_grades_serialise_with_their_fields(workspace: Path) -> None:
    grades = grade(expects(budget={"max_total_tokens": 1}), RunRecord(input_tokens=2))
    [encoded] = json.loads(msgspec.json.encode(grades))
    assert encoded == {
        "check": "max_total_tokens(1)",
        "passed": False,
        "detail": "actual 2",
        "category": "budget",
        "field": "$.expects.budget.max_total_tokens",
    }


# --- the empty-run vacuity check --------------------------------------------------------------


def trace_with(expect: dict[str, Any], **extra: Any) -> Any:
    return trace_of(fixture("vacuity", [turn("hi", text_step("hello"))], expect, **extra))


@pytest.mark.parametrize(
    "expect",
    [
        {"budget": {"max_total_tokens": 100}},
        {"budget": {"max_llm_calls": 0, "max_duration_ms": 0}},
        {"workspace": {"file_absent": ["secret.txt"]}},
        {"workspace": {"file_absent": ["a"]}, "budget": {"max_input_tokens": 1}},
    ],
)
def test_empty_run_passes_budget_and_file_absent_only(expect: dict[str, Any]) -> None:
    assert empty_run_passes(trace_with(expect)) is True


@pytest.mark.parametrize(
    "expect",
    [
        {"workspace": {"file_exists": ["out.txt"]}},
        {"workspace": {"file_contains": {"out.txt": ["x"]}}},
        {"workspace": {"file_absent": ["a"], "file_exists": ["b"]}},
        {"response_json": {"": {}}},
        {"response_json": {"/a": None}},
        {"budget": {"max_total_tokens": 5}, "response_contains": ["hello"]},
    ],
)
def test_empty_run_fails_checks_only_a_working_agent_satisfies(expect: dict[str, Any]) -> None:
    assert empty_run_passes(trace_with(expect)) is False


def test_empty_run_workspace_holds_the_setup_files() -> None:
    files = {"setup": {"workspace_files": {"notes.txt": "hello", "sub/d.txt": "x"}}}
    exists = {"workspace": {"file_exists": ["notes.txt"], "file_contains": {"sub/d.txt": ["x"]}}}
    absent = {"workspace": {"file_absent": ["notes.txt"]}}
    assert empty_run_passes(trace_with(exists, **files)) is True
    assert empty_run_passes(trace_with(absent, **files)) is False
    assert empty_run_passes(trace_with(exists)) is False


def test_empty_run_skips_setup_files_that_would_escape(tmp_path: Path) -> None:
    # Admission reports the bad path; the vacuity check must not write outside meanwhile.
    escaping = {"setup": {"workspace_files": {"../../escaped.txt": "x", "ok.txt": "y"}}}
    expect = {"workspace": {"file_exists": ["ok.txt"]}}
    assert empty_run_passes(trace_with(expect, **escaping)) is True
