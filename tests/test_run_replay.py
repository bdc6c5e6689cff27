"""Replay: per-turn FIFO queues behind the metered model boundary, and divergence errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    call,
    fixture,
    project,
    text_step,
    tool_step,
    trace_of,
    turn,
    write_module,
)

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


def test_an_agent_changing_the_arguments_it_was_handed_changes_neither_script_nor_fixture() -> None:
    # The calls a step hands the agent held the parsed fixture's own arguments: a loop that
    # edits them in place (a default filled in, its history tidied) rewrote the script its
    # requests are held to, the answer its transcript shows, and the trace the case's later
    # reads find. The boundary hands every agent copies of its own.
    nested = {"message": "a", "tags": ["x", {"deep": [1, 2]}], "empty": {}}
    trace = trace_of(fixture("replay-case", [turn("hi", tool_step(call("c1", **nested)))], EXPECT))
    backend = ReplayBackend(trace)
    boundary = ModelBoundary(backend)
    boundary.start_turn(0)
    handed = respond(boundary).tool_calls[0].arguments
    assert handed == nested
    handed["message"] = "forged"
    handed["tags"][1]["deep"].append(3)
    handed["empty"]["new"] = True
    assert backend.script[0][0].tool_calls[0].arguments == nested
    [scripted] = trace.turns[0].steps or []
    assert scripted.response.tool_calls[0].arguments == nested  # type: ignore[union-attr]


def test_arguments_of_a_dict_s_subclass_are_copied_as_a_plain_dict() -> None:
    from collections import OrderedDict

    from harness.model_types import handed

    odd = OrderedDict(k=1, j=[1, OrderedDict(z=[2])])
    step = handed(ModelStep(tool_calls=(ToolCall("c1", "echo", odd),)))
    copy = step.tool_calls[0].arguments
    assert copy == {"k": 1, "j": [1, {"z": [2]}]} and type(copy) is dict
    assert copy["j"][1] is not odd["j"][1]


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


# --- steps naming the agent they answer -------------------------------------------------------


def for_agent(agent: str, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "agent": agent}


def asks(agent: str | None, text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), agent=agent)


def test_a_step_naming_an_agent_answers_that_agents_request_whatever_its_position() -> None:
    # A guardrail agent runs beside the agent it guards: either may ask first.
    script = turn(
        "one",
        for_agent("triage", text_step("triage's")),
        for_agent("guard", text_step("guard's")),
        for_agent("triage", text_step("triage's second")),
    )
    for order in (["triage", "guard", "triage"], ["guard", "triage", "triage"]):
        b = boundary_for(script)
        b.start_turn(0)
        answers: dict[str, list[str]] = {}
        for agent in order:
            answers.setdefault(agent, []).append(respond(b, asks(agent)).text)
        b.end_turn(0)
        assert answers == {"triage": ["triage's", "triage's second"], "guard": ["guard's"]}


def test_a_request_no_step_of_the_turn_answers_is_a_divergence_naming_the_agent() -> None:
    b = boundary_for(
        turn("one", for_agent("billing", text_step("billing's")), text_step("anyone's")),
        name="by-agent",
    )
    b.start_turn(0)
    with pytest.raises(ReplayDivergence) as info:
        respond(b, asks("faq_agent"))
    message = str(info.value)
    assert message.startswith(
        "case 'by-agent': turn 0: agent 'faq_agent' requested a model response, but no step "
        "of the turn left answers it; the script expected next a step answering "
        "\"billing's\" for agent 'billing'"
    )
    # A request naming no agent cannot take a step that names one either.
    with pytest.raises(ReplayDivergence, match="the agent under test requested"):
        respond(b, asks(None))


def test_steps_naming_no_agent_answer_any_request_in_order() -> None:
    b = boundary_for(turn("one", text_step("a"), text_step("b"), for_agent("x", text_step("c"))))
    b.start_turn(0)
    assert [respond(b, asks("y")).text, respond(b, asks(None)).text] == ["a", "b"]
    assert respond(b, asks("x")).text == "c"
    b.end_turn(0)


def test_an_unused_step_naming_an_agent_is_named_as_over_specification() -> None:
    b = boundary_for(turn("one", text_step("a"), for_agent("faq_agent", text_step("b"))))
    b.start_turn(0)
    respond(b)
    with pytest.raises(ReplayDivergence, match="a step answering \"b\" of agent 'faq_agent'"):
        b.end_turn(0)


# A loop whose guardrail agent asks before the agent it guards, though the script lists the
# guarded agent's step first.
GUARDED_LOOP = """
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        check = (Message(role="user", content=f"check: {user_input}"),)
        verdict = await self.ctx.model.respond(ModelRequest(messages=check, agent="guard"))
        said = (Message(role="user", content=user_input),)
        answer = await self.ctx.model.respond(ModelRequest(messages=said, agent="triage"))
        return f"{verdict.text}: {answer.text}"


