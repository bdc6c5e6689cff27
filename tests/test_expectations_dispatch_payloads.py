"""`harness.expectations.dispatch_payloads`: grading `tool_arguments_contain` and
`tool_results_contain`, with and without `call_index`."""

from __future__ import annotations

import pytest
from conftest import echo_call, expects, only, record, recorded, shape, two_echoes

from harness.expectations.registry import grade

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
