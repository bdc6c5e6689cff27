"""`harness.model_boundary`: the limits on model calls per turn and on tool calls per
answer, for every agent.

The boundary refuses the model call that would pass `max_model_calls_per_turn` in a turn;
the framework adapters set their own limits above it, so a provider that asks for tool
calls forever stops every agent (the OpenAI Agents SDK, pydantic-ai, a loop of one's own)
at exactly the limit, with the same run error. An answer asking for more tool calls than
`max_tool_calls_per_step` never reaches the agent. Driven through the command line against
a loopback provider, and on the boundary itself.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _openai_server import Action, OpenAIServer, tool_reply
from conftest import (
    AGENTS,
    FAITHFUL_LOOP,
    LIVE_KEY,
    Cli,
    Runs,
    call,
    cases_by_id,
    fixture,
    live_case,
    make_project,
    project,
    report_of,
    text_step,
    tool_step,
    two_agent_project,
    write_module,
)
from conftest import turn as scripted_turn

from harness.defaults import DEFAULT_MAX_MODEL_CALLS_PER_TURN, DEFAULT_MAX_TOOL_CALLS_PER_STEP
from harness.model_boundary import (
    Divergence,
    Message,
    ModelBoundary,
    ModelCallLimit,
    ModelRequest,
    ModelStep,
    ProviderFailure,
    RequestRefused,
    ToolCall,
    ToolCallLimit,
)


def limit_error(limit: int, turn: int | str = 0) -> str:
    where = f"in turn {turn}" if isinstance(turn, int) else turn
    return (
        f"the agent made more than {limit} model calls {where} "
        "(max_model_calls_per_turn); the call over the limit was not answered"
    )


# --- the boundary itself -------------------------------------------------------------------


class Endless:
    """A backend that asks for another tool call every time, counting what it answered."""

    def __init__(self) -> None:
        self.answered = 0

    async def respond(self, request: ModelRequest) -> ModelStep:
        self.answered += 1
        return ModelStep(tool_calls=(ToolCall(f"c{self.answered}", "echo", {}),))


REQUEST = ModelRequest(messages=(Message(role="user", content="go"),))


def calls_until_refused(boundary: ModelBoundary, most: int = 1000) -> tuple[int, ModelCallLimit]:
    async def go() -> tuple[int, ModelCallLimit]:
        for made in range(most):
            try:
                await boundary.respond(REQUEST)
            except ModelCallLimit as exc:
                return made, exc
        raise AssertionError(f"no limit after {most} calls")

    return asyncio.run(go())


class Answers:
    """A backend that answers every request with the same step."""

    def __init__(self, step: ModelStep) -> None:
        self.step = step

    async def respond(self, request: ModelRequest) -> ModelStep:
        return self.step


COUNT = "is not a token count (a whole number from 0 to 1,000,000,000)"


@pytest.mark.parametrize(
    ("step", "said"),
    [
        (ModelStep(input_tokens=10**400), f"input_tokens: an integer of 401 digits {COUNT}"),
        (ModelStep(output_tokens=-1), f"output_tokens: -1 {COUNT}"),
        (ModelStep(output_tokens=float("inf")), f"output_tokens: Infinity {COUNT}"),  # type: ignore[arg-type]
        (ModelStep(input_tokens=True), f"input_tokens: true {COUNT}"),
        (ModelStep(output_tokens=10**9 + 1), f"output_tokens: 1000000001 {COUNT}"),
    ],
)
def test_a_step_whose_tokens_are_no_count_is_the_backend_s_failure(
    step: ModelStep, said: str
) -> None:
    boundary = ModelBoundary(Answers(step))
    with pytest.raises(ProviderFailure) as caught:
        asyncio.run(boundary.respond(REQUEST))
    assert str(caught.value) == f"the model backend's step: {said}"
    assert (boundary.calls, boundary.input_tokens, boundary.output_tokens) == (0, 0, 0)


class Count(int):
    """A backend's own int type: a count all the same."""


def test_a_count_of_an_int_subclass_is_counted() -> None:
    boundary = ModelBoundary(Answers(ModelStep(input_tokens=Count(5), output_tokens=Count(2))))
    asyncio.run(boundary.respond(REQUEST))
    assert (boundary.calls, boundary.input_tokens, boundary.output_tokens) == (1, 5, 2)


