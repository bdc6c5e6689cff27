"""`harness.agents.sdk_mcp` through the SDK adapter: an agent's MCP servers (`mcp_servers=`,
stdio and streamable HTTP), real servers written with the `mcp` package on loopback. Their
tools are learnt at admission (filters respected, unknown names refused), their calls are
replayed against the running server and recorded like function tools, and a server that
cannot start, or hangs, is a refusal naming it, within the bound."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    report_of,
    reported_cases,
    run_reported,
    text_step,
    tool_step,
    turn,
    write_suite,
)

from harness.agents import sdk_mcp

SERVER = REPO / "tests" / "_mcp_server.py"

# The user's agent, written as the SDK's MCP docs write one: the server configured on the
# agent, its lifecycle left to whoever runs the agent (here, the harness).
STDIO_AGENT = """
import sys

from agents import Agent
from agents.mcp import MCPServerStdio, create_static_tool_filter


def build_agent() -> Agent:
    orders = MCPServerStdio(
        name="orders",
        params={{"command": sys.executable, "args": [{server!r}, *{args!r}]}},
        # Refunds are for a human: the agent is never offered the tool.
        tool_filter=create_static_tool_filter(blocked_tool_names=["refund_order"]),
    )
    return Agent(name="support", instructions="You help with orders.", mcp_servers=[orders])
"""

HTTP_AGENT = """
from agents import Agent
from agents.mcp import MCPServerStreamableHttp


def build_agent() -> Agent:
    orders = MCPServerStreamableHttp(name="orders", params={{"url": {url!r}}})
    return Agent(name="support", instructions="You help with orders.", mcp_servers=[orders])
