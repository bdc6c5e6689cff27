"""Grading: one grade per expectation, readable unique names, details that show what happened."""

from __future__ import annotations

import pytest
from _support import echo_call, expects, fixture, record, recorded, text_step, trace_of, turn

from harness.admission import empty_run_passes
from harness.expectations.base import Grade
from harness.expectations.registry import grade


def only(grades: list[Grade]) -> Grade:
    assert len(grades) == 1, grades
    return grades[0]


def shape(g: Grade) -> tuple[str, bool, str, str]:
    return (g.check, g.passed, g.detail, g.category)


def two_echoes() -> list:
    return [echo_call("alpha"), echo_call("beta")]


# --- response families ----------------------------------------------------------------------


def test_response_contains_passes_when_substring_present() -> None:
    g = only(grade(expects(response_contains=["hello"]), record("say hello world")))
    assert shape(g) == ('response_contains("hello")', True, "found", "response")


def test_response_contains_fails_showing_the_response() -> None:
    g = only(grade(expects(response_contains=["hello"]), record("Goodbye, friend")))
    assert not g.passed
    assert g.check == 'response_contains("hello")'
    assert g.category == "response"
    assert '"Goodbye, friend"' in g.detail


def test_response_contains_is_case_sensitive() -> None:
    g = only(grade(expects(response_contains=["Hello"]), record("hello")))
    assert not g.passed


def test_response_not_contains_both_polarities() -> None:
    ok = only(grade(expects(response_not_contains=["error"]), record("all good")))
    assert ok.passed
    assert ok.check == 'response_not_contains("error")'
    bad = only(grade(expects(response_not_contains=["error"]), record("an error occurred")))
    assert not bad.passed
    assert "an error occurred" in bad.detail
    assert bad.category == "response"


def test_response_matches_uses_search_not_fullmatch() -> None:
    g = only(grade(expects(response_matches=["bet"]), record("the alphabet song")))
    assert g.passed
    assert g.check == 'response_matches("bet")'
    assert g.category == "response"


def test_response_matches_anchors_and_fails_with_the_response() -> None:
    g = only(grade(expects(response_matches=["^bet"]), record("alphabet")))
    assert not g.passed
    assert '"alphabet"' in g.detail
    multi = only(grade(expects(response_matches=[r"^Done\.$"]), record("Done.")))
    assert multi.passed


def test_response_matches_invalid_pattern_fails_rather_than_raising() -> None:
    g = only(grade(expects(response_matches=["("]), record("(")))
    assert not g.passed
    assert "invalid regex" in g.detail


def test_long_responses_are_clipped_in_details() -> None:
    g = only(grade(expects(response_contains=["needle"]), record("x" * 5000)))
    assert not g.passed
    assert "5000 chars" in g.detail
    assert len(g.detail) < 1000


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


# --- payload families -----------------------------------------------------------------------


@pytest.mark.parametrize("family", ["tool_arguments_contain", "tool_results_contain"])
def test_payload_any_call_passes(family: str) -> None:
    e = expects(**{family: [{"tool": "echo", "needle": "beta"}]})
    g = only(grade(e, record(calls=two_echoes())))
    assert shape(g) == (f'{family}("echo", "beta")', True, "found", "tool")


@pytest.mark.parametrize("family", ["tool_arguments_contain", "tool_results_contain"])
def test_payload_any_call_fails_listing_observed_payloads(family: str) -> None:
    e = expects(**{family: [{"tool": "echo", "needle": "gamma"}]})
    g = only(grade(e, record(calls=two_echoes())))
    assert not g.passed
    assert "alpha" in g.detail
    assert "beta" in g.detail


def test_arguments_are_graded_against_the_compact_json() -> None:
    e = expects(tool_arguments_contain=[{"tool": "echo", "needle": '{"message":"alpha"}'}])
    assert only(grade(e, record(calls=two_echoes()))).passed


