"""Shared helpers for the harness tests: fixture builders, records, user loops, the command
line run in this process, and the live-mode projects and tiny model behind the loopback
server.

Tests import the plain functions from here (`from conftest import ...`); the pytest
fixtures (`run_cli`, `tiny_server`) are requested by name. Every file a test needs is
written into its own `tmp_path`.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import pytest
from _openai_server import Action, OpenAIServer, hang, malformed, status, text_reply, tool_reply

from harness.agents.protocol import AgentContext, AgentSurface
from harness.builtin_toolset import BUILTIN_TOOL_NAMES, builtin_tools
from harness.cli import main
from harness.expectations.base import Grade
from harness.expectations.registry import Expects
from harness.fixtures.schema import LlmTrace, parse_fixture
from harness.fixtures.suite import Case, load_case
from harness.io.problems import AdmissionError, Problem
from harness.model_boundary import ModelRequest
from harness.modes import Mode
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall, ToolOutcome, ToolRegistry
from harness.verdict.reports import CaseReport, SuiteReport

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "harness"
# The original harness's fixtures live beside the repository; they are read in place, never
# copied into it.
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures" / "zeroclaw"
# What admission knows of the default agent: the built-in tools (`echo`, `fail`, the
# workspace file tools).
BUILTIN_SURFACE = AgentSurface("openai-agents", BUILTIN_TOOL_NAMES)
# Python 3.10 has no `asyncio.timeout`: a watched deadline is a timer there, as `within` is.
WATCHED_ONLY = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="3.10 has no asyncio.timeout: its deadlines are timers"
)
# Every built-in agent framework.
AGENTS = ("openai-agents", "pydantic-ai")
# Each test's bound (pytest-timeout, a test dependency): a hang fails its test, not the CI
# job. Set here, not as `timeout` in pyproject's [tool.pytest.ini_options], where a pytest
# without pytest-timeout (a user running the plugin in this checkout) warned of it.
TEST_TIMEOUT_SECS = 300.0


@pytest.hookimpl(tryfirst=True)  # before pytest-timeout reads its settings
def pytest_configure(config: pytest.Config) -> None:
    # The tests run suites of their own, without request snapshots: a CI job's `CI=true`
    # would fail each for its missing snapshot (the tests of that set it themselves).
    os.environ.pop("CI", None)
    if not config.pluginmanager.hasplugin("timeout"):
        return
    # --timeout, PYTEST_TIMEOUT and `-o timeout=...` still choose another bound.
    chosen = config.getoption("timeout") is not None or config.getini("timeout")
    if not chosen and not os.environ.get("PYTEST_TIMEOUT"):
        config.option.timeout = TEST_TIMEOUT_SECS


# --- fixture dicts ------------------------------------------------------------------------


def call(call_id: str, name: str = "echo", **arguments: Any) -> dict[str, Any]:
    """One scripted tool call."""
    return {"id": call_id, "name": name, "arguments": arguments}


def text_step(content: str, input_tokens: int = 0, output_tokens: int = 0) -> dict[str, Any]:
    response: dict[str, Any] = {"type": "text", "content": content}
    if input_tokens:
        response["input_tokens"] = input_tokens
    if output_tokens:
        response["output_tokens"] = output_tokens
    return {"response": response}


def tool_step(
    *calls: dict[str, Any], input_tokens: int = 0, output_tokens: int = 0
) -> dict[str, Any]:
    response: dict[str, Any] = {"type": "tool_calls", "tool_calls": list(calls)}
    if input_tokens:
        response["input_tokens"] = input_tokens
    if output_tokens:
        response["output_tokens"] = output_tokens
    return {"response": response}


def turn(user_input: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"user_input": user_input, "steps": list(steps)}


def fixture(
    model_name: str, turns: list[dict[str, Any]], expects: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {"model_name": model_name, "turns": turns, "expects": expects, **extra}


# The run error of a turn over the model-call limit (`--max-model-calls`).
LIMIT_ERROR = (
    "the agent made more than {} model calls in turn 0 (max_model_calls_per_turn); "
    "the call over the limit was not answered"
)


def echo_loop(tool_steps: int) -> dict[str, Any]:
    """One turn of `tool_steps` echo calls, one a step, then a final text."""
    steps = [tool_step(call(f"c{i}", message=f"m{i}")) for i in range(tool_steps)]
    return fixture(
        f"echo-loop-{tool_steps}",
        [turn("Echo on and on", *steps, text_step("done"))],
        {"exact_tool_calls": tool_steps, "response_contains": ["done"]},
    )


def echo_fixture(model_name: str, message: str = "hello") -> dict[str, Any]:
    """A one-turn case: echo `message`, then say what the tool returned."""
    return fixture(
        model_name,
        [
            turn(
                f"Echo {message} for me",
                tool_step(call("call_1", message=message), input_tokens=20, output_tokens=8),
                text_step(f"The echo tool said: {message}", input_tokens=30, output_tokens=6),
            )
        ],
        {
            "response_contains": [message],
            "tools_used": ["echo"],
            "exact_tool_calls": 1,
            "all_tools_succeeded": True,
            "tool_arguments_contain": [{"tool": "echo", "needle": message}],
            "tool_results_contain": [{"tool": "echo", "needle": message}],
        },
    )


def greeting_fixture(model_name: str, reply: str = "Hello there!") -> dict[str, Any]:
    """A one-turn case with no tools."""
    return fixture(
        model_name,
        [turn("Say hello", text_step(reply, input_tokens=5, output_tokens=3))],
        {"response_contains": ["Hello"], "max_tool_calls": 0},
    )


def says(
    model_name: str, reply: str, needles: list[str], case_id: str | None = None
) -> dict[str, Any]:
    """A one-turn case answering `reply`, expected to contain each of `needles`."""
    extra = {"id": case_id} if case_id is not None else {}
    return fixture(
        model_name, [turn("Say it", text_step(reply))], {"response_contains": needles}, **extra
    )


def under_scripted_fixture(model_name: str = "under-scripted") -> dict[str, Any]:
    """A run error: the agent asks the model again after the turn's only scripted step."""
    return fixture(
        model_name,
        [turn("Echo hi", tool_step(call("c1", message="hi")))],
        {"response_contains": ["hi"]},
    )


