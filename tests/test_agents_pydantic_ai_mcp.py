"""`harness.agents.pydantic_ai_mcp` through the pydantic-ai adapter: an agent's MCP toolsets
(`toolsets=[MCPToolset(...)]`, filtered and prefixed), stdio and streamable HTTP, with the
real server of `_mcp_server.py` on loopback. Their tools are learnt at admission, scripted
calls reach the running server and are recorded like function tools, a server that cannot
start or hangs is a refusal naming it, and a server's stderr never reaches the harness's."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _openai_server import OpenAIServer
from conftest import (
    LIVE_KEY,
    Cli,
    Runs,
    call,
    fixture,
    make_project,
    report_of,
    reported_cases,
    run_reported,
    text_step,
    tool_step,
    turn,
    write_suite,
)
from test_agents_sdk_mcp import (
    LIVE_LOOKUP,
    SERVER,
    _free_port,
    http_server,
    lookup_case,
    orders_model,
    shop,
)

from harness.agents import pydantic_ai_mcp

__all__ = ["http_server"]  # the fixture, shared with the SDK's tests

# The user's agent, written as pydantic-ai's MCP docs write one: the toolset on the agent,
# connected by whoever runs it (here, the harness); refunds hidden from the model.
STDIO_AGENT = """
import sys

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset


def build_agent() -> Agent:
    orders = MCPToolset(StdioTransport(sys.executable, [{server!r}, *{args!r}]))
    return Agent(
        name="support",
        instructions="You help with orders.",
        toolsets=[orders.filtered(lambda ctx, tool_def: tool_def.name != "refund_order")],
    )
"""

HTTP_AGENT = """
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset


def build_agent() -> Agent:
    orders = MCPToolset({url!r})
    return Agent(name="support", instructions="You help with orders.", toolsets=[orders])
