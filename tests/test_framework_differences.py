"""The same traces through both frameworks: where they agree, and where they genuinely differ.

Every difference asserted here is documented, with the same fixture JSON, in the
"Differences between frameworks" section of docs/agents.md; the last tests check that the
two stay in step. Also: replay divergence diagnostics (the turn, the last request) for both.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Recording, call, fixture, text_step, tool_step, turn, write_module

from harness import Message, ModelRequest, ToolCall, parse_fixture, run_cases
from harness.agents.registry import agent_surface, resolve_agent
from harness.fixtures.admission import check_trace
from harness.fixtures.suite import Case
from harness.verdict.reports import CaseReport

pytest.importorskip("agents", reason="the openai-agents extra is not installed")
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

FRAMEWORKS = ["openai-agents", "pydantic-ai"]
DOCS = REPO / "docs" / "agents.md"


def case_of(data: dict[str, Any]) -> Case:
    """A `Case` built directly, without admission (some of these traces cannot pass it)."""
    text = json.dumps(data, indent=2)
    return Case(parse_fixture(text, f"{data['model_name']}.json"), Path("case.json"), text)


def run_one(spec: str, data: dict[str, Any]) -> tuple[CaseReport, list[ModelRequest]]:
    adapter = Recording(resolve_agent(spec))
    (report,) = run_cases([case_of(data)], adapter, suite="differences").cases
    return report, adapter.requests


def calls_of(case: CaseReport) -> list[tuple[str, str, str, bool]]:
    assert case.record is not None
    return [(c.name, c.arguments, c.result, c.success) for c in case.record.calls]


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


# --- the documented traces (the same JSON is in docs/agents.md) --------------------------------

UNKNOWN_TOOL: dict[str, Any] = {
    "model_name": "model-calls-a-tool-that-does-not-exist",
    "turns": [
        {
            "user_input": "What's the weather in Oslo?",
            "steps": [
                {
                    "response": {
                        "type": "tool_calls",
                        "tool_calls": [
                            {"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
                        ],
                    }
                },
                {"response": {"type": "text", "content": "I can't check the weather."}},
            ],
        }
    ],
    "expects": {"max_tool_calls": 0, "response_contains": ["can't check the weather"]},
}

EMPTY_FINAL_TEXT: dict[str, Any] = {
    "model_name": "empty-final-text",
    "turns": [
        {
            "user_input": "Echo ping, then say nothing.",
            "steps": [
                {
                    "response": {
                        "type": "tool_calls",
                        "tool_calls": [
                            {"id": "call_1", "name": "echo", "arguments": {"message": "ping"}}
                        ],
                    }
                },
                {"response": {"type": "text", "content": ""}},
            ],
        }
    ],
    "expects": {"exact_tool_calls": 1, "response_matches": ["\\A\\z"]},
}

SEVERAL_CALLS_IN_ONE_STEP: dict[str, Any] = {
    "model_name": "several-calls-in-one-step",
    "turns": [
        {
            "user_input": "Echo alpha, try the failing tool, and echo gamma, all at once.",
            "steps": [
                {
                    "response": {
                        "type": "tool_calls",
                        "tool_calls": [
                            {"id": "call_a", "name": "echo", "arguments": {"message": "alpha"}},
                            {"id": "call_b", "name": "fail", "arguments": {"reason": "beta"}},
                            {"id": "call_c", "name": "echo", "arguments": {"message": "gamma"}},
                        ],
                    }
                },
                {"response": {"type": "text", "content": "alpha and gamma echoed; beta failed."}},
            ],
        }
    ],
    "expects": {
        "exact_tool_calls": 3,
        "all_tools_succeeded": False,
        "tool_arguments_contain": [
            {"tool": "echo", "needle": '"message":"alpha"', "call_index": 0},
            {"tool": "echo", "needle": '"message":"gamma"', "call_index": 1},
        ],
        "tool_results_contain": [{"tool": "fail", "needle": "beta"}],
    },
}

DOCUMENTED = {
    "unknown tool": UNKNOWN_TOOL,
    "empty final text": EMPTY_FINAL_TEXT,
    "several calls in one step": SEVERAL_CALLS_IN_ONE_STEP,
}


# --- (a) the model calls a tool that does not exist --------------------------------------------


@pytest.mark.parametrize("spec", FRAMEWORKS)
def test_unknown_tool_trace_is_refused_at_admission(spec: str) -> None:
    # In a suite the trace never runs: admission refuses it for either framework. The runs
    # below bypass admission to show what each framework does when a model (a live one, or
    # a user agent whose tools changed) calls a tool the agent does not have.
    trace = parse_fixture(json.dumps(UNKNOWN_TOOL), "unknown.json")
    (problem,) = check_trace(trace, "unknown.json", "replay", agent_surface(resolve_agent(spec)))
    assert problem.message.startswith(f"tool 'get_weather' is not registered by agent '{spec}'")


def test_unknown_tool_the_sdk_ends_the_run_with_a_model_behavior_error() -> None:
    case, requests = run_one("openai-agents", UNKNOWN_TOOL)
    assert case.error is not None
    assert case.error.startswith("ModelBehaviorError: Tool get_weather not found in agent")
    assert not case.passed
    assert calls_of(case) == []
    assert case.record is not None and case.record.model_calls == 1
    assert len(requests) == 1


def test_unknown_tool_pydantic_ai_sends_a_retry_prompt_and_asks_again() -> None:
    case, requests = run_one("pydantic-ai", UNKNOWN_TOOL)
    assert case.error is None, case.error
    # The declared checks pass; replay conformance does not: the script has the model call
    # a tool that the request it answers never offered, and the agent never dispatched it.
    assert failing(case) == {
        "loop(dispatches)": "turn 0, step 0: the script called [get_weather], the agent "
        "dispatched []",
        "loop(offered_tools)": "turn 0, step 0 calls 'get_weather', which the request it "
        "answers never offered the model (offered: echo, fail, list_files, read_file, write_file)",
    }
    assert calls_of(case) == []  # nothing was dispatched, so nothing is recorded
    assert case.record is not None
    assert case.record.model_calls == 2
    assert case.record.final_response == "I can't check the weather."
    assert len(requests) == 2
    *_, asked, retry = requests[1].messages
    assert asked == Message(
        role="assistant", tool_calls=(ToolCall("call_1", "get_weather", {"city": "Oslo"}),)
    )
    assert (retry.role, retry.tool_call_id) == ("tool", "call_1")
    assert "Unknown tool name: 'get_weather'" in retry.content
    assert "'echo'" in retry.content  # the retry lists the tools the agent does have


# --- (b) an empty final text -------------------------------------------------------------------


def test_empty_final_text_the_sdk_ends_the_turn_with_it() -> None:
    case, requests = run_one("openai-agents", EMPTY_FINAL_TEXT)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None
    assert case.record.final_response == ""
    assert case.record.model_calls == 2
    assert len(requests) == 2


def test_empty_final_text_pydantic_ai_asks_again_and_replay_runs_out() -> None:
    case, requests = run_one("pydantic-ai", EMPTY_FINAL_TEXT)
    assert not case.passed
    assert case.error is not None
    assert case.error.startswith(
        "case 'empty-final-text': turn 0 requested more model responses than the trace "
        'scripts; the script has no step after a step answering ""; the last request was:\n'
    )
    # The last request: the call, its result, the empty answer, and pydantic-ai's retry
    # (whose wording differs between pydantic-ai releases; the docs show the current one).
    head, _, retry = case.error.rpartition("\n  [4] user: ")
    assert head.endswith(
        '\n  [0] user: "Echo ping, then say nothing."'
        '\n  [1] assistant: call echo({"message": "ping"}) id=call_1'
        '\n  [2] tool: result for call_1: "ping"'
        "\n  [3] assistant: (empty)"
    )
    assert "Please return text or call a tool." in retry
    assert head in DOCS.read_text(encoding="utf-8")  # shown verbatim in the docs
    assert calls_of(case) == [("echo", '{"message":"ping"}', "ping", True)]
    assert len(requests) == 3  # the third is the one replay could not answer


def test_empty_text_then_more_text_pydantic_ai_completes_the_sdk_leaves_a_step() -> None:
    data = fixture(
        "empty-text-then-answer",
        [turn("Answer, please.", text_step(""), text_step("Here is my answer."))],
        {"response_contains": ["Here is my answer."]},
    )
    pai, _ = run_one("pydantic-ai", data)
    assert pai.error is None, pai.error
    assert pai.passed, failing(pai)
    assert pai.record is not None and pai.record.model_calls == 2
    sdk, _ = run_one("openai-agents", data)
    assert sdk.error is not None
    assert "turn 0 scripted 1 step(s) the agent never requested" in sdk.error


# --- (c) several tool calls in one step --------------------------------------------------------


@pytest.mark.parametrize("spec", FRAMEWORKS)
def test_several_calls_in_one_step_are_all_dispatched_in_declared_order(spec: str) -> None:
    case, requests = run_one(spec, SEVERAL_CALLS_IN_ONE_STEP)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert calls_of(case) == [
        ("echo", '{"message":"alpha"}', "alpha", True),
        ("fail", '{"reason":"beta"}', "beta", False),
        ("echo", '{"message":"gamma"}', "gamma", True),
    ]
    # One request for the step, one after all three results are back, in the declared order.
    assert len(requests) == 2
    results = [(m.tool_call_id, m.content) for m in requests[1].messages if m.role == "tool"]
    assert results == [("call_a", "alpha"), ("call_b", "beta"), ("call_c", "gamma")]


SLOW_AND_FAST = """
import threading
import time