_REPLAY_TRACE: dict[str, Any] = fixture(
    "echo-hello",
    [
        turn(
            "Echo hello for me",
            tool_step(call("call_1", message="hello")),
            text_step("The echo tool said: hello"),
        )
    ],
    {"response_contains": ["hello"], "tools_used": ["echo"]},
)


def replay_trace(**top_level: Any) -> dict[str, Any]:
    """A fresh, admissible replay fixture (one turn: an `echo` call, then text);
    `top_level` keys replace or add top-level keys."""
    data = copy.deepcopy(_REPLAY_TRACE)
    data.update(copy.deepcopy(top_level))
    return data


def live_trace(**top_level: Any) -> dict[str, Any]:
    """A fresh, admissible live fixture: one turn, no scripted steps."""
    data: dict[str, Any] = {
        "model_name": "live-echo",
        "turns": [{"user_input": "Echo hello for me"}],
        "expects": {"response_contains": ["hello"], "tools_used": ["echo"]},
    }
    data.update(copy.deepcopy(top_level))
    return data


# --- files --------------------------------------------------------------------------------


def write_fixture(directory: Path, name: str, data: dict[str, Any] | str | bytes) -> Path:
    """Write one fixture file (creating `directory`): a dict as JSON, a str as UTF-8 text,
    bytes as they are."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_bytes(data.encode("utf-8"))
    else:
        path.write_bytes(json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8"))
    return path


def write_suite(directory: Path, fixtures: dict[str, dict[str, Any] | str]) -> Path:
    for name, data in fixtures.items():
        write_fixture(directory, name, data)
    return directory


def project(where: Path, fixtures: dict[str, Any], suite: str = "evals/regression") -> Path:
    """`where/project`: a project with `[tool.zeroclaw.eval]` in its pyproject naming
    `suite`, and that suite's fixtures."""
    root = where / "project"
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\n\n[tool.zeroclaw.eval]\nsuite_dir = "{suite}"\n',
        encoding="utf-8",
    )
    write_suite(root / suite, fixtures)
    return root


def line_containing(path: Path, needle: str) -> int:
    """The number of the one line of `path` holding `needle`."""
    hits = [n for n, line in enumerate(path.read_text("utf-8").splitlines(), 1) if needle in line]
    assert len(hits) == 1, (path, needle, hits)
    return hits[0]


