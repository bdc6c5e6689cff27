"""pydantic-ai's counterparts of guardrails, recorded and graded as tripwires: an output
validator raising `ModelRetry` until the output retries run out, and a usage limit a
delegating tool's run exceeds. The agent is written the way pydantic-ai's docs write it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, call, fixture, text_step, tool_step, turn, write_module, write_suite

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

SOURCE = '''
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.usage import UsageLimits

support_agent = Agent(instructions="You are the support agent.")
checker_agent = Agent(name="checker", instructions="You check claims.")


@support_agent.tool_plain
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return {"A-1": "shipped"}.get(order_id, "not found")


@support_agent.tool
async def double_check(ctx: RunContext[None], claim: str) -> str:
    """Have the checker agent check a claim."""
    result = await checker_agent.run(
        claim, usage=ctx.usage, usage_limits=UsageLimits(request_limit=1)
    )
    return result.output


@support_agent.output_validator
def no_refund_promises(output: str) -> str:
    if "refund" in output:
        raise ModelRetry("Do not promise refunds.")
    return output


def build_agent() -> Agent:
    return support_agent
'''


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    return tmp_path, write_module(tmp_path, SOURCE, "pai_guarded")


def run(
    run_cli: Cli, project: tuple[Path, str], data: dict[str, Any]
) -> tuple[Any, dict[str, Any] | None]:
    root, module = project
    write_suite(root / "evals", {"f.json": data})
    agent = f"pydantic-ai:{module}:build_agent"
    result = run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent, "--json-report", "r.json", cwd=root
    )
    report = root / "r.json"
    if not report.exists():
        return result, None
    (case,) = json.loads(report.read_text(encoding="utf-8"))["cases"]
    return result, case


def refund(expects: dict[str, Any]) -> dict[str, Any]:
    """The model promises a refund twice: the validator's one retry runs out. The next turn
    goes on."""
    return fixture(
        "refund",
        [
            turn("I want my money back", text_step("I will refund you."), text_step("A refund!")),
            turn(
                "Where is A-1?",
                tool_step(call("c1", "lookup_order", order_id="A-1")),
                text_step("A-1 has shipped."),
            ),
        ],
        expects,
    )


def test_an_output_validator_whose_retries_run_out_is_an_expected_tripwire(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    expects = {"guardrails_tripped": ["no_refund_promises"], "response_contains": ["shipped"]}
    result, case = run(run_cli, project, refund(expects))
    assert case is not None
    assert result.returncode == 0, json.dumps(case, indent=2)
    record = case["record"]
    (trip,) = record["guardrails"]
    assert (trip["name"], trip["kind"], trip["turn"], trip["halted"]) == (
        "no_refund_promises",
        "output_validator",
        0,
        True,
    )
    assert trip["message"] == "Exceeded maximum output retries (1)"
    assert record["turn_responses"] == ["", "A-1 has shipped."]


def test_an_unexpected_validator_tripwire_is_a_failed_check_naming_it(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    result, case = run(run_cli, project, refund({"response_contains": ["shipped"]}))
    assert case is not None and result.returncode == 1
    assert case["error"] is None
    (failed,) = [g for g in case["grades"] if not g["passed"]]
    assert failed["check"] == 'guardrail_tripped("no_refund_promises")'
    assert "output_validator guardrail" in failed["detail"]


def test_a_validator_that_accepts_the_answer_trips_nothing(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    data = fixture(
        "polite",
        [turn("I want my money back", text_step("Let me check your order."))],
        {"guardrails_tripped": ["no_refund_promises"]},
    )
    result, case = run(run_cli, project, data)
    assert case is not None and result.returncode == 1
    (failed,) = [g for g in case["grades"] if not g["passed"]]
    assert failed["detail"] == (
        'guardrails_tripped: expected ["no_refund_promises"], no guardrail tripped'
    )


def test_a_usage_limit_exceeded_is_a_tripwire_named_after_the_limit(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    data = fixture(
        "limit",
        [
            turn(
                "Is A-1 shipped? Double check.",
                tool_step(call("c1", "double_check", claim="A-1 shipped")),
                {**text_step("A step the limit never lets the checker reach."), "agent": "checker"},
            )
        ],
        {"guardrails_tripped": ["request_limit"]},
    )
    result, case = run(run_cli, project, data)
    assert case is not None
    assert result.returncode == 0, json.dumps(case, indent=2)
    (trip,) = case["record"]["guardrails"]
    assert (trip["name"], trip["kind"], trip["halted"]) == ("request_limit", "usage_limit", True)
    assert trip["message"].startswith("The next request would exceed the request_limit of 1")


def test_an_unknown_validator_name_is_refused_with_did_you_mean(
    run_cli: Cli, project: tuple[Path, str]
) -> None:
    result, case = run(run_cli, project, refund({"guardrails_tripped": ["no_refund_promise"]}))
    assert case is None and result.returncode != 0
    assert (
        "$.expects.guardrails_tripped[0]: 'no_refund_promise' is not a guardrail of "
        "pydantic-ai:" in result.stderr
    )
    assert "(did you mean no_refund_promises?)" in result.stderr