"""

AGENT = "pydantic-ai:shop:build_agent"


def stdio_shop(tmp_path: Path, *cases: dict[str, Any], args: tuple[str, ...] = ()) -> Path:
    return shop(tmp_path, STDIO_AGENT.format(server=str(SERVER), args=list(args)), *cases)


def test_a_scripted_mcp_call_replays_green_against_the_stdio_server_and_is_recorded(
    run_cli: Cli, tmp_path: Path
) -> None:
    second = lookup_case()
    second["model_name"] = "mcp-lookup-again"
    root = stdio_shop(tmp_path, lookup_case(), second)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    for case in reported_cases(root).values():
        (recorded,) = case["record"]["calls"]
        assert (recorded["name"], recorded["arguments"], recorded["result"]) == (
            "lookup_order",
            '{"order_id":"A-1"}',
            "order A-1: shipped",
        )
        assert recorded["success"] is True
    assert not pydantic_ai_mcp._HELD  # every case's server closed after it


def test_an_mcp_error_result_is_a_failed_call_with_the_retry_the_model_saw(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = fixture(
        "mcp-cancel",
        [
            turn(
                "Cancel order A-1.",
                tool_step(call("c1", "cancel_order", order_id="A-1")),
                text_step("Sorry, A-1 has shipped."),
            )
        ],
        {
            "all_tools_succeeded": False,
            "tool_results_contain": [{"tool": "cancel_order", "needle": "cannot be cancelled"}],
        },
    )
    root = stdio_shop(tmp_path, case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    (recorded,) = reported_cases(root)["mcp-cancel"]["record"]["calls"]
    assert recorded["success"] is False
    # pydantic-ai's default tool_error_behavior: the error text back to the model as a retry.
    assert recorded["result"] == (
        "ModelRetry: Error executing tool cancel_order: order A-1 has shipped and cannot be "
        "cancelled"
    )


def test_a_wrong_mcp_result_fails_tool_results_contain_naming_the_tool(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = stdio_shop(tmp_path, lookup_case(), args=("--status", "lost in transit"))
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    case = reported_cases(root)["mcp-lookup"]
    assert case["error"] is None
    failed = [g for g in case["grades"] if not g["passed"]]
    assert [g["check"] for g in failed] == ['tool_results_contain("lookup_order", "A-1: shipped")']
    assert "order A-1: lost in transit" in failed[0]["detail"]


def test_an_unknown_tool_is_refused_with_did_you_mean_and_a_filtered_one_too(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = lookup_case()
    case["turns"][0]["steps"][0]["response"]["tool_calls"][0]["name"] = "lookup_ordr"
    root = stdio_shop(tmp_path, case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    assert (
        "tool 'lookup_ordr' is not registered by agent 'pydantic-ai:shop:build_agent' "
        "(its tools: cancel_order, crash_server, lookup_order); did you mean lookup_order?"
    ) in result.stderr
    refund = lookup_case()
    refund["turns"][0]["steps"][0]["response"]["tool_calls"][0] = call(
        "c1", "refund_order", order_id="A-1", amount=5
    )
    write_suite(root / "evals", {"mcp-lookup.json": refund})
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    assert "tool 'refund_order' is not registered by agent" in result.stderr


def test_a_prefixed_toolset_offers_its_tools_under_the_prefix(run_cli: Cli, tmp_path: Path) -> None:
    source = STDIO_AGENT.format(server=str(SERVER), args=[]).replace(
        'toolsets=[orders.filtered(lambda ctx, tool_def: tool_def.name != "refund_order")]',
        'toolsets=[orders.prefixed("shop")]',
    )
    case = lookup_case(tools_used=["shop_lookup_order"])
    case["turns"][0]["steps"][0]["response"]["tool_calls"][0]["name"] = "shop_lookup_order"
    root = shop(tmp_path, source, case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert (
        reported_cases(root)["mcp-lookup"]["record"]["calls"][0]["result"] == "order A-1: shipped"
    )
    write_suite(root / "evals", {"mcp-lookup.json": lookup_case()})
    result = run_reported(run_cli, root, AGENT)
    assert "tool 'lookup_order' is not registered" in result.stderr
    assert "did you mean shop_lookup_order?" in result.stderr


def test_a_server_that_cannot_start_is_refused_naming_it_with_what_it_said(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pydantic_ai_mcp, "CONNECT_TIMEOUT", 120.0)
    root = stdio_shop(tmp_path, lookup_case(), args=("--exit",))
    began = time.monotonic()
    result = run_reported(run_cli, root, AGENT)
    assert time.monotonic() - began < 60  # an exit is known at once, never the bound
    assert result.returncode == 1
    (line,) = [x for x in result.stderr.splitlines() if "MCP server" in x]
    assert line.startswith(
        "zeroclaw eval: agent 'pydantic-ai:shop:build_agent': MCP server 'python "
    )
    assert "could not be started:" in line
    assert line.endswith("(its stderr: orders server: cannot start (no database))")
    assert "Traceback" not in result.stderr + result.stdout


def test_a_server_that_hangs_on_initialize_is_refused_within_the_bound(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pydantic_ai_mcp, "CONNECT_TIMEOUT", 1.0)
    root = stdio_shop(tmp_path, lookup_case(), args=("--hang",))
    began = time.monotonic()
    result = run_reported(run_cli, root, AGENT)
    assert time.monotonic() - began < 30.0
    assert result.returncode == 1
    assert "could not be started: it did not answer within 1s" in result.stderr


def test_a_stderr_that_is_no_real_file_does_not_stop_the_server(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As under a test's capture: fastmcp would hand the server process this sys.stderr.
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    root = stdio_shop(tmp_path, lookup_case())
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)


def test_a_scripted_mcp_call_replays_green_over_streamable_http(
    run_cli: Cli, tmp_path: Path, http_server: str
) -> None:
    root = shop(tmp_path, HTTP_AGENT.format(url=http_server), lookup_case())
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    (recorded,) = reported_cases(root)["mcp-lookup"]["record"]["calls"]
    assert (recorded["result"], recorded["success"]) == ("order A-1: shipped", True)


def test_an_http_server_nobody_listens_on_is_refused_naming_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    root = shop(tmp_path, HTTP_AGENT.format(url=url), lookup_case())
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    assert f"MCP server '{url}' could not be started:" in result.stderr
    assert "Traceback" not in result.stderr


# A delegate with the MCP toolset, module-level as pydantic-ai's delegation example writes
# agents: one toolset every case shares.
DELEGATING_AGENT = """
import sys

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent, RunContext
from pydantic_ai.mcp import MCPToolset