def write_module(directory: Path, source: str, prefix: str = "user_module") -> str:
    """Write `source` as a uniquely named module in `directory`; returns the module name.

    Unique names keep modules of different tests apart in `sys.modules`. The caller puts
    `directory` on sys.path (via monkeypatch), or runs the command line there.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    importlib.invalidate_caches()
    return name


def failing_fixture(model_name: str = "wrong-answer") -> dict[str, Any]:
    """Failed checks: the response lacks "hi" and there is one tool call, not two."""
    return fixture(
        model_name,
        [turn("Echo hi", tool_step(call("c1", message="hi")), text_step("I said bye"))],
        {"response_contains": ["hi"], "exact_tool_calls": 2},
    )


def green_project(tmp_path: Path) -> Path:
    """A regression suite of two passing cases."""
    return project(
        tmp_path, {"a_echo.json": echo_fixture("echo-case"), "b_hi.json": greeting_fixture("hi")}
    )


def red_project(tmp_path: Path) -> Path:
    """A regression suite of a passing case, failed checks and a run error."""
    return project(
        tmp_path,
        {
            "a_echo.json": echo_fixture("echo-case"),
            "b_wrong.json": failing_fixture(),
            "c_under.json": under_scripted_fixture(),
        },
    )


# --- parsing and admission ----------------------------------------------------------------


def trace_of(data: dict[str, Any]) -> LlmTrace:
    return parse_fixture(json.dumps(data), "test.json")


def case_of(data: dict[str, Any], path: Path | None = None) -> Case:
    """An admitted-looking `Case` without touching the disk (the runner only reads it)."""
    path = path or Path(f"{data['model_name']}.json")
    return Case(trace_of(data), path, json.dumps(data))


def admit(path: Path, mode: Mode = "replay", agent: AgentSurface | None = None) -> Case:
    """Load one fixture that must be admitted."""
    return load_case(path, mode, agent or BUILTIN_SURFACE)


def refusal(path: Path, mode: Mode = "replay", agent: AgentSurface | None = None) -> list[Problem]:
    """Load one fixture that must be refused; return every problem reported."""
    with pytest.raises(AdmissionError) as caught:
        load_case(path, mode, agent or BUILTIN_SURFACE)
    problems = caught.value.problems
    assert problems, "an AdmissionError must carry at least one problem"
    # The rendered error is what a user sees: one `file: field: message` line per problem.
    assert str(caught.value) == "\n".join(str(p) for p in problems)
    return problems


def lines(problems: list[Problem]) -> list[str]:
    """Problems as the user reads them: `file: $.json.path: message`."""
    return [str(p) for p in problems]


def refused(
    tmp_path: Path,
    data: dict[str, Any] | str | bytes,
    mode: str = "replay",
    agent: AgentSurface | None = None,
) -> tuple[Path, list[str]]:
    """Write `data` as `case.json` and load it, to be refused; the path and every problem."""
    path = write_fixture(tmp_path, "case.json", data)
    return path, lines(refusal(path, mode, agent))  # type: ignore[arg-type]


def refuse_one(
    tmp_path: Path,
    data: dict[str, Any] | str | bytes,
    field: str,
    message: str,
    mode: str = "replay",
    agent: AgentSurface | None = None,
) -> None:
    """The fixture is refused with exactly one problem: `<file>: <field>: <message>`."""
    path = write_fixture(tmp_path, "case.json", data)
    problems = refusal(path, mode, agent)  # type: ignore[arg-type]
    assert lines(problems) == [f"{path}: {field}: {message}"]
    assert problems[0].file == str(path)
    assert problems[0].field == field


# Both modes, for the rules that hold in each.
MODES = pytest.mark.parametrize("mode", ["replay", "live"])


def base(mode: str, **top_level: Any) -> dict[str, Any]:
    """The mode's admissible base case (`replay_trace` or `live_trace`)."""
    return replay_trace(**top_level) if mode == "replay" else live_trace(**top_level)


def with_expects(mode: str, extra: dict[str, Any], **top_level: Any) -> dict[str, Any]:
    """The mode's base case with `extra` added to its (real) expectations."""
    data = base(mode, **top_level)
    data["expects"].update(extra)
    return data


def setup(**files: str) -> dict[str, Any]:
    """A fixture's `setup` block writing `files` into the case workspace."""
    return {"workspace_files": files}


# What admission says, verbatim.
BUILTIN_TOOLS = "echo, fail, list_files, read_file, write_file"  # the default agent's tools
COMMAND = (
    "a shell or command-running tool would let the model run anything on this machine; "
    "it is never available (a tool name is refused when, ignoring case and any `_`, `-`, `.` "
    "or whitespace in it, it is `sh` or contains `exec`, `command`, `cmd`, `shell`, `bash`, "
    "`zsh`, `spawn`, `subprocess`, `terminal`, `python`, `runcode`, `runscript` or `runprocess`)"
)
NO_ASSERTION = "declares no effective assertion: a case that asserts nothing would pass vacuously"
EMPTY_RUN = (
    "every check passes against an empty run (no response, no tool calls): "
    "add a check only a working agent satisfies"
)
NO_BOUND = (
    "declares no bound: an empty budget asserts nothing; set at least one of max_input_tokens, "
    "max_output_tokens, max_total_tokens, max_duration_ms, max_llm_calls, or remove the block"
)


# --- records ------------------------------------------------------------------------------


def expects(**fields: Any) -> Expects:
    return msgspec.convert(fields, Expects)


def recorded(
    name: str = "echo",
    arguments: dict[str, Any] | str | None = None,
    result: str = "",
    success: bool = True,
) -> RecordedCall:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return RecordedCall(name, arguments, result, success, 1.0)


def record(final_response: str = "", calls: list[RecordedCall] | None = None) -> RunRecord:
    return RunRecord(final_response=final_response, calls=list(calls or []))


def echo_call(message: str) -> RecordedCall:
    return recorded("echo", {"message": message}, message)


# --- grades -------------------------------------------------------------------------------


def only(grades: list[Grade]) -> Grade:
    assert len(grades) == 1, grades
    return grades[0]


def shape(g: Grade) -> tuple[str, bool, str, str]:
    return (g.check, g.passed, g.detail, g.category)


def shape_at(g: Grade) -> tuple[str, bool, str, str, str]:
    """`shape` with the JSON path of the expectation graded."""
    return (g.check, g.passed, g.detail, g.category, g.field)


def two_echoes() -> list[RecordedCall]:
    return [echo_call("alpha"), echo_call("beta")]


