"""`harness.agents.sdk_graph` through the SDK adapter: a user's multi-agent graph (handoffs,
plain and through `handoff(...)`, agents used as tools) admitted, replayed, recorded and
attributed per agent, and a graph that broke (the wrong specialist, a specialist that lost
its tool, a triage agent that answers itself) failing its suite with the run error that
names the agent and its tools."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import REPO, Cli, call, fixture, text_step, tool_step, turn, write_suite

from harness import run_suite
from harness.agents.registry import resolve_agent, surface_of
from harness.model_boundary import ModelRequest

TRIAGE = REPO / "examples" / "openai_agents_triage"


@pytest.fixture
def triage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The triage example, copied to a directory of its own the test may add modules to."""
    root = tmp_path / "triage"
    shutil.copytree(TRIAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(root))
    return root


def report(root: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((root / "r.json").read_text(encoding="utf-8"))["cases"]
    return sorted(cases, key=lambda case: case["id"])


def run_triage(run_cli: Cli, root: Path, agent: str) -> Any:
    return run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent, "--json-report", "r.json", cwd=root
    )


# --- the graph, known at admission ----------------------------------------------------------


def test_every_agent_of_the_graph_and_its_handoffs_are_on_the_surface(triage: Path) -> None:
    surface = surface_of("openai-agents:triage_agents:build_agent")
    assert dict(surface.agents) == {
        "triage_agent": {"transfer_to_billing_agent", "transfer_to_faq_agent"},
        "billing_agent": {"lookup_invoice"},
        # faq hands back to triage: the walk ends there.
        "faq_agent": {"transfer_to_triage_agent"},
    }
    assert surface.tools == frozenset().union(*surface.agents.values())


def test_an_unknown_tool_is_still_refused_with_did_you_mean(run_cli: Cli, triage: Path) -> None:
    data = json.loads((triage / "evals" / "billing_invoice_lookup.json").read_text("utf-8"))
    data["turns"][0]["steps"][0]["response"]["tool_calls"][0]["name"] = "transfer_to_biling"
    (triage / "evals" / "billing_invoice_lookup.json").write_text(json.dumps(data), "utf-8")
    result = run_triage(run_cli, triage, "openai-agents:triage_agents:build_agent")
    assert result.returncode == 1
    assert "tool 'transfer_to_biling' is not registered" in result.stderr + result.stdout
    assert "transfer_to_billing_agent" in result.stderr + result.stdout


# --- replayed, recorded and attributed ------------------------------------------------------


def test_the_triage_suite_replays_green_each_request_call_and_handoff_says_its_agent(
    run_cli: Cli, triage: Path
) -> None:
    result = run_triage(run_cli, triage, "openai-agents:triage_agents:build_agent")
    assert result.returncode == 0, (result.stdout, result.stderr)
    cases = {case["id"]: case["record"] for case in report(triage)}
    back = cases["faq-hands-back-to-triage"]
    assert [(h["step"], h["source"], h["target"]) for h in back["handoffs"]] == [
        (0, "triage_agent", "faq_agent"),
        (1, "faq_agent", "triage_agent"),
        (2, "triage_agent", "billing_agent"),
    ]
    assert back["final_agent"] == "billing_agent"
    # A handoff is no tool call: only the specialist's own tool was recorded, under it.
    assert [(c["name"], c["agent"]) for c in back["calls"]] == [("lookup_invoice", "billing_agent")]
    turns = cases["multi-turn-billing-then-faq"]
    assert [(h["turn"], h["target"]) for h in turns["handoffs"]] == [
        (0, "billing_agent"),
        (1, "faq_agent"),
    ]
    assert turns["final_agent"] == "faq_agent"


