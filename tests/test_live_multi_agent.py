"""Live mode with several agents: the SDK triage example and the pydantic-ai delegation
example run against the loopback server scripted to hand off and delegate; the record says
which agent asked and called, keeps the handoffs, grades them, and the reports show them."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from _openai_server import Action, OpenAIServer, hang, text_reply, tool_reply
from conftest import LIVE_KEY, REPO, Cli, Runs, live_case, make_project, report_of, write_module
from test_live_recorder import GUARDED_LOOP

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

TRIAGE = "openai-agents:triage_agents:build_agent"
BOOKING = "pydantic-ai:flight_booking:booking_agent"
EXAMPLES = {
    TRIAGE: REPO / "examples" / "openai_agents_triage" / "triage_agents.py",
    BOOKING: REPO / "examples" / "pydantic_ai_delegation" / "flight_booking.py",
}


def offered(body: Any) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or []}


def triage_model(specialist: str) -> Any:
    """A provider that hands every question to `specialist`; billing looks the invoice up
    and answers from the result, faq answers at once."""

    def answer(body: Any) -> Action:
        last = body["messages"][-1]
        if "lookup_invoice" in offered(body):
            if last["role"] == "tool" and last["tool_call_id"] == "call_lookup":
                return text_reply(f"Billing says: {last['content']}")
            return tool_reply([("call_lookup", "lookup_invoice", {"invoice_id": "INV-101"})])
        if "transfer_to_triage_agent" in offered(body):
            return text_reply("We open at 9:00.")
        return tool_reply([("call_handoff", f"transfer_to_{specialist}", {})])

    return answer


def booking_model(body: Any) -> Action:
    """A provider whose booking agent delegates the search, whose search agent calls its
    own tool, and each answers from what its tool said."""
    last = body["messages"][-1]
    if "find_flights" in offered(body):
        if last["role"] == "tool":
            return text_reply(f"Found: {last['content']}")
        where = {"origin": "ANC", "destination": "SFO", "date": "2025-01-10"}
        return tool_reply([("call_find", "find_flights", where)])
    if last["role"] == "tool":
        return text_reply(f"The search agent says: {last['content']}")
    where = {"origin": "ANC", "destination": "SFO", "date": "2025-01-10"}
    return tool_reply([("call_search", "search_flights", where)])


INVOICE_CASE = live_case(
    "invoice",
    "Has invoice INV-101 been paid?",
    id="invoice",
    expects={
        "handoffs": ["billing_agent"],
        "final_agent": "billing_agent",
        "agents": {"billing_agent": {"tools_used": ["lookup_invoice"], "exact_tool_calls": 1}},
        "response_contains": ["open, due 2026-04-15"],
    },
)

SEARCH_CASE = live_case(
    "search",
    "Which flights go from ANC to SFO on 2025-01-10?",
    id="search",
    expects={
        "handoffs": [],
        "final_agent": "booking",
        "agents": {
            "flight_search": {"tools_used": ["find_flights"]},
            "booking": {"tools_used": ["search_flights"], "tools_not_used": ["book_flight"]},
        },
        "response_contains": ["ZC101 $220; ZC205 $310"],
    },
)


def example_project(
    run_cli: Cli, tmp_path: Path, server: OpenAIServer, agent: str, case: dict[str, Any]
) -> Runs:
    root = make_project(tmp_path / "project", server.base_url, {"x.json": case})
    shutil.copy(EXAMPLES[agent], root)
    return Runs(run_cli, root)


def shown(runs: Runs, case_id: str) -> str:
    result = runs("eval", "show", case_id, key=False)
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def test_the_triage_agent_runs_live_each_request_call_and_handoff_says_its_agent(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=triage_model("billing_agent"), api_key=LIVE_KEY) as server:
        runs = example_project(run_cli, tmp_path, server, TRIAGE, INVOICE_CASE)
        result = runs.live(TRIAGE, "--html", "r.html")
        bodies = server.bodies
    report = report_of(result)
    assert result.returncode == 0, json.dumps(report, indent=2)
    record = report["cases"][0]["record"]
    assert [(h["turn"], h["step"], h["source"], h["target"]) for h in record["handoffs"]] == [
        (0, 0, "triage_agent", "billing_agent")
    ]
    assert record["final_agent"] == "billing_agent"
    # The handoff is no tool call: only the specialist's own tool was recorded, under it.
    assert [(c["name"], c["agent"]) for c in record["calls"]] == [
        ("lookup_invoice", "billing_agent")
    ]
    # Each agent asked the provider with its own tools.
    assert [sorted(offered(body)) for body in bodies] == [
        ["transfer_to_billing_agent", "transfer_to_faq_agent"],
        ["lookup_invoice"],
        ["lookup_invoice"],
    ]
    text = shown(runs, "invoice")
    assert "handoff: triage_agent → billing_agent" in text
    assert "tool [billing_agent] lookup_invoice(" in text
    html = (runs.project / "r.html").read_text(encoding="utf-8")
    assert "handoff: triage_agent → billing_agent" in html
    assert "model request 2 by billing_agent" in html


def test_a_live_handoff_to_the_wrong_specialist_fails_its_check_naming_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=triage_model("faq_agent"), api_key=LIVE_KEY) as server:
        runs = example_project(run_cli, tmp_path, server, TRIAGE, INVOICE_CASE)
        result = runs.live(TRIAGE)
    report = report_of(result)
    assert result.returncode == 1
    (case,) = report["cases"]
    assert case["error"] is None
    failed = {g["check"]: g["detail"] for g in case["grades"] if not g["passed"]}
    assert failed['handoffs(["billing_agent"])'] == (
        'handoffs: expected ["billing_agent"], the run handed to ["faq_agent"]'
    )
    assert failed['final_agent("billing_agent")'] == 'the last answer came from "faq_agent"'
    assert failed['agents["billing_agent"].tools_used("lookup_invoice")'].startswith("not called")


def test_the_delegating_agent_runs_live_each_agent_asks_with_its_own_conversation(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=booking_model, api_key=LIVE_KEY) as server:
        runs = example_project(run_cli, tmp_path, server, BOOKING, SEARCH_CASE)
        result = runs.live(BOOKING)
        bodies = server.bodies
    report = report_of(result)
    assert result.returncode == 0, json.dumps(report, indent=2)
    record = report["cases"][0]["record"]
    # The delegate's call is recorded under it, before the delegating call that ran it.
    assert [(c["name"], c["agent"]) for c in record["calls"]] == [
        ("find_flights", "flight_search"),
        ("search_flights", "booking"),
    ]
    assert record["handoffs"] == [] and record["final_agent"] == "booking"
    # The delegate's requests are its own conversation: its instructions, its tool.
    assert [sorted(offered(body)) for body in bodies] == [
        ["book_flight", "search_flights"],
        ["find_flights"],
        ["find_flights"],
        ["book_flight", "search_flights"],
    ]
    assert bodies[1]["messages"][0]["content"].startswith("You find flights.")
    text = shown(runs, "search")
    assert "tool [flight_search] find_flights(" in text
    assert "tool [booking] search_flights(" in text


def test_agents_asking_at_the_same_time_are_each_shown_with_their_own_answer(
    run_cli: Cli, tmp_path: Path
) -> None:
    guard_asked = threading.Event()

    def answer(body: Any) -> Action:
        # Triage asks first and is answered last, after the guard has asked and been answered.
        if body["messages"][-1]["content"].startswith("check:"):
            guard_asked.set()
            return text_reply("safe")
        guard_asked.wait(10)
        return hang(0.3, then=text_reply("Refunded"))

    case = live_case("guarded", "Refund me", id="guarded", expects={"response_contains": ["safe"]})
    with OpenAIServer(responder=answer, api_key=LIVE_KEY) as server:
        root = make_project(tmp_path / "project", server.base_url, {"x.json": case})
        runs = Runs(run_cli, root)
        agent = write_module(root, GUARDED_LOOP, "guarded") + ":factory"
        result = runs.live(agent)
    report = report_of(result)
    assert result.returncode == 0, json.dumps(report, indent=2)
    assert report["cases"][0]["record"]["final_response"] == "safe: Refunded"
    lines = [line.strip() for line in shown(runs, "guarded").splitlines()]
    turn = lines[lines.index("turn 0:") + 1 :]
    assert turn == [
        "→ user: Refund me",
        "← [triage] model answers Refunded",
        "→ user: check: Refund me",
        "← [guard] model answers safe",
        # The loop's own answer, not the last model text: the response graded.
        "= response graded: safe: Refunded",
    ]


# --- recorded, then replayed ----------------------------------------------------------------

LIVE = Path("evals/live/x.json")
OUT = Path("evals/regression/x.json")

FAQ_CASE = live_case(
    "opening-hours",
    "When do you open?",
    id="opening-hours",
    expects={
        "handoffs": ["faq_agent"],
        "final_agent": "faq_agent",
        "tools_not_used": ["lookup_invoice"],
        "response_contains": ["9:00"],
    },
)


def record(runs: Runs, agent: str) -> Any:
    return runs("eval", "record", "--case", LIVE, "--out", OUT, "--agent", agent)


def replay(runs: Runs, agent: str) -> tuple[Any, dict[str, Any]]:
    result = runs(
        "eval", "run", "--suite", "evals/regression", "--agent", agent, "--format", "json",
        key=False,
    )  # fmt: skip
    (case,) = report_of(result)["cases"]
    return result, case


def recorded_steps(runs: Runs) -> list[tuple[str, str]]:
    """Each written step's agent, and the tool it called or `text`."""
    written = json.loads((runs.project / OUT).read_text(encoding="utf-8"))
    (turn,) = written["turns"]
    shown = []
    for step in turn["steps"]:
        response = step["response"]
        calls = response.get("tool_calls") or [{"name": "text"}]
        shown.append((step["agent"], calls[0]["name"]))
    return shown