def strict_expects(data: dict[str, Any]) -> Expects:
    """Expectations parsed from JSON text, exactly as admission parses them."""
    trace = parse_fixture(
        json.dumps({"model_name": "m", "turns": [], "expects": data}), "case.json"
    )
    assert trace.expects is not None
    return trace.expects


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty directory to grade the workspace expectations against."""
    root = tmp_path / "workspace"
    root.mkdir()
    return root


# --- tools --------------------------------------------------------------------------------


def dispatch(registry: ToolRegistry, name: str, arguments: Any) -> ToolOutcome:
    return asyncio.run(registry.dispatch(name, arguments))


def builtins() -> ToolRegistry:
    """A registry of the built-in tools."""
    return ToolRegistry.of(builtin_tools())


def only_call(registry: ToolRegistry) -> RecordedCall:
    assert len(registry.calls) == 1, registry.calls
    return registry.calls[0]


# --- reports ------------------------------------------------------------------------------

ESC, NUL = "\x1b", "\x00"


class Sent:
    """A worker's pipe: what was sent on it, in order."""

    def __init__(self) -> None:
        self.messages: list[tuple[Any, ...]] = []

    def send(self, message: tuple[Any, ...]) -> None:
        self.messages.append(message)


def passing_report(case_id: str = "ok") -> CaseReport:
    record = RunRecord(final_response="fine", model_calls=1, duration_ms=12.0)
    return CaseReport.graded(
        case_id, f"evals/regression/{case_id}.json", [Grade("c", True, "found", "response")], record
    )


def failing_report(case_id: str = "bad") -> CaseReport:
    grades = [
        Grade('response_contains("hello")', True, "found", "response"),
        Grade('tools_used("echo")', False, "not called; tools called: []", "tool"),
        Grade("exact_tool_calls(1)", False, "0 tool call(s): []", "tool"),
    ]
    record = RunRecord(final_response="hello", model_calls=2, duration_ms=250.0)
    return CaseReport.graded(case_id, f"evals/regression/{case_id}.json", grades, record)


def errored_report(case_id: str = "err") -> CaseReport:
    record = RunRecord(model_calls=1, duration_ms=3.0)
    return CaseReport.errored(
        case_id,
        f"evals/regression/{case_id}.json",
        "case 'err': turn 0 requested more model responses than the trace scripts\n  [0] user: hi",
        record,
        "Traceback (most recent call last):\n  ...",
    )


def suite_report(kind: str, *cases: CaseReport) -> SuiteReport:
    return SuiteReport(
        suite=f"evals/{kind}",
        kind=kind,  # type: ignore[arg-type]
        mode="replay",
        agent="openai-agents",
        cases=list(cases),
        duration_ms=265.0,
    )


def one_passing_run() -> dict[str, Any]:
    """A repeat block of one run that passed, its statistics right: no run makes one (a
    case run once has no block), so it can only be an edit."""
    from harness.verdict.statistics import wilson

    return {
        "requested": 1,
        "completed": 1,
        "passes": 1,
        "proportion": 1.0,
        "interval": list(wilson(1, 1)),
        "pass_at_k": [1.0],
        "pass_hat_k": [1.0],
        "min_pass_rate": None,
        "flaky": False,
        "runs": [{"run": 1, "passed": True}],
    }


def restated(document: dict[str, Any]) -> dict[str, Any]:
    """A JSON report document whose suite-level fields (totals, statistics, `all_passed`,
    exit code) are restated from its cases by the harness's own model, as a forger with
    the harness at hand would after editing a case: what is then refused is the edit."""
    from harness.verdict.reports import document_type

    parsed = msgspec.convert(document, document_type())
    report = SuiteReport(
        suite=parsed.suite,
        kind=parsed.kind,
        mode=parsed.mode,
        agent=parsed.agent,
        cases=parsed.cases,
        receipt=parsed.receipt,
        baseline=parsed.baseline,
        fail_on_regression=parsed.receipt is not None and parsed.receipt.policy.fail_on_regression,
    )
    document["totals"] = msgspec.to_builtins(report.totals)
    document["statistics"] = msgspec.to_builtins(report.statistics)
    document["all_passed"] = report.all_passed
    document["exit_code"] = int(report.exit_code())
    return document


# --- user loops ---------------------------------------------------------------------------

# A faithful user-written loop over the harness boundaries: it offers the model its tools,
# dispatches every tool call and feeds the results back, keeping the whole conversation.
FAITHFUL_LOOP = """
from harness import Message, ModelRequest, ToolSchema


class Session:
    def __init__(self, ctx):
        self.ctx = ctx
        self.messages = []
        self.tools = tuple(
            ToolSchema(t.name, t.description, t.parameters) for t in ctx.tools.tools.values()
        )

    async def run_turn(self, user_input):
        self.messages.append(Message(role="user", content=user_input))
        while True:
            request = ModelRequest(messages=tuple(self.messages), tools=self.tools)
            step = await self.ctx.model.respond(request)
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text))
                return step.text
            self.messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                outcome = await self.ctx.tools.dispatch(call.name, call.arguments)
                self.messages.append(
                    Message(role="tool", content=outcome.result, tool_call_id=call.id)
                )


def factory(ctx):
    return Session(ctx)
"""

# A broken loop: asks the model again after a tool-call step but never dispatches the tool.
DROPPING_LOOP = """
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        messages = [Message(role="user", content=user_input)]
        while True:
            step = await self.ctx.model.respond(ModelRequest(messages=tuple(messages)))
            if not step.tool_calls:
                return step.text
            messages.append(Message(role="assistant", tool_calls=step.tool_calls))


def factory(ctx):
    return Session(ctx)
"""