def test_results_are_graded_against_the_result_not_the_arguments() -> None:
    calls = [recorded("echo", {"message": "in"}, "out")]
    e = expects(
        tool_results_contain=[{"tool": "echo", "needle": "message"}],
        tool_arguments_contain=[{"tool": "echo", "needle": "out"}],
    )
    grades = grade(e, record(calls=calls))
    assert [g.passed for g in grades] == [False, False]


def test_call_index_check_name() -> None:
    e = expects(tool_arguments_contain=[{"tool": "echo", "needle": "beta", "call_index": 1}])
    g = only(grade(e, record(calls=two_echoes())))
    assert g.check == 'tool_arguments_contain("echo"[1], "beta")'
    assert g.passed
    assert g.detail == "found in call 1"


@pytest.mark.parametrize("family", ["tool_arguments_contain", "tool_results_contain"])
def test_call_index_ordering_matters(family: str) -> None:
    swapped = expects(
        **{
            family: [
                {"tool": "echo", "needle": "beta", "call_index": 0},
                {"tool": "echo", "needle": "alpha", "call_index": 1},
            ]
        }
    )
    grades = grade(swapped, record(calls=two_echoes()))
    assert [g.passed for g in grades] == [False, False]
    assert "call 0 payload was" in grades[0].detail
    assert "alpha" in grades[0].detail
    assert "beta" in grades[1].detail
    in_order = expects(
        **{
            family: [
                {"tool": "echo", "needle": "alpha", "call_index": 0},
                {"tool": "echo", "needle": "beta", "call_index": 1},
            ]
        }
    )
    assert all(g.passed for g in grade(in_order, record(calls=two_echoes())))


def test_call_index_counts_only_calls_to_that_tool() -> None:
    calls = [
        recorded("fail", {"reason": "x"}, "x", False),
        echo_call("alpha"),
        recorded("fail", {"reason": "y"}, "y", False),
        echo_call("beta"),
    ]
    e = expects(tool_results_contain=[{"tool": "echo", "needle": "beta", "call_index": 1}])
    assert only(grade(e, record(calls=calls))).passed


def test_call_index_out_of_range_fails_with_observed_calls() -> None:
    e = expects(tool_arguments_contain=[{"tool": "echo", "needle": "alpha", "call_index": 2}])
    g = only(grade(e, record(calls=two_echoes())))
    assert not g.passed
    assert g.check == 'tool_arguments_contain("echo"[2], "alpha")'
    assert "no call 2" in g.detail
    assert "only 2 call(s) observed" in g.detail
    assert "alpha" in g.detail


@pytest.mark.parametrize("family", ["tool_arguments_contain", "tool_results_contain"])
def test_never_called_tool_fails_naming_what_was_called(family: str) -> None:
    e = expects(**{family: [{"tool": "fail", "needle": "x"}]})
    g = only(grade(e, record(calls=[echo_call("a")])))
    assert not g.passed
    assert '"fail" was never called' in g.detail
    assert '["echo"]' in g.detail


def test_never_called_tool_with_call_index_fails() -> None:
    e = expects(tool_results_contain=[{"tool": "echo", "needle": "x", "call_index": 0}])
    g = only(grade(e, record()))
    assert not g.passed
    assert "only 0 call(s) observed" in g.detail


# --- names, order, backstop -----------------------------------------------------------------

RICH = {
    "response_contains": ["alpha", "beta"],
    "response_not_contains": ["alpha"],
    "response_matches": ["alpha"],
    "tools_used": ["echo"],
    "tools_not_used": ["fail"],
    "max_tool_calls": 3,
    "min_tool_calls": 1,
    "exact_tool_calls": 2,
    "all_tools_succeeded": True,
    "tool_arguments_contain": [
        {"tool": "echo", "needle": "alpha"},
        {"tool": "echo", "needle": "alpha", "call_index": 0},
        {"tool": "echo", "needle": "beta", "call_index": 1},
    ],
    "tool_results_contain": [
        {"tool": "echo", "needle": "alpha"},
        {"tool": "echo", "needle": "alpha", "call_index": 0},
    ],
}


