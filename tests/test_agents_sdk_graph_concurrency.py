"""Agents used as tools, called in one step, run at the same time (the SDK runs a step's
function tools as concurrent tasks): their model calls come in no defined order. A fixture
whose steps name the agent they answer replays the same whatever the order, each call is
recorded under its own agent however the dispatches interleave, and a fixture that would
depend on the order is refused at admission."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, call, fixture, text_step, tool_step, turn, write_suite

from harness.agents.registry import surface_of

# An orchestrator whose one step calls two agents as tools, each doing a tool call and then
# answering. GATE decides who waits for whom, so each order is forced, not hoped for:
# `weather-first`/`news-first`: the other agent's instructions (read before each of its
# model calls) wait until the first agent's answer has been extracted, so every model call
# of the first comes before any of the second; `overlap`: each agent's tool waits for the
# other's to start, so the two dispatches are in flight at once.
ORCHESTRATOR = """
import asyncio

from agents import Agent, function_tool

GATE = "{GATE}"


def build_agent():
    answered = {"weather_agent": asyncio.Event(), "news_agent": asyncio.Event()}
    started = {"forecast": asyncio.Event(), "headlines": asyncio.Event()}
    first = {"weather-first": "weather_agent", "news-first": "news_agent"}.get(GATE)

    async def overlapping(name, other):
        started[name].set()
        if GATE == "overlap":
            await started[other].wait()

    @function_tool
    async def forecast(city: str) -> str:
        '''The weather in a city.'''
        await overlapping("forecast", "headlines")
        return f"{city}: sunny, 21 C"

    @function_tool
    async def headlines(city: str) -> str:
        '''The news of a city.'''
        await overlapping("headlines", "forecast")
        return f"{city}: ferry strike"

    def nested(name, tool, tool_name):
        async def instructions(context, agent):
            if first is not None and name != first:
                await answered[first].wait()
            return f"You are {name}."

        async def extract(result):
            answered[name].set()
            return str(result.final_output)

        agent = Agent(name=name, instructions=instructions, tools=[tool])
        return agent.as_tool(tool_name, f"Ask {name}.", custom_output_extractor=extract)

    return Agent(
        name="orchestrator",
        instructions="Ask both agents at once.",
        tools=[
            nested("weather_agent", forecast, "ask_weather"),
            nested("news_agent", headlines, "ask_news"),
        ],
    )
"""

AGENT = "openai-agents:concurrent_orchestra:build_agent"

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


def named(agent: str | None, step: dict[str, Any]) -> dict[str, Any]:
    return step if agent is None else {**step, "agent": agent}


def steps(orchestrator: str | None = "orchestrator") -> list[dict[str, Any]]:
    """The script, weather's steps first: the order of the list is not the order of the
    calls, which the steps' agents decide."""
    return [
        named(
            orchestrator,
            tool_step(
                call("o1", "ask_weather", input="Oslo?"), call("o2", "ask_news", input="Oslo?")
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
    (root / "concurrent_orchestra.py").write_text(
        ORCHESTRATOR.replace("{GATE}", gate), encoding="utf-8"
    )
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
def test_steps_naming_their_agent_replay_green_in_either_order_of_the_nested_calls(
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
    assert sorted((c["name"], c["agent"]) for c in calls) == [
        ("ask_news", "orchestrator"),
        ("ask_weather", "orchestrator"),
        ("forecast", "weather_agent"),
        ("headlines", "news_agent"),
    ]


def test_nested_dispatches_in_flight_at_once_are_each_recorded_under_their_agent(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run(run_cli, tmp_path, "overlap", steps())
    case = only_case(tmp_path)
    assert result.returncode == 0, (case["error"], result.stdout)
    record = case["record"]
    assert sorted((c["name"], c["agent"], c["result"]) for c in record["calls"]) == [
        ("ask_news", "orchestrator", "Oslo: ferry strike"),
        ("ask_weather", "orchestrator", "Oslo: sunny, 21 C"),
        ("forecast", "weather_agent", "Oslo: sunny, 21 C"),
        ("headlines", "news_agent", "Oslo: ferry strike"),
    ]
    # Neither tool could end before the other began, so neither agent asked again before
    # the other's first request: the two conversations interleave, and replay conformance,
    # reading each agent's conversation apart, finds nothing wrong in either (no exemption).
    agents = [step["agent"] for step in kept_transcript(tmp_path)]
    assert agents[0] == agents[-1] == "orchestrator"
    assert set(agents[1:3]) == set(agents[3:5]) == {"weather_agent", "news_agent"}


# --- a script that would depend on the order is refused -------------------------------------


@pytest.mark.parametrize("gate", ["weather-first", "news-first"])
def test_a_step_calling_agents_as_tools_at_once_needs_every_later_step_to_name_its_agent(
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


def test_one_later_step_naming_no_agent_is_enough_to_refuse_and_is_the_one_named(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run(run_cli, tmp_path, "weather-first", steps(orchestrator=None))
    said = result.stdout + result.stderr
    assert result.returncode == 1, said
    # The step making the calls may name none: only the steps after it can be raced for.
    assert "add `agent` to $.turns[0].steps[5]" in said
    assert "steps[0].agent" not in said


def test_the_surface_knows_which_tools_run_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    # A third agent as a tool, switched off for good: never offered, so never run.
    source = ORCHESTRATOR.replace("{GATE}", "overlap").replace(
        '            nested("news_agent", headlines, "ask_news"),\n',
        '            nested("news_agent", headlines, "ask_news"),\n'
        '            Agent(name="off_agent").as_tool("ask_off", "Off.", is_enabled=False),\n',
    )
    (tmp_path / "concurrent_orchestra_surface.py").write_text(source, encoding="utf-8")
    surface = surface_of("openai-agents:concurrent_orchestra_surface:build_agent")
    assert dict(surface.runs_agents) == {
        "ask_weather": {"weather_agent"},
        "ask_news": {"news_agent"},
    }
