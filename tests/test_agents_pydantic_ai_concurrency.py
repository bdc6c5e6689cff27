"""pydantic-ai runs the tool calls of one model step as concurrent tasks (a tool declared
`sequential=True` runs alone), so two tools of one step that each delegate to an agent make
their model calls in no defined order. A fixture whose steps name the agent they answer
replays the same whatever the order, each call is recorded under its own agent however the
dispatches interleave, and a fixture that would depend on the order is refused at
admission."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, call, fixture, text_step, tool_step, turn, write_suite

from harness.agents.registry import surface_of

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

# An orchestrator whose one step calls two delegating tools, each delegate doing a tool call
# and then answering. GATE decides who waits for whom, so each order is forced, not hoped
# for: `weather-first`/`news-first`: the other delegating tool waits until the first
# delegate has answered before running its agent, so every model call of the first comes
# before any of the second; `overlap`: each delegate's tool waits for the other's to start,
# so the two dispatches are in flight at once (run in order, the case could never end).
ORCHESTRATOR = """
import asyncio

from pydantic_ai import Agent, RunContext

GATE = "{GATE}"


def build():
    answered = {"weather_agent": asyncio.Event(), "news_agent": asyncio.Event()}
    started = {"forecast": asyncio.Event(), "headlines": asyncio.Event()}
    first = {"weather-first": "weather_agent", "news-first": "news_agent"}.get(GATE)

    async def overlapping(name, other):
        started[name].set()
        if GATE == "overlap":
            await started[other].wait()

    weather = Agent(name="weather_agent", instructions="You know the weather.")

    @weather.tool_plain
    async def forecast(city: str) -> str:
        await overlapping("forecast", "headlines")
        return f"{city}: sunny, 21 C"

    news = Agent(name="news_agent", instructions="You know the news.")

    @news.tool_plain
    async def headlines(city: str) -> str:
        await overlapping("headlines", "forecast")
        return f"{city}: ferry strike"

    async def delegate(ctx, agent, question):
        if first is not None and agent.name != first:
            await answered[first].wait()
        result = await agent.run(question, usage=ctx.usage)
        answered[agent.name].set()
        return result.output

    boss = Agent(name="orchestrator", instructions="Ask both agents at once.")

    @boss.tool
    async def ask_weather(ctx: RunContext[None], question: str) -> str:
        return await delegate(ctx, weather, question)

    @boss.tool
    async def ask_news(ctx: RunContext[None], question: str) -> str:
        return await delegate(ctx, news, question)

    {EXTRA}
    return boss
"""

AGENT = "pydantic-ai:concurrent_delegation:build"

# What each agent's calls were: graded per agent, so a call recorded under the wrong agent
# fails the case as well as the record's own assertion below.
EXPECTS: dict[str, Any] = {
    "agents": {
        "orchestrator": {"tools_used": ["ask_weather", "ask_news"]},
        "weather_agent": {"tools_used": ["forecast"], "tools_not_used": ["headlines"]},
        "news_agent": {"tools_used": ["headlines"], "tools_not_used": ["forecast"]},
    },
    "final_agent": "orchestrator",
    "response_contains": ["ferry strike"],
}


def module(gate: str, extra: str = "") -> str:
    return ORCHESTRATOR.replace("{GATE}", gate).replace("{EXTRA}", extra)


def named(agent: str | None, step: dict[str, Any]) -> dict[str, Any]:
    return step if agent is None else {**step, "agent": agent}


def steps(orchestrator: str | None = "orchestrator") -> list[dict[str, Any]]:
    """The script, weather's steps first: the order of the list is not the order of the
    calls, which the steps' agents decide."""
    return [
        named(
            orchestrator,
            tool_step(
                call("o1", "ask_weather", question="Oslo?"),
                call("o2", "ask_news", question="Oslo?"),
            ),
        ),
        named("weather_agent", tool_step(call("w1", "forecast", city="Oslo"))),
        named("weather_agent", text_step("Oslo: sunny, 21 C")),
        named("news_agent", tool_step(call("n1", "headlines", city="Oslo"))),
        named("news_agent", text_step("Oslo: ferry strike")),
        named(orchestrator, text_step("Sunny in Oslo, and a ferry strike.")),
    ]


def run(run_cli: Cli, root: Path, gate: str, script: list[dict[str, Any]]) -> Any:
    write_suite(root / "evals", {"both.json": fixture("both", [turn("Oslo?", *script)], EXPECTS)})
    (root / "concurrent_delegation.py").write_text(module(gate), encoding="utf-8")
    return run_cli(
        "eval", "run", "--suite", "evals", "--agent", AGENT, "--json-report", "r.json",
        "-v", "--timeout", "30", cwd=root,
    )  # fmt: skip


