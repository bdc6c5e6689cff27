"""`harness.agents.protocol`: the user's own agents: a hand-written loop (`module:factory`)
and framework agents with their own tools (`openai-agents:module:factory`,
`pydantic-ai:module:factory`).

Uses the shipped examples (examples/own_loop, examples/support_agent) and small modules
written per test.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    REPO,
    Cli,
    Recording,
    call,
    fixture,
    text_step,
    tool_step,
    turn,
    write_module,
    write_suite,
)

from harness import AdmissionError, Message, run_cases, run_suite
from harness.agents.registry import AgentError, agent_surface, resolve_agent
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.fixtures.admission import check_trace
from harness.fixtures.schema import parse_fixture
from harness.fixtures.suite import Case, load_suite
from harness.verdict.reports import CaseReport, SuiteReport

pytest.importorskip("agents", reason="the openai-agents extra is not installed")
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

OWN_LOOP = REPO / "examples" / "own_loop"
SUPPORT = REPO / "examples" / "support_agent"
SDK_SPEC = "openai-agents:agents_sdk:build_agent"
PAI_SPEC = "pydantic-ai:pydantic_agent:build_agent"
FRAMEWORK_SPECS = [SDK_SPEC, PAI_SPEC]
EXAMPLE_MODULES = ("loop", "agents_sdk", "pydantic_agent", "support_orders")


@pytest.fixture
def support(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """examples/support_agent as the working directory and first on sys.path."""
    yield from _in_example(SUPPORT, monkeypatch)


@pytest.fixture
def own_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from _in_example(OWN_LOOP, monkeypatch)


def _in_example(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in EXAMPLE_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.chdir(directory)
    monkeypatch.syspath_prepend(str(directory))
    yield directory
    for name in EXAMPLE_MODULES:
        sys.modules.pop(name, None)


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


def grades(case: CaseReport) -> dict[str, bool]:
    return {g.check: g.passed for g in case.grades}


def calls_of(case: CaseReport) -> list[tuple[str, str, str, bool]]:
    assert case.record is not None
    return [(c.name, c.arguments, c.result, c.success) for c in case.record.calls]


def run_here(suite: Path, agent: Any) -> SuiteReport:
    return run_suite(suite, agent=agent, root=REPO)


# --- the examples' own suites ------------------------------------------------------------------


def test_own_loop_example_suite_passes(own_loop: Path) -> None:
    report = run_here(Path("evals"), "loop:factory")
    assert {c.id: c.error or failing(c) for c in report.cases if not c.passed} == {}
    assert len(report.cases) == len(list((own_loop / "evals").glob("*.json"))) >= 3
    assert report.agent == "loop:factory"
    assert report.exit_code() == 0
    # The loop really ran the tools: every case recorded at least one dispatch.
    assert all(c.record is not None and c.record.calls for c in report.cases)


@pytest.mark.parametrize("spec", FRAMEWORK_SPECS)
def test_support_agent_example_suite_passes_on_both_frameworks(support: Path, spec: str) -> None:
    report = run_here(Path("evals"), spec)
    assert {c.id: c.error or failing(c) for c in report.cases if not c.passed} == {}
    assert len(report.cases) == len(list((support / "evals").glob("*.json"))) >= 4
    assert report.agent == spec
    assert report.exit_code() == 0
    recorded = {c.name for case in report.cases if case.record for c in case.record.calls}
    assert recorded == {"lookup_order", "refund_order"}


# --- a user tool's dispatch is recorded and graded ---------------------------------------------

LOOKUP = fixture(
    "lookup-graded",
    [
        turn(
            "Where is A-1003?",
            tool_step(call("c1", "lookup_order", order_id="A-1003")),
            text_step("A-1003 was delivered."),
        )
    ],
    {
        "exact_tool_calls": 1,
        "all_tools_succeeded": True,
        "tool_arguments_contain": [{"tool": "lookup_order", "needle": '"order_id":"A-1003"'}],
        "tool_results_contain": [
            {"tool": "lookup_order", "needle": "order A-1003: delivered (notebook)"},
            # Not what the user's tool returns: this check must fail.
            {"tool": "lookup_order", "needle": "shipped"},
        ],
    },
)


@pytest.mark.parametrize("spec", FRAMEWORK_SPECS)
def test_user_tool_dispatch_is_recorded_and_graded(
    support: Path, tmp_path: Path, spec: str
) -> None:
    report = run_here(write_suite(tmp_path / "suite", {"l.json": LOOKUP}), spec)
    (case,) = report.cases
    assert case.error is None, case.error
    assert calls_of(case) == [
        ("lookup_order", '{"order_id":"A-1003"}', "order A-1003: delivered (notebook)", True)
    ]
    assert grades(case) == {
        "exact_tool_calls(1)": True,
        "all_tools_succeeded(true)": True,
        'tool_arguments_contain("lookup_order", "\\"order_id\\":\\"A-1003\\"")': True,
        'tool_results_contain("lookup_order", "order A-1003: delivered (notebook)")': True,
        'tool_results_contain("lookup_order", "shipped")': False,
    }
    assert case.record is not None and case.record.calls[0].duration_ms >= 0


REFUSED_REFUND = fixture(
    "refund-refused",
    [
        turn(
            "Refund A-1002",
            tool_step(call("c1", "refund_order", order_id="A-1002", reason="changed my mind")),
            text_step("A-1002 cannot be refunded yet."),
        )
    ],
    {"exact_tool_calls": 1, "all_tools_succeeded": False},
)


def refused_refund(spec: str, tmp_path: Path) -> tuple[Recording, CaseReport]:
    """REFUSED_REFUND replayed through the user's agent of `spec`, its requests recorded."""
    adapter = Recording(resolve_agent(spec))
    suite = write_suite(tmp_path / "suite", {"r.json": REFUSED_REFUND})
    (case,) = run_cases(
        load_suite(suite, "replay", agent_surface(adapter)), adapter, suite="s"
    ).cases
    return adapter, case