def test_each_transcript_step_names_the_agent_that_asked(run_cli: Cli, triage: Path) -> None:
    result = run_cli(
        "eval", "run", "--suite", "evals", "--agent", "openai-agents:triage_agents:build_agent",
        "-k", "faq-hands-back", "-v", cwd=triage,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (kept,) = (triage / ".zeroclaw-eval").glob("transcripts-*.jsonl")
    transcript = json.loads(kept.read_text(encoding="utf-8"))["transcript"]
    assert [step["agent"] for step in transcript] == [
        "triage_agent",
        "faq_agent",
        "triage_agent",
        "billing_agent",
        "billing_agent",
    ]
    # The model is offered each handoff as the SDK offers it: a tool of the asking agent.
    assert transcript[0]["tools_offered"] == ["transfer_to_billing_agent", "transfer_to_faq_agent"]


# --- a graph that broke fails its suite, naming the agent and its tools ---------------------

WRONG_SPECIALIST = """
from agents import handoff
import triage_agents


def build_agent():
    triage = triage_agents.build_agent()
    billing, faq = triage.handoffs[0], triage.handoffs[1]._agent_ref()
    # The two handoffs are crossed: each leads to the other specialist.
    triage.handoffs = [
        handoff(faq, tool_name_override="transfer_to_billing_agent"),
        handoff(billing, tool_name_override="transfer_to_faq_agent"),
    ]
    return triage
"""

LOST_TOOL = """
import triage_agents


def build_agent():
    triage = triage_agents.build_agent()
    billing = triage.handoffs[0]
    # The billing agent's tool ended up on the triage agent.
    triage.tools, billing.tools = billing.tools, []
    return triage
"""

ANSWERS_ITSELF = """
from agents import handoff
import triage_agents


def build_agent():
    triage = triage_agents.build_agent()
    billing, faq = triage.handoffs[0], triage.handoffs[1]._agent_ref()
    # A switch that turns the handoffs off: the triage agent is left to answer itself.
    off = lambda context, agent: False
    triage.handoffs = [handoff(billing, is_enabled=off), handoff(faq, is_enabled=off)]
    return triage
"""


@pytest.mark.parametrize(
    ("source", "failing", "error"),
    [
        (
            WRONG_SPECIALIST,
            5,
            "the model called tool 'lookup_invoice', which agent 'faq_agent' (the agent "
            "asking) does not offer (its tools: transfer_to_triage_agent)",
        ),
        (
            LOST_TOOL,
            5,
            "the model called tool 'lookup_invoice', which agent 'billing_agent' (the agent "
            "asking) does not offer (its tools: none)",
        ),
        (
            ANSWERS_ITSELF,
            6,
            "the model called tool 'transfer_to_billing_agent', which agent 'triage_agent' "
            "(the agent asking) does not offer (its tools: none)",
        ),
    ],
    ids=["handoff-to-the-wrong-agent", "specialist-lost-its-tool", "triage-answers-itself"],
)
def test_a_broken_graph_fails_the_suite_naming_the_agent_and_its_tools(
    run_cli: Cli, triage: Path, source: str, failing: int, error: str
) -> None:
    (triage / "broken.py").write_text(textwrap.dedent(source), encoding="utf-8")
    result = run_triage(run_cli, triage, "openai-agents:broken:build_agent")
    assert result.returncode == 1, (result.stdout, result.stderr)
    cases = report(triage)
    errors = [case["error"] for case in cases if case["error"]]
    assert len(errors) == failing, errors
    assert all("(the agent asking) does not offer" in e for e in errors), errors
    (billing,) = [case for case in cases if case["id"] == "billing-invoice-lookup"]
    assert error in billing["error"]


def test_a_specialist_without_its_tool_anywhere_is_refused_at_admission(
    run_cli: Cli, triage: Path
) -> None:
    (triage / "broken.py").write_text(
        "import triage_agents\n\n\ndef build_agent():\n"
        "    triage = triage_agents.build_agent()\n"
        "    triage.handoffs[0].tools = []\n"
        "    return triage\n",
        encoding="utf-8",
    )
    result = run_triage(run_cli, triage, "openai-agents:broken:build_agent")
    assert result.returncode == 1
    assert (
        "tool 'lookup_invoice' is not registered by agent 'openai-agents:broken:build_agent'"
        in (result.stdout + result.stderr)
    )


# --- an agent used as a tool ----------------------------------------------------------------

ORCHESTRATOR = """
from agents import Agent, RunConfig, function_tool


@function_tool
def forecast(city: str) -> str:
    '''The weather in a city.'''
    return f"{city}: sunny, 21 C"


async def first_line(result):
    return str(result.final_output).splitlines()[0]


def build_agent():
    weather = Agent(name="weather_agent", instructions="Answer with forecast.", tools=[forecast])
    kwargs = {OWN_CONFIG}
    return Agent(
        name="orchestrator",
        instructions="Ask the weather agent.",
        tools=[
            weather.as_tool(
                "ask_weather", "Ask the weather agent.",
                custom_output_extractor=first_line, **kwargs,
            )
        ],
    )
"""


@pytest.mark.parametrize(
    "own_config",
    ["{}", "{'run_config': RunConfig(model='a-model-of-its-own', tracing_disabled=True)}"],
    ids=["inherits-the-run-configuration", "has-a-run-configuration-of-its-own"],
)
def test_an_agent_used_as_a_tool_is_the_outer_agents_call_and_its_steps_are_its_own(
    run_cli: Cli, tmp_path: Path, own_config: str
) -> None:
    steps = [
        tool_step(call("o1", "ask_weather", input="Oslo?")),
        # The nested agent's model calls are steps of the same turn's script.
        tool_step(call("w1", "forecast", city="Oslo")),
        text_step("Oslo: sunny, 21 C\n(from the forecast)"),
        text_step("It is sunny in Oslo."),
    ]
    expects = {
        "tools_used": ["ask_weather", "forecast"],
        "tool_results_contain": [{"tool": "ask_weather", "needle": "sunny, 21 C"}],
        "response_contains": ["sunny"],
    }
    write_suite(
        tmp_path / "evals", {"w.json": fixture("weather", [turn("Oslo?", *steps)], expects)}
    )
    (tmp_path / "orchestra.py").write_text(
        ORCHESTRATOR.replace("{OWN_CONFIG}", own_config), encoding="utf-8"
    )
    result = run_cli(
        "eval", "run", "--suite", "evals", "--agent", "openai-agents:orchestra:build_agent",
        "--json-report", "r.json", cwd=tmp_path,
    )  # fmt: skip
    (case,) = report(tmp_path)
    assert result.returncode == 0, (case["error"], result.stdout)
    record = case["record"]
    # The nested call finishes first; the outer call's result is what its extractor gave.
    assert [(c["name"], c["agent"], c["result"]) for c in record["calls"]] == [
        ("forecast", "weather_agent", "Oslo: sunny, 21 C"),
        ("ask_weather", "orchestrator", "Oslo: sunny, 21 C"),
    ]
    assert record["handoffs"] == []
    assert record["final_agent"] == "orchestrator"
    assert record["model_calls"] == 4


def test_the_graph_surface_of_a_graph_with_an_agent_as_a_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "orchestra_surface.py").write_text(
        ORCHESTRATOR.replace("{OWN_CONFIG}", "{}"), encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    adapter = resolve_agent("openai-agents:orchestra_surface:build_agent")
    assert adapter.agent_tools() == {  # type: ignore[attr-defined]
        "orchestrator": {"ask_weather"},
        "weather_agent": {"forecast"},
    }


# --- replay conformance, per conversation ---------------------------------------------------


def test_the_triage_suite_needs_no_conformance_exemption() -> None:
    for path in sorted((TRIAGE / "evals").glob("*.json")):
        assert "loop_exempt" not in json.loads(path.read_text("utf-8"))["expects"], path.name


class ForgetsResults:
    """The SDK adapter, with every request of one agent sent without its tool results (as a
    framework that never hands them back would send it)."""

    def __init__(self, inner: Any, agent: str) -> None:
        self.inner, self.agent, self.name = inner, agent, inner.name

    def tools(self) -> Any:
        return self.inner.tools()

    def tool_names(self) -> frozenset[str]:
        return frozenset(self.inner.tool_names())

    def start(self, context: Any) -> Any:
        respond = context.model.respond

        async def forgetting(request: ModelRequest) -> Any:
            if request.agent == self.agent:
                kept = tuple(m for m in request.messages if m.role != "tool")
                request = msgspec.structs.replace(request, messages=kept)
            return await respond(request)

        context.model.respond = forgetting
        return self.inner.start(context)


def weather_case(tmp_path: Path) -> Path:
    steps = [
        tool_step(call("o1", "ask_weather", input="Oslo?")),
        tool_step(call("w1", "forecast", city="Oslo")),
        text_step("Oslo: sunny, 21 C"),
        text_step("It is sunny in Oslo."),
    ]
    expects = {"tools_used": ["ask_weather", "forecast"], "response_contains": ["sunny"]}
    return write_suite(
        tmp_path / "evals", {"w.json": fixture("weather", [turn("Oslo?", *steps)], expects)}
    )


@pytest.mark.parametrize(
    ("forgetful", "request_index"), [("weather_agent", 2), ("orchestrator", 3)]
)
def test_an_agent_whose_tool_results_never_reach_its_model_is_caught_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forgetful: str, request_index: int
) -> None:
    # The nested agent is held to its own conversation as the outer one is to its own.
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "orchestra_forgets.py").write_text(
        ORCHESTRATOR.replace("{OWN_CONFIG}", "{}"), encoding="utf-8"
    )
    inner = resolve_agent("openai-agents:orchestra_forgets:build_agent")
    adapter = ForgetsResults(inner, forgetful)
    (case,) = run_suite(weather_case(tmp_path), agent=adapter).cases
    assert case.error is None, case.error
    failures = {g.check: g.detail for g in case.grades if not g.passed}
    assert list(failures) == ["loop(tool_results)"], failures
    assert failures["loop(tool_results)"].startswith(
        f'turn 0, request {request_index} (agent "{forgetful}"): no tool result for '
    )


