"""`zeroclaw eval import` end to end: a production app on the OpenAI Agents SDK (a triage
agent handing billing questions to an agent with tools), written the way the SDK's docs
write it and traced by the shipped `JsonlTraceProcessor`, runs two turns of one
conversation against a loopback provider; the import turns its trace into a fixture that
replays green through the same agent, fails when the agent is broken, and holds none of
the personal data the trace did (the card number a tool round-trips kept consistent)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _openai_server import Action, OpenAIServer, text_reply, tool_reply
from conftest import REPO, Cli, CliResult

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

CARD = "4111 1111 1111 1111"
CARD_DIGITS = "4111111111111111"
EMAIL = "jane.doe@example.com"

DESK = '''
"""A help desk on the OpenAI Agents SDK: triage hands billing questions to billing."""

from agents import Agent, function_tool

INVOICES = {"INV-100": "paid on 2026-03-02", "INV-101": "open, due 2026-04-15"}


@function_tool
def lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice's status.

    Args:
        invoice_id: The invoice id, like INV-100.
    """
    return f"invoice {invoice_id}: {INVOICES.get(invoice_id, 'not found')}"


@function_tool
def charge_card(card_number: str, amount_eur: int) -> str:
    """Charge a card.

    Args:
        card_number: The card number.
        amount_eur: The amount in euros.
    """
    return f"charged {amount_eur} EUR to card {card_number}"


def build_agent() -> Agent:
    billing_agent = Agent(
        name="billing_agent",
        handoff_description="Invoices and payments.",
        instructions="You answer billing questions with your tools.",
        tools=[lookup_invoice, charge_card],
    )
    return Agent(
        name="triage_agent",
        instructions="Hand billing questions to the billing agent.",
        handoffs=[billing_agent],
    )
'''

APP = '''
"""The production app: one conversation of two turns, traced to a JSON-lines file."""

import asyncio
import sys

from agents import (
    Runner,
    RunConfig,
    add_trace_processor,
    set_default_openai_api,
    set_default_openai_client,
)
from openai import AsyncOpenAI

from desk import build_agent
from harness.tracing import JsonlTraceProcessor

add_trace_processor(JsonlTraceProcessor(sys.argv[2]))
set_default_openai_client(AsyncOpenAI(base_url=sys.argv[1], api_key="sk-loopback-key"))
set_default_openai_api("chat_completions")


async def main() -> None:
    config = RunConfig(group_id="conversation-42")
    first = await Runner.run(
        build_agent(),
        "Please pay invoice INV-101 with my card %s; the receipt goes to %s" % (
            sys.argv[3], sys.argv[4]
        ),
        run_config=config,
    )
    follow_up = first.to_input_list() + [
        {"role": "user", "content": "Thanks! And has INV-100 been paid?"}
    ]
    await Runner.run(first.last_agent, follow_up, run_config=config)