def test_every_entry_yields_one_grade_with_a_unique_name() -> None:
    grades = grade(expects(**RICH), record("alpha beta", two_echoes()))
    assert len(grades) == 15
    checks = [g.check for g in grades]
    assert len(set(checks)) == len(checks), checks
    assert 'tool_arguments_contain("echo", "alpha")' in checks
    assert 'tool_arguments_contain("echo"[0], "alpha")' in checks
    assert 'tool_results_contain("echo"[0], "alpha")' in checks
    assert "min_tool_calls(1)" in checks
    assert {g.category for g in grades} == {"response", "tool"}


def test_duplicate_entries_still_get_unique_names() -> None:
    e = expects(
        response_contains=["hi", "hi"],
        tool_results_contain=[{"tool": "echo", "needle": "a"}, {"tool": "echo", "needle": "a"}],
    )
    grades = grade(e, record("hi", [echo_call("a")]))
    checks = [g.check for g in grades]
    assert len(grades) == 4
    assert len(set(checks)) == 4, checks
    assert checks[0] == 'response_contains("hi")'
    assert all(g.passed for g in grades)


def test_names_escape_quotes_and_keep_non_ascii() -> None:
    g = only(grade(expects(response_contains=['say "hi" ☃']), record('say "hi" ☃')))
    assert g.check == 'response_contains("say \\"hi\\" ☃")'
    assert g.passed


def test_no_effective_assertion_is_a_failing_backstop_grade() -> None:
    g = only(grade(expects(), record("anything")))
    assert not g.passed
    assert g.category == "run"


def test_min_tool_calls_zero_yields_no_grade() -> None:
    grades = grade(expects(min_tool_calls=0, tools_used=["echo"]), record(calls=[echo_call("a")]))
    assert [g.check for g in grades] == ['tools_used("echo")']


# --- the empty-run vacuity check ------------------------------------------------------------


def trace_with(**expect: object):
    return trace_of(fixture("vacuity", [turn("hi", text_step("hello"))], dict(expect)))


@pytest.mark.parametrize(
    "expect",
    [
        {"response_not_contains": ["error"]},
        {"tools_not_used": ["fail"]},
        {"max_tool_calls": 0},
        {"exact_tool_calls": 0},
        {"all_tools_succeeded": True},
        {"response_matches": ["^$"]},
        {"max_tool_calls": 3, "tools_not_used": ["echo"]},
    ],
)
def test_empty_run_passes_for_checks_a_dead_agent_satisfies(expect: dict) -> None:
    assert empty_run_passes(trace_with(**expect)) is True


@pytest.mark.parametrize(
    "expect",
    [
        {"response_contains": ["hello"]},
        {"response_matches": ["\\S"]},
        {"tools_used": ["echo"]},
        {"min_tool_calls": 1},
        {"exact_tool_calls": 1},
        {"all_tools_succeeded": False},
        {"tool_arguments_contain": [{"tool": "echo", "needle": "a"}]},
        {"tool_results_contain": [{"tool": "echo", "needle": "a", "call_index": 0}]},
        {"response_not_contains": ["x"], "tools_used": ["echo"]},
    ],
)
def test_empty_run_fails_for_checks_only_a_working_agent_satisfies(expect: dict) -> None:
    assert empty_run_passes(trace_with(**expect)) is False


def test_empty_run_passes_when_expects_missing_or_empty() -> None:
    data = fixture("vacuity", [turn("hi", text_step("hello"))], {})
    del data["expects"]
    assert empty_run_passes(trace_of(data)) is True
    # An empty `expects` block grades to the failing backstop, so it cannot pass vacuously.
    assert empty_run_passes(trace_with()) is False
