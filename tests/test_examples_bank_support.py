"""The bank support example (`examples/pydantic_ai_bank_support`): its suite passes on the
agent as written and fails, exit status 1, on an agent broken in each of the ways the suite
is there to catch, with a check that names what broke: a structured answer that lost a
field, a tool that no longer writes the deps, the output validator removed, and an MCP tool
whose result is wrong. `zeroclaw eval mutate` kills every boundary mutant of the suite."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, RUN_ERROR, Cli, assert_fails_naming, run_reported_cases

BANK = REPO / "examples" / "pydantic_ai_bank_support"
AGENT = "pydantic-ai:bank_support:support_agent"

# A broken agent is the example's agent rebuilt from its own parts, less what broke.
REBUILT = """
from pydantic_ai import Agent

import bank_support as bank


def rebuilt(output_type=bank.SupportAnswer, tools=None, validator=True, toolset=None):
    agent = Agent(
        deps_type=bank.SupportDeps,
        output_type=output_type,
        name="bank_support",
        instructions=bank.INSTRUCTIONS,
        tools=tools if tools is not None else [bank.customer_balance, bank.block_card],
        toolsets=[toolset if toolset is not None else bank.bank_info_toolset()],
    )
    agent.instructions(bank.customer_name)
    if validator:
        agent.output_validator(bank.blocked_only_if_blocked)
    return agent
"""


@pytest.fixture
def bank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example, copied to a directory of its own the test may add broken agents to."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "rebuilt.py").write_text(REBUILT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    return root


def run_suite(run_cli: Cli, root: Path, agent: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    return run_reported_cases(run_cli, root, agent)


def test_the_suite_passes_on_the_agent_as_written(run_cli: Cli, bank: Path) -> None:
    result, cases = run_suite(run_cli, bank, AGENT)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert all(case["passed"] and not case["error"] for case in cases.values()), cases
    fixtures = [json.loads(p.read_text("utf-8")) for p in sorted(bank.glob("evals/*.json"))]
    assert {data["description"].split(".")[0] for data in fixtures} == {"Positive", "Negative"}
    assert sum(len(data["turns"]) > 1 for data in fixtures) >= 1


def test_a_rebuilt_agent_passes_so_each_break_is_the_only_change(run_cli: Cli, bank: Path) -> None:
    (bank / "broken_bank.py").write_text(
        "from rebuilt import rebuilt\n\nsupport_agent = rebuilt()\n", encoding="utf-8"
    )
    result, _ = run_suite(run_cli, bank, "pydantic-ai:broken_bank:support_agent")
    assert result.returncode == 0, (result.stdout, result.stderr)


# Each broken agent: its module, the case that must fail, the failing check naming the
# cause (a prefix of the check's name) and words of that check or its detail.
BROKEN: dict[str, tuple[str, str, str, str]] = {
    "structured-answer-lost-card-blocked": (
        """
        from pydantic import BaseModel

        from rebuilt import rebuilt


        class SupportAnswer(BaseModel):
            advice: str
            blocked: bool = False  # renamed: what the model says of the card is dropped
            risk: int


        support_agent = rebuilt(output_type=SupportAnswer, validator=False)
        """,
        "lost-card-blocked",
        'response_json("/card_blocked")',
        "pointer not present",
    ),
    "block-card-no-longer-writes-the-deps": (
        """
        from pydantic_ai import RunContext

        import bank_support as bank
        from rebuilt import rebuilt


        def block_card(ctx: RunContext[bank.SupportDeps], card_last4: str, reason: str) -> str:
            \"\"\"Block one of the customer's cards at once.

            Args:
                card_last4: The last four digits of the card.
                reason: Why it is blocked: lost, stolen or fraud.
            \"\"\"
            # The write to the deps was lost: the customer hears it is blocked, nothing is.
            return f"card ending {card_last4} blocked ({reason}); a new card is on its way"


        support_agent = rebuilt(tools=[bank.customer_balance, block_card], validator=False)
        """,
        "lost-card-blocked",
        'context_json("/blocked_cards")',
        "4821",
    ),
    "output-validator-removed": (
        """
        from rebuilt import rebuilt

        support_agent = rebuilt(validator=False)
        """,
        # The first answer ends the run: the retry and the steps after it are never asked for.
        "validator-refuses-an-unblocked-claim",
        RUN_ERROR,
        "turn 0 scripted 2 step(s) the agent never requested",
    ),
    "bank-info-server-with-wrong-rates": (
        """
        import sys
        from pathlib import Path

        from fastmcp.client.transports import StdioTransport
        from pydantic_ai.mcp import MCPToolset

        from rebuilt import rebuilt

        WRONG = Path(__file__).with_name("wrong_rates_server.py")

        support_agent = rebuilt(
            toolset=MCPToolset(StdioTransport(sys.executable, [str(WRONG)]), id="bank_info")
        )
        """,
        "exchange-rate-from-the-mcp-server",
        "tool_results_contain",
        "exchange_rate",
    ),
}

# The bank-info server with yesterday's rates: the same tools, a wrong answer.
WRONG_RATES_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("bank-info")


@server.tool()
def exchange_rate(currency: str) -> str:
    \"\"\"Today's rate of a currency in EUR.\"\"\"
    return f"1 {currency.upper()} = 0.87 EUR today"


@server.tool()
def branch_hours(city: str) -> str:
    \"\"\"The opening hours of the bank's branch in a city.\"\"\"
    return f"no branch in {city}"


if __name__ == "__main__":
    server.run()
"""


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_agent_fails_the_suite_with_a_check_naming_the_cause(
    run_cli: Cli, bank: Path, broken: str
) -> None:
    source, case_id, check, words = BROKEN[broken]
    (bank / "broken_bank.py").write_text(textwrap.dedent(source), encoding="utf-8")
    (bank / "wrong_rates_server.py").write_text(WRONG_RATES_SERVER, encoding="utf-8")
    result, cases = run_suite(run_cli, bank, "pydantic-ai:broken_bank:support_agent")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert_fails_naming(cases[case_id], check, words)


def test_mutate_kills_every_boundary_mutant_of_the_suite(run_cli: Cli, bank: Path) -> None:
    result = run_cli(
        "eval", "mutate", "--suite", "evals", "--agent", AGENT, "--json-report", "m.json", cwd=bank
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    document = json.loads((bank / "m.json").read_text(encoding="utf-8"))
    boundary = [
        m for case in document["cases"] for m in case["mutants"] if m["family"] == "boundary"
    ]
    assert boundary and all(m["killed"] for m in boundary), [m for m in boundary if not m["killed"]]