asyncio.run(main())
'''


def offered(body: Any) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or []}


def desk_model(body: Any) -> Action:
    """The provider: triage hands off; billing charges the card the user gave (its digits)
    or looks an invoice up, then answers from what its tool said."""
    messages = body["messages"]
    last = messages[-1]
    if "charge_card" not in offered(body):
        return tool_reply([("call_to_billing", "transfer_to_billing_agent", {})])
    if last["role"] == "tool" and last["tool_call_id"] == "call_charge":
        return text_reply(f"Done: {last['content']}. Your receipt goes to {EMAIL}.")
    if last["role"] == "tool" and last["tool_call_id"] == "call_lookup":
        return text_reply(f"Yes: {last['content']}.")
    question = str(next(m for m in reversed(messages) if m["role"] == "user")["content"])
    if "INV-100" in question:
        return tool_reply([("call_lookup", "lookup_invoice", {"invoice_id": "INV-100"})])
    digits = "".join(re.findall(r"\d", question.split("card", 1)[1]))[:16]
    arguments = {"card_number": digits, "amount_eur": 120}
    return tool_reply([("call_charge", "charge_card", arguments)])


def run_app(where: Path, agents: str, app: str, model: Any, *argv: str) -> Path:
    """Run the production `app` (its agents in `desk.py`) in a process of its own against
    the loopback provider answering as `model`; the trace file it wrote."""
    (where / "desk.py").write_text(agents, encoding="utf-8")
    (where / "app.py").write_text(app, encoding="utf-8")
    traces = where / "traces.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join([str(where), str(REPO)])
    with OpenAIServer(responder=model) as server:
        done = subprocess.run(
            [sys.executable, "app.py", server.base_url, str(traces), *argv],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    return traces


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trace file the production app wrote (run once)."""
    return run_app(tmp_path_factory.mktemp("app"), DESK, APP, desk_model, CARD, EMAIL)


def project(tmp_path: Path, desk: str = DESK) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (root / "desk.py").write_text(desk, encoding="utf-8")
    return root


AGENT = "openai-agents:desk:build_agent"


def import_trace(run_cli: Cli, trace: Path, suite: Path, *flags: str, root: Path) -> CliResult:
    """`zeroclaw eval import TRACE --suite SUITE --agent AGENT FLAGS`, run in `root`."""
    return run_cli("eval", "import", trace, "--suite", suite, "--agent", AGENT, *flags, cwd=root)


def test_the_trace_holds_both_runs_of_the_conversation_with_every_span_kind(traced: Path) -> None:
    lines = [json.loads(line) for line in traced.read_text("utf-8").splitlines()]
    assert [line["format"] for line in lines] == ["zeroclaw-openai-agents-trace/1"] * 2
    assert {line["trace"]["group_id"] for line in lines} == {"conversation-42"}
    kinds = {span["span_data"]["type"] for line in lines for span in line["spans"]}
    assert {"agent", "generation", "function", "handoff"} <= kinds


def test_an_imported_trace_replays_green_and_fails_once_the_agent_is_broken(
    traced: Path, tmp_path: Path, run_cli: Cli
) -> None:
    root = project(tmp_path)
    suite = root / "evals" / "regression"
    imported = import_trace(run_cli, traced, suite, "--expect", "all", root=root)
    assert imported.returncode == 0, imported.stderr
    [fixture] = suite.glob("*.json")
    data = json.loads(fixture.read_text("utf-8"))
    assert data["origin"] == {"source": "openai-agents-jsonl/1", "trace_id": "conversation-42"}
    assert data["next_turn_agent"] == "last"  # turn 2 began where turn 1 ended
    steps = [[s.get("agent") for s in turn["steps"]] for turn in data["turns"]]
    assert steps == [
        ["triage_agent", "billing_agent", "billing_agent"],
        ["billing_agent", "billing_agent"],
    ]
    handoff = data["turns"][0]["steps"][0]["response"]["tool_calls"][0]
    assert handoff == {
        "id": "call_to_billing",
        "name": "transfer_to_billing_agent",
        "arguments": {},
    }
    expects = data["expects"]
    assert expects["handoffs"] == ["billing_agent"]
    assert expects["final_agent"] == "billing_agent"
    assert expects["tools_used"] == ["charge_card", "lookup_invoice"]
    assert data["turns"][0]["steps"][1]["response"]["input_tokens"] == 10

    assert run_cli("eval", "run", "--suite", suite, "--agent", AGENT, cwd=root).returncode == 0

    without_tool = DESK.replace("tools=[lookup_invoice, charge_card]", "tools=[lookup_invoice]")
    without_handoff = DESK.replace("handoffs=[billing_agent],", "tools=[charge_card],")
    for broken in (without_tool, without_handoff):
        (root / "desk.py").write_text(broken, encoding="utf-8")
        ran = run_cli("eval", "run", "--suite", suite, "--agent", AGENT, cwd=root)
        assert ran.returncode == 1, ran.stdout + ran.stderr


def test_the_card_number_stays_one_placeholder_and_no_e_mail_address_is_written(
    traced: Path, tmp_path: Path, run_cli: Cli
) -> None:
    root = project(tmp_path)
    suite = root / "evals" / "regression"
    imported = import_trace(run_cli, traced, suite, "--expect", "all", root=root)
    assert imported.returncode == 0, imported.stderr
    assert "CARD" in imported.stderr and "EMAIL" in imported.stderr  # the report, by kind
    assert CARD_DIGITS not in imported.stderr + imported.stdout
    written = [*suite.rglob("*.json"), *suite.rglob("*.snap")]
    assert len(written) == 2
    for path in written:
        raw = path.read_bytes()
        assert b"@example.com" not in raw and b"jane.doe" not in raw, path
        assert CARD_DIGITS.encode() not in raw and CARD.encode() not in raw, path
    data = json.loads((suite / next(p.name for p in suite.glob("*.json"))).read_text("utf-8"))
    first = data["turns"][0]
    assert "<CARD_1>" in first["user_input"] and "<EMAIL_1>" in first["user_input"]
    charge = first["steps"][1]["response"]["tool_calls"][0]
    assert charge["arguments"] == {"card_number": "<CARD_1>", "amount_eur": 120}
    # The tool gets the placeholder on the replay and returns it: the suggestion holds.
    results = data["expects"]["tool_results_contain"]
    assert {"tool": "charge_card", "needle": "charged 120 EUR to card <CARD_1>"} in results
    assert "<EMAIL_1>" in first["steps"][2]["response"]["content"]


def test_the_import_against_a_broken_agent_fails_and_writes_nothing(
    traced: Path, tmp_path: Path, run_cli: Cli
) -> None:
    root = project(tmp_path, DESK.replace("tools=[lookup_invoice, charge_card]", "tools=[]"))
    suite = root / "evals" / "regression"
    imported = import_trace(run_cli, traced, suite, "--expect", "all", root=root)
    assert imported.returncode == 1
    assert "conversation-42" in imported.stderr and "nothing written" in imported.stderr
    assert not (root / "evals").exists()


def test_without_expect_nothing_is_written_and_the_proven_suggestions_are_printed(
    traced: Path, tmp_path: Path, run_cli: Cli
) -> None:
    root = project(tmp_path)
    suite = root / "evals" / "regression"
    imported = import_trace(run_cli, traced, suite, root=root)
    assert imported.returncode == 2
    assert '--expect handoffs: {"handoffs": ["billing_agent"]}' in imported.stdout
    assert "pass --expect" in imported.stderr
    assert not (root / "evals").exists()
    again = import_trace(run_cli, traced, suite, "--expect", "handoffs,tools", root=root)
    assert again.returncode == 0, again.stderr
    [fixture] = suite.glob("*.json")
    assert set(json.loads(fixture.read_text("utf-8"))["expects"]) == {"handoffs", "tools_used"}
    twice = import_trace(run_cli, traced, suite, "--expect", "tools", root=root)
    assert twice.returncode == 1 and "--force" in twice.stderr
    forced = import_trace(
        run_cli,
        traced,
        suite,
        "--expect",
        "tools",
        "--force",
        "--id",
        "paid-by-card",
        "--model-name",
        "desk-model",
        root=root,
    )
    assert forced.returncode == 0, forced.stderr
    renamed = json.loads((suite / "paid-by-card.json").read_text("utf-8"))
    assert (renamed["id"], renamed["model_name"]) == ("paid-by-card", "desk-model")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--expect", "tools,nonsense"], "unknown family nonsense"),
        (["--filter", "color=red"], "expected agent=NAME"),
        (["--format", "csv"], "--format 'csv'"),
        (["--no-redact", "--redact", "x"], "contradict"),
        (["--redact", "(unclosed"], "no RE2 pattern"),
    ],
)
def test_usage_errors_exit_2(
    traced: Path, tmp_path: Path, run_cli: Cli, argv: list[str], said: str
) -> None:
    root = project(tmp_path)
    ran = run_cli("eval", "import", traced, "--agent", AGENT, *argv, cwd=root)
    assert ran.returncode == 2 and said in ran.stderr, ran.stderr


def test_selection_by_trace_id_and_filter(traced: Path, tmp_path: Path, run_cli: Cli) -> None:
    root = project(tmp_path)
    base = ["eval", "import", traced, "--agent", AGENT, "--expect", "tools"]
    missing = run_cli(*base, "--trace", "trace_nope", cwd=root)
    assert missing.returncode == 1 and "no trace or group trace_nope" in missing.stderr
    unmatched = run_cli(*base, "--filter", "guardrail=pii", cwd=root)
    assert unmatched.returncode == 1 and "no conversation matches" in unmatched.stderr
    run_id = json.loads(traced.read_text("utf-8").splitlines()[1])["trace"]["id"]
    chosen = run_cli(*base, "--trace", run_id, "--filter", "tool=charge_card", cwd=root)
    assert chosen.returncode == 0, chosen.stderr


EXPERT = """
from agents import Agent


def build_agent() -> Agent:
    expert = Agent(name="expert", instructions="Answer tax questions.")
    return Agent(
        name="front",
        instructions="Ask the expert.",
        tools=[expert.as_tool(tool_name="ask_expert", tool_description="Ask the tax expert.")],
    )
"""

EXPERT_APP = """
import asyncio
import sys

from agents import Runner, add_trace_processor, set_default_openai_api, set_default_openai_client
from openai import AsyncOpenAI

from desk import build_agent
from harness.tracing import JsonlTraceProcessor

add_trace_processor(JsonlTraceProcessor(sys.argv[2]))
set_default_openai_client(AsyncOpenAI(base_url=sys.argv[1], api_key="sk-loopback-key"))
set_default_openai_api("chat_completions")
asyncio.run(Runner.run(build_agent(), "What is the VAT rate?"))
"""


def expert_model(body: Any) -> Action:
    last = body["messages"][-1]
    if "ask_expert" in offered(body):
        if last["role"] == "tool":
            return text_reply(f"The expert says: {last['content']}")
        return tool_reply([("call_ask", "ask_expert", {"input": "VAT rate?"})])
    return text_reply("VAT is 19%.")


def test_an_agent_used_as_a_tool_is_imported_with_its_own_steps(
    tmp_path: Path, run_cli: Cli
) -> None:
    traces = run_app(tmp_path, EXPERT, EXPERT_APP, expert_model)
    root = project(tmp_path, EXPERT)
    suite = root / "evals" / "regression"
    imported = import_trace(run_cli, traces, suite, "--expect", "all", root=root)
    assert imported.returncode == 0, imported.stderr
    [fixture] = suite.glob("*.json")
    steps = json.loads(fixture.read_text("utf-8"))["turns"][0]["steps"]
    assert [s["agent"] for s in steps] == ["front", "expert", "front"]
    assert steps[1]["response"]["content"] == "VAT is 19%."
    assert run_cli("eval", "run", "--suite", suite, "--agent", AGENT, cwd=root).returncode == 0
    (root / "desk.py").write_text(EXPERT.replace('"Answer tax', '"Answer VAT'), encoding="utf-8")
    changed = run_cli("eval", "run", "--suite", suite, "--agent", AGENT, cwd=root)
    assert changed.returncode == 1  # the expert's instructions changed: its snapshot says so


def test_a_snapshot_that_would_hold_a_redacted_value_is_refused(
    traced: Path, tmp_path: Path, run_cli: Cli
) -> None:
    # The agent's own instructions now hold the address the trace's user gave: the replay's
    # request snapshot would hold it, so nothing is written.
    leaky = DESK.replace('"You answer billing', f'"Copy {EMAIL}. You answer billing')
    root = project(tmp_path, leaky)
    suite = root / "evals" / "regression"
    imported = import_trace(run_cli, traced, suite, "--expect", "tools", root=root)
    assert imported.returncode == 1
    assert "would hold a redacted value (EMAIL)" in imported.stderr
    assert EMAIL not in imported.stderr and not (root / "evals").exists()


def test_no_check_admits_and_writes_without_running_the_agent(
    traced: Path, tmp_path: Path, run_cli: Cli
) -> None:
    root = project(tmp_path)
    suite = root / "evals" / "regression"
    base = ["eval", "import", traced, "--suite", suite, "--agent", AGENT]
    assert run_cli(*base, "--no-check", cwd=root).returncode == 2
    written = run_cli(*base, "--no-check", "--expect", "handoffs", cwd=root)
    assert written.returncode == 0, written.stderr
    assert "not checked" in written.stdout
    [fixture] = suite.glob("*.json")
    assert json.loads(fixture.read_text("utf-8"))["expects"] == {"handoffs": ["billing_agent"]}
    assert not list(suite.rglob("*.snap"))  # no replay ran
    (tmp_path / "broken").mkdir()
    broken = project(tmp_path / "broken", DESK.replace("handoffs=[billing_agent],", ""))
    argv = ["eval", "import", traced, "--agent", AGENT, "--no-check", "--expect", "tools"]
    refused = run_cli(*argv, "--suite", broken / "evals" / "regression", cwd=broken)
    assert refused.returncode == 1 and "does not pass replay admission" in refused.stderr
    assert not (broken / "evals").exists()


def test_a_trace_file_cut_mid_line_imports_what_it_holds_and_says_so(
    traced: Path, tmp_path: Path, run_cli: Cli
) -> None:
    root = project(tmp_path)
    cut = root / "cut.jsonl"
    text = traced.read_text("utf-8")
    cut.write_text(text[: len(text) - 100], encoding="utf-8")  # the app died mid-write
    imported = run_cli("eval", "import", cut, "--agent", AGENT, "--expect", "tools", cwd=root)
    assert imported.returncode == 0, imported.stderr
    assert f"warning: {cut}: line 2: a truncated last line" in imported.stderr
    [fixture] = (root / "evals" / "regression").glob("*.json")
    assert len(json.loads(fixture.read_text("utf-8"))["turns"]) == 1


MCP_AGENT = """
import sys

from agents import Agent
from agents.mcp import MCPServerStdio


def build_agent() -> Agent:
    orders = MCPServerStdio(
        name="orders",
        params={{"command": sys.executable, "args": [{server!r}, *{args!r}]}},
    )
    return Agent(name="support", instructions="You help with orders.", mcp_servers=[orders])
"""

MCP_APP = """
import asyncio
import sys

from agents import Runner, add_trace_processor, set_default_openai_api, set_default_openai_client
from openai import AsyncOpenAI

from desk import build_agent
from harness.tracing import JsonlTraceProcessor

add_trace_processor(JsonlTraceProcessor(sys.argv[2]))
set_default_openai_client(AsyncOpenAI(base_url=sys.argv[1], api_key="sk-loopback-key"))
set_default_openai_api("chat_completions")


async def main() -> None:
    agent = build_agent()
    async with agent.mcp_servers[0]:
        await Runner.run(agent, "Where is order 7?")


asyncio.run(main())
"""


def orders_model(body: Any) -> Action:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text_reply(f"Your order: {last['content']}")
    return tool_reply([("call_order", "lookup_order", {"order_id": "7"})])


def test_an_mcp_tool_call_is_imported_and_replayed_against_the_server(
    tmp_path: Path, run_cli: Cli
) -> None:
    server = REPO / "tests" / "_mcp_server.py"
    agent = MCP_AGENT.format(server=str(server), args=[])
    traces = run_app(tmp_path, agent, MCP_APP, orders_model)
    root = project(tmp_path, agent)
    suite = root / "evals" / "regression"
    imported = import_trace(run_cli, traces, suite, "--expect", "tools,results", root=root)
    assert imported.returncode == 0, imported.stderr
    [fixture] = suite.glob("*.json")
    expects = json.loads(fixture.read_text("utf-8"))["expects"]
    assert expects["tools_used"] == ["lookup_order"]
    assert run_cli("eval", "run", "--suite", suite, "--agent", AGENT, cwd=root).returncode == 0
    wrong = MCP_AGENT.format(server=str(server), args=["--status", "lost in transit"])
    (root / "desk.py").write_text(wrong, encoding="utf-8")
    assert run_cli("eval", "run", "--suite", suite, "--agent", AGENT, cwd=root).returncode == 1