def test_sdk_user_tool_that_raises_is_recorded_as_a_failure_and_the_run_goes_on(
    support: Path, tmp_path: Path
) -> None:
    adapter, case = refused_refund(SDK_SPEC, tmp_path)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    # The SDK's default failure handler hides the exception from the model.
    message = "An error occurred while running the tool. Please try again."
    assert calls_of(case) == [
        ("refund_order", '{"order_id":"A-1002","reason":"changed my mind"}', message, False)
    ]
    assert adapter.requests[1].messages[-1] == Message(
        role="tool", content=message, tool_call_id="c1"
    )


def test_pydantic_ai_user_tool_raising_model_retry_is_a_failure_sent_back_to_the_model(
    support: Path, tmp_path: Path
) -> None:
    adapter, case = refused_refund(PAI_SPEC, tmp_path)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    refusal = "order A-1002 is processing and cannot be refunded"
    assert calls_of(case) == [
        (
            "refund_order",
            '{"order_id":"A-1002","reason":"changed my mind"}',
            f"ModelRetry: {refusal}",
            False,
        )
    ]
    retry = adapter.requests[1].messages[-1]
    assert (retry.role, retry.tool_call_id) == ("tool", "c1")
    assert refusal in retry.content


RAISING_AGENTS = """
from agents import Agent, function_tool
from pydantic_ai import Agent as PydanticAgent


def _check(order_id):
    raise ValueError(f"no such order {order_id}")


@function_tool
def default_handler(order_id: str) -> str:
    \"\"\"Raises; the SDK's default failure handler answers the model.\"\"\"
    return _check(order_id)


@function_tool(failure_error_function=lambda ctx, error: f"sorry: {error}")
def custom_handler(order_id: str) -> str:
    \"\"\"Raises; a custom failure handler answers the model.\"\"\"
    return _check(order_id)


@function_tool(failure_error_function=None)
def no_handler(order_id: str) -> str:
    \"\"\"Raises; no failure handler, so the exception ends the run.\"\"\"
    return _check(order_id)


def sdk_agent():
    return Agent(name="raising", tools=[default_handler, custom_handler, no_handler])


def pydantic_agent():
    agent = PydanticAgent(name="raising")

    @agent.tool_plain
    def plain_raise(order_id: str) -> str:
        \"\"\"Raises a plain exception.\"\"\"
        return _check(order_id)

    return agent
"""


