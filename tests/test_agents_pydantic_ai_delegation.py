"""`harness.agents.frameworks.pydantic_ai`: agent delegation (a tool that runs another
`Agent`) replayed, recorded and attributed, and the delegation example's suite failing on
broken variants of its agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    REPO,
    Cli,
    Recording,
    call,
    case_of,
    fixture,
    text_step,
    tool_step,
    turn,
    write_module,
    write_suite,
)

from harness import run_cases, run_suite
from harness.agents.registry import agent_surface, resolve_agent
from harness.verdict.reports import CaseReport

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

EXAMPLE = REPO / "examples" / "pydantic_ai_delegation"

# Built fresh per case: the delegate is a variable the tool closes over.
DELEGATING = """
from pydantic_ai import Agent, RunContext


def build():
    helper = Agent(name="helper", instructions="You look things up.")

    @helper.tool_plain
    def lookup(key: str) -> str:
        return f"value of {key}"

    boss = Agent(name="boss", instructions="You delegate lookups.")

    @boss.tool
    async def ask_helper(ctx: RunContext[None], question: str) -> str:
        result = await helper.run(question, usage=ctx.usage)
        return result.output

    return boss
"""


def delegation_case(name: str = "delegated", key: str = "k") -> dict[str, Any]:
    return fixture(
        name,
        [
            turn(
                f"What is {key}?",
                tool_step(call("c_ask", "ask_helper", question=f"{key}?")),
                tool_step(call("c_look", "lookup", key=key)),
                text_step(f"{key} is value of {key}"),
                text_step(f"The helper says {key} is value of {key}."),
            )
        ],
        {
            "tool_results_contain": [{"tool": "lookup", "needle": f"value of {key}"}],
        },
    )


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


@pytest.fixture
def delegating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"pydantic-ai:{write_module(tmp_path, DELEGATING, 'delegating')}:build"


def test_the_surface_holds_every_agent_of_the_graph_and_its_tools(delegating: str) -> None:
    surface = agent_surface(resolve_agent(delegating))
    assert surface.tools == {"ask_helper", "lookup"}
    assert surface.agents == {"boss": {"ask_helper"}, "helper": {"lookup"}}


def test_a_delegates_model_calls_are_the_scripts_steps_each_saying_its_agent(
    delegating: str,
) -> None:
    adapter = Recording(resolve_agent(delegating))
    (case,) = run_cases([case_of(delegation_case())], adapter, suite="s").cases
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert [r.agent for r in adapter.requests] == ["boss", "helper", "helper", "boss"]
    # The delegate's conversation is its own: its instructions and the delegated question.
    assert [(m.role, m.content) for m in adapter.requests[1].messages] == [
        ("system", "You look things up."),
        ("user", "k?"),
    ]
    assert [m.content for m in adapter.requests[2].messages if m.role == "tool"] == ["value of k"]
    # What the boss's model saw as its tool's result is the helper's answer.
    assert [m.content for m in adapter.requests[3].messages if m.role == "tool"] == [
        "k is value of k"
    ]


def test_delegation_is_a_call_of_the_outer_agent_and_the_inner_calls_the_delegates(
    delegating: str,
) -> None:
    (case,) = run_cases([case_of(delegation_case())], resolve_agent(delegating), suite="s").cases
    assert case.passed, (case.error, failing(case))
    assert case.record is not None
    assert [(c.name, c.result, c.agent) for c in case.record.calls] == [
        ("lookup", "value of k", "helper"),
        ("ask_helper", "k is value of k", "boss"),
    ]
    # Control came back: delegation is no handoff, and the boss gave the final answer.
    assert case.record.handoffs == []
    assert case.record.final_agent == "boss"


ONE_AGENT = """
from pydantic_ai import Agent


def build():
    agent = Agent(name="solo", instructions="You look things up.")

    @agent.tool_plain
    def lookup(key: str) -> str:
        return f"value of {key}"

    return agent
"""


def test_one_agent_keeps_the_record_of_one_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No agent is named where the agent is one agent: its records are as they were.
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"pydantic-ai:{write_module(tmp_path, ONE_AGENT, 'one_agent')}:build"
    assert agent_surface(resolve_agent(spec)).agents == {}
    adapter = Recording(resolve_agent(spec))
    data = fixture(
        "one",
        [turn("k?", tool_step(call("c1", "lookup", key="k")), text_step("value of k"))],
        {"exact_tool_calls": 1},
    )
    (case,) = run_cases([case_of(data)], adapter, suite="s").cases
    assert case.passed, (case.error, failing(case))
    assert case.record is not None
    assert [(c.name, c.agent) for c in case.record.calls] == [("lookup", None)]
    assert [r.agent for r in adapter.requests] == [None, None]
    assert case.record.final_agent is None


SHARED_DELEGATE = """
from pydantic_ai import Agent, RunContext