FILTERED = """
from agents import handoff
from agents.extensions import handoff_filters
import triage_agents


def build_agent():
    triage = triage_agents.build_agent()
    billing, faq = triage.handoffs[0], triage.handoffs[1]._agent_ref()
    triage.handoffs = [handoff(billing, input_filter=FILTER), handoff(faq)]
    return triage
"""

DROP_EVERYTHING = "lambda data: data.clone(input_history=(), pre_handoff_items=(), new_items=())"


@pytest.mark.parametrize(
    ("filter_", "failing"),
    [
        # The SDK's own filter: tool calls and results dropped, every input kept.
        ("handoff_filters.remove_all_tools", {}),
        (
            DROP_EVERYTHING,
            {
                "billing-invoice-lookup": (1, "Has invoice INV-101 been paid?"),
                "faq-hands-back-to-triage": (3, "Was INV-100 paid? I asked the FAQ first."),
                "multi-turn-billing-follow-up": (1, "Has invoice INV-100 been paid?"),
                "multi-turn-billing-then-faq": (1, "Has invoice INV-100 been paid?"),
                "unknown-invoice-not-invented": (1, "Is INV-999 paid?"),
            },
        ),
    ],
    ids=["a-filter-that-keeps-the-inputs", "a-filter-that-drops-the-history"],
)
def test_a_handoffs_filter_makes_the_history_the_specialist_is_held_to(
    run_cli: Cli, triage: Path, filter_: str, failing: dict[str, tuple[int, str]]
) -> None:
    (triage / "filtered.py").write_text(
        textwrap.dedent(FILTERED).replace("FILTER", filter_), encoding="utf-8"
    )
    result = run_triage(run_cli, triage, "openai-agents:filtered:build_agent")
    cases = report(triage)
    assert [c["error"] for c in cases] == [None] * len(cases)
    history = {
        case["id"]: grade["detail"]
        for case in cases
        for grade in case["grades"]
        if not grade["passed"] and grade["check"] == "loop(history)"
    }
    assert sorted(history) == sorted(failing), history
    for case_id, (request, lost) in failing.items():
        assert history[case_id].startswith(
            f'turn 0, request {request} (agent "billing_agent"): the user input "{lost}" is missing'
        ), history[case_id]
    assert result.returncode == (1 if failing else 0)


def test_a_handoff_to_the_wrong_agent_fails_every_case_the_last_by_its_handoffs_check(
    run_cli: Cli, triage: Path
) -> None:
    # A specialist that answers right after the wrong handoff runs no tool it lacks: only
    # the case's `handoffs` and `final_agent` checks can see who was asked.
    (triage / "broken.py").write_text(textwrap.dedent(WRONG_SPECIALIST), encoding="utf-8")
    result = run_triage(run_cli, triage, "openai-agents:broken:build_agent")
    assert result.returncode == 1, (result.stdout, result.stderr)
    cases = {case["id"]: case for case in report(triage)}
    assert not any(case["passed"] for case in cases.values())
    faq = cases["faq-opening-hours"]
    assert faq["error"] is None
    failed = {g["check"]: g["detail"] for g in faq["grades"] if not g["passed"]}
    assert any(check.startswith("handoffs") for check in failed), failed
    assert any("billing_agent" in detail for detail in failed.values()), failed
