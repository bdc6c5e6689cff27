"""`harness.agents.frameworks.openai_agents`: the OpenAI Agents SDK adapter (`agent =
"openai-agents"`) through `run_suite`: the SDK's own loop, the registry's tools, a
conversation over turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import (
    LIMIT_ERROR,
    call,
    case_of,
    echo_fixture,
    echo_loop,
    fixture,
    text_step,
    tool_step,
    turn,
    write_suite,
)

from harness import run_cases, run_suite
from harness.agents.registry import resolve_agent
from harness.verdict.reports import CaseReport, SuiteReport


def run(suite: Path, agent: Any = "openai-agents", **kwargs: Any) -> SuiteReport:
    return run_suite(suite, agent=agent, root=suite.parent, **kwargs)


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


# --- the real SDK adapter -------------------------------------------------------------------


def test_single_tool_case_through_the_sdk(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", {"echo.json": echo_fixture("single-echo", "hello")})
    report = run(suite)
    assert report.agent == "openai-agents"
    (case,) = report.cases
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.id == "single-echo"
    assert case.fixture == "suite/echo.json"
    assert case.score == 1.0
    r = case.record
    assert r is not None
    assert r.final_response == "The echo tool said: hello"
    assert [(c.name, c.arguments, c.result, c.success) for c in r.calls] == [
        ("echo", '{"message":"hello"}', "hello", True)
    ]
    assert (r.model_calls, r.input_tokens, r.output_tokens) == (2, 50, 14)
    assert r.duration_ms >= 0
    assert report.exit_code() == 0


def test_multi_turn_final_response_is_the_last_turns_and_calls_accumulate(tmp_path: Path) -> None:
    data = fixture(
        "multi-turn",
        [
            turn(
                "Echo alpha",
                tool_step(call("c1", message="alpha"), input_tokens=10, output_tokens=1),
                text_step("Echoed: alpha", input_tokens=11, output_tokens=2),
            ),
            turn(
                "Echo beta",
                tool_step(call("c2", message="beta"), input_tokens=12, output_tokens=3),
                text_step("Echoed: beta", input_tokens=13, output_tokens=4),
            ),
        ],
        {
            "response_contains": ["beta"],
            "response_not_contains": ["alpha"],
            "exact_tool_calls": 2,
            "tool_arguments_contain": [
                {"tool": "echo", "needle": "alpha", "call_index": 0},
                {"tool": "echo", "needle": "beta", "call_index": 1},
            ],
        },
    )
    (case,) = run(write_suite(tmp_path / "suite", {"m.json": data})).cases
    assert case.passed, (case.error, failing(case))
    assert case.record is not None
    assert case.record.final_response == "Echoed: beta"
    assert case.record.turn_responses == ["Echoed: alpha", "Echoed: beta"]
    assert [c.result for c in case.record.calls] == ["alpha", "beta"]
    assert (case.record.model_calls, case.record.input_tokens, case.record.output_tokens) == (
        4,
        46,
        10,
    )


def test_a_turns_items_are_read_for_the_next_turn_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents import RunResult

    read: list[int] = []
    real = RunResult.to_input_list

    def counted(self: RunResult, *args: Any, **kwargs: Any) -> Any:
        items = real(self, *args, **kwargs)
        read.append(len(items))
        return items

    monkeypatch.setattr(RunResult, "to_input_list", counted)
    turns = [turn(f"Echo {w}", tool_step(call(f"c{w}", message=w)), text_step(w)) for w in "abc"]
    data = fixture("three-turns", turns, {"response_contains": ["c"], "exact_tool_calls": 3})
    (case,) = run(write_suite(tmp_path / "suite", {"t.json": data})).cases
    assert case.passed, (case.error, failing(case))
    # The second and third turns start from the turns before (user, call, result, answer
    # each); the third turn's items are never read.
    assert read == [4, 8]
    assert case.record is not None and case.record.turn_responses == ["a", "b", "c"]


def test_a_session_without_mcp_servers_has_nothing_to_close() -> None:
    from harness.agents.protocol import AgentContext
    from harness.builtin_toolset import builtin_tools
    from harness.model_boundary import ModelBoundary, ModelRequest, ModelStep
    from harness.tool_registry import ToolRegistry

    class Silent:
        async def respond(self, request: ModelRequest) -> ModelStep:
            raise AssertionError("no model is asked")

    adapter = resolve_agent("openai-agents")
    context = AgentContext("closed", ModelBoundary(Silent()), ToolRegistry.of(builtin_tools()))
    assert adapter.start(context).aclose() is None  # type: ignore[attr-defined]


def test_fail_tool_is_recorded_and_the_loop_continues(tmp_path: Path) -> None:
    data = fixture(
        "fail-then-echo",
        [
            turn(
                "Try the failing tool, then echo",
                tool_step(call("c1", "fail", reason="disk full")),
                tool_step(call("c2", message="recovered")),
                text_step("The first tool failed (disk full); echo said recovered"),
            )
        ],
        {
            "all_tools_succeeded": False,
            "exact_tool_calls": 2,
            "tool_results_contain": [
                {"tool": "fail", "needle": "disk full"},
                {"tool": "echo", "needle": "recovered"},
            ],
            "response_contains": ["recovered"],
        },
    )
    (case,) = run(write_suite(tmp_path / "suite", {"f.json": data})).cases
    assert case.passed, (case.error, failing(case))
    assert case.record is not None
    assert [(c.name, c.success, c.result) for c in case.record.calls] == [
        ("fail", False, "disk full"),
        ("echo", True, "recovered"),
    ]


def test_parallel_tool_calls_in_one_step_are_all_dispatched(tmp_path: Path) -> None:
    data = fixture(
        "two-at-once",
        [
            turn(
                "Echo a and b",
                tool_step(call("c1", message="a"), call("c2", message="b")),
                text_step("Echoed a and b"),
            )
        ],
        {"exact_tool_calls": 2, "tool_results_contain": [{"tool": "echo", "needle": "b"}]},
    )
    (case,) = run(write_suite(tmp_path / "suite", {"p.json": data})).cases
    assert case.passed, (case.error, failing(case))
    assert case.record is not None
    assert sorted(c.result for c in case.record.calls) == ["a", "b"]


# --- the limit on model calls per turn ------------------------------------------------------


def test_the_sdks_own_ten_call_limit_does_not_stop_a_longer_turn(tmp_path: Path) -> None:
    (case,) = run(write_suite(tmp_path / "suite", {"l.json": echo_loop(14)})).cases
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None and case.record.model_calls == 15


@pytest.mark.parametrize(("limit", "calls"), [(None, 40), (5, 5)])
def test_the_harness_limit_stops_the_sdk_with_its_run_error(limit: int | None, calls: int) -> None:
    options: dict[str, Any] = {} if limit is None else {"max_model_calls_per_turn": limit}
    adapter = resolve_agent("openai-agents")
    (case,) = run_cases([case_of(echo_loop(calls + 1))], adapter, suite="s", **options).cases
    assert case.error == LIMIT_ERROR.format(calls)
    assert case.record is not None
    assert (case.record.model_calls, len(case.record.calls)) == (calls, calls)
