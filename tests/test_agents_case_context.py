"""`harness.agents.case_context`: each case's run context (SDK) or deps (pydantic-ai) built
fresh from its `setup.context`, by the `context` setting's function or by default; tools
that read it run unmodified; `context_json` grades it after the last turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, call, fixture, text_step, tool_step, turn, write_module, write_suite

pytest.importorskip("agents", reason="the openai-agents extra is not installed")
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

# An airline agent as the SDK's customer-service example writes one: a pydantic context
# its tools read and write through RunContextWrapper.context.
SDK_AIRLINE = """\
from __future__ import annotations

from dataclasses import dataclass, field

from agents import Agent, RunContextWrapper, function_tool
from pydantic import BaseModel


class AirlineAgentContext(BaseModel):
    passenger_name: str | None = None
    confirmation_number: str | None = None
    seat_number: str | None = None
    flights: dict[str, str] = {}


@function_tool
async def update_seat(
    context: RunContextWrapper[AirlineAgentContext], confirmation_number: str, new_seat: str
) -> str:
    \"\"\"Update the seat for a given confirmation number.\"\"\"
    context.context.confirmation_number = confirmation_number
    context.context.seat_number = new_seat
    return f"Updated seat to {new_seat} for confirmation number {confirmation_number}"


@function_tool
def flight_of(context: RunContextWrapper[AirlineAgentContext], confirmation_number: str) -> str:
    \"\"\"The flight booked under a confirmation number.\"\"\"
    return context.context.flights.get(confirmation_number, "no such booking")


def build_agent() -> Agent[AirlineAgentContext]:
    return Agent[AirlineAgentContext](
        name="seat_booking_agent",
        instructions="Help the passenger change their seat.",
        tools=[update_seat, flight_of],
    )


def make_context(data: dict) -> AirlineAgentContext:
    return AirlineAgentContext(**data)


async def make_context_async(data: dict) -> AirlineAgentContext:
    return AirlineAgentContext(**data)


def broken_context(data: dict) -> AirlineAgentContext:
    raise ValueError(f"no passenger {data.get('passenger_name')!r} in the test database")


class Handle:
    pass


@dataclass
class WithHandle:
    seat_number: str | None = None
    db: Handle = field(default_factory=Handle)


def context_with_handle(data: dict) -> WithHandle:
    return WithHandle()


@function_tool
def note_seat(context: RunContextWrapper[dict], new_seat: str) -> str:
    \"\"\"Write the seat into a plain dict context.\"\"\"
    context.context["seat_number"] = new_seat
    return "noted " + context.context["passenger_name"]


def build_dict_agent() -> Agent:
    return Agent(name="notes", instructions="Note seats.", tools=[note_seat])
"""

PAI_SUPPORT = """\
from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai import Agent, RunContext


@dataclass
class SupportDependencies:
    customer_id: int
    balances: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def build_agent() -> Agent[SupportDependencies, str]:
    agent = Agent(
        deps_type=SupportDependencies,
        instructions="You are a support agent in our bank.",
        name="support_agent",
    )

    @agent.tool
    async def customer_balance(ctx: RunContext[SupportDependencies], include_pending: bool) -> str:
        \"\"\"Returns the customer's current account balance.\"\"\"
        ctx.deps.notes.append(f"balance asked by {ctx.deps.customer_id}")
        return f"{ctx.deps.balances.get('current', 0.0):.2f}"

    return agent


def make_deps(data: dict) -> SupportDependencies:
    return SupportDependencies(customer_id=data["customer_id"] * 10, balances={"current": 7.5})
