"""`harness.mutation.mutants`: which mutants a case gets, and why the others are not generated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import (
    call,
    case_of,
    echo_fixture,
    fixture,
    greeting_fixture,
    text_step,
    tool_step,
    turn,
)

from harness.mutation.mutants import mutants_of

NO_SNAPSHOT = "no request snapshot of the case for this agent (--update-snapshots takes it)"
UNDECLARED = "the agent declares no instructions (an own loop declares none)"

REPO = Path(__file__).resolve().parents[1]


def names(
    case_data: dict[str, object], harness_tools: bool = True
) -> tuple[set[str], dict[str, str]]:
    found = mutants_of(case_of(case_data), harness_tools)  # type: ignore[arg-type]
    return {m.name for m in found.generated}, {s.name: s.reason for s in found.skipped}


def test_a_tool_case_gets_script_and_boundary_mutants() -> None:
    made, skipped = names(echo_fixture("e"))
    assert made == {
        "drop_tool_call",
        "change_argument",
        "change_final_text",
        "drop_tool_results",
        "drop_call_ids",
        "dispatch_twice",
        "skip_call",
    }
    assert skipped == {
        "swap_calls": "fewer than two scripted calls",
        "drop_last_turn": "one turn only",
        "wrong_handoff": "the agent hands off to no other agent",
        "drop_history": "one turn only",
        "failure_as_success": "no scripted call to a failing tool",
        "reverse_parallel": "no step calls two tools at once",
        "drop_instructions": f"{NO_SNAPSHOT}, and {UNDECLARED}",
        "change_tool_schema": NO_SNAPSHOT,
        "change_model_settings": NO_SNAPSHOT,
    }


def test_a_negative_case_without_tools_gets_no_tool_mutant_and_says_why() -> None:
    made, skipped = names(greeting_fixture("g"))
    assert made == {"change_final_text"}
    assert skipped["drop_tool_results"] == "no scripted tool call"
    assert skipped["drop_call_ids"] == "no scripted tool call"
    assert skipped["dispatch_twice"] == "no scripted tool call"


def test_tool_faults_are_not_generated_for_an_agent_running_its_own_tools() -> None:
    made, skipped = names(echo_fixture("e"), harness_tools=False)
    assert "dispatch_twice" not in made and "drop_tool_results" in made
    assert skipped["skip_call"].startswith("the agent runs its own tools")


def test_mutated_cases_have_their_own_ids_and_keep_the_expectations() -> None:
    data = fixture(
        "multi",
        [
            turn(
                "a",
                tool_step(call("c1", message="x"), call("c2", "fail", reason="r")),
                text_step("t1"),
            ),
            turn("b", text_step("t2")),
        ],
        {"response_contains": ["t2"]},
    )
    found = mutants_of(case_of(data), True)
    ids = {m.case.id for m in found.generated}
    assert len(ids) == len(found.generated) and all(i.startswith("multi~") for i in ids)
    swapped = next(m for m in found.generated if m.name == "swap_calls")
    calls = json.loads(swapped.case.text)["turns"][0]["steps"][0]["response"]["tool_calls"]
    assert [c["id"] for c in calls] == ["c2", "c1"]
    dropped = next(m for m in found.generated if m.name == "drop_last_turn")
    assert len(dropped.case.trace.turns) == 1
    assert all(
        m.case.trace.expects == found.generated[0].case.trace.expects for m in found.generated
    )
    assert {"failure_as_success", "drop_history"} <= {m.name for m in found.generated}
    # Calls of one step may run in any order: reversing them is a fault only where a check
    # claims their order.
    assert {s.name: s.reason for s in found.skipped}["reverse_parallel"] == (
        "no check claims an order between the calls of one step (call_index)"
    )


def test_reversing_parallel_calls_is_generated_where_their_order_is_claimed() -> None:
    data = fixture(
        "ordered",
        [turn("a", tool_step(call("c1", message="x"), call("c2", message="y")), text_step("t"))],
        {"tool_arguments_contain": [{"tool": "echo", "needle": "x", "call_index": 0}]},
    )
    found = mutants_of(case_of(data), True)
    reverse = next(m for m in found.generated if m.name == "reverse_parallel")
    assert reverse.field == "$.turns[0].steps[0]"


def test_an_exempt_rule_keeps_the_mutants_it_would_kill_from_being_generated() -> None:
    data = echo_fixture("e")
    data["expects"]["loop_exempt"] = {"dispatches": "a test of exemptions"}
    made, skipped = names(data)
    assert "dispatch_twice" not in made and "skip_call" not in made
    assert skipped["dispatch_twice"] == (
        "the case is exempt from loop(dispatches): a test of exemptions"
    )


def test_no_tool_results_mutant_where_no_request_follows_a_tool_step() -> None:
    data = fixture(
        "stop", [turn("a", tool_step(call("c1", message="x")))], {"tools_used": ["echo"]}
    )
    made, skipped = names(data)
    assert "drop_tool_results" not in made
    assert skipped["drop_tool_results"] == "no model request follows a tool step in its turn"


def test_a_lone_surrogate_in_the_fixture_leaves_every_mutant_hashable() -> None:
    # JSON may escape a lone surrogate; a mutated fixture written back with it raw could
    # not be encoded as UTF-8, and hashing the mutant for its report crashed the run.
    data = echo_fixture("e")
    data["expects"]["loop_exempt"] = {"history": "why \ud800"}
    found = mutants_of(case_of(data), True)
    script = [m for m in found.generated if m.family == "script"]
    assert script
    for mutant in script:
        assert len(mutant.case.fixture_sha256) == 64
        assert json.loads(mutant.case.text)["expects"]["loop_exempt"]["history"] == "why \ud800"


TRIAGE_HANDOFFS = {
    "triage": {"transfer_to_billing": "billing", "transfer_to_faq": "faq"},
    "faq": {"transfer_to_triage": "triage"},
}


def handoff_fixture(*names: str) -> dict[str, Any]:
    steps = [tool_step({"id": f"h{i}", "name": n, "arguments": {}}) for i, n in enumerate(names)]
    return fixture("h", [turn("help", *steps, text_step("done"))], {"response_contains": ["done"]})


def test_a_scripted_handoff_is_made_to_another_agent_of_the_graph() -> None:
    # faq can hand back to triage only: the first handoff that has another target is
    # triage's, to billing instead of faq.
    data = handoff_fixture("transfer_to_faq", "transfer_to_triage", "transfer_to_faq")
    found = mutants_of(case_of(data), True, TRIAGE_HANDOFFS)
    (mutant,) = (m for m in found.generated if m.name == "wrong_handoff")
    assert mutant.family == "script" and mutant.prepare is None
    assert mutant.description == "h0 hands off to billing, not faq"
    assert mutant.field == "$.turns[0].steps[0].response.tool_calls[0].name"
    steps = mutant.case.trace.turns[0].steps
    calls = [c.name for step in steps for c in getattr(step.response, "tool_calls", ())]
    assert calls == ["transfer_to_billing", "transfer_to_triage", "transfer_to_faq"]


def test_no_handoff_mutant_without_a_graph_or_another_agent_to_hand_to() -> None:
    only_back = handoff_fixture("transfer_to_triage")
    found = mutants_of(case_of(only_back), True, TRIAGE_HANDOFFS)
    reasons = {s.name: s.reason for s in found.skipped}
    assert reasons["wrong_handoff"] == "no scripted handoff's agent hands off to any other agent"
    found = mutants_of(case_of(echo_fixture("e")), True, TRIAGE_HANDOFFS)
    assert {s.name: s.reason for s in found.skipped}["wrong_handoff"] == "no scripted handoff"
    # A single agent, or pydantic-ai's delegation (a call that comes back): no graph of
    # handoffs, whatever the script calls.
    found = mutants_of(case_of(handoff_fixture("transfer_to_faq")), True)
    reasons = {s.name: s.reason for s in found.skipped}
    assert reasons["wrong_handoff"] == "the agent hands off to no other agent"


def test_no_dispatch_fault_where_every_scripted_call_is_a_handoff() -> None:
    # The framework makes a handoff; no dispatch does, so no dispatch fault can reach it
    # (generated, such a mutant could only survive).
    found = mutants_of(case_of(handoff_fixture("transfer_to_faq")), True, TRIAGE_HANDOFFS)
    reasons = {s.name: s.reason for s in found.skipped}
    for name in ("dispatch_twice", "skip_call"):
        assert reasons[name] == "every scripted call is a handoff, which no dispatch makes"
    # Beside a dispatched call, a handoff keeps no fault from being generated.
    found = mutants_of(case_of(echo_fixture("e")), True, TRIAGE_HANDOFFS)
    assert {"dispatch_twice", "skip_call"} <= {m.name for m in found.generated}


def test_what_the_agent_shows_its_model_is_mutated_where_a_snapshot_holds_it() -> None:
    case = case_of(echo_fixture("e"))
    shown = "# header\n\n=== agent: a\n--- instructions\nBe terse.\n--- tool: echo\n"
    made = {m.name for m in mutants_of(case, True, None, shown).generated}
    assert {"drop_instructions", "change_tool_schema"} <= made
    bare = "# header\n\n=== agent: a\n--- instructions: none\n"
    skipped = {s.name: s.reason for s in mutants_of(case, True, None, bare).skipped}
    assert skipped["drop_instructions"] == "the agent sends its model no instructions"
    assert skipped["change_tool_schema"] == "the agent offers its model no tool"


def test_dropped_instructions_need_no_snapshot_where_the_agent_declares_some() -> None:
    data = echo_fixture("e")
    made = {m.name for m in mutants_of(case_of(data), True, None, None, True).generated}
    assert "drop_instructions" in made
    data["expects"]["loop_exempt"] = {"instructions": "sent another way"}
    skipped = {s.name: s.reason for s in mutants_of(case_of(data), True, None, None, True).skipped}
    assert skipped["drop_instructions"] == (
        f"{NO_SNAPSHOT}, and the case is exempt from loop(instructions): sent another way"
    )


def test_changed_model_settings_are_generated_where_the_snapshot_holds_settings() -> None:
    case = case_of(echo_fixture("e"))
    tuned = "# header\n\n=== agent: a\n--- instructions: none\n--- model settings\n{}\n"
    assert "change_model_settings" in {
        m.name for m in mutants_of(case, True, None, tuned).generated
    }
    bare = "# header\n\n=== agent: a\n--- instructions: none\n"
    skipped = {s.name: s.reason for s in mutants_of(case, True, None, bare).skipped}
    assert skipped["change_model_settings"] == "the agent sends its model no settings of its own"


def test_dropped_instructions_need_a_model_request_to_be_killed_without_a_snapshot() -> None:
    # A guardrail that ends the turn before the model is asked: no request to lose them.
    data = fixture("guarded", [turn("My card is 4111 1111 1111 1111")], {"max_tool_calls": 0})
    skipped = {s.name: s.reason for s in mutants_of(case_of(data), True, None, None, True).skipped}
    assert skipped["drop_instructions"] == (
        f"{NO_SNAPSHOT}, and no model request is scripted (a guardrail may end every turn first)"
    )