def edit_recording(runs: Runs, change: Any) -> None:
    path = runs.project / OUT
    written = json.loads(path.read_text(encoding="utf-8"))
    change(written["turns"][0]["steps"])
    path.write_text(json.dumps(written), encoding="utf-8")


def test_a_recorded_handoff_replays_green_and_edited_to_another_agent_fails_naming_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=triage_model("billing_agent"), api_key=LIVE_KEY) as server:
        runs = example_project(run_cli, tmp_path, server, TRIAGE, INVOICE_CASE)
        result = record(runs, TRIAGE)
        asked = len(server.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "recorded invoice: 3 model step(s) over 1 turn(s)" in result.stdout
    # The handoff is kept as the scripted call it was, and each step names its agent.
    assert recorded_steps(runs) == [
        ("triage_agent", "transfer_to_billing_agent"),
        ("billing_agent", "lookup_invoice"),
        ("billing_agent", "text"),
    ]
    written = json.loads((runs.project / OUT).read_text(encoding="utf-8"))
    assert written["expects"] == INVOICE_CASE["expects"]
    replayed, case = replay(runs, TRIAGE)
    assert replayed.returncode == 0, json.dumps(case, indent=2)
    assert [(h["source"], h["target"]) for h in case["record"]["handoffs"]] == [
        ("triage_agent", "billing_agent")
    ]
    assert asked == 3, "replay never calls the provider"

    def to_faq(steps: list[dict[str, Any]]) -> None:
        steps[0]["response"]["tool_calls"][0]["name"] = "transfer_to_faq_agent"

    edit_recording(runs, to_faq)
    replayed, case = replay(runs, TRIAGE)
    assert replayed.returncode == 1
    assert case["error"].startswith(
        "case 'invoice': turn 0: agent 'faq_agent' requested a model response, but no step "
        "of the turn left answers it; the script expected next a step calling "
        'lookup_invoice({"invoice_id": "INV-101"}) for agent \'billing_agent\''
    ), case["error"]


def test_a_recording_whose_handoff_and_specialist_are_edited_fails_the_handoff_checks(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=triage_model("faq_agent"), api_key=LIVE_KEY) as server:
        runs = example_project(run_cli, tmp_path, server, TRIAGE, FAQ_CASE)
        result = record(runs, TRIAGE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert recorded_steps(runs) == [
        ("triage_agent", "transfer_to_faq_agent"),
        ("faq_agent", "text"),
    ]

    def to_billing(steps: list[dict[str, Any]]) -> None:
        steps[0]["response"]["tool_calls"][0]["name"] = "transfer_to_billing_agent"
        steps[1]["agent"] = "billing_agent"

    edit_recording(runs, to_billing)
    replayed, case = replay(runs, TRIAGE)
    assert replayed.returncode == 1
    assert case["error"] is None
    failed = {g["check"]: g["detail"] for g in case["grades"] if not g["passed"]}
    # The request snapshot the recording took notices it too: billing_agent now asks.
    snapshot = failed.pop("request_snapshot")
    assert "+=== agent: billing_agent" in snapshot and "-=== agent: faq_agent" in snapshot
    assert failed == {
        'handoffs(["faq_agent"])': (
            'handoffs: expected ["faq_agent"], the run handed to ["billing_agent"]'
        ),
        'final_agent("faq_agent")': 'the last answer came from "billing_agent"',
    }


def test_a_recorded_delegation_names_each_agents_steps_and_replays_green(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=booking_model, api_key=LIVE_KEY) as server:
        runs = example_project(run_cli, tmp_path, server, BOOKING, SEARCH_CASE)
        result = record(runs, BOOKING)
    assert result.returncode == 0, result.stdout + result.stderr
    assert recorded_steps(runs) == [
        ("booking", "search_flights"),
        ("flight_search", "find_flights"),
        ("flight_search", "text"),
        ("booking", "text"),
    ]
    replayed, case = replay(runs, BOOKING)
    assert replayed.returncode == 0, json.dumps(case, indent=2)
    assert [(c["name"], c["agent"]) for c in case["record"]["calls"]] == [
        ("find_flights", "flight_search"),
        ("search_flights", "booking"),
    ]