# A loop that raises, for a case whose input starts with "explode", an exception whose
# message would forge workflow commands if printed raw.
EXPLODING_LOOP = """
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        if user_input.startswith("explode"):
            raise RuntimeError("boom\\n::error::forged\\r\\n::warning file=x::100%0A")
        step = await self.ctx.model.respond(
            ModelRequest(messages=(Message(role="user", content=user_input),))
        )
        return step.text


def factory(ctx):
    return Session(ctx)
"""


# An own loop with two agents, as a multi-agent adapter reports them: TRIAGE treats its
# model's first tool call as a handoff to BILLING (never dispatched), and BILLING
# dispatches its calls and answers. Both names are Python literals put in by
# `two_agent_project`, so a test can make them hostile.
HANDING_OFF_LOOP = """
from harness import Message, ModelRequest, ToolSchema


class Session:
    def __init__(self, ctx):
        self.ctx = ctx
        self.tools = tuple(
            ToolSchema(t.name, t.description, t.parameters) for t in ctx.tools.tools.values()
        )

    async def run_turn(self, user_input):
        messages = [Message(role="user", content=user_input)]
        agent = TRIAGE
        while True:
            request = ModelRequest(messages=tuple(messages), tools=self.tools, agent=agent)
            step = await self.ctx.model.respond(request)
            if not step.tool_calls:
                return step.text
            messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                if agent == TRIAGE:
                    self.ctx.model.handoff(TRIAGE, BILLING)
                    agent = self.ctx.tools.agent = BILLING
                    result = "handed off"
                else:
                    result = (await self.ctx.tools.dispatch(call.name, call.arguments)).result
                messages.append(Message(role="tool", content=result, tool_call_id=call.id))


def factory(ctx):
    return Session(ctx)
"""


def two_agent_project(
    where: Path, triage: str = "triage", billing: str = "billing", *, answer: str = "Done"
) -> tuple[Path, str]:
    """A project of one case run by `HANDING_OFF_LOOP`: triage hands off after its first
    request (a `fail` call, never dispatched), billing calls echo("hi") and answers
    `answer`; the case expects "Done". Returns the project and its `--agent`."""
    steps = [
        tool_step(call("h1", "fail", reason="to billing")),
        tool_step(call("c1", message="hi")),
        text_step(answer),
    ]
    data = fixture("two-agents", [turn("Refund me", *steps)], {}, id="two-agents")
    # The handoff's call is made by the loop, not dispatched: conformance would say so.
    exempt = {"dispatches": "the handoff is made by the loop", "tool_results": "the same"}
    data["expects"] = {"response_contains": ["Done"], "tools_used": ["echo"], "loop_exempt": exempt}
    root = project(where, {"a.json": data})
    source = HANDING_OFF_LOOP.replace("TRIAGE", repr(triage)).replace("BILLING", repr(billing))
    return root, write_module(root, source, "twoagents") + ":factory"