def _raising_case(tool: str) -> dict[str, Any]:
    return fixture(
        f"raising-{tool}",
        [
            turn(
                "Look up Z-1",
                tool_step(call("c1", tool, order_id="Z-1")),
                text_step("There is no order Z-1."),
            )
        ],
        {"exact_tool_calls": 1},
    )


@pytest.fixture
def raising(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = write_module(tmp_path, RAISING_AGENTS, prefix="raising_agents")
    yield name
    sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("tool", "result", "success", "error"),
    [
        (
            "default_handler",
            "An error occurred while running the tool. Please try again.",
            False,
            None,
        ),
        # A custom failure_error_function's text is an ordinary result: recorded as success.
        ("custom_handler", "sorry: no such order Z-1", True, None),
        (
            "no_handler",
            "ValueError: no such order Z-1",
            False,
            "UserError: Error running tool no_handler: no such order Z-1",
        ),
    ],
)
def test_sdk_user_tool_failure_handlers(
    raising: str, tool: str, result: str, success: bool, error: str | None
) -> None:
    adapter = resolve_agent(f"openai-agents:{raising}:sdk_agent")
    (case,) = run_cases([_case(_raising_case(tool), adapter)], adapter, suite="s").cases
    assert case.error == error
    assert calls_of(case) == [(tool, '{"order_id":"Z-1"}', result, success)]


def test_pydantic_ai_user_tool_raising_a_plain_exception_ends_the_run(raising: str) -> None:
    adapter = resolve_agent(f"pydantic-ai:{raising}:pydantic_agent")
    (case,) = run_cases([_case(_raising_case("plain_raise"), adapter)], adapter, suite="s").cases
    # pydantic-ai does not catch a tool's exception: it ends the run (a run error), and the
    # dispatch is still recorded, as a failure.
    assert case.error == "ValueError: no such order Z-1"
    assert calls_of(case) == [
        ("plain_raise", '{"order_id":"Z-1"}', "ValueError: no such order Z-1", False)
    ]


# --- admission checks the agent's real tool list -----------------------------------------------

CANCEL = fixture(
    "cancel-order",
    [
        turn(
            "Cancel A-1002",
            tool_step(call("c1", "cancel_order", order_id="A-1002")),
            text_step("Cancelled."),
        )
    ],
    {"exact_tool_calls": 1},
)


@pytest.mark.parametrize("spec", FRAMEWORK_SPECS)
def test_a_tool_the_user_agent_lacks_is_refused_at_admission(
    support: Path, tmp_path: Path, spec: str
) -> None:
    suite = write_suite(tmp_path / "suite", {"cancel.json": CANCEL})
    with pytest.raises(AdmissionError) as caught:
        run_here(suite, spec)
    assert [(p.field, p.message) for p in caught.value.problems] == [
        (
            "$.turns[0].steps[0].response.tool_calls[0].name",
            f"tool 'cancel_order' is not registered by agent '{spec}' "
            "(its tools: lookup_order, refund_order)",
        )
    ]


@pytest.mark.parametrize("spec", FRAMEWORK_SPECS)
def test_a_builtin_tool_is_refused_for_a_user_agent_without_it(
    support: Path, tmp_path: Path, spec: str
) -> None:
    data = fixture(
        "echo-on-support",
        [turn("Echo hi", tool_step(call("c1", "echo", message="hi")), text_step("hi"))],
        {"exact_tool_calls": 1},
    )
    with pytest.raises(AdmissionError) as caught:
        run_here(write_suite(tmp_path / "suite", {"e.json": data}), spec)
    (problem,) = caught.value.problems
    assert problem.message.startswith(f"tool 'echo' is not registered by agent '{spec}'")


