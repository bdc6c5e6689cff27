"""`harness.expectations.loop_conformance`: every rule checked in one pass over the
conversation finds what each rule finds on its own, whichever rules a case exempts, and a
rule over the conversations of a graph reports the first conversation's violation, not the
earliest request's."""

from __future__ import annotations

from harness.expectations.base import Evidence
from harness.expectations.loop_conformance import RULES, LoopConformance
from harness.model_boundary import Message, ModelRequest, ModelStep, ToolCall, ToolSchema
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.transcript import Conversation, Exchange

ECHO = (ToolSchema("echo", "", {}),)


def request(*messages: tuple[str, str] | Message, agent: str | None = None) -> ModelRequest:
    return ModelRequest(
        messages=tuple(
            m if isinstance(m, Message) else Message(role=m[0], content=m[1])  # type: ignore[arg-type]
            for m in messages
        ),
        tools=ECHO,
        agent=agent,
    )


def broken_everywhere() -> Conversation:
    """Two turns of one agent breaking four rules: turn 0's echo dispatched twice and its
    result never passed back; turn 1 forgetting turn 0 and changing its instructions."""
    echo = ToolCall("c1", "echo", {"message": "hi"})
    return Conversation(
        user_inputs=("say hi", "again"),
        script=(
            (ModelStep(tool_calls=(echo,)), ModelStep(text="hi")),
            (ModelStep(text="hi again"),),
        ),
        exchanges=(
            Exchange(0, 0, 0, request(("system", "Be brief."), ("user", "say hi"))),
            Exchange(0, 1, 2, request(("system", "Be brief."), ("user", "say hi"))),
            Exchange(1, 0, 2, request(("system", "Be long."), ("user", "again"))),
        ),
        calls=(
            RecordedCall("echo", '{"message":"hi"}', "hi", True, 0.1),
            RecordedCall("echo", '{"message":"hi"}', "hi", True, 0.1),
        ),
    )


def graded(conversation: Conversation, exempt: dict[str, str]) -> dict[str, tuple[str, str]]:
    kind = LoopConformance(loop_exempt=exempt)
    evidence = Evidence(RunRecord(final_response=""), conversation=conversation)
    return {
        g.check.removeprefix("loop(").removesuffix(")"): (g.field, g.detail)
        for g in kind.grades(evidence)
    }


def test_one_pass_finds_what_each_rule_finds_alone_whatever_is_exempt() -> None:
    conversation = broken_everywhere()
    alone = {
        name: found[0] for name, check in RULES.items() if (found := list(check(conversation)))
    }
    assert set(alone) == {"dispatches", "tool_results", "history", "instructions"}
    assert graded(conversation, {}) == alone
    for rule in RULES:
        rest = {name: v for name, v in alone.items() if name != rule}
        assert graded(conversation, {rule: "the agent may"}) == rest


def helper_and_root(root_forgets: bool) -> Conversation:
    """An agent used as a tool (`helper`, a conversation of its own: requests 1 and 2) whose
    second request lost the input it was given, inside the root agent's conversation
    (requests 0 and 3), whose last request lost the user's input when `root_forgets`."""
    ask = ToolCall("c1", "ask_helper", {"q": "sum 2+2"})
    work = ToolCall("c2", "echo", {"message": "4"})
    last = ("user", "elsewhere") if root_forgets else ("user", "add two and two")
    return Conversation(
        user_inputs=("add two and two",),
        script=(
            (
                ModelStep(tool_calls=(ask,)),
                ModelStep(tool_calls=(work,)),
                ModelStep(text="4"),
                ModelStep(text="It is 4."),
            ),
        ),
        exchanges=(
            Exchange(0, 0, 0, request(("user", "add two and two"), agent="root")),
            Exchange(0, 1, 0, request(("user", "sum 2+2"), agent="helper")),
            Exchange(0, 2, 1, request(("user", "something else"), agent="helper")),
            Exchange(0, 3, 2, request(last, agent="root")),
        ),
        calls=(
            RecordedCall("echo", '{"message":"4"}', "4", True, 0.1, "helper"),
            RecordedCall("ask_helper", '{"q":"sum 2+2"}', "4", True, 0.1, "root"),
        ),
    )


def test_a_graphs_first_conversation_with_a_violation_is_reported_not_the_earliest() -> None:
    (helper_only,) = RULES["history"](helper_and_root(root_forgets=False))
    assert helper_only[0] == "$.turns[0].steps[2]"  # the helper's own conversation
    (both,) = RULES["history"](helper_and_root(root_forgets=True))
    # The root's conversation is the first: its violation (a later request) is the rule's.
    assert both[0] == "$.turns[0].steps[3]"
    assert graded(helper_and_root(root_forgets=True), {})["history"][0] == both[0]


def test_a_run_of_one_agent_is_one_conversation_as_the_split_would_make_it() -> None:
    from harness.transcript import split_threads

    conversation = broken_everywhere()
    assert conversation.threads == tuple(split_threads(conversation))
    assert len(conversation.threads) == 1 and conversation.threads[0].members == (0, 1, 2)
