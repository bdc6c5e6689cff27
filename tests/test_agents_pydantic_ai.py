"""`harness.agents.frameworks.pydantic_ai`: the pydantic-ai adapter (`agent =
"pydantic-ai"`) through `run_suite` / `run_cases`.

A fresh `pydantic_ai.Agent` per case, its model a `FunctionModel` fed by the replay script,
its tools the harness registry's; a conversation carried as pydantic-ai carries it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import (
    LIMIT_ERROR,
    REPO,
    SHARED_FIXTURES,
    Recording,
    call,
    case_of,
    echo_fixture,
    echo_loop,
    fixture,
    text_step,
    tool_step,
    turn,
    write_module,
    write_suite,
)

from harness import Message, ToolCall, run_cases, run_suite
from harness.agents.registry import resolve_agent
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.verdict.reports import CaseReport, SuiteReport

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

AGENT = "pydantic-ai"


def run(suite: Path, **kwargs: Any) -> SuiteReport:
    return run_suite(suite, agent=kwargs.pop("agent", AGENT), root=suite.parent, **kwargs)


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


def calls_of(case: CaseReport) -> list[tuple[str, str, str, bool]]:
    assert case.record is not None
    return [(c.name, c.arguments, c.result, c.success) for c in case.record.calls]


def test_resolves_to_the_pydantic_ai_adapter_with_the_builtin_tools() -> None:
    adapter = resolve_agent(AGENT)
    assert type(adapter).__module__ == "harness.agents.frameworks.pydantic_ai"
    assert adapter.name == "pydantic-ai"
    assert {t.name for t in adapter.tools()} == BUILTIN_TOOL_NAMES


def test_single_tool_case(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", {"echo.json": echo_fixture("single-echo", "hello")})
    report = run(suite)
    assert report.agent == "pydantic-ai"
    (case,) = report.cases
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None
    assert case.record.final_response == "The echo tool said: hello"
    assert calls_of(case) == [("echo", '{"message":"hello"}', "hello", True)]
    assert report.exit_code() == 0


def test_tokens_and_model_calls_are_counted(tmp_path: Path) -> None:
    data = fixture(
        "counted",
        [
            turn(
                "Echo a, then b",
                tool_step(call("c1", message="a"), input_tokens=20, output_tokens=8),
                tool_step(call("c2", message="b"), input_tokens=31, output_tokens=9),
                text_step("a and b", input_tokens=42, output_tokens=5),
            ),
            turn("Thanks", text_step("You're welcome", input_tokens=50, output_tokens=4)),
        ],
        {"response_contains": ["welcome"], "exact_tool_calls": 2},
    )
    (case,) = run(write_suite(tmp_path / "suite", {"c.json": data})).cases
    assert case.passed, (case.error, failing(case))
    r = case.record
    assert r is not None
    assert (r.model_calls, r.input_tokens, r.output_tokens) == (4, 143, 26)
    assert r.turn_responses == ["a and b", "You're welcome"]


def test_the_model_sees_the_registry_tools_and_the_user_message() -> None:
    adapter = Recording(resolve_agent(AGENT))
    report = run_cases([case_of(echo_fixture("schemas", "hi"))], adapter, suite="s")
    assert report.cases[0].passed, report.cases[0].error
    first = adapter.requests[0]
    assert {t.name for t in first.tools} == BUILTIN_TOOL_NAMES
    echo = next(t for t in first.tools if t.name == "echo")
    assert echo.parameters["properties"] == {"message": {"type": "string"}}
    assert first.messages == (Message(role="user", content="Echo hi for me"),)


def test_multi_turn_history_is_carried_into_the_next_turns_request() -> None:
    data = fixture(
        "history",
        [
            turn(
                "Echo alpha",
                tool_step(call("c1", message="alpha")),
                text_step("Echoed: alpha"),
            ),
            turn("And now say beta", text_step("beta")),
        ],
        {"response_contains": ["beta"], "exact_tool_calls": 1},
    )
    adapter = Recording(resolve_agent(AGENT))
    (case,) = run_cases([case_of(data)], adapter, suite="s").cases
    assert case.passed, (case.error, failing(case))
    assert len(adapter.requests) == 3
    # The second turn's only request holds the whole first turn, then the new user message.
    assert adapter.requests[2].messages == (
        Message(role="user", content="Echo alpha"),
        Message(role="assistant", tool_calls=(ToolCall("c1", "echo", {"message": "alpha"}),)),
        Message(role="tool", content="alpha", tool_call_id="c1"),
        Message(role="assistant", content="Echoed: alpha"),
        Message(role="user", content="And now say beta"),
    )
    assert case.record is not None
    assert case.record.final_response == "beta"
    assert case.record.turn_responses == ["Echoed: alpha", "beta"]


def test_history_is_per_case_not_shared_between_cases() -> None:
    adapter = Recording(resolve_agent(AGENT))
    cases = [case_of(echo_fixture("first", "one")), case_of(echo_fixture("second", "two"))]
    report = run_cases(cases, adapter, suite="s")
    assert [c.passed for c in report.cases] == [True, True]
    # The second case's first request starts a fresh conversation.
    assert adapter.requests[2].messages == (Message(role="user", content="Echo two for me"),)


def test_failing_tool_is_recorded_and_the_loop_continues(tmp_path: Path) -> None:
    data = fixture(
        "fail-then-answer",
        [
            turn(
                "Try the failing tool, then echo ok",
                tool_step(call("c1", "fail", reason="disk full")),
                tool_step(call("c2", message="ok")),
                text_step("The tool failed (disk full); echo said ok."),
            )
        ],
        {
            "response_contains": ["disk full"],
            "exact_tool_calls": 2,
            "all_tools_succeeded": False,
            "tool_results_contain": [{"tool": "fail", "needle": "disk full"}],
        },
    )
    adapter = Recording(resolve_agent(AGENT))
    report = run_cases([case_of(data)], adapter, suite="s")
    (case,) = report.cases
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert calls_of(case) == [
        ("fail", '{"reason":"disk full"}', "disk full", False),
        ("echo", '{"message":"ok"}', "ok", True),
    ]
    # The failure's text went back to the model as the tool's result.
    assert Message(role="tool", content="disk full", tool_call_id="c1") in (
        adapter.requests[1].messages
    )


def test_a_broken_case_is_a_run_error_not_a_pass(tmp_path: Path) -> None:
    # Under-scripted: the tool step is never followed by text.
    data = fixture(
        "under-scripted",
        [turn("Echo x", tool_step(call("c1", message="x")))],
        {"exact_tool_calls": 1},
    )
    report = run(write_suite(tmp_path / "suite", {"u.json": data}))
    (case,) = report.cases
    assert not case.passed
    assert case.error is not None
    assert "turn 0 requested more model responses than the trace scripts" in case.error
    assert report.exit_code() == 1


def test_regression_suite_is_green_through_pydantic_ai() -> None:
    report = run_suite(REPO / "evals" / "regression", agent=AGENT, root=REPO)
    problems = {c.id: c.error or failing(c) for c in report.cases if not c.passed}
    assert problems == {}
    assert len(report.cases) == len(list((REPO / "evals" / "regression").glob("*.json")))
    assert report.agent == "pydantic-ai"
    assert report.exit_code() == 0


def test_shared_fixtures_are_green_through_pydantic_ai() -> None:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not present at {SHARED_FIXTURES}")
    report = run_suite(SHARED_FIXTURES, agent=AGENT, root=SHARED_FIXTURES.parent)
    problems = {c.id: c.error or failing(c) for c in report.cases if not c.passed}
    assert problems == {}
    assert len(report.cases) == len(list(SHARED_FIXTURES.glob("*.json"))) > 0
    assert report.exit_code() == 0


DICT_TOOL_AGENT = """
from pydantic_ai import Agent