class Recording:
    """Wraps an adapter; keeps every model request its cases make, in order."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []

    def tools(self) -> Any:
        return self.inner.tools()

    def tool_names(self) -> frozenset[str]:
        return frozenset(self.inner.tool_names())

    def start(self, context: AgentContext) -> Any:
        respond = context.model.respond

        async def recording(request: ModelRequest) -> Any:
            self.requests.append(request)
            return await respond(request)

        context.model.respond = recording  # type: ignore[method-assign]
        return self.inner.start(context)


# --- workflow commands, read as GitHub's runner reads them ---------------------------------
#
# A workflow command is a line of output starting with `::`; the runner reads the command
# and its `key=value` properties up to the first `::` after that, and the message after it.
# It decodes `%0D`, `%0A` and `%25` in the message, and also `%3A` and `%2C` in properties,
# so a forged command or a property broken open by a stray `:` or `,` shows up as a wrong
# parse.


class Command(NamedTuple):
    name: str
    properties: dict[str, str]
    message: str
    raw: str


def unescape_data(text: str) -> str:
    # The runner's order: CR, LF, then the percent sign.
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


def parse_command(line: str) -> Command:
    assert line.startswith("::"), line
    end = line.index("::", 2)
    info, data = line[2:end], line[end + 2 :]
    name, _, props = info.partition(" ")
    properties: dict[str, str] = {}
    for prop in props.split(",") if props else []:
        key, sep, value = prop.partition("=")
        assert sep, f"property without '=': {prop!r} in {line!r}"
        assert key not in properties, f"repeated property {key!r} in {line!r}"
        properties[key] = unescape_property(value)
    return Command(name, properties, unescape_data(data), line)


def parse_commands(output: str) -> list[Command]:
    """Every workflow command in `output`, split into lines as the runner splits them."""
    lines = re.split(r"\r\n|\r|\n", output)
    return [parse_command(line.lstrip()) for line in lines if line.lstrip().startswith("::")]


def assert_well_formed(command: Command) -> None:
    """One line; `%`, CR and LF escaped in the message; also `:` and `,` in properties."""
    raw = command.raw
    assert "\n" not in raw and "\r" not in raw
    info, _, data = raw[2:].partition("::")
    assert "::" not in info  # nothing in the properties can end them early
    assert not re.search(r"%(?!25|0D|0A)", data), data  # every % in the message is an escape
    for value in info.partition(" ")[2].split(","):
        escaped = value.partition("=")[2]
        assert ":" not in escaped, raw
        assert not re.search(r"%(?!25|0D|0A|3A|2C)", escaped), raw


# --- the command line, in this process ----------------------------------------------------


# What a CI runner sets that the harness reads (annotations, the step summary, the
# repository root, the per-step annotation budget): a test sets what it tests, never
# inherits the runner's, so `nox -s tests` on GitHub Actions runs as it does anywhere.
CI_VARIABLE_PREFIXES = ("GITHUB_", "RUNNER_")


def child_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a child that runs the harness: none of CI's
    variables, this checkout first on its path, UTF-8 on its pipes, and `extra`."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), environment.get("PYTHONPATH", "")) if p
    )
    environment["PYTHONIOENCODING"] = "utf-8"
    environment.update(extra)
    return environment


def own_loop_case_run(tmp_path: Path, *flags: str, then: str = "") -> str:
    """What a one-case own-loop `eval run` (with `flags`) printed on stdout, run in a fresh
    process in `tmp_path` (no configuration there) and followed by `then` (code that prints
    what the run left, `sys.modules` say) in that process; the run's own stdout goes to
    stderr."""
    own_loop = REPO / "examples" / "own_loop"
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    fixture = sorted((own_loop / "evals").glob("*.json"))[0]
    (suite / fixture.name).write_bytes(fixture.read_bytes())
    code = (
        "import sys\nfrom harness import cli\n"
        "code = cli.main(sys.argv[1:], stdout=sys.stderr)\nassert code == 0, code\n" + then
    )
    argv = ["eval", "run", "--jobs", "1", "--suite", str(suite), "--agent", "loop:factory"]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv, *flags],
        capture_output=True,
        text=True,
        # Without CI's variables: GitHub's step summary would ask for the Markdown summary.
        env=child_environment(PYTHONPATH=os.pathsep.join([str(REPO), str(own_loop)])),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_process(
    *args: str | Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`python -m harness <args>` in a subprocess, as CI runs it."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *map(str, args)],
        cwd=cwd,
        env=child_environment(**(env or {})),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )


def start_reported_run(
    root: Path, agent: str, *extra: str, env: dict[str, str]
) -> subprocess.Popen[str]:
    """`python -m harness eval run --agent AGENT EXTRA` started in `root` as CI starts it,
    writing `reports/junit.xml` and `reports/report.json`, with `env` added (not waited for:
    the caller interrupts or reads it)."""
    command = [sys.executable, "-m", "harness", "eval", "run", "--agent", agent, *extra]
    reports = ["--junit-xml", "reports/junit.xml", "--json-report", "reports/report.json"]
    return subprocess.Popen(
        [*command, *reports, "--timeout", "300"],
        cwd=root,
        env=child_environment(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def run_limited(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python <argv>` in a subprocess that can neither hang (timeout) nor take more than
    1 GiB (a reader of /dev/zero would otherwise take all there is)."""

    def limit_memory() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), environment.get("PYTHONPATH", "")) if p
    )
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        preexec_fn=limit_memory if sys.platform != "win32" else None,
    )


class CliResult(NamedTuple):
    """What one command printed and its exit status, shaped like a finished process."""

    returncode: int
    stdout: str
    stderr: str


class Cli:
    """`zeroclaw eval ...` as `harness.cli.main(argv)` in this process.

    Set up as the process CI starts would be: in `cwd`, without GitHub's variables unless
    `env` sets them, with `sys.path` and the user modules it imports from the project put
    back afterwards. Everything written to stdout and stderr (also at the file-descriptor
    level) is captured. The few properties only a real process has are in test_process.py.
    """

    def __init__(self, capture: pytest.CaptureFixture[str], patch: pytest.MonkeyPatch) -> None:
        self._capture = capture
        self._patch = patch

    def __call__(
        self, *args: str | Path, cwd: Path, env: dict[str, str] | None = None
    ) -> CliResult:
        self._capture.readouterr()  # what came before is not this command's
        modules = set(sys.modules)
        with self._patch.context() as patch:
            patch.chdir(cwd)
            for name in [n for n in os.environ if n.startswith(CI_VARIABLE_PREFIXES)]:
                patch.delenv(name, raising=False)
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            patch.setattr(sys, "path", list(sys.path))
            try:
                code = main([str(arg) for arg in args])
            finally:
                _forget_project_modules(set(sys.modules) - modules, Path(cwd).resolve())
        out, err = self._capture.readouterr()
        assert isinstance(code, int), code
        return CliResult(code, out, err)


def _forget_project_modules(names: set[str], directory: Path) -> None:
    """Drop the modules a run imported from the project (the user's agents), as the end of
    a process would; the harness's and the frameworks' own stay loaded."""
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file is None:
            continue
        path = Path(file).resolve()
        if path.is_relative_to(directory) and not path.is_relative_to(HARNESS):
            del sys.modules[name]