@pytest.mark.parametrize("spec", ["openai-agents", "pydantic-ai", "loop:factory"])
def test_a_user_tool_is_refused_for_an_agent_with_only_the_builtin_tools(
    own_loop: Path, tmp_path: Path, spec: str
) -> None:
    suite = write_suite(tmp_path / "suite", {"cancel.json": CANCEL})
    with pytest.raises(AdmissionError) as caught:
        run_here(suite, spec)
    tools = ", ".join(sorted(BUILTIN_TOOL_NAMES))
    assert [p.message for p in caught.value.problems] == [
        f"tool 'cancel_order' is not registered by agent '{spec}' (its tools: {tools})"
    ]


def test_refusal_through_the_cli_names_the_tool_and_lists_the_agents_tools(
    run_cli: Cli,
    tmp_path: Path,
) -> None:
    write_suite(tmp_path / "evals", {"cancel.json": CANCEL})
    for command in ("run", "check"):
        result = run_cli(
            "eval", command, "--suite", tmp_path / "evals", "--agent", SDK_SPEC, cwd=SUPPORT
        )
        assert result.returncode == 1, result.stderr
        assert (
            f"tool 'cancel_order' is not registered by agent '{SDK_SPEC}' "
            "(its tools: lookup_order, refund_order)"
        ) in result.stderr
        assert "nothing was run" in result.stderr


# --- `framework:module:factory` errors ---------------------------------------------------------

BAD_FACTORIES = """
def returns_a_number():
    return 42


def raises():
    raise RuntimeError("cannot build the agent: no settings")
"""


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "openai-agents:no_such_module_zc:build_agent",
            "agent 'openai-agents:no_such_module_zc:build_agent': cannot import "
            "no_such_module_zc: No module named 'no_such_module_zc'",
        ),
        (
            "pydantic-ai:no_such_module_zc:build_agent",
            "agent 'pydantic-ai:no_such_module_zc:build_agent': cannot import "
            "no_such_module_zc: No module named 'no_such_module_zc'",
        ),
        (
            "openai-agents:{module}:missing",
            "agent 'openai-agents:{module}:missing': module {module} has no 'missing'",
        ),
        (
            "openai-agents:{module}:returns_a_number",
            "agent 'openai-agents:{module}:returns_a_number': TypeError: the factory returned "
            "int, not an agents.Agent",
        ),
        (
            "pydantic-ai:{module}:returns_a_number",
            "agent 'pydantic-ai:{module}:returns_a_number': TypeError: the factory returned "
            "int, not a pydantic_ai.Agent",
        ),
        (
            "pydantic-ai:{module}:raises",
            "agent 'pydantic-ai:{module}:raises': RuntimeError: cannot build the agent: "
            "no settings",
        ),
    ],
)
def test_bad_framework_factory_is_a_clear_error_through_the_cli(
    run_cli: Cli, tmp_path: Path, spec: str, message: str
) -> None:
    module = write_module(tmp_path, BAD_FACTORIES, prefix="bad_factories")
    spec, message = spec.format(module=module), message.format(module=module)
    write_suite(tmp_path / "evals", {"echo.json": LOOKUP})
    for command in ("run", "check"):
        result = run_cli("eval", command, "--suite", "evals", "--agent", spec, cwd=tmp_path)
        assert result.returncode == 1, (result.stdout, result.stderr)
        assert result.stderr == f"zeroclaw eval: {message}\n"
        assert "Traceback" not in result.stderr


def test_bad_framework_factory_is_an_agent_error_from_resolve_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    module = write_module(tmp_path, BAD_FACTORIES, prefix="bad_factories")
    try:
        with pytest.raises(AgentError, match=r"the factory returned int, not an agents\.Agent"):
            resolve_agent(f"openai-agents:{module}:returns_a_number")
    finally:
        sys.modules.pop(module, None)


# --- what is kept of the user's agent ----------------------------------------------------------


