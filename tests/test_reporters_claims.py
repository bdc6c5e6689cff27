"""`harness.reporters.claims`: which recorded dispatch and which handoff each model request
of a transcript shows under it, in a run of one agent and of several; which turns show the
response graded after them."""

from __future__ import annotations

from harness.model_boundary import Handoff, ModelStep, ToolCall
from harness.reporters.claims import HandoffsAfter, Unclaimed, graded_responses
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.transcript import TranscriptStep


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


def test_a_turn_shows_its_graded_response_only_where_its_last_answer_does_not_say_it() -> None:
    answer = ToolCall("c1", "final_result", {"risk": 1})
    record = RunRecord(
        turn_responses=["hi", '{"risk":1}', '{"seat":"1A"}'],
        transcript=[
            TranscriptStep(turn=0, step=0, sent=[], answer=ModelStep(text="hi")),
            # An output tool's call: the answer is the JSON of the output it made.
            TranscriptStep(turn=1, step=0, sent=[], answer=ModelStep(tool_calls=(answer,))),
            # The JSON as the model sent it, and as it is graded.
            TranscriptStep(turn=2, step=0, sent=[], answer=ModelStep(text='{"seat": "1A"}')),
            TranscriptStep(turn=2, step=1, sent=[], answer=None),
        ],
    )
    assert graded_responses(record) == {1: '{"risk":1}', 2: '{"seat":"1A"}'}
    assert graded_responses(RunRecord(turn_responses=["hi"])) == {}
