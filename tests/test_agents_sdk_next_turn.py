"""Where the next turn of an SDK graph starts: `next_turn_agent` "first" (the agent the
factory returns, the SDK's basic conversation pattern) or "last" (the agent that answered
the previous turn, as the SDK's customer-service example continues with `last_agent`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _openai_server import Action, OpenAIServer, text_reply, tool_reply
from conftest import (
    LIVE_KEY,
    REPO,
    Cli,
    Runs,
    call,
    fixture,
    live_case,
    make_project,
    text_step,
    tool_step,
    turn,
    write_suite,
)

from harness import run_suite
from harness.agents.registry import resolve_agent
from harness.model_boundary import ModelRequest

TRIAGE = REPO / "examples" / "openai_agents_triage"
AGENT = "openai-agents:triage_agents:build_agent"


@pytest.fixture
def triage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The triage example's module in a directory of its own, with an empty suite."""
    root = tmp_path / "triage"
    root.mkdir()
    shutil.copy(TRIAGE / "triage_agents.py", root)
    monkeypatch.syspath_prepend(str(root))
    return root


def follow_up(next_turn_agent: str | None) -> dict[str, Any]:
    """Two turns: triage hands the first to billing; billing answers the follow-up itself,
    with no new handoff."""
    first = turn(
        "Has invoice INV-100 been paid?",
        tool_step(call("c1", "transfer_to_billing_agent")),
        tool_step(call("c2", "lookup_invoice", invoice_id="INV-100")),
        text_step("Yes: INV-100 was paid on 2026-03-02."),
    )
    second = turn(
        "And INV-101?",
        tool_step(call("c3", "lookup_invoice", invoice_id="INV-101")),
        text_step("INV-101 is open, due 2026-04-15."),
    )
    expects = {
        "handoffs": ["billing_agent"],
        "final_agent": "billing_agent",
        "agents": {"billing_agent": {"tools_used": ["lookup_invoice"], "exact_tool_calls": 2}},
        "response_contains": ["2026-04-15"],
    }
    extra = {} if next_turn_agent is None else {"next_turn_agent": next_turn_agent}
    return fixture("follow-up", [first, second], expects, **extra)


def run(run_cli: Cli, root: Path, data: dict[str, Any], agent: str = AGENT) -> Any:
    write_suite(root / "evals", {"f.json": data})
    return run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent, "--json-report", "r.json", cwd=root
    )


def case_of(root: Path) -> dict[str, Any]:
    (case,) = json.loads((root / "r.json").read_text(encoding="utf-8"))["cases"]
    return dict(case)


def test_a_follow_up_answered_by_the_specialist_replays_when_the_turn_starts_at_the_last(
    run_cli: Cli, triage: Path
) -> None:
    result = run(run_cli, triage, follow_up("last"))
    case = case_of(triage)
    assert result.returncode == 0, json.dumps(case, indent=2)
    record = case["record"]
    assert [(h["turn"], h["source"], h["target"]) for h in record["handoffs"]] == [
        (0, "triage_agent", "billing_agent")
    ]
    assert [(c["name"], c["agent"]) for c in record["calls"]] == [
        ("lookup_invoice", "billing_agent"),
        ("lookup_invoice", "billing_agent"),
    ]
    assert record["final_agent"] == "billing_agent"


@pytest.mark.parametrize("value", ["first", None])
def test_the_same_follow_up_is_a_run_error_naming_the_agent_when_the_turn_starts_at_the_first(
    run_cli: Cli, triage: Path, value: str | None
) -> None:
    result = run(run_cli, triage, follow_up(value))
    assert result.returncode == 1
    assert case_of(triage)["error"] == (
        "the model called tool 'lookup_invoice', which agent "
        "'triage_agent' (the agent asking) does not offer (its tools: "
        "transfer_to_billing_agent, transfer_to_faq_agent)"
    )