helper = Agent(instructions="You look things up.")


@helper.tool_plain
def lookup(key: str) -> str:
    return f"value of {key}"


def build():
    boss = Agent(name="boss", instructions="You delegate lookups.")

    @boss.tool
    async def ask_helper(ctx: RunContext[None], question: str) -> str:
        return (await helper.run(question, usage=ctx.usage)).output

    return boss
"""


def test_a_module_level_delegate_shared_by_concurrent_cases_records_each_cases_own_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One delegate object for every case, run four at a time, one case's turn failing
    # half-way: each case's overrides are its own and end with its turn.
    monkeypatch.syspath_prepend(str(tmp_path))
    module = write_module(tmp_path, SHARED_DELEGATE, "shared_delegate")
    cases: dict[str, dict[str, Any] | str] = {
        f"c{i}.json": delegation_case(f"case-{i}", key=f"k{i}") for i in range(8)
    }
    broken = delegation_case("broken", key="kb")
    del broken["turns"][0]["steps"][2:]  # the delegate asks for a step the script lacks
    cases["broken.json"] = broken
    report = run_suite(
        write_suite(tmp_path / "suite", cases), agent=f"pydantic-ai:{module}:build", jobs=4
    )
    by_id = {c.id: c for c in report.cases}
    broken_case = by_id.pop("broken")
    assert broken_case.error is not None
    assert "requested more model responses than the trace scripts" in broken_case.error
    for case_id, case in by_id.items():
        key = "k" + case_id.removeprefix("case-")
        assert case.passed, (case_id, case.error, failing(case))
        assert case.record is not None
        # An unnamed delegate goes by the variable its tool reads it from.
        assert [(c.name, c.arguments, c.agent) for c in case.record.calls] == [
            ("lookup", f'{{"key":"{key}"}}', "helper"),
            ("ask_helper", f'{{"question":"{key}?"}}', "boss"),
        ]


def test_the_delegation_example_fails_when_the_delegate_lost_its_tool(
    run_cli: Cli, tmp_path: Path
) -> None:
    source = (EXAMPLE / "flight_booking.py").read_text(encoding="utf-8")
    broken = source.replace("@search_agent.tool_plain\n", "")
    assert broken != source
    (tmp_path / "lost_tool.py").write_text(broken, encoding="utf-8")
    result = run_cli(
        "eval",
        "run",
        "--suite",
        str(EXAMPLE / "evals"),
        "--agent",
        "pydantic-ai:lost_tool:booking_agent",
        cwd=tmp_path,
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "tool 'find_flights' is not registered" in result.stdout + result.stderr


FORGETFUL = """
from dataclasses import replace

from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelRequest, ToolReturnPart


def forget_tool_results(messages):
    # The bug: every tool result dropped from what the search agent's model is sent.
    return [
        replace(m, parts=[p for p in m.parts if not isinstance(p, ToolReturnPart)])
        if isinstance(m, ModelRequest)
        else m
        for m in messages
    ]


"""


def test_the_delegation_example_fails_when_the_delegates_tool_results_never_reach_its_model(
    run_cli: Cli, tmp_path: Path
) -> None:
    source = (EXAMPLE / "flight_booking.py").read_text(encoding="utf-8")
    declaration = 'search_agent: Agent[None, str] = Agent(\n    name="flight_search",'
    assert declaration in source
    broken = source.replace(
        declaration, declaration + "\n    capabilities=[ProcessHistory(forget_tool_results)],"
    ).replace("# A fixed timetable", FORGETFUL + "# A fixed timetable")
    (tmp_path / "forgetful.py").write_text(broken, encoding="utf-8")
    result = run_cli(
        "eval",
        "run",
        "--suite",
        str(EXAMPLE / "evals"),
        "--agent",
        "pydantic-ai:forgetful:booking_agent",
        cwd=tmp_path,
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "0/3 cases passed" in result.stdout
    # The search agent's tool ran and returned its flights; its model never saw them.
    assert 'request_contains(turn 0, step 2, "tool", "ZC101 $220; ZC205 $310")' in result.stdout
    assert 'request_contains(turn 0, step 2, "tool", "no flights")' in result.stdout
    # Replay conformance holds the delegate to its own conversation, and names it (pydantic-ai
    # puts a placeholder where the result was dropped).
    caught = (
        'loop(tool_results): turn 0, request 2 (agent "flight_search"): the result passed '
        'back for call_find (find_flights) was "The tool call was interrupted'
    )
    assert result.stdout.count(caught) == 3, result.stdout


def test_the_delegation_example_needs_no_conformance_exemption() -> None:
    for path in sorted((EXAMPLE / "evals").glob("*.json")):
        assert "loop_exempt" not in json.loads(path.read_text("utf-8"))["expects"], path.name
