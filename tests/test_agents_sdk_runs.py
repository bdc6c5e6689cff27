"""`harness.agents.sdk_runs` through the SDK adapter: agents the user's own code runs (a
function tool or guardrail calling `Runner.run`, `run_sync`, `run_streamed`) found at
admission from that code, run with the harness's model as the script's next steps, recorded
under their names; the nested-run example (`examples/openai_agents_nested_run`) green, and
failing, naming what broke, on a stock agent that lost its tool or whose tool results never
reach its model; outside a case the SDK's runs go on unchanged."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import (
    REPO,
    Cli,
    call,
    fixture,
    reported_cases,
    run_process,
    run_reported,
    text_step,
    tool_step,
    turn,
    write_suite,
)

from harness.agents.registry import surface_of

EXAMPLE = REPO / "examples" / "openai_agents_nested_run"
AGENT = "openai-agents:bookshop:build_agent"


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example, copied to a directory of its own the test may add modules to."""
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".zeroclaw-eval"))
    monkeypatch.syspath_prepend(str(root))
    return root


def with_source(root: Path, source: str) -> str:
    (root / "variant.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return "openai-agents:variant:build_agent"


# --- the graph, found from the tool's code ------------------------------------------------


def test_the_agent_a_tool_runs_is_on_the_surface_with_its_tools(shop: Path) -> None:
    surface = surface_of(AGENT)
    assert dict(surface.agents) == {"bookseller": {"ask_stock"}, "stock_agent": {"check_shelf"}}
    # Two such tools called in one step would race: admission asks for agent names.
    assert dict(surface.runs_agents) == {"ask_stock": {"stock_agent"}}


# --- replayed, recorded, attributed ---------------------------------------------------------


def test_the_suite_replays_green_the_nested_runs_steps_and_calls_the_stock_agents(
    run_cli: Cli, shop: Path
) -> None:
    result = run_reported(run_cli, shop, AGENT, "-v")
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "4/4 cases passed" in result.stdout
    record = reported_cases(shop)["stock-via-stock-agent"]["record"]
    # The tool running the agent is the bookseller's call, recorded once the stock agent
    # has answered; the stock agent's own call is its.
    assert [(c["name"], c["agent"], c["result"]) for c in record["calls"]] == [
        ("check_shelf", "stock_agent", "Dune: 3 copies, 12.50 EUR"),
        ("ask_stock", "bookseller", "Dune: 3 copies on the shelf, 12.50 EUR."),
    ]
    assert record["handoffs"] == [] and record["final_agent"] == "bookseller"
    kept = [
        json.loads(line)
        for path in (shop / ".zeroclaw-eval").glob("transcripts-*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    (transcript,) = [t["transcript"] for t in kept if t["id"] == "stock-via-stock-agent"]
    assert [(step["agent"], step["tools_offered"]) for step in transcript] == [
        ("bookseller", ["ask_stock"]),
        ("stock_agent", ["check_shelf"]),
        ("stock_agent", ["check_shelf"]),
        ("bookseller", ["ask_stock"]),
    ]


SYNC_AND_STREAMED = {
    "run_sync": """
        from agents import Agent, Runner, function_tool
        from bookshop import stock_agent


        @function_tool
        def ask_stock(question: str) -> str:
            \"\"\"Ask the stock agent about the books on the shelf.\"\"\"
            return str(Runner.run_sync(stock_agent, question, max_turns=5).final_output)


        def build_agent():
            return Agent(name="bookseller", instructions="Sell books.", tools=[ask_stock])
    """,
    "run_streamed": """
        from agents import Agent, Runner, function_tool
        from bookshop import stock_agent


        @function_tool
        async def ask_stock(question: str) -> str:
            \"\"\"Ask the stock agent about the books on the shelf.\"\"\"
            streamed = Runner.run_streamed(stock_agent, question, max_turns=5)
            async for _event in streamed.stream_events():
                pass
            return str(streamed.final_output)


        def build_agent():
            return Agent(name="bookseller", instructions="Sell books.", tools=[ask_stock])
    """,
    "own-run-config": """
        from agents import Agent, RunConfig, Runner, function_tool
        from bookshop import stock_agent


        @function_tool
        async def ask_stock(question: str) -> str:
            \"\"\"Ask the stock agent about the books on the shelf.\"\"\"
            # A model of its own, and tracing on: the harness's model replaces the one, the
            # other stays off, the rest of the user's configuration is kept.
            config = RunConfig(model="gpt-4.1", workflow_name="stock")
            result = await Runner.run(stock_agent, question, run_config=config)
            return str(result.final_output)


        def build_agent():
            return Agent(name="bookseller", instructions="Sell books.", tools=[ask_stock])
    """,
}


@pytest.mark.parametrize("variant", sorted(SYNC_AND_STREAMED))
def test_run_sync_run_streamed_and_a_run_configuration_of_its_own_replay_the_same(
    run_cli: Cli, shop: Path, variant: str
) -> None:
    agent = with_source(shop, SYNC_AND_STREAMED[variant])
    result = run_reported(run_cli, shop, agent)
    assert result.returncode == 0, (result.stdout, result.stderr)
    record = reported_cases(shop)["multi-turn-dune-then-emma"]["record"]
    assert [(c["name"], c["agent"]) for c in record["calls"]] == [
        ("check_shelf", "stock_agent"),
        ("ask_stock", "bookseller"),
    ] * 2


# --- a nested run that broke fails the suite, naming what broke ----------------------------

LOST_ITS_TOOL = """
    import bookshop
    from agents import Agent, Runner, function_tool

    # The stock agent lost its tool: it ended up on the bookseller.
    stock_agent = bookshop.stock_agent.clone(tools=[])


    @function_tool
    async def ask_stock(question: str) -> str:
        \"\"\"Ask the stock agent about the books on the shelf.\"\"\"
        return str((await Runner.run(stock_agent, question, max_turns=5)).final_output)


    def build_agent():
        return Agent(
            name="bookseller", instructions="Sell books.", tools=[ask_stock, bookshop.check_shelf]
        )
"""

FORGETFUL = """
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.run_config import ModelInputData
    from bookshop import stock_agent


    def forget_tool_results(data):
        # The bug: a filter meant to trim the nested run's context drops every tool result.
        kept = [i for i in data.model_data.input if i.get("type") != "function_call_output"]
        return ModelInputData(input=kept, instructions=data.model_data.instructions)


    @function_tool
    async def ask_stock(question: str) -> str:
        \"\"\"Ask the stock agent about the books on the shelf.\"\"\"
        config = RunConfig(call_model_input_filter=forget_tool_results)
        result = await Runner.run(stock_agent, question, run_config=config)
        return str(result.final_output)


    def build_agent():
        return Agent(name="bookseller", instructions="Sell books.", tools=[ask_stock])
"""


def test_a_stock_agent_that_lost_its_tool_fails_every_case_it_looks_up_in(
    run_cli: Cli, shop: Path
) -> None:
    result = run_reported(run_cli, shop, with_source(shop, LOST_ITS_TOOL))
    assert result.returncode == 1, (result.stdout, result.stderr)
    cases = reported_cases(shop)
    assert {i for i, case in cases.items() if case["passed"]} == {"opening-hours-answered-directly"}
    assert (
        "the model called tool 'check_shelf', which agent 'stock_agent' (the agent asking) "
        "does not offer (its tools: none)"
    ) in cases["stock-via-stock-agent"]["error"]


def test_a_stock_agent_whose_tool_results_never_reach_its_model_fails_the_suite(
    run_cli: Cli, shop: Path
) -> None:
    result = run_reported(run_cli, shop, with_source(shop, FORGETFUL))
    assert result.returncode == 1, (result.stdout, result.stderr)
    cases = reported_cases(shop)
    assert {i for i, case in cases.items() if case["passed"]} == {"opening-hours-answered-directly"}
    failed = {g["check"] for g in cases["stock-via-stock-agent"]["grades"] if not g["passed"]}
    assert "loop(tool_results)" in failed, failed
    assert 'request_contains(turn 0, step 2, "tool", "Dune: 3 copies, 12.50 EUR")' in failed
    assert "no tool result for call_shelf (check_shelf) was passed back" in result.stdout


# --- agents met only at run time ------------------------------------------------------------

BUILT_IN_THE_TOOL = """
    from agents import Agent, Runner, function_tool


    @function_tool
    def check_shelf(title: str) -> str:
        \"\"\"How many copies are on the shelf.\"\"\"
        return f"{title}: 3 copies"


    def make_helper():
        return Agent(name="helper", instructions="Help.", tools=[check_shelf])


    @function_tool
    async def ask_helper(question: str) -> str:
        \"\"\"Ask the helper.\"\"\"
        # The SDK docs' own shape: the agent is made where it runs, a call's result.
        return str((await Runner.run(make_helper(), question)).final_output)


    stock_agent = Agent(name="stock_agent", instructions="Stock.", tools=[check_shelf])


    @function_tool
    async def ask_stock(question: str) -> str:
        \"\"\"Ask the stock agent.\"\"\"
        return str((await Runner.run(stock_agent, question)).final_output)


    def build_agent():
        return Agent(name="bookseller", instructions="Sell.", tools=[ask_helper, ask_stock])
"""


def test_an_agent_found_only_at_run_time_answers_from_the_script_but_may_call_no_tool(
    run_cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "variant.py").write_text(textwrap.dedent(BUILT_IN_THE_TOOL), encoding="utf-8")
    answers = fixture(
        "answers",
        [
            turn(
                "Ask the helper.",
                tool_step(call("c1", "ask_helper", question="Dune?")),
                text_step("Dune is a novel."),
                text_step("The helper says Dune is a novel."),
            )
        ],
        {"response_contains": ["novel"], "final_agent": "bookseller"},
    )
    calls = fixture(
        "calls",
        [
            turn(
                "Ask the helper.",
                tool_step(call("c1", "ask_helper", question="Dune?")),
                tool_step(call("c2", "check_shelf", title="Dune")),
                text_step("Dune: 3 copies."),
                text_step("3 copies."),
            )
        ],
        {"response_contains": ["copies"]},
    )
    write_suite(tmp_path / "evals", {"answers.json": answers, "calls.json": calls})
    result = run_reported(run_cli, tmp_path, "openai-agents:variant:build_agent")
    assert result.returncode == 1, (result.stdout, result.stderr)
    cases = reported_cases(tmp_path)
    # Its model is the script's, never a provider's; its steps are recorded under its name.
    assert cases["answers"]["passed"], cases["answers"]
    assert cases["answers"]["record"]["model_calls"] == 3
    assert (
        "the model called tool 'check_shelf' for agent 'helper', which your code ran but "
        "the harness did not find at admission"
    ) in cases["calls"]["error"]


# --- outside a case -------------------------------------------------------------------------

OWN_MODEL = """
    from agents import Agent, Model, ModelResponse, Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText


    class Fixed(Model):
        async def get_response(self, *args, **kwargs):
            text = ResponseOutputText(type="output_text", text="own model", annotations=[])
            message = ResponseOutputMessage(
                id="m", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError


    agent = Agent(name="elsewhere", model=Fixed())
"""


def test_outside_a_case_the_sdks_runs_go_on_unchanged_and_the_runner_is_installed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents import RunConfig, Runner
    from agents.run import get_default_agent_runner

    from harness.agents.sdk_runs import CaseRunner, install

    (tmp_path / "elsewhere.py").write_text(textwrap.dedent(OWN_MODEL), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import elsewhere  # type: ignore[import-not-found]

    install()
    runner = get_default_agent_runner()
    install()
    assert isinstance(runner, CaseRunner) and get_default_agent_runner() is runner
    assert not isinstance(runner.replaced, CaseRunner)
    result = Runner.run_sync(elsewhere.agent, "hi", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "own model"
    assert result.last_agent is elsewhere.agent  # not a copy: no case is running


# --- tracing: never built for nothing where the harness owns the process ------------------

# An agent whose tool says whether the SDK's default trace processor (the exporter's HTTP
# client and all it imports) was built in the process the case runs in.
TRACE_STATE = """
from agents import Agent, function_tool
from agents.tracing import processors


@function_tool
def trace_state() -> str:
    \"\"\"Say whether the SDK built its default trace processor.\"\"\"
    return "exporter built" if processors._global_processor is not None else "no exporter"


def build_agent():
    return Agent(name="tracer", instructions="Say how tracing stands.", tools=[trace_state])
"""


def _trace_state_suite(root: Path, expected: str) -> None:
    (root / "tracer.py").write_text(textwrap.dedent(TRACE_STATE), encoding="utf-8")
    case = fixture(
        "m",
        [turn("How is tracing?", tool_step(call("c1", "trace_state")), text_step("told"))],
        {"tool_results_contain": [{"tool": "trace_state", "needle": expected}]},
    )
    write_suite(root / "evals", {f"case_{k}.json": {**case, "id": f"case-{k}"} for k in range(3)})


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_command_line_runs_the_sdk_without_building_its_trace_exporter(
    tmp_path: Path, jobs: str
) -> None:
    _trace_state_suite(tmp_path, "no exporter")
    done = run_process(
        "eval", "run", "--suite", "evals", "--agent", "openai-agents:tracer:build_agent",
        "--jobs", jobs, "--update-snapshots", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 cases passed" in done.stdout


def test_a_session_that_calls_the_harness_keeps_the_sdks_own_tracing(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not the harness's process: whatever runs after it finds the SDK's default provider.
    from agents.tracing import get_trace_provider, processors

    _trace_state_suite(tmp_path, "exporter built")
    monkeypatch.syspath_prepend(str(tmp_path))
    done = run_cli(
        "eval", "run", "--suite", "evals", "--agent", "openai-agents:tracer:build_agent",
        "--update-snapshots", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert processors._global_processor is not None
    assert processors._global_processor in get_trace_provider()._multi_processor._processors


def test_a_trace_provider_the_users_code_set_is_left_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agents.tracing import setup
    from agents.tracing.provider import DefaultTraceProvider

    from harness.agents import sdk_runs
    from harness.runtime import owner

    theirs = DefaultTraceProvider()
    monkeypatch.setattr(owner, "_OWNED", [True])
    monkeypatch.setattr(sdk_runs, "_LOOKED", [False])
    monkeypatch.setattr(setup, "GLOBAL_TRACE_PROVIDER", theirs)
    sdk_runs.offline_tracing()
    assert setup.GLOBAL_TRACE_PROVIDER is theirs
    monkeypatch.setattr(sdk_runs, "_LOOKED", [False])
    monkeypatch.setattr(setup, "GLOBAL_TRACE_PROVIDER", None)
    sdk_runs.offline_tracing()
    made = setup.GLOBAL_TRACE_PROVIDER
    assert isinstance(made, DefaultTraceProvider) and made is not theirs
    assert made._multi_processor._processors == ()
