"""Replay: per-turn FIFO queues behind the metered model boundary, and divergence errors."""

from __future__ import annotations

import asyncio

import pytest
from conftest import call, fixture, text_step, tool_step, trace_of, turn

from harness.model_boundary import Message, ModelBoundary, ModelRequest, ModelStep, ToolCall
from harness.run.replay import ReplayBackend, ReplayDivergence

EXPECT = {"response_contains": ["x"]}


def boundary_for(*turns: dict, name: str = "replay-case") -> ModelBoundary:
    return ModelBoundary(ReplayBackend(trace_of(fixture(name, list(turns), EXPECT))))


def user(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),))


def respond(boundary: ModelBoundary, request: ModelRequest | None = None) -> ModelStep:
    return asyncio.run(boundary.respond(request or user()))


def test_text_step() -> None:
    b = boundary_for(turn("hi", text_step("Hello!", input_tokens=7, output_tokens=3)))
    b.start_turn(0)
    step = respond(b)
    assert step == ModelStep(text="Hello!", input_tokens=7, output_tokens=3)
    b.end_turn(0)


def test_tool_step() -> None:
    b = boundary_for(
        turn(
            "hi",
            tool_step(call("c1", message="a"), call("c2", "fail", reason="r")),
            text_step("done"),
        )
    )
    b.start_turn(0)
    step = respond(b)
    assert step.text == ""
    assert step.tool_calls == (
        ToolCall("c1", "echo", {"message": "a"}),
        ToolCall("c2", "fail", {"reason": "r"}),
    )
    assert respond(b).text == "done"
    b.end_turn(0)


def test_steps_come_out_in_fifo_order_turn_by_turn() -> None:
    b = boundary_for(
        turn("one", text_step("a"), text_step("b")),
        turn("two", text_step("c")),
    )
    b.start_turn(0)
    assert [respond(b).text, respond(b).text] == ["a", "b"]
    b.end_turn(0)
    b.start_turn(1)
    assert respond(b).text == "c"
    b.end_turn(1)


def test_under_scripted_turn_errors_naming_turn_0_and_never_borrows_turn_1() -> None:
    b = boundary_for(
        turn("one", tool_step(call("c1", message="a"))),
        turn("two", text_step("turn one's answer")),
        name="under-scripted",
    )
    b.start_turn(0)
    assert respond(b).tool_calls
    with pytest.raises(ReplayDivergence) as info:
        respond(b)
    message = str(info.value)
    assert "turn 0 requested more model responses than the trace scripts" in message
    assert "under-scripted" in message
    # Turn 1's step is still there for turn 1: nothing was borrowed.
    b.end_turn(0)
    b.start_turn(1)
    assert respond(b).text == "turn one's answer"
    b.end_turn(1)


def test_exhausted_turn_keeps_raising() -> None:
    b = boundary_for(turn("one", text_step("a")))
    b.start_turn(0)
    respond(b)
    for _ in range(2):
        with pytest.raises(ReplayDivergence, match="turn 0"):
            respond(b)


def test_over_specified_turn_errors_naming_the_turn_and_the_count() -> None:
    b = boundary_for(
        turn("one", text_step("a"), text_step("b"), text_step("c")),
        turn("two", text_step("d")),
        name="over-scripted",
    )
    b.start_turn(0)
    respond(b)
    with pytest.raises(ReplayDivergence) as info:
        b.end_turn(0)
    message = str(info.value)
    assert "turn 0 scripted 2 step(s) the agent never requested" in message
    assert "over-specifies" in message
    assert "over-scripted" in message


def test_over_specified_last_turn_is_checked_too() -> None:
    b = boundary_for(
        turn("one", text_step("a")),
        turn("two", text_step("b"), text_step("extra")),
    )
    b.start_turn(0)
    respond(b)
    b.end_turn(0)
    b.start_turn(1)
    respond(b)
    with pytest.raises(ReplayDivergence, match=r"turn 1 scripted 1 step\(s\)"):
        b.end_turn(1)