"""

SDK = "openai-agents:{module}:build_agent"
PAI = "pydantic-ai:{module}:build_agent"


def seat_case(**extra: Any) -> dict[str, Any]:
    """Passenger asks for seat 12A; the tool writes it into the context."""
    return fixture(
        "change-seat",
        [
            turn(
                "Move me to 12A, booking ABC123.",
                tool_step(call("c1", "update_seat", confirmation_number="ABC123", new_seat="12A")),
                text_step("Done: you are in 12A."),
            )
        ],
        {
            "tools_used": ["update_seat"],
            "context_json": {"/seat_number": "12A", "/confirmation_number": "ABC123"},
        },
        **extra,
    )


def project(tmp_path: Path, source: str, cases: dict[str, Any]) -> str:
    module = write_module(tmp_path, source, prefix="ctx_agent")
    write_suite(tmp_path / "evals", cases)
    return module


def run(run_cli: Cli, root: Path, agent: str, *flags: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent, "--json-report", "r.json",
        *flags, cwd=root,
    )  # fmt: skip
    report = json.loads((root / "r.json").read_text(encoding="utf-8"))
    return result.returncode, {c["id"]: c for c in report["cases"]}, result.stderr


def checks(case: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    return {g["check"]: (g["passed"], g["detail"]) for g in case["grades"]}


# --- the SDK: RunContextWrapper.context -------------------------------------------------------


@pytest.mark.parametrize("builder", ["make_context", "make_context_async"])
def test_an_sdk_tool_writes_the_context_the_builder_made_and_context_json_reads_it(
    run_cli: Cli, tmp_path: Path, builder: str
) -> None:
    data = seat_case(setup={"context": {"passenger_name": "Ada", "flights": {"ABC123": "FLT-1"}}})
    module = project(tmp_path, SDK_AIRLINE, {"seat.json": data})
    code, cases, _ = run(
        run_cli, tmp_path, SDK.format(module=module), "--context", f"{module}:{builder}"
    )
    case = cases["change-seat"]
    assert code == 0, json.dumps(case, indent=2)
    assert checks(case)['context_json("/seat_number")'] == (True, 'got "12A"')
    # The whole context, as JSON, in the JSON report's record.
    assert case["record"]["context"] == {
        "passenger_name": "Ada",
        "confirmation_number": "ABC123",
        "seat_number": "12A",
        "flights": {"ABC123": "FLT-1"},
    }


def test_context_json_fails_naming_the_pointer_when_the_tool_no_longer_writes_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    source = SDK_AIRLINE.replace("    context.context.seat_number = new_seat\n", "")
    module = project(tmp_path, source, {"seat.json": seat_case()})
    code, cases, _ = run(
        run_cli, tmp_path, SDK.format(module=module), "--context", f"{module}:make_context"
    )
    assert code == 1
    case = cases["change-seat"]
    assert checks(case)['context_json("/seat_number")'] == (False, 'got null; expected "12A"')
    assert checks(case)['context_json("/confirmation_number")'] == (True, 'got "ABC123"')
    failing = [g for g in case["grades"] if not g["passed"]]
    assert [(g["field"], g["category"]) for g in failing] == [
        ('$.expects.context_json["/seat_number"]', "side_effect")
    ]


def test_without_a_builder_the_sdk_context_is_the_cases_setup_context_as_a_dict(
    run_cli: Cli, tmp_path: Path
) -> None:
    data = fixture(
        "note-seat",
        [
            turn(
                "Seat 3C please.",
                tool_step(call("c1", "note_seat", new_seat="3C")),
                text_step("Noted."),
            )
        ],
        {
            "tool_results_contain": [{"tool": "note_seat", "needle": "noted Grace"}],
            "context_json": {"/seat_number": "3C", "/passenger_name": "Grace"},
        },
        setup={"context": {"passenger_name": "Grace"}},
    )
    module = project(tmp_path, SDK_AIRLINE, {"note.json": data})
    code, cases, _ = run(run_cli, tmp_path, f"openai-agents:{module}:build_dict_agent")
    assert code == 0, json.dumps(cases, indent=2)
    assert cases["note-seat"]["record"]["context"] == {
        "passenger_name": "Grace",
        "seat_number": "3C",
    }


def test_each_case_gets_a_fresh_context(run_cli: Cli, tmp_path: Path) -> None:
    # Two cases of one run: the first's write must not be what the second reads.
    second = seat_case(id="second", setup={"context": {"passenger_name": "Bob"}})
    second["turns"][0]["steps"] = [
        tool_step(call("c1", "flight_of", confirmation_number="ABC123")),
        text_step("No booking."),
    ]
    second["expects"] = {
        "tool_results_contain": [{"tool": "flight_of", "needle": "no such booking"}],
        "context_json": {"/seat_number": None, "/passenger_name": "Bob"},
    }
    module = project(tmp_path, SDK_AIRLINE, {"a.json": seat_case(), "b.json": second})
    code, cases, _ = run(
        run_cli, tmp_path, SDK.format(module=module), "--context", f"{module}:make_context"
    )
    assert code == 0, json.dumps(cases, indent=2)


def test_a_builder_that_raises_is_the_cases_run_error_naming_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    data = seat_case(setup={"context": {"passenger_name": "Eve"}})
    module = project(tmp_path, SDK_AIRLINE, {"seat.json": data})
    code, cases, stderr = run(
        run_cli, tmp_path, SDK.format(module=module), "--context", f"{module}:broken_context"
    )
    assert code == 1
    case = cases["change-seat"]
    assert case["error"] == (
        f"the context builder '{module}:broken_context' failed: ValueError: no passenger "
        "'Eve' in the test database"
    )
    assert case["traceback"] is None
    assert [f["function"] for f in case["error_frames"]] == ["broken_context"]
    assert "Traceback" not in stderr


def test_a_context_that_is_not_json_fails_context_json_saying_why(
    run_cli: Cli, tmp_path: Path
) -> None:
    module = project(tmp_path, SDK_AIRLINE, {"seat.json": seat_case()})
    code, cases, _ = run(
        run_cli, tmp_path, SDK.format(module=module), "--context", f"{module}:context_with_handle"
    )
    assert code == 1
    case = cases["change-seat"]
    why = "the context (WithHandle) cannot be rendered as JSON: Handle is not JSON data"
    assert checks(case)['context_json("/seat_number")'] == (False, why)
    assert case["record"]["context"] is None
    assert case["record"]["context_error"] == why


def test_context_json_without_any_context_says_there_was_none(run_cli: Cli, tmp_path: Path) -> None:
    module = project(tmp_path, SDK_AIRLINE, {"seat.json": seat_case()})
    # No builder and no setup.context: the SDK runs with None, which the tool cannot write.
    code, cases, _ = run(run_cli, tmp_path, SDK.format(module=module))
    assert code == 1
    case = cases["change-seat"]
    assert checks(case)['context_json("/seat_number")'] == (
        False,
        "the run had no context (give the case setup.context, or set the context setting; "
        "an own loop sets context.run_context)",
    )
    # The SDK's default failure handler told the model; the call is recorded as failed.
    assert [c["success"] for c in case["record"]["calls"]] == [False]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "{module}:no_such_builder",
            "context '{module}:no_such_builder': module {module} has no 'no_such_builder'",
        ),
        ("{module}", "context '{module}': expected 'module:function'"),
        (
            "zc_no_module_4711:f",
            "context 'zc_no_module_4711:f': cannot import zc_no_module_4711: "
            "No module named 'zc_no_module_4711'",
        ),
    ],
)
def test_a_context_setting_that_cannot_be_used_is_refused_before_anything_runs(
    run_cli: Cli, tmp_path: Path, setting: str, message: str
) -> None:
    module = project(tmp_path, SDK_AIRLINE, {"seat.json": seat_case()})
    result = run_cli(
        "eval", "run", "--suite", "evals", "--agent", SDK.format(module=module),
        "--context", setting.format(module=module), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr == f"zeroclaw eval: {message.format(module=module)}\n"


def test_the_context_setting_comes_from_the_configuration(run_cli: Cli, tmp_path: Path) -> None:
    module = project(tmp_path, SDK_AIRLINE, {"seat.json": seat_case()})
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.zeroclaw.eval]\nagent = "{SDK.format(module=module)}"\n'
        f'context = "{module}:make_context"\nsuite_dir = "evals"\n',
        encoding="utf-8",
    )
    result = run_cli("eval", "run", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# --- pydantic-ai: ctx.deps ------------------------------------------------------------------


def balance_case(**extra: Any) -> dict[str, Any]:
    return fixture(
        "balance",
        [
            turn(
                "What is my balance?",
                tool_step(call("c1", "customer_balance", include_pending=True)),
                text_step("Your balance is 123.45."),
            )
        ],
        {
            "tool_results_contain": [{"tool": "customer_balance", "needle": "123.45"}],
            "context_json": {"/notes/0": "balance asked by 42", "/customer_id": 42},
        },
        **extra,
    )


def test_pydantic_ai_deps_are_the_setup_context_validated_into_deps_type(
    run_cli: Cli, tmp_path: Path
) -> None:
    data = balance_case(setup={"context": {"customer_id": 42, "balances": {"current": 123.45}}})
    module = project(tmp_path, PAI_SUPPORT, {"balance.json": data})
    code, cases, _ = run(run_cli, tmp_path, PAI.format(module=module))
    case = cases["balance"]
    assert code == 0, json.dumps(case, indent=2)
    assert case["record"]["context"] == {
        "customer_id": 42,
        "balances": {"current": 123.45},
        "notes": ["balance asked by 42"],
    }


def test_pydantic_ai_deps_from_the_builder(run_cli: Cli, tmp_path: Path) -> None:
    data = balance_case(setup={"context": {"customer_id": 42}})
    data["expects"] = {
        "tool_results_contain": [{"tool": "customer_balance", "needle": "7.50"}],
        "context_json": {"/customer_id": 420},
    }
    module = project(tmp_path, PAI_SUPPORT, {"balance.json": data})
    code, cases, _ = run(
        run_cli, tmp_path, PAI.format(module=module), "--context", f"{module}:make_deps"
    )
    assert code == 0, json.dumps(cases, indent=2)


def test_a_setup_context_that_does_not_fit_deps_type_is_a_run_error_naming_the_field(
    run_cli: Cli, tmp_path: Path
) -> None:
    data = balance_case(setup={"context": {"customer_id": "forty-two"}})
    module = project(tmp_path, PAI_SUPPORT, {"balance.json": data})
    code, cases, stderr = run(run_cli, tmp_path, PAI.format(module=module))
    assert code == 1
    assert cases["balance"]["error"] == (
        "setup.context does not fit the agent's deps_type SupportDependencies: "
        "$.setup.context.customer_id: Input should be a valid integer, unable to parse "
        "string as an integer"
    )
    assert "Traceback" not in stderr


# --- admission ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ({"context": [1, 2]}, "$.setup.context: Expected `object | null`, got `array`"),
        ({"context": "seat 12A"}, "$.setup.context: Expected `object | null`, got `str`"),
        ({"contxt": {}}, "$.setup.contxt: unknown key (did you mean context?)"),
    ],
)
def test_a_setup_context_that_is_not_an_object_is_refused_naming_file_and_field(
    run_cli: Cli, tmp_path: Path, setup: dict[str, Any], message: str
) -> None:
    write_suite(tmp_path / "evals", {"seat.json": seat_case(setup=setup)})
    result = run_cli("eval", "check", "--suite", "evals", cwd=tmp_path)
    assert result.returncode == 1
    assert f"seat.json: {message}" in result.stdout + result.stderr


def test_a_context_json_pointer_that_is_no_pointer_is_refused(run_cli: Cli, tmp_path: Path) -> None:
    data = seat_case()
    data["expects"]["context_json"] = {"seat_number": "12A"}
    write_suite(tmp_path / "evals", {"seat.json": data})
    result = run_cli("eval", "check", "--suite", "evals", cwd=tmp_path)
    assert result.returncode == 1
    assert (
        "seat.json: $.expects.context_json.seat_number: JSON pointer 'seat_number' must be "
        '"" (the whole context) or start with "/" (RFC 6901)'
    ) in result.stdout + result.stderr


# --- an own loop, and worker processes ----------------------------------------------------

OWN_LOOP = """\
from harness import Message, ModelRequest