def factory(ctx):
    return Session(ctx)
"""


def test_a_run_matches_steps_to_agents_and_names_the_agent_no_step_answers(
    run_cli: Cli, tmp_path: Path
) -> None:
    def case(name: str, guard: str) -> dict[str, Any]:
        steps = [
            for_agent("triage", text_step("Refunded")),
            for_agent(guard, text_step("safe")),
        ]
        # The guard asked first, but its request is the one answered by step 1.
        asked = {"turn": 0, "step": 1, "role": "user", "needle": "check: Refund me"}
        checks = {"response_contains": ["safe: Refunded"], "request_contains": [asked]}
        return fixture(name, [turn("Refund me", *steps)], checks)

    root = project(tmp_path, {"a.json": case("in-order", "guard"), "b.json": case("no", "gaurd")})
    module = write_module(root, GUARDED_LOOP)
    result = run_cli(
        "eval", "run", "--agent", f"{module}:factory", "--json-report", "r.json", cwd=root
    )
    assert result.returncode == 1, result.stderr
    cases = {c["id"]: c for c in json.loads((root / "r.json").read_text("utf-8"))["cases"]}
    assert cases["in-order"]["passed"] is True
    assert cases["no"]["error"].startswith(
        "case 'no': turn 0: agent 'guard' requested a model response, but no step of the turn "
        'left answers it; the script expected next a step answering "Refunded" for agent '
        "'triage'"
    )


def test_a_step_taken_out_of_its_place_is_told_and_one_in_its_place_is_not() -> None:
    """`on_take` hears of a step only when it answers a request other than the one of its
    index (the turn's requests counted as they come): a turn naming no agent never, and a
    turn naming agents for each step an agent took out of order, turn by turn."""
    script = turn(
        "one",
        for_agent("triage", text_step("triage's")),
        for_agent("guard", text_step("guard's")),
        for_agent("triage", text_step("triage's second")),
    )
    plain = turn("two", text_step("a"), text_step("b"))
    backend = ReplayBackend(trace_of(fixture("told", [script, plain, script], EXPECT)))
    b = ModelBoundary(backend)
    told: list[int] = []
    backend.on_take = told.append
    for index, order in enumerate([["guard", "triage", "triage"], [None, None], ["triage"] * 2]):
        b.start_turn(index)
        for agent in order:
            respond(b, asks(agent))
        told.append(-1)
        if index == 2:
            respond(b, asks("guard"))
        b.end_turn(index)
    # Turn 0: guard took step 1 as the first request, triage step 0 as the second; turn
    # 1 in order; turn 2: triage took 0 and 2 as requests 0 and 1, guard 1 as request 2.
    assert told == [1, 0, -1, -1, 2, -1, 1]


def test_a_plain_turn_left_short_or_stopped_is_told_as_before() -> None:
    """A turn naming no agent keeps only where its next step is: what is left of it is
    still over-specification, and a turn a tripwire stopped leaves nothing to take."""
    b = boundary_for(turn("one", text_step("a"), text_step("b"), text_step("c")), name="short")
    b.start_turn(0)
    respond(b)
    with pytest.raises(ReplayDivergence) as info:
        b.end_turn(0)
    assert str(info.value).startswith(
        "case 'short': turn 0 scripted 2 step(s) the agent never requested (the trace "
        'over-specifies this turn); the script expected next a step answering "b"'
    )
    backend = ReplayBackend(trace_of(fixture("stopped", [turn("one", text_step("a"))], EXPECT)))
    backend.start_turn(0)
    backend.stop_turn(0)
    backend.end_turn(0)  # nothing left over
    with pytest.raises(ReplayDivergence, match="requested more model responses than the trace"):
        asyncio.run(backend.respond(user()))