from agents import Agent, function_tool
from pydantic_ai import Agent as PydanticAgent

fast_done = threading.Event()


def _slow(label):
    # Finishes only after the fast tool has: declared first, recorded second.
    assert fast_done.wait(10), "the tools did not run concurrently"
    time.sleep(0.3)  # let the fast call's return reach the event loop first
    return "slow " + label


def _fast(label):
    fast_done.set()
    return "fast " + label


@function_tool
def slow(label: str) -> str:
    \"\"\"Slow.\"\"\"
    return _slow(label)


@function_tool
def fast(label: str) -> str:
    \"\"\"Fast.\"\"\"
    return _fast(label)


def sdk_agent():
    fast_done.clear()
    return Agent(name="timing", tools=[slow, fast])


def pydantic_agent():
    fast_done.clear()
    agent = PydanticAgent(name="timing")

    @agent.tool_plain(name="slow")
    def slow_(label: str) -> str:
        \"\"\"Slow.\"\"\"
        return _slow(label)

    @agent.tool_plain(name="fast")
    def fast_(label: str) -> str:
        \"\"\"Fast.\"\"\"
        return _fast(label)

    return agent
"""


@pytest.fixture
def timing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = write_module(tmp_path, SLOW_AND_FAST, prefix="timing_agents")
    yield name
    sys.modules.pop(name, None)


@pytest.mark.parametrize(
    "framework", ["openai-agents:{}:sdk_agent", "pydantic-ai:{}:pydantic_agent"]
)
def test_calls_of_one_step_run_concurrently_and_are_recorded_as_they_finish(
    timing: str, framework: str
) -> None:
    spec = framework.format(timing)
    data = fixture(
        "slow-then-fast",
        [
            turn(
                "Run both",
                tool_step(call("c1", "slow", label="1"), call("c2", "fast", label="2")),
                text_step("done"),
            )
        ],
        {"exact_tool_calls": 2},
    )
    case, _ = run_one(spec, data)
    assert case.error is None, case.error
    assert [(c[0], c[2], c[3]) for c in calls_of(case)] == [
        ("fast", "fast 2", True),
        ("slow", "slow 1", True),
    ]


# --- where they agree: the neutral conversation ------------------------------------------------


def test_both_frameworks_show_the_model_the_same_conversation() -> None:
    data = fixture(
        "same-conversation",
        [
            turn("Echo one", tool_step(call("c1", message="one")), text_step("one echoed")),
            turn("Fail please", tool_step(call("c2", "fail", reason="no")), text_step("failed")),
        ],
        {"exact_tool_calls": 2},
    )
    seen = {}
    for spec in FRAMEWORKS:
        case, requests = run_one(spec, data)
        assert case.passed, (case.error, failing(case))
        seen[spec] = [r.messages for r in requests]
    assert seen["openai-agents"] == seen["pydantic-ai"]
    assert seen["pydantic-ai"][-1] == (
        Message(role="user", content="Echo one"),
        Message(role="assistant", tool_calls=(ToolCall("c1", "echo", {"message": "one"}),)),
        Message(role="tool", content="one", tool_call_id="c1"),
        Message(role="assistant", content="one echoed"),
        Message(role="user", content="Fail please"),
        Message(role="assistant", tool_calls=(ToolCall("c2", "fail", {"reason": "no"}),)),
        Message(role="tool", content="no", tool_call_id="c2"),
    )


# --- replay divergence diagnostics, for both frameworks ----------------------------------------

LONG = "x" * 300


@pytest.mark.parametrize("spec", FRAMEWORKS)
def test_over_requested_turn_names_the_turn_and_shows_the_last_request(spec: str) -> None:
    data = fixture(
        "over-requested",
        [
            turn("Echo one", tool_step(call("c1", message="one")), text_step("one echoed")),
            # Turn 1 scripts a tool call but no final text: the agent asks once too often.
            turn(f"Echo this: {LONG}", tool_step(call("c2", message=LONG))),
        ],
        {"exact_tool_calls": 2},
    )
    case, _ = run_one(spec, data)
    assert case.error is not None
    head, _, summary = case.error.partition("\n")
    assert head.startswith(
        "case 'over-requested': turn 1 requested more model responses than the trace scripts; "
        'the script has no step after a step calling echo({"message": "xxx'
    )
    assert head.endswith("…); the last request was:")  # the expected step, clipped
    lines = summary.splitlines()
    assert lines[:4] == [
        '  [0] user: "Echo one"',
        '  [1] assistant: call echo({"message": "one"}) id=c1',
        '  [2] tool: result for c1: "one"',
        '  [3] assistant: "one echoed"',
    ]
    # Long contents are clipped, so the summary stays readable.
    assert lines[4].startswith('  [4] user: "Echo this: xxx') and lines[4].endswith("…")
    assert lines[5].startswith('  [5] assistant: call echo({"message": "xxx')
    assert lines[5].endswith("…) id=c2")
    assert lines[6].startswith("  [6] tool: result for c2: ") and lines[6].endswith("…")
    assert len(lines) == 7
    assert all(len(line) < 180 for line in lines)
    assert case.record is not None and len(case.record.calls) == 2  # kept for the report


@pytest.mark.parametrize("spec", FRAMEWORKS)
def test_leftover_steps_name_the_turn_and_show_the_last_request(spec: str) -> None:
    data = fixture(
        "leftover-steps",
        [
            turn("Say hi", text_step("hi")),
            turn(
                "Echo two",
                tool_step(call("c1", message="two")),
                text_step("two echoed"),
                text_step("a step the agent never asks for"),
            ),
        ],
        {"exact_tool_calls": 1},
    )
    case, _ = run_one(spec, data)
    assert case.error == (
        "case 'leftover-steps': turn 1 scripted 1 step(s) the agent never requested (the trace "
        'over-specifies this turn); the script expected next a step answering "a step the '
        'agent never asks for"; the last request was:\n'
        '  [0] user: "Say hi"\n'
        '  [1] assistant: "hi"\n'
        '  [2] user: "Echo two"\n'
        '  [3] assistant: call echo({"message": "two"}) id=c1\n'
        '  [4] tool: result for c1: "two"'
    )
    assert case.record is not None
    assert case.record.turn_responses == ["hi", "two echoed"]


# --- the documentation shows these same traces -------------------------------------------------


def documented_fixtures() -> list[dict[str, Any]]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Differences between frameworks", 1)[1].split("\n## ", 1)[0]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_each_difference_is_documented_with_its_trace(name: str) -> None:
    assert DOCUMENTED[name] in documented_fixtures()


def test_the_docs_show_no_trace_these_tests_do_not_run() -> None:
    assert len(documented_fixtures()) == len(DOCUMENTED)


def test_the_documented_admissible_traces_are_admitted() -> None:
    # The empty-text and several-calls traces can be dropped into a suite as they are.
    for data in (EMPTY_FINAL_TEXT, SEVERAL_CALLS_IN_ONE_STEP):
        trace = parse_fixture(json.dumps(data), "doc.json")
        for spec in FRAMEWORKS:
            assert (
                check_trace(trace, "doc.json", "replay", agent_surface(resolve_agent(spec))) == []
            )


def documented_block(first_line_start: str) -> str:
    """The docs' indented code block whose first line starts with `first_line_start`."""
    text = DOCS.read_text(encoding="utf-8")
    for block in re.findall(r"\n  ```\n(.*?)\n  ```", text, re.S):
        lines = [line[2:] for line in block.splitlines()]
        if lines[0].startswith(first_line_start):
            return "\n".join(lines)
    raise AssertionError(f"no documented block starting {first_line_start!r}")


@pytest.mark.parametrize("spec", FRAMEWORKS)
def test_the_documented_divergence_errors_are_what_each_framework_reports(spec: str) -> None:
    over = fixture(
        "over-requested",
        [
            turn("Echo one", tool_step(call("c1", message="one")), text_step("one echoed")),
            turn(f"Echo this: {LONG}", tool_step(call("c2", message=LONG))),
        ],
        {"exact_tool_calls": 2},
    )
    leftover = fixture(
        "leftover-steps",
        [
            turn("Say hi", text_step("hi")),
            turn(
                "Echo two",
                tool_step(call("c1", message="two")),
                text_step("two echoed"),
                text_step("a step the agent never asks for"),
            ),
        ],
        {"exact_tool_calls": 1},
    )
    for data in (over, leftover):
        case, _ = run_one(spec, data)
        assert case.error == documented_block(f"case '{data['model_name']}'")