"""

AGENT = "openai-agents:shop:build_agent"


def lookup_case(**expects: Any) -> dict[str, Any]:
    return fixture(
        "mcp-lookup",
        [
            turn(
                "Where is order A-1?",
                tool_step(call("c1", "lookup_order", order_id="A-1")),
                text_step("Order A-1 has shipped."),
            )
        ],
        expects
        or {
            "tools_used": ["lookup_order"],
            "tool_arguments_contain": [{"tool": "lookup_order", "needle": '"order_id":"A-1"'}],
            "tool_results_contain": [{"tool": "lookup_order", "needle": "A-1: shipped"}],
            "all_tools_succeeded": True,
        },
    )


def shop(tmp_path: Path, source: str, *cases: dict[str, Any]) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "shop.py").write_text(source, encoding="utf-8")
    write_suite(root / "evals", {f"{c['model_name']}.json": c for c in cases})
    return root


def stdio_shop(tmp_path: Path, *cases: dict[str, Any], args: tuple[str, ...] = ()) -> Path:
    return shop(tmp_path, STDIO_AGENT.format(server=str(SERVER), args=list(args)), *cases)


# --- stdio ------------------------------------------------------------------------------------


def test_a_scripted_mcp_call_replays_green_against_the_stdio_server_and_is_recorded(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = stdio_shop(tmp_path, lookup_case())
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    (recorded,) = reported_cases(root)["mcp-lookup"]["record"]["calls"]
    # What the server answered, as the model saw it: the call really reached the server.
    assert recorded["name"] == "lookup_order"
    assert recorded["arguments"] == '{"order_id":"A-1"}'
    assert recorded["result"] == "order A-1: shipped"
    assert recorded["success"] is True
    assert recorded["agent"] is None  # one agent: nothing named


def test_an_mcp_error_result_is_recorded_as_a_failed_call_with_the_text_the_model_saw(
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
    assert "order A-1 has shipped and cannot be cancelled" in recorded["result"]


def test_a_wrong_mcp_result_fails_tool_results_contain_naming_the_tool(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = stdio_shop(tmp_path, lookup_case(), args=("--status", "lost in transit"))
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    case = reported_cases(root)["mcp-lookup"]
    assert case["error"] is None  # the agent ran: a check failed, not the run
    failed = [g for g in case["grades"] if not g["passed"]]
    assert [g["field"] for g in failed] == ["$.expects.tool_results_contain[0]"]
    assert failed[0]["check"] == 'tool_results_contain("lookup_order", "A-1: shipped")'
    assert "order A-1: lost in transit" in failed[0]["detail"]
    assert case["record"]["calls"][0]["result"] == "order A-1: lost in transit"


def test_a_tool_the_server_does_not_have_is_refused_with_did_you_mean(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = lookup_case()
    case["turns"][0]["steps"][0]["response"]["tool_calls"][0]["name"] = "lookup_ordr"
    root = stdio_shop(tmp_path, case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    assert (
        "tool 'lookup_ordr' is not registered by agent 'openai-agents:shop:build_agent' "
        "(its tools: cancel_order, crash_server, lookup_order); did you mean lookup_order?"
    ) in result.stderr
    assert not (root / "r.json").exists()  # refused: nothing ran


def test_a_tool_the_filter_hides_is_refused(run_cli: Cli, tmp_path: Path) -> None:
    case = lookup_case()
    case["turns"][0]["steps"][0]["response"]["tool_calls"][0] = call(
        "c1", "refund_order", order_id="A-1", amount=5
    )
    root = stdio_shop(tmp_path, case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    assert "tool 'refund_order' is not registered by agent" in result.stderr


def test_a_dynamic_tool_filter_is_applied_with_the_agent_asking(
    run_cli: Cli, tmp_path: Path
) -> None:
    source = STDIO_AGENT.format(server=str(SERVER), args=[]).replace(
        'tool_filter=create_static_tool_filter(blocked_tool_names=["refund_order"])',
        "tool_filter=lambda ctx, tool: ctx.agent.name == 'support' and 'order' in tool.name",
    )
    root = shop(tmp_path, source, lookup_case())
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    crash = lookup_case()
    crash["turns"][0]["steps"][0]["response"]["tool_calls"][0] = call("c1", "crash_server")
    write_suite(root / "evals", {"mcp-lookup.json": crash})
    result = run_reported(run_cli, root, AGENT)
    assert "tool 'crash_server' is not registered" in result.stderr
    assert "refund_order" in result.stderr  # kept by this filter: listed among its tools


def test_a_server_that_cannot_start_is_refused_naming_it_quickly(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server that exits is known at once: the refusal never waits out the bound.
    monkeypatch.setattr(sdk_mcp, "CONNECT_TIMEOUT", 120.0)
    root = stdio_shop(tmp_path, lookup_case(), args=("--exit",))
    began = time.monotonic()
    result = run_reported(run_cli, root, AGENT)
    assert time.monotonic() - began < 60
    assert result.returncode == 1
    assert (
        "zeroclaw eval: agent 'openai-agents:shop:build_agent': MCP server 'orders' could not "
        "be started: MCPError: Connection closed (its stderr: orders server: cannot start "
        "(no database))"
    ) in result.stderr  # what the server said, quoted from the harness's own log of it
    assert "Traceback" not in result.stderr + result.stdout


def test_a_server_that_hangs_on_initialize_is_refused_within_the_bound(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sdk_mcp, "CONNECT_TIMEOUT", 1.0)
    root = stdio_shop(tmp_path, lookup_case(), args=("--hang",))
    began = time.monotonic()
    result = run_reported(run_cli, root, AGENT)
    # The bound, and the seconds the stdio transport gives the process to exit (the
    # machine may be busy: what matters is that it is not the hour the server sleeps).
    assert time.monotonic() - began < 30.0
    assert result.returncode == 1
    assert "MCP server 'orders' could not be started: it did not answer within 1s" in (
        result.stderr
    )


def test_a_server_that_crashes_mid_case_ends_it_with_a_run_error_naming_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = fixture(
        "mcp-crash",
        [turn("Crash.", tool_step(call("c1", "crash_server")), text_step("never asked"))],
        {"tools_used": ["crash_server"]},
    )
    root = stdio_shop(tmp_path, case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    report = reported_cases(root)["mcp-crash"]
    assert report["error"] == (
        "MCPServerUnavailable: MCP server(s) 'orders' of agent 'support' could not list their "
        "tools: MCPError: Connection closed"
    )
    (recorded,) = report["record"]["calls"]
    assert recorded["success"] is False  # the SDK told the model an error occurred


def test_each_case_connects_its_own_server_and_cleans_it_up(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[sdk_mcp.CaseServers] = []
    closed: list[sdk_mcp.CaseServers] = []
    real_open, real_close = sdk_mcp.CaseServers.open, sdk_mcp.CaseServers.close

    async def open_(self: sdk_mcp.CaseServers) -> None:
        await real_open(self)
        opened.append(self)

    async def close(self: sdk_mcp.CaseServers) -> None:
        await real_close(self)
        closed.append(self)

    monkeypatch.setattr(sdk_mcp.CaseServers, "open", open_)
    monkeypatch.setattr(sdk_mcp.CaseServers, "close", close)
    second = lookup_case()
    second["model_name"] = "mcp-lookup-again"
    root = stdio_shop(tmp_path, lookup_case(), second)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    # Admission's connection to list the tools, then one per case: none shared.
    assert len(opened) == 3
    assert len({id(c) for c in opened}) == 3
    assert all(any(c is d for d in closed) for c in opened)  # each cleaned up after
    assert not sdk_mcp._IN_USE


# --- streamable HTTP ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def http_server() -> Iterator[str]:
    """The orders server over streamable HTTP on a free loopback port, stopped afterwards."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, "the MCP server exited"
            time.sleep(0.05)
        else:
            pytest.fail("the MCP server never listened")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_a_scripted_mcp_call_replays_green_over_streamable_http(
    run_cli: Cli, tmp_path: Path, http_server: str
) -> None:
    root = shop(tmp_path, HTTP_AGENT.format(url=http_server), lookup_case())
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    (recorded,) = reported_cases(root)["mcp-lookup"]["record"]["calls"]
    assert (recorded["name"], recorded["result"], recorded["success"]) == (
        "lookup_order",
        "order A-1: shipped",
        True,
    )