def build():
    agent = Agent(name="info", instructions="Answer from the info tool.")

    @agent.tool_plain
    def info(key: str) -> dict:
        return {"key": key, "n": 1}

    return agent
"""


def test_a_tool_returning_a_dict_is_recorded_as_the_model_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pydantic-ai sends the model compact JSON; the record (and so tool_results_contain and
    # replay conformance) must hold the same text.
    monkeypatch.syspath_prepend(str(tmp_path))
    module = write_module(tmp_path, DICT_TOOL_AGENT, "dict_agent")
    data = fixture(
        "dict-result",
        [turn("Look up k", tool_step(call("c1", "info", key="k")), text_step("n is 1"))],
        {"tool_results_contain": [{"tool": "info", "needle": '{"key":"k","n":1}'}]},
    )
    suite = write_suite(tmp_path / "suite", {"a.json": data})
    (case,) = run_suite(suite, agent=f"pydantic-ai:{module}:build").cases
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert calls_of(case) == [("info", '{"key":"k"}', '{"key":"k","n":1}', True)]


# --- the limit on model calls per turn ------------------------------------------------------


def test_pydantic_ais_own_fifty_request_limit_does_not_stop_a_longer_turn() -> None:
    adapter = resolve_agent(AGENT)
    report = run_cases([case_of(echo_loop(55))], adapter, suite="s", max_model_calls_per_turn=60)
    (case,) = report.cases
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None and case.record.model_calls == 56


@pytest.mark.parametrize(("limit", "calls"), [(None, 40), (5, 5)])
def test_the_harness_limit_stops_pydantic_ai_with_its_run_error(
    limit: int | None, calls: int
) -> None:
    options: dict[str, Any] = {} if limit is None else {"max_model_calls_per_turn": limit}
    adapter = resolve_agent(AGENT)
    (case,) = run_cases([case_of(echo_loop(calls + 1))], adapter, suite="s", **options).cases
    assert case.error == LIMIT_ERROR.format(calls)
    assert case.record is not None
    assert (case.record.model_calls, len(case.record.calls)) == (calls, calls)