def test_a_turn_with_no_request_at_all_is_over_specified() -> None:
    b = boundary_for(turn("one", text_step("a")))
    b.start_turn(0)
    with pytest.raises(ReplayDivergence) as info:
        b.end_turn(0)
    assert "turn 0 scripted 1 step(s)" in str(info.value)
    assert "no model request was made" in str(info.value)


def test_request_before_any_turn_started_is_a_divergence() -> None:
    b = boundary_for(turn("one", text_step("a")))
    with pytest.raises(ReplayDivergence, match="outside any scripted turn"):
        respond(b)
    assert b.calls == 0


def test_turns_must_start_in_order() -> None:
    b = boundary_for(turn("one", text_step("a")), turn("two", text_step("b")))
    with pytest.raises(ReplayDivergence, match="out of order"):
        b.start_turn(1)
    b.start_turn(0)
    with pytest.raises(ReplayDivergence, match="out of order"):
        b.start_turn(0)


def test_starting_a_turn_past_the_script_is_a_divergence() -> None:
    b = boundary_for(turn("one", text_step("a")))
    b.start_turn(0)
    respond(b)
    b.end_turn(0)
    with pytest.raises(ReplayDivergence, match="1 turn"):
        b.start_turn(1)


def test_tokens_and_calls_are_counted_through_the_boundary() -> None:
    b = boundary_for(
        turn(
            "one",
            tool_step(call("c1", message="a"), input_tokens=20, output_tokens=8),
            text_step("a", input_tokens=30, output_tokens=6),
        ),
        turn("two", text_step("b", input_tokens=5)),
    )
    assert (b.calls, b.input_tokens, b.output_tokens) == (0, 0, 0)
    b.start_turn(0)
    respond(b)
    respond(b)
    b.end_turn(0)
    b.start_turn(1)
    respond(b)
    b.end_turn(1)
    assert (b.calls, b.input_tokens, b.output_tokens) == (3, 55, 14)


def test_a_refused_request_is_not_counted() -> None:
    b = boundary_for(turn("one", text_step("a", input_tokens=4, output_tokens=2)))
    b.start_turn(0)
    respond(b)
    with pytest.raises(ReplayDivergence):
        respond(b)
    assert (b.calls, b.input_tokens, b.output_tokens) == (1, 4, 2)


def test_boundary_keeps_the_last_request() -> None:
    b = boundary_for(turn("one", text_step("a")))
    b.start_turn(0)
    request = user("what now?")
    respond(b, request)
    assert b.last_request is request


def test_divergence_message_summarises_the_last_request() -> None:
    b = boundary_for(turn("one", tool_step(call("call_1", message="ping"))), name="chatty")
    b.start_turn(0)
    respond(b)
    request = ModelRequest(
        messages=(
            Message(role="system", content="You are terse."),
            Message(role="user", content="Echo ping"),
            Message(
                role="assistant", tool_calls=(ToolCall("call_1", "echo", {"message": "ping"}),)
            ),
            Message(role="tool", content="ping", tool_call_id="call_1"),
        )
    )
    with pytest.raises(ReplayDivergence) as info:
        respond(b, request)
    message = str(info.value)
    assert "the last request was:" in message
    lines = message.splitlines()
    assert any("[0] system:" in line and "You are terse." in line for line in lines)
    assert any("[1] user:" in line and "Echo ping" in line for line in lines)
    assert any(
        "[2] assistant:" in line and 'call echo({"message": "ping"}) id=call_1' in line
        for line in lines
    )
    assert any("[3] tool:" in line and "result for call_1:" in line for line in lines)


def test_over_specification_message_summarises_the_last_request() -> None:
    b = boundary_for(turn("one", text_step("a"), text_step("b")))
    b.start_turn(0)
    respond(b, user("first question"))
    with pytest.raises(ReplayDivergence) as info:
        b.end_turn(0)
    assert "[0] user:" in str(info.value)
    assert "first question" in str(info.value)


def test_fresh_backends_do_not_share_queues() -> None:
    trace = trace_of(fixture("shared", [turn("one", text_step("a"))], EXPECT))
    first, second = ModelBoundary(ReplayBackend(trace)), ModelBoundary(ReplayBackend(trace))
    first.start_turn(0)
    respond(first)
    second.start_turn(0)
    assert respond(second).text == "a"
