"""`harness.reporters.claims`: which recorded dispatch and which handoff each model request
of a transcript shows under it, in a run of one agent and of several."""

from __future__ import annotations

from harness.model_boundary import Handoff, ToolCall
from harness.reporters.claims import HandoffsAfter, Unclaimed
from harness.tool_registry import RecordedCall


def test_a_call_is_claimed_only_by_a_request_of_the_agent_that_dispatched_it() -> None:
    # Triage's `echo` is its handoff (never dispatched); billing's `echo` is billing's.
    billing = RecordedCall("echo", '{"message":"hi"}', "hi", True, 1.0, "billing")
    pending = Unclaimed([billing])
    assert pending.take(ToolCall("h1", "echo", {"message": "to billing"}), "triage") is None
    assert pending.take(ToolCall("c1", "echo", {"message": "hi"}), "billing") is billing
    assert pending.left() == []


def test_a_run_of_one_agent_claims_by_name_and_arguments_then_by_name() -> None:
    one = RecordedCall("echo", '{"message":"one"}', "one", True, 1.0)
    two = RecordedCall("echo", '{"message":"two"}', "two", True, 1.0)
    pending = Unclaimed([one, two])
    assert pending.take(ToolCall("a", "echo", {"message": "two"})) is two
    assert pending.take(ToolCall("b", "echo", {"message": "rewritten"})) is one
    assert pending.take(ToolCall("c", "echo", {"message": "one"})) is None


def test_each_handoff_is_given_once_after_its_request_and_the_rest_in_order() -> None:
    first, second = Handoff(0, 0, "triage", "billing"), Handoff(0, 2, "billing", "triage")
    later, early = Handoff(3, 1, "triage", "faq"), Handoff(1, -1, "faq", "triage")
    handoffs = HandoffsAfter([first, second, later, early])
    assert handoffs.after(0, 0) == [first] and handoffs.after(0, 0) == []
    assert handoffs.after(0, 2) == [second]
    assert handoffs.left() == [early, later] and handoffs.left() == []
