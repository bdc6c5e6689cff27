"""`harness.expectations.tool_dispatch`: grading `tools_used`, `tools_not_used`, the call
counts and `all_tools_succeeded` against the recorded dispatches."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import (
    admit,
    echo_call,
    expects,
    only,
    record,
    recorded,
    refuse_one,
    replay_trace,
    shape,
    write_fixture,
)

from harness.expectations.registry import grade

# --- tools used / not used ------------------------------------------------------------------


def test_tools_used_both_polarities() -> None:
    ok = only(grade(expects(tools_used=["echo"]), record(calls=[echo_call("a")])))
    assert shape(ok) == ('tools_used("echo")', True, "called", "tool")
    bad = only(grade(expects(tools_used=["fail"]), record(calls=[echo_call("a")])))
    assert not bad.passed
    assert '["echo"]' in bad.detail


def test_tools_used_fails_on_a_run_without_calls() -> None:
    g = only(grade(expects(tools_used=["echo"]), record()))
    assert not g.passed
    assert "[]" in g.detail


def test_the_calls_a_count_names_are_each_quoted_and_a_long_name_clipped() -> None:
    long = "x" * 250
    calls = [recorded("echo"), recorded(long), recorded('say "hi"')]
    g = only(grade(expects(exact_tool_calls=3), record(calls=calls)))
    clipped = f'"{"x" * 200}… (250 chars)"'
    assert g.detail == f'3 tool call(s): ["echo", {clipped}, "say \\"hi\\""]'
    short = only(grade(expects(exact_tool_calls=1), record(calls=[recorded('say "hi"')])))
    assert short.detail == '1 tool call(s): ["say \\"hi\\""]'


def test_tools_not_used_both_polarities() -> None:
    ok = only(grade(expects(tools_not_used=["fail"]), record(calls=[echo_call("a")])))
    assert ok.passed
    assert ok.check == 'tools_not_used("fail")'
    bad = only(grade(expects(tools_not_used=["echo"]), record(calls=[echo_call("a")])))
    assert not bad.passed
    assert '1 tool call(s): ["echo"]' in bad.detail


# --- counts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("calls", "passed"), [(0, True), (2, True), (3, False)])
def test_max_tool_calls_is_inclusive(calls: int, passed: bool) -> None:
    g = only(grade(expects(max_tool_calls=2), record(calls=[echo_call("m")] * calls)))
    assert g.passed is passed
    assert g.check == "max_tool_calls(2)"
    assert f"{calls} tool call(s)" in g.detail


def test_max_tool_calls_zero_fails_on_any_call() -> None:
    g = only(grade(expects(max_tool_calls=0), record(calls=[echo_call("m")])))
    assert not g.passed
    assert '1 tool call(s): ["echo"]' in g.detail


@pytest.mark.parametrize(("calls", "passed"), [(1, False), (2, True), (5, True)])
def test_min_tool_calls_is_inclusive(calls: int, passed: bool) -> None:
    g = only(grade(expects(min_tool_calls=2), record(calls=[echo_call("m")] * calls)))
    assert g.passed is passed
    assert g.check == "min_tool_calls(2)"
    assert f"{calls} tool call(s)" in g.detail


@pytest.mark.parametrize(("calls", "passed"), [(0, False), (1, False), (2, True), (3, False)])
def test_exact_tool_calls(calls: int, passed: bool) -> None:
    g = only(grade(expects(exact_tool_calls=2), record(calls=[echo_call("m")] * calls)))
    assert g.passed is passed
    assert g.check == "exact_tool_calls(2)"
    assert f"{calls} tool call(s)" in g.detail


def test_exact_tool_calls_zero_passes_only_without_calls() -> None:
    assert only(grade(expects(exact_tool_calls=0), record())).passed
    assert not only(grade(expects(exact_tool_calls=0), record(calls=[echo_call("a")]))).passed


# --- all_tools_succeeded --------------------------------------------------------------------


def test_all_tools_succeeded_true_passes_with_zero_calls() -> None:
    g = only(grade(expects(all_tools_succeeded=True), record()))
    assert g.passed
    assert g.check == "all_tools_succeeded(true)"
    assert g.category == "tool"


def test_all_tools_succeeded_false_fails_with_zero_calls() -> None:
    g = only(grade(expects(all_tools_succeeded=False), record()))
    assert not g.passed
    assert g.check == "all_tools_succeeded(false)"
    assert "actual all_tools_succeeded = true" in g.detail


def test_all_tools_succeeded_true_fails_naming_the_failed_call() -> None:
    calls = [echo_call("a"), recorded("fail", {"reason": "disk full"}, "disk full", False)]
    g = only(grade(expects(all_tools_succeeded=True), record(calls=calls)))
    assert not g.passed
    assert "actual all_tools_succeeded = false" in g.detail
    assert "fail: disk full" in g.detail


def test_all_tools_succeeded_false_passes_when_a_call_failed() -> None:
    calls = [recorded("fail", {"reason": "boom"}, "boom", False)]
    assert only(grade(expects(all_tools_succeeded=False), record(calls=calls))).passed


def test_all_tools_succeeded_false_fails_when_every_call_succeeded() -> None:
    g = only(grade(expects(all_tools_succeeded=False), record(calls=[echo_call("a")])))
    assert not g.passed


# --- absent tools that cannot be misspelt ---------------------------------------------------


@pytest.mark.parametrize(("typo", "meant"), [("ecoh", "echo"), ("read_flie", "read_file")])
def test_an_absent_tool_close_to_one_the_agent_has_is_refused_as_a_typo(
    tmp_path: Path, typo: str, meant: str
) -> None:
    data = replay_trace()
    data["expects"]["tools_not_used"] = ["fail", typo]
    refuse_one(
        tmp_path,
        data,
        "$.expects.tools_not_used[1]",
        f"{typo!r} is not a tool of openai-agents (did you mean {meant}?): a check on a tool "
        "it does not have can never fail in replay",
    )


@pytest.mark.parametrize("invented", ["shell", "search", "http_request", "get_weather"])
def test_an_absent_tool_far_from_the_agents_guards_against_an_invented_one(
    tmp_path: Path, invented: str
) -> None:
    data = replay_trace()
    data["expects"]["tools_not_used"] = [invented]
    case = admit(write_fixture(tmp_path, "case.json", data))
    assert case.trace.expects is not None


def test_the_report_says_when_an_absent_tool_is_not_the_agents() -> None:
    tools = frozenset({"echo", "fail"})
    grades = grade(expects(tools_not_used=["shell", "fail"]), record(), agent_tools=tools)
    assert [g.detail for g in grades] == [
        "not called (not a tool the agent registers)",
        "not called",
    ]
    # Without knowing the agent's tools (grading through the API), nothing is claimed.
    assert only(grade(expects(tools_not_used=["shell"]), record())).detail == "not called"