def test_a_bad_value_is_refused_at_admission_naming_the_field(run_cli: Cli, triage: Path) -> None:
    result = run(run_cli, triage, follow_up("previous"))
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "f.json: $.next_turn_agent: Invalid enum value 'previous'" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("agent", ["openai-agents", "pydantic-ai"])
def test_last_is_refused_for_an_agent_that_cannot_hand_off(
    run_cli: Cli, triage: Path, agent: str
) -> None:
    data = fixture(
        "one-agent",
        [turn("hi", text_step("hello")), turn("again", text_step("hello again"))],
        {"response_contains": ["again"]},
        next_turn_agent="last",
    )
    result = run(run_cli, triage, data, agent)
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "f.json: $.next_turn_agent: 'last' applies to an agent that hands off" in out
    # "first" is what every agent does: admitted anywhere.
    data["next_turn_agent"] = "first"
    assert run(run_cli, triage, data, agent).returncode == 0


class ForgetsEarlierTurns:
    """The SDK adapter, with every request of one agent in the second turn sent without the
    first turn's messages (as an app that drops the history at a new turn would send it)."""

    def __init__(self, inner: Any, agent: str) -> None:
        self.inner, self.agent, self.name = inner, agent, inner.name

    def tools(self) -> Any:
        return self.inner.tools()

    def tool_names(self) -> frozenset[str]:
        return frozenset(self.inner.tool_names())

    def agent_tools(self) -> Any:
        return self.inner.agent_tools()

    def hands_off(self) -> bool:
        return bool(self.inner.hands_off())

    def start(self, context: Any) -> Any:
        respond = context.model.respond

        async def forgetting(request: ModelRequest) -> Any:
            users = [i for i, m in enumerate(request.messages) if m.role == "user"]
            if request.agent == self.agent and len(users) > 1:
                kept = request.messages[:1] + request.messages[users[-1] :]
                request = msgspec.structs.replace(request, messages=kept)
            return await respond(request)

        context.model.respond = forgetting
        return self.inner.start(context)


def test_conformance_holds_the_agent_a_turn_starts_at_to_the_conversation_so_far(
    triage: Path,
) -> None:
    suite = write_suite(triage / "evals", {"f.json": follow_up("last")})
    inner = resolve_agent(AGENT)
    (case,) = run_suite(suite, agent=inner).cases
    assert case.passed, case.failure_lines()
    (case,) = run_suite(suite, agent=ForgetsEarlierTurns(inner, "billing_agent")).cases
    assert not case.passed
    # The second turn's conversation is billing's from its first request: held to the whole
    # history, the first turn's user input included.
    (line,) = case.failure_lines()
    assert line.startswith(
        'loop(history): turn 1, request 0 (agent "billing_agent"): the user input '
        '"Has invoice INV-100 been paid?" is missing'
    ), line


def test_record_keeps_where_the_next_turn_starts_and_the_recording_replays(
    run_cli: Cli, tmp_path: Path
) -> None:
    # The provider answers as the asking agent would: billing looks up, then answers.
    def answer(body: Any) -> Action:
        offered = {tool["function"]["name"] for tool in body.get("tools") or []}
        last = body["messages"][-1]
        if "lookup_invoice" not in offered:
            return tool_reply([("call_handoff", "transfer_to_billing_agent", {})])
        if last["role"] == "tool":
            return text_reply(f"Billing says: {last['content']}")
        invoice = "INV-101" if "INV-101" in str(last.get("content")) else "INV-100"
        return tool_reply([(f"call_{invoice}", "lookup_invoice", {"invoice_id": invoice})])

    case = live_case(
        "follow-up",
        "Has invoice INV-100 been paid?",
        "And INV-101?",
        id="follow-up",
        next_turn_agent="last",
        expects={"handoffs": ["billing_agent"], "response_contains": ["due 2026-04-15"]},
    )
    with OpenAIServer(responder=answer, api_key=LIVE_KEY) as server:
        root = make_project(tmp_path / "project", server.base_url, {"x.json": case})
        shutil.copy(TRIAGE / "triage_agents.py", root)
        runs = Runs(run_cli, root)
        out = Path("evals/regression/x.json")
        result = runs(
            "eval", "record", "--case", "evals/live/x.json", "--out", out, "--agent", AGENT
        )
    assert result.returncode == 0, result.stdout + result.stderr
    written = json.loads((root / out).read_text(encoding="utf-8"))
    assert written["next_turn_agent"] == "last"
    # The follow-up was answered by billing, with no handoff in the second turn.
    assert [step["agent"] for step in written["turns"][1]["steps"]] == [
        "billing_agent",
        "billing_agent",
    ]