@pytest.fixture
def run_cli(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Runs the command line in this process: `run_cli("eval", "run", cwd=root)`."""
    return Cli(capfd, monkeypatch)


# --- live mode: the tiny model behind the loopback server, and live projects -------------

LIVE_KEY = "sk-test-SECRET-e2e-42"
# The distinctive middle of the key: found even if a prefix were cut off somewhere.
LIVE_KEY_CORE = "SECRET-e2e-42"
LIVE_KEY_ENV = "ZC_E2E_API_KEY"
LIVE_MODEL = "loopback-tiny"

# Token usage the tiny model reports: distinct per kind of step, so sums are checkable.
TOOL_STEP_TOKENS = (11, 3)
TEXT_STEP_TOKENS = (17, 5)
HANG_SECS = 30.0
SLOW_SECS = 1.5


def say(text: str) -> Action:
    prompt, completion = TEXT_STEP_TOKENS
    return text_reply(text, prompt_tokens=prompt, completion_tokens=completion)


def call_tool(call_id: str, name: str, arguments: dict[str, Any]) -> Action:
    prompt, completion = TOOL_STEP_TOKENS
    return tool_reply(
        [(call_id, name, arguments)], prompt_tokens=prompt, completion_tokens=completion
    )


def tiny_model(body: Any) -> Action:
    """Answers a chat completion request the way a small, obedient model would.

    The last user message is a command `verb: argument`: `echo: X` calls echo with X;
    `write: PATH = TEXT`, `read: PATH` and `list: [DIR]` call the file tools; `remember: X`
    answers OK; `recall` answers the X of an earlier `remember:` found in the history the
    agent sent; `say: X` answers X. A tool the request does not offer is never called.
    After tool results it answers `Done. <results>`. `hang`, `malformed` and `unavailable`
    misbehave (the last two echo the API key back, as careless servers do).
    """
    messages = body["messages"]
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    last = messages[-1]
    if last["role"] == "tool":
        results: list[str] = []
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            results.insert(0, message["content"])
        return say("Done. " + " | ".join(results))
    verb, _, argument = (last.get("content") or "").partition(":")
    verb, argument = verb.strip().lower(), argument.strip()
    # Unique per request within a conversation, as a provider's ids are.
    call_id = f"call_{len(messages)}"
    if verb == "echo":
        name, arguments = "echo", {"message": argument}
    elif verb == "write":
        path, _, content = argument.partition("=")
        name, arguments = "write_file", {"path": path.strip(), "content": content.strip()}
    elif verb == "read":
        name, arguments = "read_file", {"path": argument}
    elif verb == "list":
        name, arguments = "list_files", ({"path": argument} if argument else {})
    elif verb == "remember":
        return say("OK")
    elif verb == "recall":
        for message in messages:
            said = message.get("content") or ""
            if message["role"] == "user" and said.lower().startswith("remember:"):
                return say(said.partition(":")[2].strip())
        return say("I was never told anything to remember.")
    elif verb == "say":
        return say(argument)
    elif verb == "leak":
        name, arguments = "echo", {"message": LIVE_KEY}
    elif verb == "confess":
        return say(f"My API key is {LIVE_KEY}.")
    elif verb == "insist":  # calls a tool whether it was offered or not
        return call_tool(call_id, argument, {})
    elif verb == "hang":
        return hang(HANG_SECS)
    elif verb == "slow":  # answers, but only after SLOW_SECS
        return hang(SLOW_SECS, then=say(argument))
    elif verb == "malformed":
        return malformed(f"<html>502 upstream proxy error (request key {LIVE_KEY})</html>")
    elif verb == "unavailable":
        return status(
            500,
            {"error": {"message": f"overloaded; retry later (key {LIVE_KEY})"}},
            headers={"Retry-After": "0"},
        )
    else:
        return say("I cannot do that.")
    if name not in offered:
        return say(f"I have no {name} tool.")
    return call_tool(call_id, name, arguments)


@pytest.fixture
def tiny_server() -> Iterator[OpenAIServer]:
    """The loopback server answering as `tiny_model`; without `Authorization: Bearer
    LIVE_KEY` a request gets a 401, as from a provider."""
    with OpenAIServer(responder=tiny_model, api_key=LIVE_KEY) as s:
        yield s


def live_case(name: str, *inputs: str, expects: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A live fixture: turns without steps."""
    return {
        "model_name": name,
        "turns": [{"user_input": text} for text in inputs],
        "expects": expects,
        **extra,
    }


def make_project(
    root: Path,
    base_url: str | None,
    cases: dict[str, dict[str, Any]],
    *,
    timeout: float = 20,
    model: str | None = LIVE_MODEL,
    extra: str = "",
) -> Path:
    """A project whose `[tool.zeroclaw.eval]` points live mode at `base_url`, with the
    `evals/live` suite `cases`. None leaves a setting out."""
    root.mkdir(parents=True, exist_ok=True)
    lines = ['[project]\nname = "demo"\n', "[tool.zeroclaw.eval]"]
    if base_url is not None:
        lines.append(f'live_base_url = "{base_url}"')
    if model is not None:
        lines.append(f'live_model = "{model}"')
    lines.append(f'live_api_key_env = "{LIVE_KEY_ENV}"')
    lines.append(f"case_timeout_secs = {timeout}")
    if extra:
        lines.append(extra)
    (root / "pyproject.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, data in cases.items():
        write_fixture(root / "evals" / "live", name, data)
    return root


ECHO_INPUT = "echo: zeroclaw-probe-7"
ECHO_CASE = live_case(
    "live-echo",
    ECHO_INPUT,
    tools=["echo"],
    expects={
        "tools_used": ["echo"],
        "exact_tool_calls": 1,
        "all_tools_succeeded": True,
        "tool_arguments_contain": [{"tool": "echo", "needle": "zeroclaw-probe-7"}],
        "tool_results_contain": [{"tool": "echo", "needle": "zeroclaw-probe-7"}],
        "response_contains": ["zeroclaw-probe-7"],
    },
)


class Runs:
    """Runs the command line in one project and keeps everything it printed, for the key
    check. `cli` is the `run_cli` fixture, or test_process.py's real process."""

    def __init__(self, cli: Callable[..., Any], project: Path) -> None:
        self.cli = cli
        self.project = project
        self.outputs: list[str] = []

    def __call__(
        self, *args: str | Path, env: dict[str, str] | None = None, key: bool = True
    ) -> Any:
        environment = {LIVE_KEY_ENV: LIVE_KEY} if key else {}
        environment.update(env or {})
        result = self.cli(*args, cwd=self.project, env=environment)
        self.outputs += [result.stdout, result.stderr]
        return result

    def live(
        self,
        agent: str,
        *extra: str | Path,
        env: dict[str, str] | None = None,
        key: bool = True,
    ) -> Any:
        return self(
            "eval",
            "run",
            "--suite",
            "evals/live",
            "--mode",
            "live",
            "--agent",
            agent,
            "--format",
            "json",
            *extra,
            env=env,
            key=key,
        )


def report_of(result: Any) -> dict[str, Any]:
    try:
        document: dict[str, Any] = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"stdout is not a JSON report:\n{result.stdout}\nstderr:\n{result.stderr}")
    return document


def cases_by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["cases"]}