def test_a_step_of_as_many_tokens_as_one_call_may_have_is_counted() -> None:
    boundary = ModelBoundary(Answers(ModelStep(input_tokens=10**9, output_tokens=0)))
    asyncio.run(boundary.respond(REQUEST))
    assert (boundary.calls, boundary.input_tokens) == (1, 10**9)


def test_the_call_over_the_limit_is_refused_and_never_sent() -> None:
    backend = Endless()
    boundary = ModelBoundary(backend, max_calls_per_turn=3)
    boundary.start_turn(0)
    made, error = calls_until_refused(boundary)
    assert (made, backend.answered, boundary.calls) == (3, 3, 3)
    assert str(error) == limit_error(3)
    assert isinstance(error, Divergence)  # the runner reports it verbatim, as its run error


def test_the_limit_counts_each_turn_afresh_and_the_start_apart() -> None:
    backend = Endless()
    boundary = ModelBoundary(backend, max_calls_per_turn=2)
    made, error = calls_until_refused(boundary)  # before the first turn: while starting
    assert made == 2 and str(error) == limit_error(2, "while starting")
    for turn in (0, 1):
        boundary.start_turn(turn)
        made, error = calls_until_refused(boundary)
        assert made == 2 and str(error) == limit_error(2, turn)
    assert backend.answered == 6


def test_a_loop_that_swallows_the_error_still_fails_its_turn() -> None:
    boundary = ModelBoundary(Endless(), max_calls_per_turn=1)
    boundary.start_turn(0)
    calls_until_refused(boundary)
    with pytest.raises(ModelCallLimit):  # every further call too
        asyncio.run(boundary.respond(REQUEST))
    with pytest.raises(ModelCallLimit, match="more than 1 model calls in turn 0"):
        boundary.end_turn(0)


def test_a_request_refused_is_never_sent_and_fails_its_turn_even_when_caught() -> None:
    backend = Endless()
    boundary = ModelBoundary(backend)
    boundary.start_turn(0)
    odd = ModelRequest(messages=(Message(role="tool", content="x", tool_call_id=5),))  # type: ignore[arg-type]
    said = (
        "the agent's model request in turn 0 holds message 0 whose tool_call_id is int, "
        "not text (the id of the call it answers)"
    )
    with pytest.raises(RequestRefused) as refused:
        asyncio.run(boundary.respond(odd))
    assert str(refused.value) == said
    assert backend.answered == 0 and boundary.calls == 0 and boundary.last_request is None
    asyncio.run(boundary.respond(REQUEST))  # a loop that caught it and asked again
    with pytest.raises(RequestRefused) as again:
        boundary.end_turn(0)
    assert str(again.value) == said
    boundary.start_turn(1)  # the next turn starts afresh
    asyncio.run(boundary.respond(REQUEST))
    boundary.end_turn(1)


@pytest.mark.parametrize(
    ("tell", "said"),
    [
        (
            lambda b: b.handoff(5, "billing"),
            "the agent told the boundary a handoff in turn 0 that is not one: "
            "Expected `str`, got `int` - at `$.source`",
        ),
        (
            lambda b: b.guardrail("pii", "input", tripped="yes"),
            "the agent told the boundary a guardrail run in turn 0 that is not one: "
            "Expected `bool`, got `str` - at `$.tripped`",
        ),
        (
            lambda b: b.guardrail("pii", "sideways"),
            "the agent told the boundary a guardrail run in turn 0 that is not one: "
            "Invalid enum value 'sideways' - at `$.kind`",
        ),
        (
            lambda b: b.guardrail("pii", "input", message=object()),
            "the agent told the boundary a guardrail run in turn 0 that is not one: "
            "Encoding objects of type object is unsupported - at `$.message`",
        ),
        (
            lambda b: b.answered_by(None),
            "the agent told the boundary it answered as None, not an agent's name",
        ),
    ],
)
def test_what_a_loop_tells_the_boundary_not_of_its_declared_types_is_refused_unrecorded(
    tell: Any, said: str
) -> None:
    # An own loop may tell the boundary of its handoffs, guardrails and final agent; a
    # value of the wrong type was recorded, and the run's report did not read back.
    boundary = ModelBoundary(Endless())
    boundary.start_turn(0)
    with pytest.raises(RequestRefused) as refused:
        tell(boundary)
    assert str(refused.value) == said
    assert boundary.handoffs == [] and boundary.guardrails == [] and boundary.final_agent is None
    with pytest.raises(RequestRefused):
        boundary.end_turn(0)


