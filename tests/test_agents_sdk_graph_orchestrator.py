"""The SDK orchestrator example (`examples/openai_agents_orchestrator`: agents used as tools
through `Agent.as_tool`) replayed green, each step and call recorded under its agent, and
the suite failing, naming what broke, on a nested agent that lost its tool, one whose tool
results never reach its model, and an orchestrator that answers itself."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, Cli, reported_cases, run_reported

from harness.agents.registry import surface_of

EXAMPLE = REPO / "examples" / "openai_agents_orchestrator"
AGENT = "openai-agents:travel_desk:build_agent"


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example, copied to a directory of its own the test may add modules to."""
    root = tmp_path / "desk"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".zeroclaw-eval"))
    monkeypatch.syspath_prepend(str(root))
    return root


def test_every_agent_of_the_orchestrators_graph_is_on_the_surface(desk: Path) -> None:
    assert dict(surface_of(AGENT).agents) == {
        "orchestrator": {"ask_weather", "translate_to_french"},
        "weather_agent": {"get_forecast"},
        "translator_agent": frozenset(),
    }


def test_the_suite_replays_green_the_agent_tool_the_orchestrators_its_steps_the_nested_agents(
    run_cli: Cli, desk: Path
) -> None:
    result = run_reported(run_cli, desk, AGENT, "-v")
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "5/5 cases passed" in result.stdout
    chained = reported_cases(desk)["weather-in-french-chained"]["record"]
    # Each agent used as a tool is one call of the orchestrator, recorded once the nested
    # agent has answered (after its own calls), its result what the orchestrator's model saw.
    assert [(c["name"], c["agent"], c["result"]) for c in chained["calls"]] == [
        ("get_forecast", "weather_agent", "Paris: light rain, 14 C"),
        ("ask_weather", "orchestrator", "Paris: light rain, 14 C."),
        ("translate_to_french", "orchestrator", "Paris : pluie légère, 14 C."),
    ]
    assert chained["handoffs"] == []
    assert chained["final_agent"] == "orchestrator"
    assert chained["model_calls"] == 6
    kept = [
        json.loads(line)
        for path in (desk / ".zeroclaw-eval").glob("transcripts-*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    (transcript,) = [t["transcript"] for t in kept if t["id"] == "weather-in-french-chained"]
    assert [(step["agent"], step["tools_offered"]) for step in transcript] == [
        ("orchestrator", ["ask_weather", "translate_to_french"]),
        ("weather_agent", ["get_forecast"]),
        ("weather_agent", ["get_forecast"]),
        ("orchestrator", ["ask_weather", "translate_to_french"]),
        ("translator_agent", []),
        ("orchestrator", ["ask_weather", "translate_to_french"]),
    ]


# --- a graph that broke fails its suite, naming what broke ----------------------------------

TOOL_ON_THE_WRONG_AGENT = """
import travel_desk


def build_agent():
    orchestrator = travel_desk.build_agent()
    # The weather agent lost its tool: it ended up on the orchestrator.
    weather = travel_desk.build_weather_agent()
    forecast, weather.tools = weather.tools[0], []
    orchestrator.tools = [
        weather.as_tool(tool_name="ask_weather", tool_description="Ask the weather agent."),
        orchestrator.tools[1],
        forecast,
    ]
    return orchestrator
"""

ANSWERS_ITSELF = """
import travel_desk


def never(context, agent):
    return False


def build_agent():
    # A switch that turns the agents-as-tools off: the orchestrator is left to answer itself.
    return travel_desk.Agent(
        name="orchestrator",
        instructions=travel_desk.build_agent().instructions,
        tools=[
            travel_desk.build_weather_agent().as_tool(
                tool_name="ask_weather", tool_description="Weather.", is_enabled=never
            ),
            travel_desk.build_translator_agent().as_tool(
                tool_name="translate_to_french", tool_description="French.", is_enabled=never
            ),
        ],
    )
"""


@pytest.mark.parametrize(
    ("source", "failing", "error"),
    [
        (
            TOOL_ON_THE_WRONG_AGENT,
            4,
            "the model called tool 'get_forecast', which agent 'weather_agent' (the agent "
            "asking) does not offer (its tools: none)",
        ),
        (
            ANSWERS_ITSELF,
            5,
            "the model called tool 'ask_weather', which agent 'orchestrator' (the agent "
            "asking) does not offer (its tools: none)",
        ),
    ],
    ids=["nested-agent-lost-its-tool", "orchestrator-answers-itself"],
)
def test_a_broken_graph_fails_the_suite_naming_the_agent_and_its_tools(
    run_cli: Cli, desk: Path, source: str, failing: int, error: str
) -> None:
    (desk / "broken.py").write_text(textwrap.dedent(source), encoding="utf-8")
    result = run_reported(run_cli, desk, "openai-agents:broken:build_agent")
    assert result.returncode == 1, (result.stdout, result.stderr)
    cases = reported_cases(desk)
    errors = [case["error"] for case in cases.values() if case["error"]]
    assert len(errors) == failing, errors
    assert all("(the agent asking) does not offer" in e for e in errors), errors
    assert error in cases["weather-via-weather-agent"]["error"]


def test_a_nested_agent_without_its_tool_anywhere_is_refused_at_admission(
    run_cli: Cli, desk: Path
) -> None:
    (desk / "broken.py").write_text(
        "import travel_desk\n\n\ndef build_agent():\n"
        "    weather = travel_desk.build_weather_agent()\n"
        "    weather.tools = []\n"
        "    orchestrator = travel_desk.build_agent()\n"
        "    orchestrator.tools[0] = weather.as_tool(\n"
        "        tool_name='ask_weather', tool_description='Ask the weather agent.'\n"
        "    )\n"
        "    return orchestrator\n",
        encoding="utf-8",
    )
    result = run_reported(run_cli, desk, "openai-agents:broken:build_agent")
    assert result.returncode == 1
    assert (
        "tool 'get_forecast' is not registered by agent 'openai-agents:broken:build_agent'"
        in result.stdout + result.stderr
    )


FORGETFUL = """
from agents import RunConfig
from agents.run_config import ModelInputData
import travel_desk


def forget_tool_results(data):
    # The bug: a filter meant to trim the nested run's context drops every tool result.
    kept = [item for item in data.model_data.input if item.get("type") != "function_call_output"]
    return ModelInputData(input=kept, instructions=data.model_data.instructions)


def build_agent():
    orchestrator = travel_desk.build_agent()
    orchestrator.tools[0] = travel_desk.build_weather_agent().as_tool(
        tool_name="ask_weather",
        tool_description="Ask the weather agent.",
        run_config=RunConfig(call_model_input_filter=forget_tool_results),
    )
    return orchestrator
"""


def test_a_nested_agent_whose_tool_results_never_reach_its_model_fails_the_suite(
    run_cli: Cli, desk: Path
) -> None:
    (desk / "forgetful.py").write_text(textwrap.dedent(FORGETFUL), encoding="utf-8")
    result = run_reported(run_cli, desk, "openai-agents:forgetful:build_agent")
    assert result.returncode == 1, (result.stdout, result.stderr)
    # Every case the weather agent's tool answers in; the translator's alone still passes.
    assert "1/5 cases passed" in result.stdout
    assert {i for i, case in reported_cases(desk).items() if case["passed"]} == {
        "translation-via-translator"
    }
    # Its tool ran and returned the forecast; its model was never sent it.
    assert 'request_contains(turn 0, step 2, "tool", "Paris: light rain, 14 C")' in result.stdout
    assert 'request_contains(turn 0, step 2, "tool", "Oslo: sunny, 9 C")' in result.stdout
    forgetful = reported_cases(desk)["weather-via-weather-agent"]["record"]
    assert [(c["name"], c["result"]) for c in forgetful["calls"]] == [
        ("get_forecast", "Paris: light rain, 14 C"),
        ("ask_weather", "Paris: light rain, 14 C."),
    ]