def test_an_unknown_tool_is_refused_over_streamable_http_too(
    run_cli: Cli, tmp_path: Path, http_server: str
) -> None:
    case = lookup_case()
    case["turns"][0]["steps"][0]["response"]["tool_calls"][0]["name"] = "track_parcel"
    root = shop(tmp_path, HTTP_AGENT.format(url=http_server), case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    assert "tool 'track_parcel' is not registered" in result.stderr
    assert "refund_order" in result.stderr  # no filter on this one


def test_an_http_server_nobody_listens_on_is_refused_naming_it(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sdk_mcp, "CONNECT_TIMEOUT", 120.0)
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    root = shop(tmp_path, HTTP_AGENT.format(url=url), lookup_case())
    began = time.monotonic()
    result = run_reported(run_cli, root, AGENT)
    assert time.monotonic() - began < 60
    assert result.returncode == 1
    assert "MCP server 'orders' could not be started:" in result.stderr
    assert "Traceback" not in result.stderr


# --- several agents, mutation testing -------------------------------------------------------

TRIAGE_AGENT = """
import sys

from agents import Agent
from agents.mcp import MCPServerStdio


def build_agent() -> Agent:
    orders = MCPServerStdio(
        name="orders", params={{"command": sys.executable, "args": [{server!r}]}}
    )
    orders_agent = Agent(
        name="orders_agent", instructions="You look orders up.", mcp_servers=[orders]
    )
    return Agent(name="triage_agent", instructions="Route the customer.", handoffs=[orders_agent])
"""


def test_an_mcp_call_in_a_graph_is_attributed_to_the_agent_whose_server_it_is(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = fixture(
        "mcp-handoff",
        [
            turn(
                "Where is order A-1?",
                tool_step(call("h1", "transfer_to_orders_agent")),
                tool_step(call("c1", "lookup_order", order_id="A-1")),
                text_step("Order A-1 has shipped."),
            )
        ],
        {
            "handoffs": ["orders_agent"],
            "agents": {
                "orders_agent": {
                    "tools_used": ["lookup_order"],
                    "tool_results_contain": [{"tool": "lookup_order", "needle": "shipped"}],
                }
            },
        },
    )
    root = shop(tmp_path, TRIAGE_AGENT.format(server=str(SERVER)), case)
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    (recorded,) = reported_cases(root)["mcp-handoff"]["record"]["calls"]
    assert (recorded["name"], recorded["agent"], recorded["success"]) == (
        "lookup_order",
        "orders_agent",
        True,
    )
    # Only the agent with the server offers its tools: triage asking for one is refused.
    wrong = json.loads(json.dumps(case))
    wrong["turns"][0]["steps"][0] = tool_step(call("c0", "lookup_order", order_id="A-1"))
    wrong["turns"][0]["steps"][1] = text_step("A-1 has shipped.")
    wrong["turns"][0]["steps"].pop()
    write_suite(root / "evals", {"mcp-handoff.json": wrong})
    result = run_reported(run_cli, root, AGENT)
    assert result.returncode == 1
    error = reported_cases(root)["mcp-handoff"]["error"]
    assert "the model called tool 'lookup_order', which agent 'triage_agent'" in error


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


# --- live mode and record -------------------------------------------------------------------


def orders_model(body: Any) -> Action:
    """A provider that looks the order up with the MCP tool when offered it, then answers
    from what the server said."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text_reply(f"The server says: {last['content']}")
    offered = {tool["function"]["name"] for tool in body.get("tools") or []}
    if "lookup_order" not in offered:
        return text_reply("I have no lookup tool.")
    return tool_reply([("call_lookup", "lookup_order", {"order_id": "A-1"})])


LIVE_LOOKUP = live_case(
    "live-lookup",
    "Where is order A-1?",
    id="live-lookup",
    expects={
        "tools_used": ["lookup_order"],
        "tool_results_contain": [{"tool": "lookup_order", "needle": "A-1: shipped"}],
        "response_contains": ["A-1: shipped"],
    },
)


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
    written = json.loads((root / out).read_text(encoding="utf-8"))
    (step, _) = written["turns"][0]["steps"]
    assert step["response"]["tool_calls"][0]["name"] == "lookup_order"
    replayed = runs(
        "eval", "run", "--suite", "evals/regression", "--agent", AGENT, "--format", "json",
        key=False,
    )  # fmt: skip
    assert replayed.returncode == 0, (replayed.stdout, replayed.stderr)
    assert len(provider.requests) == asked  # replay never asks the provider
