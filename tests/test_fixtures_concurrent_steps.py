"""`harness.fixtures.concurrent_steps` through admission: a step calling several agents used
as tools at once needs every later step of its turn to name the agent it answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import admit, call, fixture, refuse_one, text_step, tool_step, turn, write_fixture

from harness.agents.protocol import AgentSurface
from harness.io.problems import AdmissionError

SURFACE = AgentSurface(
    "openai-agents:orchestra:build_agent",
    frozenset({"ask_a", "ask_b", "lookup", "a_tool"}),
    agents={
        "orchestrator": frozenset({"ask_a", "ask_b", "lookup"}),
        "a": frozenset({"a_tool"}),
        "b": frozenset(),
    },
    runs_agents={"ask_a": frozenset({"a"}), "ask_b": frozenset({"b", "a"})},
)


def case(*steps: dict[str, Any], later: int = 0) -> dict[str, Any]:
    turns = [turn("go", *steps)] + [turn("again", text_step("done"))] * later
    return fixture("orchestra", turns, {"tools_used": ["ask_a"]})


def by(agent: str, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "agent": agent}


AT_ONCE = tool_step(call("1", "ask_a", q="x"), call("2", "ask_b", q="y"))


def test_later_steps_naming_no_agent_are_refused_at_the_step_making_the_calls(
    tmp_path: Path,
) -> None:
    data = case(
        text_step("thinking"),  # before the calls: not raced for
        AT_ONCE,
        by("a", text_step("a says")),
        text_step("b says"),
        text_step("both said"),
    )
    refuse_one(
        tmp_path,
        data,
        "$.turns[0].steps[1].response.tool_calls",
        "calls agents used as tools at once (ask_a runs a, ask_b runs a or b): the framework "
        "runs them at the same time, so their model calls come in no defined order and a "
        "step taken by position would answer whichever asks first; add `agent` to "
        "$.turns[0].steps[3], [4], naming the agent each answers",
        agent=SURFACE,
    )


def test_the_same_agent_used_as_a_tool_twice_at_once_is_two_runs_at_once(
    tmp_path: Path,
) -> None:
    data = case(tool_step(call("1", "ask_a"), call("2", "ask_a")), text_step("a"))
    path = write_fixture(tmp_path, "case.json", data)
    with pytest.raises(AdmissionError, match=r"\(ask_a runs a\).*add `agent` to \$\.turns\[0\]"):
        admit(path, agent=SURFACE)


def test_a_long_list_of_steps_to_name_is_cut_short(tmp_path: Path) -> None:
    data = case(AT_ONCE, *[text_step(f"s{i}") for i in range(12)])
    refuse_one(
        tmp_path,
        data,
        "$.turns[0].steps[0].response.tool_calls",
        "calls agents used as tools at once (ask_a runs a, ask_b runs a or b): the framework "
        "runs them at the same time, so their model calls come in no defined order and a "
        "step taken by position would answer whichever asks first; add `agent` to "
        "$.turns[0].steps[1], [2], [3], [4], [5], [6], [7], [8], …, naming the agent each "
        "answers",
        agent=SURFACE,
    )


@pytest.mark.parametrize(
    "steps",
    [
        # Every later step names its agent; the step making the calls need not.
        [
            AT_ONCE,
            by("a", text_step("a")),
            by("b", text_step("b")),
            by("orchestrator", text_step("ok")),
        ],
        # One agent used as a tool beside a plain tool: one agent asks, in order.
        [tool_step(call("1", "ask_a"), call("2", "lookup")), text_step("a"), text_step("ok")],
        # One at a time: each nested run ends before the next step calls another.
        [
            tool_step(call("1", "ask_a")),
            text_step("a"),
            tool_step(call("2", "ask_b")),
            text_step("b"),
            text_step("ok"),
        ],
    ],
    ids=["later-steps-named", "one-agent-as-a-tool-and-a-plain-tool", "one-after-another"],
)
def test_a_script_no_order_can_change_is_admitted(tmp_path: Path, steps: list[Any]) -> None:
    admitted = admit(write_fixture(tmp_path, "case.json", case(*steps, later=1)), agent=SURFACE)
    assert admitted.trace.turns[0].steps is not None


def test_an_agent_whose_tools_run_no_agent_keeps_its_positional_script(tmp_path: Path) -> None:
    plain = AgentSurface(SURFACE.name, SURFACE.tools, SURFACE.agents)
    data = case(AT_ONCE, text_step("a"), text_step("b"), text_step("ok"))
    assert admit(write_fixture(tmp_path, "case.json", data), agent=plain).id == "orchestra"