def test_the_default_limit_and_a_limit_below_one() -> None:
    assert ModelBoundary(Endless()).max_calls_per_turn == DEFAULT_MAX_MODEL_CALLS_PER_TURN == 40
    with pytest.raises(ValueError, match="at least 1"):
        ModelBoundary(Endless(), max_calls_per_turn=0)


# --- tool calls per answer ----------------------------------------------------------------


def wide_error(asked: int, limit: int, turn: int | str = 0) -> str:
    where = f"in turn {turn}" if isinstance(turn, int) else turn
    return (
        f"the model asked for {asked} tool calls in one answer {where}, more than the "
        f"{limit} allowed (max_tool_calls_per_step; raise it with --max-tool-calls N); "
        "none of them was dispatched"
    )


class Wide:
    """A backend answering every request with `width` tool calls at once."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.answered = 0

    async def respond(self, request: ModelRequest) -> ModelStep:
        self.answered += 1
        calls = (ToolCall(f"c{i}", "echo", {"message": str(i)}) for i in range(self.width))
        return ModelStep(tool_calls=tuple(calls), input_tokens=7, output_tokens=3)


def test_an_answer_over_the_tool_call_limit_never_reaches_the_agent() -> None:
    got: list[ModelStep] = []
    backend = Wide(6)
    boundary = ModelBoundary(backend, max_tool_calls_per_step=5, on_step=got.append)
    boundary.start_turn(0)
    with pytest.raises(ToolCallLimit) as info:
        asyncio.run(boundary.respond(REQUEST))
    assert str(info.value) == wide_error(6, 5)
    assert isinstance(info.value, Divergence) and not info.value.show_request
    assert got == []  # the transcript shows the request unanswered
    # The call was made and paid for: it is metered.
    assert (boundary.calls, boundary.input_tokens, boundary.output_tokens) == (1, 7, 3)
    # A loop that swallows the error gets no further answer, and still fails its turn.
    with pytest.raises(ToolCallLimit, match="6 tool calls in one answer in turn 0"):
        asyncio.run(boundary.respond(REQUEST))
    assert backend.answered == 1
    with pytest.raises(ToolCallLimit, match="6 tool calls in one answer in turn 0"):
        boundary.end_turn(0)
    boundary.start_turn(1)  # a turn afresh: the limit is per answer
    with pytest.raises(ToolCallLimit) as again:
        asyncio.run(boundary.respond(REQUEST))
    assert str(again.value) == wide_error(6, 5, 1) and backend.answered == 2


def test_an_answer_at_the_tool_call_limit_is_answered() -> None:
    got: list[ModelStep] = []
    boundary = ModelBoundary(Wide(5), max_tool_calls_per_step=5, on_step=got.append)
    step = asyncio.run(boundary.respond(REQUEST))
    assert len(step.tool_calls) == 5 and got == [step]
    wide = ModelBoundary(Wide(DEFAULT_MAX_TOOL_CALLS_PER_STEP + 1))
    with pytest.raises(ToolCallLimit) as info:
        asyncio.run(wide.respond(REQUEST))
    assert str(info.value) == wide_error(
        DEFAULT_MAX_TOOL_CALLS_PER_STEP + 1, DEFAULT_MAX_TOOL_CALLS_PER_STEP, "while starting"
    )
    assert DEFAULT_MAX_TOOL_CALLS_PER_STEP == 128
    with pytest.raises(ValueError, match="max_tool_calls_per_step must be at least 1"):
        ModelBoundary(Wide(1), max_tool_calls_per_step=0)


# --- every agent, end to end ---------------------------------------------------------------


def endless_tool_calls() -> Iterator[Action]:
    """A provider's answers that never stop asking for a tool call (a fresh id each time)."""
    for n in itertools.count(1):
        yield tool_reply([(f"call_{n}", "echo", {"message": f"again {n}"})])


@pytest.fixture
def endless_server() -> Iterator[OpenAIServer]:
    answers = endless_tool_calls()
    with OpenAIServer(responder=lambda body: next(answers), api_key=LIVE_KEY) as server:
        yield server


ENDLESS_CASE = live_case(
    "endless-loop",
    "echo: forever",
    tools=["echo"],
    expects={"response_contains": ["never"]},
)
# One of the built-in frameworks, or a loop written without one (docs/agents.md).
EVERY_AGENT = (*AGENTS, "own-loop")


