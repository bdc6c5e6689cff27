"""Admission of a turn's `approvals` (keyed by a scripted call's id in replay, by a tool's
name live) and of `approvals_requested`: strict, each problem at its path, with did-you-mean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import (
    admit,
    call,
    live_trace,
    refuse_one,
    refused,
    replay_trace,
    text_step,
    tool_step,
    turn,
)
from conftest import write_fixture as write

from harness.agents.protocol import AgentSurface

REFUNDS = AgentSurface("openai-agents:desk:build", frozenset({"lookup_order", "refund_order"}))


def two_turns(**approvals: dict[str, Any]) -> dict[str, Any]:
    """Turn 0 refunds (call_refund), turn 1 looks up (call_lookup); `approvals` go to turn 0."""
    data = replay_trace(
        turns=[
            turn(
                "Refund A-1",
                tool_step(call("call_refund", "refund_order", order_id="A-1")),
                text_step("Refunded."),
            ),
            turn(
                "Look up A-2",
                tool_step(call("call_lookup", "lookup_order", order_id="A-2")),
                text_step("Shipped."),
            ),
        ],
        expects={"approvals_requested": ["refund_order"]},
    )
    data["turns"][0]["approvals"] = approvals
    return data


def test_a_decision_keyed_by_a_call_of_its_turn_is_admitted(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.json", two_turns(call_refund={"approve": True}))
    case = admit(path, agent=REFUNDS)
    decisions = case.trace.turns[0].approvals
    assert decisions is not None and decisions["call_refund"].approve is True
    rejected = two_turns(call_refund={"approve": False, "reason": "over the limit"})
    assert admit(write(tmp_path, "no.json", rejected), agent=REFUNDS).trace.turns[0].approvals


def test_an_id_no_call_of_the_turn_has_is_refused_with_did_you_mean(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        two_turns(call_refnd={"approve": True}),
        "$.turns[0].approvals.call_refnd",
        "no call of turn 0 has the id 'call_refnd' (did you mean call_refund?): a decision is "
        "keyed by the id of a call the turn scripts; its calls: call_refund (refund_order)",
        agent=REFUNDS,
    )


def test_a_call_of_another_turn_is_refused_naming_its_turn(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        two_turns(call_lookup={"approve": True}),
        "$.turns[0].approvals.call_lookup",
        "call 'call_lookup' is scripted in turn 1, not turn 0: decide it there",
        agent=REFUNDS,
    )


def test_a_reason_goes_with_a_rejection_only_and_is_not_blank(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        two_turns(call_refund={"approve": True, "reason": "fine"}),
        "$.turns[0].approvals.call_refund.reason",
        'a reason goes with a rejection only ("approve": false): remove it',
        agent=REFUNDS,
    )
    refuse_one(
        tmp_path,
        two_turns(call_refund={"approve": False, "reason": "  "}),
        "$.turns[0].approvals.call_refund.reason",
        "blank reason: give the text the model is told, or leave it out for the framework's "
        "own rejection text",
        agent=REFUNDS,
    )


def test_a_decision_is_strict_unknown_keys_and_types_refused(tmp_path: Path) -> None:
    path, problems = refused(tmp_path, two_turns(call_refund={"approved": True}), agent=REFUNDS)
    assert problems == [
        f"{path}: $.turns[0].approvals.call_refund.approved: unknown key (did you mean approve?)",
        f"{path}: $.turns[0].approvals.call_refund.approve: missing required key",
    ]
    refuse_one(
        tmp_path,
        two_turns(call_refund={"approve": "yes"}),
        "$.turns[0].approvals.call_refund.approve",
        "Expected `bool`, got `str`",
        agent=REFUNDS,
    )


def test_an_empty_block_decides_nothing_and_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        two_turns(),
        "$.turns[0].approvals",
        "decides nothing: remove it, or give a decision per call",
        agent=REFUNDS,
    )


def test_a_live_decision_is_keyed_by_a_tool_of_the_agent(tmp_path: Path) -> None:
    data = live_trace(expects={"approvals_requested": ["refund_order"]})
    data["turns"][0]["approvals"] = {"refund_order": {"approve": True}}
    assert admit(write(tmp_path, "live.json", data), "live", REFUNDS).id == "live-echo"
    data["turns"][0]["approvals"] = {"refund": {"approve": True}}
    refuse_one(
        tmp_path,
        data,
        "$.turns[0].approvals.refund",
        "'refund' is not a tool of the agent (did you mean refund_order?): in a live case a "
        "decision is keyed by the tool's name (the provider makes the call ids up); its "
        "tools: lookup_order, refund_order",
        mode="live",
        agent=REFUNDS,
    )


def test_approvals_requested_names_tools_of_the_agent(tmp_path: Path) -> None:
    data = two_turns(call_refund={"approve": True})
    data["expects"]["approvals_requested"] = ["refnd_order"]
    refuse_one(
        tmp_path,
        data,
        "$.expects.approvals_requested[0]",
        "'refnd_order' is not a tool of openai-agents:desk:build (did you mean refund_order?); "
        "its tools: lookup_order, refund_order",
        agent=REFUNDS,
    )


def test_approvals_requested_empty_is_a_check_the_empty_run_passes(tmp_path: Path) -> None:
    # `[]` (no call may ask) is a check like `handoffs: []`: it needs a companion check.
    data = replay_trace(expects={"approvals_requested": []})
    refuse_one(
        tmp_path,
        data,
        "$.expects",
        "every check passes against an empty run (no response, no tool calls): add a check "
        "only a working agent satisfies",
    )
    data["expects"]["response_contains"] = ["hello"]
    assert admit(write(tmp_path, "ok.json", data)).id == "echo-hello"