orders_agent = Agent(
    name="orders_agent",
    instructions="You look orders up.",
    toolsets=[MCPToolset(StdioTransport(sys.executable, [{server!r}]))],
)
support = Agent(name="support", instructions="Route the customer.")


@support.tool
async def ask_orders(ctx: RunContext[None], question: str) -> str:
    result = await orders_agent.run(question, usage=ctx.usage)
    return result.output


def build_agent() -> Agent:
    return support
"""


def test_an_mcp_call_of_a_delegate_is_attributed_to_it(run_cli: Cli, tmp_path: Path) -> None:
    case = fixture(
        "mcp-delegate",
        [
            turn(
                "Where is order A-1?",
                tool_step(call("d1", "ask_orders", question="A-1?")),
                tool_step(call("c1", "lookup_order", order_id="A-1")),
                text_step("A-1 has shipped."),
                text_step("Order A-1 has shipped."),
            )
        ],
        {
            "agents": {
                "orders_agent": {
                    "tools_used": ["lookup_order"],
                    "tool_results_contain": [{"tool": "lookup_order", "needle": "shipped"}],
                }
            },
        },
    )
    second = json.loads(json.dumps(case))
    second["model_name"] = "mcp-delegate-again"
    root = shop(tmp_path, DELEGATING_AGENT.format(server=str(SERVER)), case, second)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    calls = reported_cases(root)["mcp-delegate"]["record"]["calls"]
    assert [(c["name"], c["agent"]) for c in calls] == [
        ("lookup_order", "orders_agent"),
        ("ask_orders", "support"),
    ]
    assert not pydantic_ai_mcp._HELD
    # Only the delegate offers the server's tools.
    wrong = json.loads(json.dumps(case))
    wrong["turns"][0]["steps"] = [
        tool_step(call("c0", "lookup_order", order_id="A-1")),
        text_step("A-1 has shipped."),
    ]
    write_suite(root / "evals", {"mcp-delegate.json": wrong})
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    # As on the SDK: a run error naming the agent asking and what it offers.
    error = reported_cases(root)["mcp-delegate"]["error"]
    assert (
        "the model called tool 'lookup_order', which agent 'support' (the agent asking) does "
        "not offer (its tools: ask_orders)"
    ) in error


def test_mutation_testing_kills_every_boundary_mutant_of_an_mcp_suite(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = stdio_shop(tmp_path, lookup_case())
    result = run_cli(
        "eval", "mutate", "--suite", "evals", "--agent", AGENT, "--json-report", "m.json",
        cwd=root,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout, result.stderr)
    report = json.loads((root / "m.json").read_text(encoding="utf-8"))
    assert report["boundary"]["generated"] > 0
    assert report["boundary"]["killed"] == report["boundary"]["generated"]


def test_live_mode_runs_the_mcp_server_and_record_writes_a_fixture_that_replays_green(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=orders_model, api_key=LIVE_KEY) as provider:
        root = make_project(tmp_path / "project", provider.base_url, {"x.json": LIVE_LOOKUP})
        (root / "shop.py").write_text(
            STDIO_AGENT.format(server=str(SERVER), args=[]), encoding="utf-8"
        )
        runs = Runs(run_cli, root)
        live = runs.live(AGENT)
        assert live.returncode == 0, (live.stdout, live.stderr)
        (case,) = report_of(live)["cases"]
        assert [(c["name"], c["result"]) for c in case["record"]["calls"]] == [
            ("lookup_order", "order A-1: shipped")
        ]
        out = Path("evals/regression/x.json")
        recorded = runs(
            "eval", "record", "--case", "evals/live/x.json", "--out", out, "--agent", AGENT
        )
        asked = len(provider.requests)
    assert recorded.returncode == 0, (recorded.stdout, recorded.stderr)
    replayed = runs(
        "eval", "run", "--suite", "evals/regression", "--agent", AGENT, "--format", "json",
        key=False,
    )  # fmt: skip
    assert replayed.returncode == 0, (replayed.stdout, replayed.stderr)
    assert len(provider.requests) == asked