def agent_spec(agent: str, project: Path) -> str:
    if agent != "own-loop":
        return agent
    return f"{write_module(project, FAITHFUL_LOOP, prefix='own_loop')}:factory"


def endless_run(
    run_cli: Cli, tmp_path: Path, server: OpenAIServer, agent: str, *extra: str, config: str = ""
) -> dict[str, Any]:
    project = make_project(
        tmp_path / "project", server.base_url, {"endless.json": ENDLESS_CASE}, extra=config
    )
    result = Runs(run_cli, project).live(agent_spec(agent, project), *extra)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return cases_by_id(report_of(result))["endless-loop"]


@pytest.mark.parametrize("agent", EVERY_AGENT)
def test_every_agent_stops_at_the_command_line_limit_with_the_same_error(
    run_cli: Cli, tmp_path: Path, endless_server: OpenAIServer, agent: str
) -> None:
    case = endless_run(run_cli, tmp_path, endless_server, agent, "--max-model-calls", "7")
    assert case["error"] == limit_error(7)
    record = case["record"]
    assert record["model_calls"] == 7 and len(endless_server.requests) == 7
    # Each answered step's tool call was dispatched before the agent asked again.
    assert [c["name"] for c in record["calls"]] == ["echo"] * 7


@pytest.mark.parametrize("agent", AGENTS)
def test_the_frameworks_own_limits_do_not_apply_first(
    run_cli: Cli, tmp_path: Path, endless_server: OpenAIServer, agent: str
) -> None:
    """The SDK stops a run at 10 model calls of its own accord, pydantic-ai at 50: with the
    harness's limit above both, each stops at the harness's."""
    case = endless_run(
        run_cli, tmp_path, endless_server, agent, config="max_model_calls_per_turn = 55"
    )
    assert case["error"] == limit_error(55)
    assert case["record"]["model_calls"] == 55 and len(endless_server.requests) == 55


def test_the_default_limit_applies_without_a_setting(
    run_cli: Cli, tmp_path: Path, endless_server: OpenAIServer
) -> None:
    case = endless_run(run_cli, tmp_path, endless_server, "own-loop")
    assert case["error"] == limit_error(DEFAULT_MAX_MODEL_CALLS_PER_TURN)
    assert len(endless_server.requests) == DEFAULT_MAX_MODEL_CALLS_PER_TURN


def test_the_command_line_overrides_the_configuration(
    run_cli: Cli, tmp_path: Path, endless_server: OpenAIServer
) -> None:
    case = endless_run(
        run_cli,
        tmp_path,
        endless_server,
        "own-loop",
        "--max-model-calls",
        "3",
        config="max_model_calls_per_turn = 9",
    )
    assert case["error"] == limit_error(3)


SWALLOWING_LOOP = """
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        messages = [Message(role="user", content=user_input)]
        while True:
            try:
                step = await self.ctx.model.respond(ModelRequest(messages=tuple(messages)))
            except Exception:
                return "never mind"  # swallows the limit's error and answers anyway
            messages.append(Message(role="assistant", tool_calls=step.tool_calls))


def factory(ctx):
    return Session(ctx)
"""


def test_a_loop_that_swallows_the_limit_still_gets_the_run_error(
    run_cli: Cli, tmp_path: Path, endless_server: OpenAIServer
) -> None:
    project = make_project(tmp_path / "project", endless_server.base_url, {"e.json": ENDLESS_CASE})
    spec = f"{write_module(project, SWALLOWING_LOOP, prefix='swallowing')}:factory"
    result = Runs(run_cli, project).live(spec, "--max-model-calls", "4")
    (case,) = report_of(result)["cases"]
    assert case["error"] == limit_error(4)
    assert len(endless_server.requests) == 4


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "must be at least 1: 0"),
        ("-3", "must be at least 1: -3"),
        ("many", "not a whole number: 'many'"),
        ("2.5", "not a whole number: '2.5'"),
    ],
)
def test_a_limit_below_one_or_not_a_count_is_a_usage_error(
    run_cli: Cli, tmp_path: Path, value: str, problem: str
) -> None:
    project = make_project(tmp_path / "project", None, {"e.json": ENDLESS_CASE})
    result = run_cli("eval", "run", "--max-model-calls", value, cwd=project)
    assert result.returncode == 2
    assert f"argument --max-model-calls: {problem}" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "Expected `int` > 0"),
        ("-1", "Expected `int` > 0"),
        ('"40"', "Expected `int`, got `str`"),
        ("true", "Expected `int`, got `bool`"),
    ],
)
def test_a_configured_limit_below_one_or_not_an_integer_is_refused(
    run_cli: Cli, tmp_path: Path, value: str, problem: str
) -> None:
    setting = f"max_model_calls_per_turn = {value}"
    project = make_project(tmp_path / "project", None, {"e.json": ENDLESS_CASE}, extra=setting)
    result = run_cli("eval", "check", "--suite", "evals/live", cwd=project)
    assert result.returncode == 1
    assert f"{problem} at `eval.max_model_calls_per_turn`" in result.stderr, result.stderr


