"""MCP tools that need a person's approval (the SDK's `require_approval` on an MCP server),
against a real MCP server on stdio: the call is held, decided by the fixture's turn, and
run on the server only when approved; a tool that no longer asks fails naming the call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import REPO, Cli, call, fixture, text_step, tool_step, write_suite

# Imported while sys.stderr is the process's own: the mcp client binds its default errlog
# (sys.stderr) when first imported, and an in-process run swaps sys.stderr for its own.
from harness.agents import sdk_mcp  # noqa: F401

SERVER = REPO / "tests" / "_mcp_server.py"
AGENT = "openai-agents:shop:build_agent"

# Written as the SDK's MCP docs write one, refunds held for a person.
STDIO_AGENT = """
import sys

from agents import Agent
from agents.mcp import MCPServerStdio


def build_agent() -> Agent:
    orders = MCPServerStdio(
        name="orders",
        params={{"command": sys.executable, "args": [{server!r}]}},
        require_approval={approval},
    )
    return Agent(name="support", instructions="You help with orders.", mcp_servers=[orders])
"""

ASKS = '{"always": {"tool_names": ["refund_order"]}}'


def refund_case(decision: dict[str, Any]) -> dict[str, Any]:
    data = fixture(
        "mcp-refund",
        [
            {
                "user_input": "Refund 5 on order A-1.",
                "steps": [
                    tool_step(call("c1", "refund_order", order_id="A-1", amount=5.0)),
                    text_step("Done."),
                ],
                "approvals": {"c1": decision},
            }
        ],
        {"approvals_requested": ["refund_order"]},
    )
    return data


def run(run_cli: Cli, tmp_path: Path, approval: str, data: dict[str, Any]) -> dict[str, Any]:
    root = tmp_path / "shop"
    root.mkdir()
    source = STDIO_AGENT.format(server=str(SERVER), approval=approval)
    (root / "shop.py").write_text(source, encoding="utf-8")
    write_suite(root / "evals", {"f.json": data})
    result = run_cli(
        "eval", "run", "--suite", "evals", "--agent", AGENT, "--json-report", "r.json", cwd=root
    )
    assert (root / "r.json").exists(), result.stdout + result.stderr
    (case,) = json.loads((root / "r.json").read_text(encoding="utf-8"))["cases"]
    return dict(case)


def test_an_approved_mcp_call_runs_on_the_server(run_cli: Cli, tmp_path: Path) -> None:
    case = run(run_cli, tmp_path, ASKS, refund_case({"approve": True}))
    assert case["passed"], json.dumps(case, indent=2)
    (recorded,) = case["record"]["calls"]
    assert (recorded["name"], recorded["result"]) == ("refund_order", "refunded 5.00 on order A-1")
    assert case["record"]["approvals"] == [
        {"turn": 0, "call_id": "c1", "tool": "refund_order", "approved": True}
    ]


def test_a_rejected_mcp_call_never_reaches_the_server(run_cli: Cli, tmp_path: Path) -> None:
    data = refund_case({"approve": False, "reason": "refunds need a manager"})
    data["expects"]["request_contains"] = [
        {"turn": 0, "step": 1, "role": "tool", "needle": "refunds need a manager"}
    ]
    case = run(run_cli, tmp_path, ASKS, data)
    assert case["passed"], json.dumps(case, indent=2)
    assert case["record"]["calls"] == []


def test_an_mcp_tool_that_no_longer_asks_fails_naming_the_call(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = run(run_cli, tmp_path, '"never"', refund_case({"approve": True}))
    assert case["error"] is None
    failed = {g["check"]: g["detail"] for g in case["grades"] if not g["passed"]}
    assert failed == {
        'approvals_requested(["refund_order"])': (
            'approvals requested: expected ["refund_order"], the run asked for []'
        ),
        "approval(never_asked)": (
            "turn 0: the fixture decides c1 (refund_order), but the agent never held it for "
            "approval; it was dispatched without asking"
        ),
    }
