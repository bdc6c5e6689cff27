"""`harness.model_types`: what a model request must be to cross the boundary
(`RequestCheck`): every field of the type it is declared, each dict one JSON can carry, what
the case's requests share checked once."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

import pytest

from harness.model_types import (
    Message,
    ModelRequest,
    ModelStep,
    OutputSchema,
    RequestCheck,
    ToolCall,
    ToolSchema,
)

ECHO = ToolSchema("echo", "Echo a message.", {"type": "object"})
CALL = ToolCall("c1", "echo", {"message": "hi"})


def request(*messages: Any, **fields: Any) -> ModelRequest:
    shown = messages or (Message(role="user", content="hi"),)
    return ModelRequest(messages=shown, **fields)


def test_a_request_as_the_protocol_writes_one_crosses() -> None:
    check = RequestCheck()
    whole = request(
        Message(role="system", content="Be brief."),
        Message(role="user", content="Echo hi"),
        Message(role="assistant", tool_calls=(CALL,)),
        Message(role="tool", content="hi", tool_call_id="c1"),
        tools=(ECHO,),
        agent="triage",
        output_schema=OutputSchema(name="answer", schema={"type": "object"}, strict=True),
        declared_instructions=("Be brief.",),
        settings={"temperature": 0.2, "stop": ["\n"]},
    )
    assert check.problem(whole) is None
    # Lists where tuples are declared are written as the same JSON arrays; a lone surrogate
    # is written as U+FFFD, as in every report.
    listed = ModelRequest(messages=[Message(role="user", content="x\ud800")], tools=[ECHO])  # type: ignore[arg-type]
    assert check.problem(listed) is None


class Weird:
    def __repr__(self) -> str:
        raise ValueError("no")


BAD_MESSAGES = [
    (Message(role="developer", content="x"), "with the role 'developer', which no message has"),  # type: ignore[arg-type]
    (Message(role=["user"], content="x"), "with the role ['user'], which no message has"),  # type: ignore[arg-type]
    (Message(role="user", content=None), "whose content is None, not text"),  # type: ignore[arg-type]
    (
        Message(role="tool", content="hi", tool_call_id=5),  # type: ignore[arg-type]
        "whose tool_call_id is int, not text (the id of the call it answers)",
    ),
    (
        Message(role="assistant", tool_calls=[{"id": "c1"}]),  # type: ignore[list-item]
        "whose tool_calls[0] is dict, not a ToolCall",
    ),
    (
        Message(role="assistant", tool_calls={"c1": CALL}),  # type: ignore[arg-type]
        "whose tool_calls are dict, not a sequence of ToolCall",
    ),
    (
        Message(role="assistant", tool_calls=(CALL, ToolCall(7, "echo", {}))),  # type: ignore[arg-type]
        "whose tool_calls[1] has an id that is int, not text",
    ),
    (
        Message(role="assistant", tool_calls=(ToolCall("c1", None, {}),)),  # type: ignore[arg-type]
        "whose tool_calls[0] has a name that is None, not text",
    ),
    (
        Message(role="assistant", tool_calls=(ToolCall("c1", "echo", "{}"),)),  # type: ignore[arg-type]
        "whose tool_calls[0] has arguments that are str, not a JSON object",
    ),
    (
        Message(role="assistant", tool_calls=(ToolCall("c1", "echo", {"x": object()}),)),
        "whose tool_calls[0] has arguments that hold object, which no JSON has",
    ),
    (  # a lone surrogate (written as U+FFFD) hides nothing after it
        Message(role="assistant", tool_calls=(ToolCall("c1", "echo", {"a": "\ud800", "b": {1}}),)),
        "whose tool_calls[0] has arguments that hold set, which no JSON has",
    ),
    (
        Message(role="assistant", tool_calls=(ToolCall("c1", "echo", {"a": [b"x"]}),)),
        "whose tool_calls[0] has arguments that hold bytes, which no JSON has",
    ),
    (
        Message(role="assistant", tool_calls=(ToolCall("c1", "echo", {1: "a", "b": 2}),)),  # type: ignore[dict-item]
        "whose tool_calls[0] has arguments that hold a key that is int, not text",
    ),
    (
        Message(role=Weird(), content="x"),  # type: ignore[arg-type]
        "with the role a Weird, which no message has",
    ),
    (
        Message(role="x" * 500, content="x"),  # type: ignore[arg-type]
        "with the role 'xxxxxxxxxxxx",
    ),
    ("hi", "that is str, not a Message"),
]


@pytest.mark.parametrize(("message", "said"), BAD_MESSAGES)
def test_a_message_not_of_its_declared_types_is_said_with_its_place(
    message: Any, said: str
) -> None:
    refused = RequestCheck().problem(request(Message(role="user", content="hi"), message))
    assert refused is not None and refused.startswith(f"holds message 1 {said}"), refused


def deep() -> list[Any]:
    # Nested past any recursion limit, and then inside itself: walked without recursion.
    innermost: list[Any] = []
    outer = innermost
    for _ in range(50_000):
        outer = [outer]
    innermost.append(outer)
    return outer


def cyclic() -> dict[str, Any]:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    return looped


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"messages": {"0": "hi"}}, "holds messages that are dict, not a sequence of Message"),
        ({"tools": ("echo",)}, "offers tools[0] that is str, not a ToolSchema"),
        ({"tools": ECHO}, "offers tools that are ToolSchema, not a sequence of ToolSchema"),
        (
            {"tools": (ToolSchema("echo", "Echo.", "x"),)},  # type: ignore[arg-type]
            "offers tools[0] whose parameters are str, not a JSON object",
        ),
        (
            {"tools": (ToolSchema("echo", 3, {}),)},  # type: ignore[arg-type]
            "offers tools[0] whose description is int, not text",
        ),
        (
            {"tools": (ToolSchema("echo", "Echo.", {}, output="yes"),)},  # type: ignore[arg-type]
            "offers tools[0] whose output is str, not true or false",
        ),
        ({"agent": 3}, "names its agent with int, not text"),
        ({"output_schema": {"name": "x"}}, "asks for an output_schema that is dict, not"),
        (
            {"output_schema": OutputSchema(name="x", schema={}, mode="json")},  # type: ignore[arg-type]
            "asks for an output_schema that has the mode 'json', not 'native' or 'prompted'",
        ),
        (
            {"output_schema": OutputSchema(name="x", schema={}, strict=1)},  # type: ignore[arg-type]
            "asks for an output_schema that has strict as int, not true or false",
        ),
        (
            {"declared_instructions": ("Be brief.", None)},
            "declares instructions[1] that is None, not text",
        ),
        ({"settings": None}, "sends settings that are None, not a JSON object"),
        ({"settings": cyclic()}, "sends settings that hold an object inside itself"),
        ({"settings": {"stop": deep()}}, "sends settings that hold an array inside itself"),
        ({"settings": {"when": datetime(2026, 1, 1)}}, "sends settings that hold datetime, which"),
    ],
)
def test_a_request_s_own_field_not_of_its_declared_type_is_said(
    fields: dict[str, Any], said: str
) -> None:
    made = ModelRequest(**fields) if "messages" in fields else request(**fields)
    refused = RequestCheck().problem(made)
    assert refused is not None and refused.startswith(said), refused


def test_what_is_no_request_at_all_is_said() -> None:
    assert RequestCheck().problem({"messages": []}) == "is dict, not a ModelRequest"


def test_the_calls_a_step_handed_the_agent_pass_back_unchecked_and_the_rest_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A case's requests repeat its history: each message is checked the first time it is
    # seen, and the calls the model handed the agent (passed back in its history) never.
    from harness import model_types

    checked: list[str] = []
    real = model_types._call_problem

    def counted(call: object, held: dict[int, object]) -> str | None:
        checked.append(getattr(call, "id", "?"))
        return real(call, held)

    monkeypatch.setattr(model_types, "_call_problem", counted)
    check = RequestCheck()
    handed = (ToolCall("c1", "echo", {"message": "hi"}),)
    check.given(ModelStep(tool_calls=handed))
    passed_back = Message(role="assistant", tool_calls=handed)
    mine = Message(role="assistant", tool_calls=(ToolCall("c2", "echo", {"m": "x"}),))
    assert check.problem(request(passed_back, mine)) is None
    assert check.problem(request(passed_back, mine, Message(role="user"))) is None
    assert checked == ["c2"]
    # One made later is checked as it is seen.
    odd = Message(role="user", tool_call_id=9)  # type: ignore[arg-type]
    assert check.problem(request(mine, odd)) == (
        "holds message 1 whose tool_call_id is int, not text (the id of the call it answers)"
    )
    # Another case's check knows none of them.
    assert RequestCheck().problem(request(passed_back)) is None
    assert checked == ["c2", "c1"]


def test_what_passed_as_one_kind_is_checked_as_another_and_what_can_change_each_time() -> None:
    # One cache of every kind let an object that passed as one skip the check as another
    # (`tools=` a message of the history: an internal error in the conformance rules).
    check = RequestCheck()
    seen = Message(role="user", content="hi")
    handed = (CALL,)
    check.given(ModelStep(tool_calls=handed))
    offered = (ECHO,)
    assert check.problem(request(seen, tools=offered)) is None
    assert check.problem(request(seen, tools=seen)) == (  # type: ignore[arg-type]
        "offers tools that are Message, not a sequence of ToolSchema"
    )
    assert check.problem(request(seen, tools=handed)) == (  # type: ignore[arg-type]
        "offers tools[0] that is ToolCall, not a ToolSchema"
    )
    assert check.problem(request(seen, output_schema=seen)) == (  # type: ignore[arg-type]
        "asks for an output_schema that is Message, not an OutputSchema"
    )
    calling_tools = Message(role="assistant", tool_calls=offered)  # type: ignore[arg-type]
    assert check.problem(request(calling_tools)) == (
        "holds message 0 whose tool_calls[0] is ToolSchema, not a ToolCall"
    )
    # A list (of tools, of a message's calls) can change after it passed: checked each time.
    listed: list[Any] = [ECHO]
    calls: list[Any] = [ToolCall("c2", "echo", {})]
    mine = Message(role="assistant", tool_calls=calls)  # type: ignore[arg-type]
    assert check.problem(request(mine, tools=listed)) is None
    listed.append({"name": "shell"})
    assert check.problem(request(mine, tools=listed)) == (
        "offers tools[1] that is dict, not a ToolSchema"
    )
    calls.append("c3")
    assert check.problem(request(mine)) == (
        "holds message 0 whose tool_calls[1] is str, not a ToolCall"
    )


class Money(float):
    """A float of the agent's own: the reports' encoder writes no such subclass."""


class Level(enum.IntEnum):
    LOW = 1


def test_a_subclass_no_report_writes_is_refused_enums_and_shared_values_are_not() -> None:
    check = RequestCheck()
    money = ToolCall("c1", "pay", {"amount": Money(1.5)})
    refused = check.problem(request(Message(role="assistant", tool_calls=(money,))))
    assert (
        refused
        == "holds message 0 whose tool_calls[0] has arguments that hold Money, which no JSON has"
    )
    shared = {"a": [1, 2]}
    fine = ToolCall(
        "c2", "pay", {"level": Level.LOW, "x": shared, "y": shared, "n": list(range(200_000))}
    )
    assert check.problem(request(Message(role="assistant", tool_calls=(fine,)))) is None


def test_a_case_s_arguments_are_walked_once_however_many_requests_carry_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An adapter builds its history again for each request, the very same dicts in new
    # messages: walking them all again made the check grow with the square of the history.
    from harness import model_types

    walked: list[int] = []
    real = model_types._not_json

    def counted(value: dict[object, object]) -> str | None:
        walked.append(id(value))
        return real(value)

    monkeypatch.setattr(model_types, "_not_json", counted)
    check = RequestCheck()
    arguments = {"message": "hi"}
    for _ in range(5):  # each request's message made anew, holding the same arguments
        again = Message(role="assistant", tool_calls=[ToolCall("c1", "echo", arguments)])
        assert check.problem(request(again)) is None
    assert walked == [id(arguments)]