def test_a_configured_limit_is_accepted(run_cli: Cli, tmp_path: Path) -> None:
    setting = "max_model_calls_per_turn = 3"
    project = make_project(tmp_path / "project", None, {"e.json": ENDLESS_CASE}, extra=setting)
    result = run_cli("eval", "check", "--suite", "evals/live", cwd=project)
    assert result.returncode == 0, result.stderr


def test_a_tool_call_limit_below_one_is_refused_on_the_command_line_and_configured(
    run_cli: Cli, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "flag", None, {"e.json": ENDLESS_CASE})
    result = run_cli("eval", "run", "--max-tool-calls", "0", cwd=project)
    assert result.returncode == 2
    assert "argument --max-tool-calls: must be at least 1: 0" in result.stderr, result.stderr
    setting = "max_tool_calls_per_step = 0"
    project = make_project(tmp_path / "config", None, {"e.json": ENDLESS_CASE}, extra=setting)
    result = run_cli("eval", "check", "--suite", "evals/live", cwd=project)
    assert result.returncode == 1
    assert "Expected `int` > 0 at `eval.max_tool_calls_per_step`" in result.stderr, result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_scripted_answer_over_the_tool_call_limit_is_the_run_error_in_every_worker(
    run_cli: Cli, tmp_path: Path, jobs: str
) -> None:
    """Replay too: the fixture is the model. With `--jobs 2` each case runs in a worker
    process, which must get the limit the command line set."""
    wide = [call(f"c{i}", message=str(i)) for i in range(3)]
    cases = {
        f"{name}.json": fixture(
            name,
            [scripted_turn("Echo three", tool_step(*wide), text_step("done"))],
            {"exact_tool_calls": 3},
        )
        for name in ("first", "second")
    }
    root = project(tmp_path, cases)
    result = run_cli(
        "eval", "run", "--max-tool-calls", "2", "--jobs", jobs, "--format", "json", cwd=root
    )
    assert result.returncode == 1, result.stderr
    errors = [case["error"] for case in report_of(result)["cases"]]
    assert errors == [wide_error(3, 2)] * 2


# --- who spoke: the agents of a graph -----------------------------------------------------

# `two_agent_project`'s own loop says who asks (ModelRequest.agent), who dispatches
# (tools.agent) and when control passes (model.handoff), as an adapter of a multi-agent
# framework does: `triage` hands the turn to `billing`, which calls echo and answers.


def test_each_request_call_and_handoff_says_which_agent_of_the_graph(
    run_cli: Cli, tmp_path: Path
) -> None:
    root, agent = two_agent_project(tmp_path)
    result = run_cli("eval", "run", "--agent", agent, "--json-report", "r.json", "-v", cwd=root)
    assert result.returncode == 0, result.stderr
    (case,) = json.loads((root / "r.json").read_text(encoding="utf-8"))["cases"]
    record = case["record"]
    assert record["handoffs"] == [{"turn": 0, "step": 0, "source": "triage", "target": "billing"}]
    assert record["final_agent"] == "billing"
    # The handoff is no tool call: only billing's echo was dispatched, and it says so.
    assert [(c["name"], c["agent"]) for c in record["calls"]] == [("echo", "billing")]
    # Its transcript, kept for `show` beside the last run's report, says who asked.
    (kept,) = (root / ".zeroclaw-eval").glob("transcripts-*.jsonl")
    transcript = json.loads(kept.read_text(encoding="utf-8"))["transcript"]
    assert [step["agent"] for step in transcript] == ["triage", "billing", "billing"]