def run_reported(run_cli: Cli, root: Path, agent: str, *extra: str) -> CliResult:
    """`zeroclaw eval run` of the suite `evals` under `root` with `agent`, its JSON report
    written to `r.json` (read it with `reported_cases`)."""
    return run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent, "--json-report", "r.json", *extra,
        cwd=root,
    )  # fmt: skip


def reported_cases(root: Path) -> dict[str, dict[str, Any]]:
    """The cases of the JSON report `run_reported` wrote under `root`, by id."""
    return cases_by_id(json.loads((root / "r.json").read_text(encoding="utf-8")))


def run_reported_cases(
    run_cli: Cli, root: Path, agent: str, *extra: str
) -> tuple[CliResult, dict[str, dict[str, Any]]]:
    """`run_reported`, whose JSON report must have been written, and its cases by id."""
    result = run_reported(run_cli, root, agent, *extra)
    assert (root / "r.json").is_file(), (result.stdout, result.stderr)
    return result, reported_cases(root)


# The `check` of `assert_fails_naming` that means the case's run error, not a check.
RUN_ERROR = "run error"


def assert_fails_naming(case: dict[str, Any], check: str, words: str) -> None:
    """A reported case failed: by a run error holding `words` (`check` is `RUN_ERROR`), or
    with no run error, by a failing check whose name starts with `check` and whose name or
    detail holds `words`."""
    assert not case["passed"], case
    if check == RUN_ERROR:
        assert words in (case["error"] or ""), case["error"]
        return
    assert case["error"] is None, case["error"]
    failing = [g for g in case["grades"] if not g["passed"] and g["check"].startswith(check)]
    assert failing, [g["check"] for g in case["grades"] if not g["passed"]]
    assert any(words in g["check"] + g["detail"] for g in failing), failing


def assert_key_kept_out(runs: Runs, server: OpenAIServer | None = None) -> None:
    """No byte of output and no file under the project holds the key; the server (when
    given) did receive it, so this check can fail."""
    files = [p for p in runs.project.rglob("*") if p.is_file() and not p.is_symlink()]
    assert files, "nothing to check"
    for path in files:
        data = path.read_bytes()
        assert LIVE_KEY_CORE.encode() not in data, f"the API key leaked into {path}"
    for text in runs.outputs:
        assert LIVE_KEY_CORE not in text, f"the API key leaked into the output:\n{text}"
    if server is not None:
        assert server.requests, "the server was never asked"
        for request in server.requests:
            assert request.headers.get("authorization") == f"Bearer {LIVE_KEY}"


def finishes_within(seconds: float, action: Callable[[], Any]) -> Any:
    """Run `action` on a worker thread; fail the test (instead of hanging it) if it blocks."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # handed back to the test thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    if worker.is_alive():
        pytest.fail(f"did not finish within {seconds}s: it blocked")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def process_gone(pid: int, wait: float = 5) -> bool:
    """Whether process `pid` has ended (a zombie not yet reaped by its server included),
    waiting up to `wait` seconds for it to."""
    deadline = time.monotonic() + wait
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