def kept_transcript(root: Path) -> list[dict[str, Any]]:
    (kept,) = (root / ".zeroclaw-eval").glob("transcripts-*.jsonl")
    transcript: list[dict[str, Any]] = json.loads(kept.read_text(encoding="utf-8"))["transcript"]
    return transcript


def only_case(root: Path) -> dict[str, Any]:
    (case,) = json.loads((root / "r.json").read_text(encoding="utf-8"))["cases"]
    return dict(case)


@pytest.mark.parametrize(
    ("gate", "order"),
    [
        ("weather-first", ["weather_agent"] * 2 + ["news_agent"] * 2),
        ("news-first", ["news_agent"] * 2 + ["weather_agent"] * 2),
    ],
)
def test_steps_naming_their_agent_replay_green_in_either_order_of_the_delegates_calls(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: str, order: list[str]
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run(run_cli, tmp_path, gate, steps())
    case = only_case(tmp_path)
    assert result.returncode == 0, (case["error"], result.stdout)
    transcript = kept_transcript(tmp_path)
    # The order forced happened: the two runs ask differently, the same script answers.
    assert [step["agent"] for step in transcript] == ["orchestrator", *order, "orchestrator"]
    # Each request was answered by the step naming its agent, wherever it sits in the list.
    by_agent = {"weather_agent": [1, 2], "news_agent": [3, 4]}
    assert [step["step"] for step in transcript[1:5]] == by_agent[order[0]] + by_agent[order[2]]
    calls = case["record"]["calls"]
    assert sorted((c["name"], c["agent"], c["result"]) for c in calls) == [
        ("ask_news", "orchestrator", "Oslo: ferry strike"),
        ("ask_weather", "orchestrator", "Oslo: sunny, 21 C"),
        ("forecast", "weather_agent", "Oslo: sunny, 21 C"),
        ("headlines", "news_agent", "Oslo: ferry strike"),
    ]


def test_delegating_tools_of_one_step_run_at_once_each_call_recorded_under_its_agent(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    # Each delegate's tool waits for the other's to start: were one step's tool calls run
    # in order, neither could, and the case would time out.
    result = run(run_cli, tmp_path, "overlap", steps())
    case = only_case(tmp_path)
    assert result.returncode == 0, (case["error"], result.stdout)
    assert sorted((c["name"], c["agent"], c["result"]) for c in case["record"]["calls"]) == [
        ("ask_news", "orchestrator", "Oslo: ferry strike"),
        ("ask_weather", "orchestrator", "Oslo: sunny, 21 C"),
        ("forecast", "weather_agent", "Oslo: sunny, 21 C"),
        ("headlines", "news_agent", "Oslo: ferry strike"),
    ]
    agents = [step["agent"] for step in kept_transcript(tmp_path)]
    assert agents[0] == agents[-1] == "orchestrator"
    assert set(agents[1:3]) == set(agents[3:5]) == {"weather_agent", "news_agent"}


# --- a script that would depend on the order is refused -------------------------------------


@pytest.mark.parametrize("gate", ["weather-first", "news-first"])
def test_a_step_calling_two_delegating_tools_needs_every_later_step_to_name_its_agent(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: str
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    # Steps taken in order: green when weather asks first, red when news does. Refused in
    # both, the same way, before the agent runs.
    script = [{"response": step["response"]} for step in steps()]
    result = run(run_cli, tmp_path, gate, script)
    said = result.stdout + result.stderr
    assert result.returncode == 1, said
    assert "$.turns[0].steps[0].response.tool_calls" in said
    assert "ask_weather runs weather_agent, ask_news runs news_agent" in said
    assert "no defined order" in said
    assert "add `agent` to $.turns[0].steps[1], [2], [3], [4], [5]" in said
    assert "nothing was run" in said
    assert not (tmp_path / "r.json").exists()


def test_the_surface_knows_which_tools_delegate_and_a_sequential_one_does_not_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    # A third delegating tool declared sequential=True: pydantic-ai runs it alone, after
    # the calls emitted before it and before those after it, so it races with none.
    extra = (
        'alone = Agent(name="alone_agent")\n\n'
        "    @boss.tool(sequential=True)\n"
        "    async def ask_alone(ctx: RunContext[None], question: str) -> str:\n"
        "        return (await alone.run(question, usage=ctx.usage)).output\n"
    )
    (tmp_path / "delegation_surface.py").write_text(module("overlap", extra), encoding="utf-8")
    surface = surface_of("pydantic-ai:delegation_surface:build")
    assert set(surface.agents) == {"orchestrator", "weather_agent", "news_agent", "alone_agent"}
    assert dict(surface.runs_agents) == {
        "ask_weather": {"weather_agent"},
        "ask_news": {"news_agent"},
    }
