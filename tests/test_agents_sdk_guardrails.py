"""OpenAI Agents SDK guardrails run for real in replay: a tripwire is recorded (name, kind,
agent, turn) and ends the turn as the SDK ends it, `guardrails_tripped` grades it, and a
tripwire the case does not name is a failed check naming the guardrail. The agents are
written the way the SDK's guardrail docs write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _openai_server import OpenAIServer, text_reply
from conftest import (
    LIVE_KEY,
    Cli,
    Runs,
    call,
    fixture,
    live_case,
    make_project,
    report_of,
    text_step,
    tool_step,
    turn,
    write_module,
    write_suite,
)

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

SOURCE = '''
from agents import (
    Agent,
    GuardrailFunctionOutput,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    TResponseInputItem,
    function_tool,
    input_guardrail,
    output_guardrail,
    tool_input_guardrail,
    tool_output_guardrail,
)

TRIP = True  # a test switches it off: the guardrail that no longer trips
PASSWORDS = True  # likewise for the blocking guardrail


def said(input: str | list[TResponseInputItem]) -> str:
    return input if isinstance(input, str) else str(input[-1].get("content", ""))


@input_guardrail
async def math_homework(
    ctx: RunContextWrapper[None], agent: Agent, input: str | list[TResponseInputItem]
) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(
        output_info={"homework": "homework" in said(input)},
        tripwire_triggered=TRIP and "homework" in said(input),
    )


@input_guardrail(run_in_parallel=False)
def no_passwords(
    ctx: RunContextWrapper[None], agent: Agent, input: str | list[TResponseInputItem]
) -> GuardrailFunctionOutput:
    stop = PASSWORDS and "password" in said(input)
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=stop)


@output_guardrail
async def no_refund_promises(
    ctx: RunContextWrapper[None], agent: Agent, output: str
) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered="refund" in output)


@tool_input_guardrail
def no_internal_orders(data) -> ToolGuardrailFunctionOutput:
    if "INTERNAL" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("Internal orders cannot be looked up.")
    return ToolGuardrailFunctionOutput.allow()


@tool_output_guardrail
def no_card_numbers(data) -> ToolGuardrailFunctionOutput:
    if "4111" in str(data.output):
        return ToolGuardrailFunctionOutput.raise_exception(output_info="a card number")
    return ToolGuardrailFunctionOutput.allow()


ORDERS = {"A-1": "shipped", "A-2": "paid with card 4111 1111 1111 1111"}


@function_tool(tool_input_guardrails=[no_internal_orders], tool_output_guardrails=[no_card_numbers])
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return ORDERS.get(order_id, "not found")


billing = Agent(
    name="billing_agent",
    instructions="You handle billing.",
    output_guardrails=[no_refund_promises],
)


def build_agent() -> Agent:
    return Agent(
        name="support_agent",
        instructions="You are the support agent.",
        tools=[lookup_order],
        handoffs=[billing],
        input_guardrails=[math_homework, no_passwords],
    )


def without_homework_guardrail() -> Agent:
    agent = build_agent()
    agent.input_guardrails = [no_passwords]
    return agent


def neutered() -> Agent:
    global TRIP
    TRIP = False
    return build_agent()


def lets_passwords_through() -> Agent:
    global PASSWORDS
    PASSWORDS = False
    return build_agent()
'''


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    return tmp_path, write_module(tmp_path, SOURCE, "guarded")


def run(
    run_cli: Cli, project: tuple[Path, str], data: dict[str, Any], factory: str = "build_agent"
) -> tuple[Any, dict[str, Any] | None]:
    root, module = project
    write_suite(root / "evals", {"f.json": data})
    agent = f"openai-agents:{module}:{factory}"
    result = run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent, "--json-report", "r.json", cwd=root
    )
    report = root / "r.json"
    if not report.exists():
        return result, None
    (case,) = json.loads(report.read_text(encoding="utf-8"))["cases"]
    return result, case


def homework(expects: dict[str, Any]) -> dict[str, Any]:
    """A first turn the homework guardrail stops, then a turn that goes on."""
    return fixture(
        "homework",
        [
            turn("Do my math homework", text_step("x = 4")),
            turn(
                "Where is A-1?",
                tool_step(call("c1", "lookup_order", order_id="A-1")),
                text_step("A-1 has shipped."),
            ),
        ],
        expects,
    )


def tripped(case: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (g["name"], g["kind"], g["agent"], g["turn"], g.get("halted", False))
        for g in case["record"]["guardrails"]
        if g.get("tripped")
    ]


def test_an_expected_input_tripwire_passes_ends_its_turn_and_the_case_goes_on(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    expects = {"guardrails_tripped": ["math_homework"], "response_contains": ["shipped"]}
    result, case = run(run_cli, project, homework(expects))
    assert case is not None
    assert result.returncode == 0, json.dumps(case, indent=2)
    assert tripped(case) == [("math_homework", "input", "support_agent", 0, True)]
    # The stopped turn answers nothing; the model was never asked in it (the SDK cancels
    # the agent's run), and the next turn runs as usual.
    assert case["record"]["turn_responses"] == ["", "A-1 has shipped."]
    assert case["record"]["model_calls"] == 2
    passing = {(g["name"], g["turn"]) for g in case["record"]["guardrails"] if not g.get("tripped")}
    assert ("math_homework", 1) in passing and ("no_passwords", 0) in passing


def test_a_guardrail_that_no_longer_trips_fails_the_check_naming_it(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    expects = {"guardrails_tripped": ["math_homework"], "response_contains": ["shipped"]}
    result, case = run(run_cli, project, homework(expects), "neutered")
    assert case is not None and result.returncode == 1
    (failed,) = [g for g in case["grades"] if not g["passed"]]
    assert failed["check"] == 'guardrails_tripped(["math_homework"])'
    assert (
        failed["detail"] == 'guardrails_tripped: expected ["math_homework"], no guardrail tripped'
    )
    assert failed["category"] == "guardrail"


def test_a_guardrail_removed_from_the_agent_is_refused_naming_it(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    expects = {"guardrails_tripped": ["math_homework"], "response_contains": ["shipped"]}
    result, case = run(run_cli, project, homework(expects), "without_homework_guardrail")
    assert case is None and result.returncode != 0
    out = result.stdout + result.stderr
    assert "f.json: $.expects.guardrails_tripped[0]: 'math_homework' is not a guardrail of" in out
    assert "its guardrails: lookup_order" not in out
    assert "its guardrails: no_card_numbers, no_internal_orders, no_passwords" in out


def test_an_unknown_guardrail_name_is_refused_with_did_you_mean(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    # The handoff target's guardrail is the graph's too: admitted.
    expects = {"guardrails_tripped": ["math_homwork", "no_refund_promises"]}
    result, case = run(run_cli, project, homework(expects))
    assert case is None and result.returncode != 0
    out = result.stdout + result.stderr
    assert "$.expects.guardrails_tripped[0]: 'math_homwork' is not a guardrail of" in out
    assert "(did you mean math_homework?)" in out
    assert "guardrails_tripped[1]" not in out
    assert "Traceback" not in out


def test_an_unexpected_tripwire_is_a_failed_check_naming_it_not_a_run_error(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    data = homework({"response_contains": ["shipped"]})
    result, case = run(run_cli, project, data)
    assert case is not None and result.returncode == 1
    assert case["error"] is None
    (failed,) = [g for g in case["grades"] if not g["passed"]]
    assert failed["check"] == 'guardrail_tripped("math_homework")'
    assert failed["detail"].startswith(
        'unexpected tripwire: "math_homework" (input guardrail of agent "support_agent" '
        "in turn 0: ended the turn)"
    )


def test_an_unexpected_output_tripwire_after_a_handoff_names_the_agent(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    data = fixture(
        "refund",
        [
            turn(
                "I want my money back",
                tool_step(call("h1", "transfer_to_billing_agent")),
                text_step("I will refund you today."),
            )
        ],
        {"handoffs": ["billing_agent"], "guardrails_tripped": []},
    )
    result, case = run(run_cli, project, data)
    assert case is not None and result.returncode == 1
    (failed,) = [g for g in case["grades"] if not g["passed"]]
    assert failed["check"] == "guardrails_tripped([])"
    assert (
        '"no_refund_promises" (output guardrail of agent "billing_agent" in turn 0'
        in (failed["detail"])
    )
    assert case["record"]["turn_responses"] == [""]
    # Named, it passes: the output guardrail ran on the answer of the agent handed to.
    data["expects"]["guardrails_tripped"] = ["no_refund_promises"]
    result, case = run(run_cli, project, data)
    assert result.returncode == 0, json.dumps(case, indent=2)


def test_an_empty_list_alone_is_refused_as_vacuous(run_cli: Cli, project: tuple[Path, str]) -> None:
    data = fixture("none", [turn("Hello", text_step("Hi"))], {"guardrails_tripped": []})
    result, case = run(run_cli, project, data)
    assert case is None and result.returncode != 0
    assert "f.json: $.expects: every check passes against an empty run" in result.stderr


def test_a_blocking_input_guardrail_stops_the_turn_before_any_model_call(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    data = fixture(
        "password",
        [{"user_input": "Tell me the admin password", "steps": []}],
        {"guardrails_tripped": ["no_passwords"]},
    )
    result, case = run(run_cli, project, data)
    assert case is not None
    assert result.returncode == 0, json.dumps(case, indent=2)
    assert case["record"]["model_calls"] == 0
    assert tripped(case) == [("no_passwords", "input", "support_agent", 0, True)]


def test_a_blocking_guardrail_that_no_longer_trips_fails_naming_the_turn_it_was_to_stop(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    data = fixture(
        "password",
        [{"user_input": "Tell me the admin password", "steps": []}],
        {"guardrails_tripped": ["no_passwords"]},
    )
    result, case = run(run_cli, project, data, "lets_passwords_through")
    assert case is not None and result.returncode == 1
    assert case["error"] is not None
    assert (
        "turn 0 scripts no steps, for a guardrail to stop it before the model is asked "
        "(guardrails_tripped: 'no_passwords'), but the agent asked the model: no guardrail "
        "stopped the turn"
    ) in case["error"]


def test_an_empty_turn_is_still_refused_where_no_guardrail_is_expected_to_trip(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    data = fixture("empty", [{"user_input": "Hello", "steps": []}], {"response_contains": ["hi"]})
    result, case = run(run_cli, project, data)
    assert case is None and result.returncode != 0
    assert "$.turns[0].steps: no scripted steps" in result.stdout + result.stderr


def tools_case(expects: dict[str, Any]) -> dict[str, Any]:
    return fixture(
        "tool-guardrails",
        [
            turn(
                "Where is INTERNAL-9?",
                tool_step(call("c1", "lookup_order", order_id="INTERNAL-9")),
                text_step("I cannot look up internal orders."),
            ),
            turn(
                "Where is A-2?",
                tool_step(call("c2", "lookup_order", order_id="A-2")),
                text_step("A step the tripwire never lets the model reach."),
            ),
        ],
        expects,
    )


def test_tool_guardrails_reject_content_or_raise_as_the_sdk_does(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    expects = {
        "guardrails_tripped": ["no_internal_orders", "no_card_numbers"],
        "tools_used": ["lookup_order"],
        "exact_tool_calls": 1,
    }
    result, case = run(run_cli, project, tools_case(expects))
    assert case is not None
    assert result.returncode == 0, json.dumps(case, indent=2)
    record = case["record"]
    runs = [g for g in record["guardrails"] if g.get("tripped")]
    # Rejected: the call never ran, the model was told the guardrail's message, the turn
    # went on (replay conformance holds: the framework answered the call).
    assert runs[0]["behavior"] == "reject_content"
    assert (runs[0]["call_id"], runs[0]["tool"]) == ("c1", "lookup_order")
    assert runs[0]["message"] == "Internal orders cannot be looked up."
    assert not runs[0].get("halted")
    # Raised: the tool ran, its output tripped the wire, the turn ended there.
    assert (runs[1]["behavior"], runs[1]["call_id"], runs[1]["halted"]) == (
        "raise_exception",
        "c2",
        True,
    )
    assert [c["arguments"] for c in record["calls"]] == ['{"order_id":"A-2"}']
    assert record["turn_responses"] == ["I cannot look up internal orders.", ""]


def test_a_tool_guardrail_out_of_order_fails_the_ordered_list(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    expects = {"guardrails_tripped": ["no_card_numbers", "no_internal_orders"]}
    result, case = run(run_cli, project, tools_case(expects))
    assert case is not None and result.returncode == 1
    (failed,) = [g for g in case["grades"] if not g["passed"]]
    assert failed["detail"].startswith(
        'guardrails_tripped: expected ["no_card_numbers", "no_internal_orders"], the run '
        'tripped "no_internal_orders" (tool_input guardrail on tool "lookup_order" (call "c1")'
    )


def test_verbose_output_shows_each_tripwire(run_cli: Cli, project: tuple[Path, str]) -> None:
    root, module = project
    write_suite(root / "evals", {"f.json": homework({"response_contains": ["shipped"]})})
    agent = f"openai-agents:{module}:build_agent"
    result = run_cli("eval", "run", "--suite", "evals", "--agent", agent, "-v", cwd=root)
    assert result.returncode == 1
    assert (
        '  guardrail tripped: "math_homework" (input guardrail of agent "support_agent" in '
        "turn 0: ended the turn)"
    ) in result.stdout


def test_a_live_run_records_the_tripwire_and_its_recording_replays_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    # Two turns: a blocking guardrail stops the first before the provider is asked; the
    # provider answers the second.
    case = live_case(
        "password",
        "Tell me the admin password",
        "Where is A-1?",
        id="password",
        expects={"guardrails_tripped": ["no_passwords"], "response_contains": ["shipped"]},
    )
    with OpenAIServer(responder=lambda body: text_reply("A-1 has shipped."), api_key=LIVE_KEY) as s:
        root = make_project(tmp_path / "project", s.base_url, {"x.json": case})
        module = write_module(root, SOURCE, "guarded")
        agent = f"openai-agents:{module}:build_agent"
        runs = Runs(run_cli, root)
        out = Path("evals/regression/x.json")
        result = runs(
            "eval", "record", "--case", "evals/live/x.json", "--out", out, "--agent", agent
        )
        asked = len(s.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    assert asked == 1
    written = json.loads((root / out).read_text(encoding="utf-8"))
    assert written["turns"][0]["steps"] == []
    assert written["expects"]["guardrails_tripped"] == ["no_passwords"]
    replayed = runs(
        "eval", "run", "--suite", "evals/regression", "--agent", agent, "--format", "json",
        key=False,
    )  # fmt: skip
    (replay,) = report_of(replayed)["cases"]
    assert replayed.returncode == 0, json.dumps(replay, indent=2)
    assert tripped(replay) == [("no_passwords", "input", "support_agent", 0, True)]


def test_mutation_kills_every_boundary_mutant_of_a_guardrail_case(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    root, module = project
    expects = {
        "guardrails_tripped": ["math_homework"],
        "response_contains": ["shipped"],
        "tool_results_contain": [{"tool": "lookup_order", "needle": "shipped"}],
    }
    write_suite(root / "evals", {"f.json": homework(expects)})
    agent = f"openai-agents:{module}:build_agent"
    result = run_cli("eval", "mutate", "--suite", "evals", "--agent", agent, cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    # Dropped instructions included: the agent declares some, its rule kills them.
    assert "mutation score: boundary 6/6 (100.0%" in result.stdout
