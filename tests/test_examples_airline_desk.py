"""The airline desk example (`examples/openai_agents_airline_desk`): its suite passes on the
desk as written and fails, exit status 1, on a desk broken in each of the ways the suite is
there to catch, with a check that names what broke: a structured answer that lost a field,
a tool that no longer writes the booking context, the input guardrail removed or no longer
tripping, an MCP server with stale answers, a refund that no longer asks for approval, and
a rejected refund dispatched all the same. `zeroclaw eval mutate` kills every boundary
mutant of the suite."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, RUN_ERROR, Cli, assert_fails_naming, run_reported_cases

DESK = REPO / "examples" / "openai_agents_airline_desk"
AGENT = "openai-agents:airline_desk:build_agent"
# Each case's booking, built from its setup.context by the desk's own function.
CONTEXT = ("--context", "airline_desk:booking_context")


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example, copied to a directory of its own the test may add broken desks to."""
    root = tmp_path / "desk"
    shutil.copytree(DESK, root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(root))
    return root


def run_suite(run_cli: Cli, root: Path, agent: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    return run_reported_cases(run_cli, root, agent, *CONTEXT)


def test_the_suite_passes_on_the_desk_as_written(run_cli: Cli, desk: Path) -> None:
    result, cases = run_suite(run_cli, desk, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert all(case["passed"] and not case["error"] for case in cases.values()), cases
    fixtures = [json.loads(p.read_text("utf-8")) for p in sorted(desk.glob("evals/*.json"))]
    assert {data["description"].split(".")[0] for data in fixtures} == {
        "Positive",
        "Negative",
    }
    assert sum(len(data["turns"]) > 1 for data in fixtures) >= 2


# Each broken desk: the module written next to the example, the case that must fail and
# the failing check that names the cause (a prefix of the check's name), and, where the
# detail matters, words of its detail.
BROKEN: dict[str, tuple[str, str, str, str]] = {
    "structured-answer-lost-its-seat": (
        """
        from pydantic import BaseModel

        import airline_desk


        class DeskReply(BaseModel):
            message: str
            seat_number: str = ""  # renamed: the seat the model sends is dropped
            refunded_eur: float


        def build_agent():
            return airline_desk.build_agent().clone(output_type=DeskReply)
        """,
        "seat-change-written-to-the-booking",
        'response_json("/seat")',
        "pointer not present",
    ),
    "seat-no-longer-written-to-the-context": (
        """
        from agents import RunContextWrapper, function_tool

        import airline_desk
        from airline_desk import BookingContext as Booking


        @function_tool
        def change_seat(wrapper: RunContextWrapper[Booking], new_seat: str) -> str:
            \"\"\"Move the passenger to another seat on their flight.

            Args:
                new_seat: The seat wanted, like 14C.
            \"\"\"
            booking = wrapper.context
            # The write to the booking was lost: the answer says it moved, the booking keeps it.
            return f"seat changed from {booking.seat} to {new_seat.upper()} on {booking.flight}"


        def build_agent():
            return airline_desk.build_agent().clone(tools=[change_seat, airline_desk.refund_fare])
        """,
        "seat-change-written-to-the-booking",
        'context_json("/seat")',
        "14C",
    ),
    "guardrail-no-longer-trips": (
        """
        import airline_desk
        from agents import input_guardrail, GuardrailFunctionOutput


        @input_guardrail(run_in_parallel=False)
        def no_card_numbers(wrapper, agent, turn_input):
            # The bug: the card check reads the agent's instructions, not the message.
            text = str(agent.instructions)
            return GuardrailFunctionOutput(output_info=None, tripwire_triggered="4111" in text)


        def build_agent():
            return airline_desk.build_agent().clone(input_guardrails=[no_card_numbers])
        """,
        # The model is asked where the guardrail should have stopped the turn: the case's
        # run error names the turn and the guardrail that was to stop it.
        "card-number-stopped-by-the-guardrail",
        RUN_ERROR,
        "turn 0 scripts no steps, for a guardrail to stop it before the model is asked "
        "(guardrails_tripped: 'no_card_numbers'), but the agent asked the model: "
        "no guardrail stopped the turn",
    ),
    "flight-status-server-with-stale-answers": (
        """
        import sys
        from pathlib import Path

        from agents.mcp import MCPServerStdio

        import airline_desk

        STALE = Path(__file__).with_name("stale_status_server.py")


        def build_agent():
            server = MCPServerStdio(
                name="flight_status",
                params={"command": sys.executable, "args": [str(STALE)]},
            )
            return airline_desk.build_agent().clone(mcp_servers=[server])
        """,
        "flight-status-from-the-mcp-server",
        "tool_results_contain",
        "flight_status",
    ),
    "refund-no-longer-asks-for-approval": (
        """
        import dataclasses

        import airline_desk


        def build_agent():
            refund = dataclasses.replace(airline_desk.refund_fare, needs_approval=False)
            return airline_desk.build_agent().clone(tools=[airline_desk.change_seat, refund])
        """,
        # The refund runs without a person's say: the decision the case gives is for a call
        # that never asked.
        "refund-approved-by-a-person",
        "approval(never_asked)",
        "turn 0: the fixture decides call_refund (refund_fare), but the agent never held it "
        "for approval; it was dispatched without asking",
    ),
    "rejected-refund-dispatched-anyway": (
        """
        import dataclasses

        import airline_desk


        async def only_large_refunds(wrapper, arguments, call_id):
            # The bug: only refunds over 500 EUR go to a person, so the 240 EUR one a person
            # rejects is paid without asking.
            return arguments["amount_eur"] > 500


        def build_agent():
            refund = dataclasses.replace(
                airline_desk.refund_fare, needs_approval=only_large_refunds
            )
            return airline_desk.build_agent().clone(tools=[airline_desk.change_seat, refund])
        """,
        "refund-rejected-not-paid",
        "approval(never_asked)",
        "call_refund (refund_fare), but the agent never held it for approval; it was "
        "dispatched without asking",
    ),
}

STALE_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("flight-status")


@server.tool()
def flight_status(flight_number: str) -> str:
    \"\"\"Today's status of a flight.\"\"\"
    return f"{flight_number}: delayed 2 hours"


@server.tool()
def baggage_allowance(cabin: str) -> str:
    \"\"\"The baggage allowance of a cabin.\"\"\"
    return "no baggage rules today"


if __name__ == "__main__":
    server.run()
"""


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_desk_fails_the_suite_with_a_check_naming_the_cause(
    run_cli: Cli, desk: Path, broken: str
) -> None:
    source, case_id, check, words = BROKEN[broken]
    (desk / "broken_desk.py").write_text(textwrap.dedent(source), encoding="utf-8")
    (desk / "stale_status_server.py").write_text(STALE_SERVER, encoding="utf-8")
    result, cases = run_suite(run_cli, desk, "openai-agents:broken_desk:build_agent")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert_fails_naming(cases[case_id], check, words)


def test_a_desk_without_its_guardrail_is_refused_naming_it(run_cli: Cli, desk: Path) -> None:
    (desk / "broken_desk.py").write_text(
        "import airline_desk\n\n\ndef build_agent():\n"
        "    return airline_desk.build_agent().clone(input_guardrails=[])\n",
        encoding="utf-8",
    )
    result = run_cli(
        "eval",
        "run",
        "--suite",
        "evals",
        "--agent",
        "openai-agents:broken_desk:build_agent",
        *CONTEXT,
        cwd=desk,
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert (
        "card_number_stopped_by_the_guardrail.json: $.expects.guardrails_tripped[0]: "
        "'no_card_numbers' is not a guardrail"
    ) in result.stderr


def test_mutate_kills_every_boundary_mutant_of_the_suite(run_cli: Cli, desk: Path) -> None:
    result = run_cli(
        "eval",
        "mutate",
        "--suite",
        "evals",
        "--agent",
        AGENT,
        *CONTEXT,
        "--json-report",
        "m.json",
        cwd=desk,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    document = json.loads((desk / "m.json").read_text(encoding="utf-8"))
    boundary = [
        m for case in document["cases"] for m in case["mutants"] if m["family"] == "boundary"
    ]
    assert boundary and all(m["killed"] for m in boundary), [m for m in boundary if not m["killed"]]