@pytest.mark.parametrize("spec", FRAMEWORK_SPECS)
def test_the_users_instructions_and_tools_reach_the_model(support: Path, spec: str) -> None:
    from support_orders import INSTRUCTIONS

    data = fixture(
        "instructions",
        [
            turn(
                "Where is A-1001?",
                tool_step(call("c1", "lookup_order", order_id="A-1001")),
                text_step("Shipped."),
            ),
            turn("Thanks", text_step("You're welcome.")),
        ],
        {"exact_tool_calls": 1},
    )
    adapter = Recording(resolve_agent(spec))
    (case,) = run_cases([_case(data, adapter)], adapter, suite="s").cases
    assert case.passed, (case.error, failing(case))
    assert len(adapter.requests) == 3
    for request in adapter.requests:
        # Every request, in every turn, starts with the user's instructions as the system
        # message, and offers the user's own tools (with their docstrings), nothing else.
        assert request.messages[0] == Message(role="system", content=INSTRUCTIONS)
        assert sorted(t.name for t in request.tools) == ["lookup_order", "refund_order"]
        lookup = next(t for t in request.tools if t.name == "lookup_order")
        assert lookup.description.startswith("Look up an order's status.")
        assert "order_id" in lookup.parameters["properties"]
    assert adapter.requests[0].messages[1] == Message(role="user", content="Where is A-1001?")
    assert adapter.requests[2].messages[-1] == Message(role="user", content="Thanks")


@pytest.mark.parametrize("spec", FRAMEWORK_SPECS)
def test_each_case_gets_a_freshly_built_user_agent(
    support: Path, monkeypatch: pytest.MonkeyPatch, spec: str
) -> None:
    module = importlib.import_module(spec.split(":")[1])
    built: list[object] = []
    original = module.build_agent

    def counting() -> Any:
        built.append(original())
        return built[-1]

    monkeypatch.setattr(module, "build_agent", counting)
    adapter = resolve_agent(spec)
    assert len(built) == 1  # once at resolution, for the tool names admission checks
    cases = [_case({**LOOKUP, "model_name": f"fresh-{i}"}, adapter) for i in range(2)]
    report = run_cases(cases, adapter, suite="s")
    assert [c.error for c in report.cases] == [None, None]
    assert len(built) == 3
    assert len({id(agent) for agent in built}) == 3


def _case(data: dict[str, Any], adapter: Any) -> Case:
    """A case admitted against `adapter`'s own tool list."""
    text = json.dumps(data)
    trace = parse_fixture(text, f"{data['model_name']}.json")
    assert check_trace(trace, "case.json", "replay", agent_surface(adapter)) == []
    return Case(trace, Path(f"{data['model_name']}.json"), text)


class _Turns:
    """A session whose class defines `run_turn`."""

    def run_turn(self, user_input: str) -> str:
        return user_input


class _Sometimes:
    """A session only when built with a `run_turn` of its own (set on the instance)."""

    def __init__(self, answers: bool) -> None:
        if answers:
            self.run_turn = lambda user_input: user_input


def test_a_session_is_told_by_its_class_only_when_the_class_defines_run_turn() -> None:
    from harness.agents.protocol import AgentContext, LoopAdapter
    from harness.model_boundary import ModelBoundary, ModelRequest, ModelStep
    from harness.tool_registry import ToolRegistry

    class Silent:
        async def respond(self, request: ModelRequest) -> ModelStep:
            raise AssertionError("no model is asked")

    context = AgentContext("c", ModelBoundary(Silent()), ToolRegistry())
    built = iter([_Turns(), _Turns(), _Sometimes(True), _Sometimes(False), 7])
    adapter = LoopAdapter("loop:factory", lambda _context: next(built))
    assert isinstance(adapter.start(context), _Turns)
    assert isinstance(adapter.start(context), _Turns)  # its class known now: still one
    assert isinstance(adapter.start(context), _Sometimes)
    # An instance of a class seen before as a session, with no run_turn of its own.
    for refused in ("_Sometimes", "int"):
        with pytest.raises(TypeError, match=f"returned {refused}, which has no run_turn"):
            adapter.start(context)