class Loop:
    def __init__(self, context):
        self.context = context
        # What the context setting built, else None; the fixture's data either way.
        self.state = context.run_context if context.run_context is not None else {}
        self.state.setdefault("greeted", context.setup_context["name"])
        context.run_context = self.state  # what context_json reads after the last turn

    async def run_turn(self, user_input):
        step = await self.context.model.respond(
            ModelRequest(messages=(Message(role="user", content=user_input),))
        )
        self.state["turns"] = self.state.get("turns", 0) + 1
        return step.text


def factory(context):
    return Loop(context)


def counter(data):
    return {"started_by": "builder", **data}
"""


def greeting(case_id: str = "greet", **expects: Any) -> dict[str, Any]:
    return fixture(
        case_id,
        [turn("Hi", text_step("Hello Ada"))],
        {"response_contains": ["Ada"], "context_json": {"/greeted": "Ada", "/turns": 1, **expects}},
        id=case_id,
        setup={"context": {"name": "Ada"}},
    )


def test_an_own_loop_exposes_its_context_through_run_context(run_cli: Cli, tmp_path: Path) -> None:
    module = project(tmp_path, OWN_LOOP, {"greet.json": greeting()})
    code, cases, _ = run(run_cli, tmp_path, f"{module}:factory")
    assert code == 0, json.dumps(cases, indent=2)
    assert cases["greet"]["record"]["context"] == {"greeted": "Ada", "turns": 1}


def test_an_own_loop_gets_what_the_builder_made(run_cli: Cli, tmp_path: Path) -> None:
    module = project(tmp_path, OWN_LOOP, {"greet.json": greeting(**{"/started_by": "builder"})})
    code, cases, _ = run(run_cli, tmp_path, f"{module}:factory", "--context", f"{module}:counter")
    assert code == 0, json.dumps(cases, indent=2)
    code, cases, _ = run(run_cli, tmp_path, f"{module}:factory")
    assert checks(cases["greet"])['context_json("/started_by")'] == (False, "pointer not present")


def test_worker_processes_build_each_case_its_context(run_cli: Cli, tmp_path: Path) -> None:
    suite = {f"s{i}.json": seat_case(id=f"seat-{i}") for i in range(4)}
    module = project(tmp_path, SDK_AIRLINE, suite)
    code, cases, _ = run(
        run_cli,
        tmp_path,
        SDK.format(module=module),
        "--context",
        f"{module}:make_context",
        "--jobs",
        "2",
    )
    assert code == 0, json.dumps(cases, indent=2)
    assert {c["record"]["context"]["seat_number"] for c in cases.values()} == {"12A"}
