"""`harness.expectations.loop_conformance`: every rule checked in one pass over the
conversation finds what each rule finds on its own, whichever rules a case exempts, and a
rule over the conversations of a graph reports the first conversation's violation, not the
earliest request's; a plain run of one agent, judged at once, is judged as the one pass
judges it."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import msgspec

from harness.approvals import Approval
from harness.expectations.base import Evidence
from harness.expectations.loop_conformance import RULES, LoopConformance, _one_pass
from harness.expectations.plain_conformance import plain_conformant
from harness.model_boundary import (
    Handoff,
    Message,
    ModelRequest,
    ModelStep,
    ToolCall,
    ToolSchema,
)
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


def plain_run() -> Conversation:
    """A conformant run of one agent over two turns: a call of each tool in one step, both
    results passed back, then the answer; turn 1 keeps turn 0."""
    echo, fail = ToolCall("c1", "echo", {"message": "hi"}), ToolCall("c2", "fail", {})
    tools = (ToolSchema("echo", "", {}), ToolSchema("fail", "", {}))
    system = Message(role="system", content="Be brief.")
    said = (system, Message(role="user", content="say hi"))
    asked = Message(role="assistant", tool_calls=(echo, fail))
    results = (
        Message(role="tool", content="hi", tool_call_id="c1"),
        Message(role="tool", content="error: no", tool_call_id="c2"),
    )
    answer = (Message(role="assistant", content="hi"), Message(role="user", content="again"))
    return Conversation(
        user_inputs=("say hi", "again"),
        script=(
            (ModelStep(tool_calls=(echo, fail)), ModelStep(text="hi")),
            (ModelStep(text="hi again"),),
        ),
        exchanges=(
            Exchange(0, 0, 0, ModelRequest(messages=said, tools=tools)),
            Exchange(0, 1, 2, ModelRequest(messages=(*said, asked, *results), tools=tools)),
            Exchange(
                1, 0, 2, ModelRequest(messages=(*said, asked, *results, *answer), tools=tools)
            ),
        ),
        calls=(
            RecordedCall("echo", '{"message":"hi"}', "hi", True, 0.1),
            RecordedCall("fail", "{}", "ValueError: no", False, 0.1),
        ),
    )


def mutants(conversation: Conversation, rng: random.Random) -> Iterator[Conversation]:
    """`conversation` broken (or not) at random in the ways a loop breaks its requests:
    messages dropped, swapped, reworded, re-identified; tools hidden; calls repeated,
    renamed or lost; instructions declared that never arrive."""
    for _ in range(400):
        exchanges = list(conversation.exchanges)
        calls = list(conversation.calls)
        for _ in range(rng.randint(1, 2)):
            at = rng.randrange(len(exchanges))
            request = exchanges[at].request
            messages = list(request.messages)
            how = rng.randrange(8)
            if how == 0 and messages:
                del messages[rng.randrange(len(messages))]
            elif how == 1 and len(messages) > 1:
                i = rng.randrange(len(messages) - 1)
                messages[i], messages[i + 1] = messages[i + 1], messages[i]
            elif how == 2 and messages:
                i = rng.randrange(len(messages))
                messages[i] = msgspec.structs.replace(messages[i], content=rng.choice(WORDS))
            elif how == 3 and messages:
                i = rng.randrange(len(messages))
                messages[i] = msgspec.structs.replace(messages[i], tool_call_id=rng.choice(IDS))
            elif how == 4:
                request = msgspec.structs.replace(request, tools=request.tools[1:])
            elif how == 5 and calls:
                i = rng.randrange(len(calls))
                calls[i] = msgspec.structs.replace(calls[i], name=rng.choice(("echo", "fail")))
            elif how == 6:
                declared = (rng.choice(("Be brief.", "Be long.", " ")),)
                request = msgspec.structs.replace(request, declared_instructions=declared)
            elif how == 7 and calls:
                calls.insert(rng.randrange(len(calls) + 1), rng.choice(calls))
            request = msgspec.structs.replace(request, messages=tuple(messages))
            exchanges[at] = dataclasses.replace(exchanges[at], request=request)
        yield dataclasses.replace(conversation, exchanges=tuple(exchanges), calls=tuple(calls))


WORDS = ("hi", "say hi", "again", "Be brief.", "error: no", "say hi again", "")
IDS = ("c1", "c2", "c3", None)


def test_a_plain_run_is_judged_at_once_as_the_one_pass_judges_it() -> None:
    """The plain path (`plain_conformant`) says a run conforms exactly when the one pass
    finds no violation, rule by rule and for every rule at once, however it is broken."""
    rng = random.Random(29)
    conformant = plain_run()
    assert _one_pass(conformant, RULES) == {}
    assert plain_conformant(conformant, RULES)
    seen = {True: 0, False: 0}
    for mutant in mutants(conformant, rng):
        for rules in [list(RULES), *([r] for r in RULES)]:
            clean = not _one_pass(mutant, rules)
            assert plain_conformant(mutant, rules) == clean, (rules, mutant)
            seen[clean] += 1
    assert min(seen.values()) > 200  # both answers, many times over


def one_tool_twice(results: tuple[str, str], dispatched: tuple[str, str]) -> Conversation:
    """A run whose step calls echo twice (ids c1 and c2, arguments "a" and "b"), the loop
    passing back `results` for c1 and c2 in that order, echo's dispatches recorded with
    the arguments `dispatched` (each returning its argument)."""
    one, two = ToolCall("c1", "echo", {"m": "a"}), ToolCall("c2", "echo", {"m": "b"})
    said = (Message(role="system", content="Be brief."), Message(role="user", content="twice"))
    asked = Message(role="assistant", tool_calls=(one, two))
    passed = tuple(
        Message(role="tool", content=text, tool_call_id=id_)
        for id_, text in zip(("c1", "c2"), results, strict=True)
    )
    return Conversation(
        user_inputs=("twice",),
        script=((ModelStep(tool_calls=(one, two)), ModelStep(text="done")),),
        exchanges=(
            Exchange(0, 0, 0, ModelRequest(messages=said, tools=ECHO)),
            Exchange(0, 1, 2, ModelRequest(messages=(*said, asked, *passed), tools=ECHO)),
        ),
        calls=tuple(RecordedCall("echo", f'{{"m":"{m}"}}', m, True, 0.1) for m in dispatched),
    )


def test_one_tool_called_twice_in_a_step_is_judged_at_once_as_the_one_pass_judges_it() -> None:
    """The plain path's shortcut for results passed back in the order of the calls holds
    for calls of one tool too: each dispatch is then told apart by its arguments, as the
    one pass tells them apart, whichever order they were recorded in."""
    verdicts = set()
    for results in [("a", "b"), ("b", "a"), ("a", "a")]:
        for dispatched in [("a", "b"), ("b", "a")]:
            run = one_tool_twice(results, dispatched)
            clean = not _one_pass(run, RULES)
            assert plain_conformant(run, RULES) == clean, (results, dispatched)
            verdicts.add(clean)
    assert verdicts == {True, False}


def test_a_run_that_is_not_plain_is_left_to_the_one_pass() -> None:
    conformant = plain_run()
    approval = Approval(0, "c1", "echo", approved=True)
    for other in (
        dataclasses.replace(conformant, handoffs=(Handoff(0, 0, "a", "b"),)),
        dataclasses.replace(conformant, approvals=(approval,)),
        helper_and_root(root_forgets=False),
    ):
        assert not plain_conformant(other, RULES)


def test_a_rule_the_plain_path_does_not_know_is_left_to_the_one_pass() -> None:
    from harness.expectations.plain_conformance import PLAIN_RULES

    assert set(RULES) == PLAIN_RULES  # every rule there is, checked at once on a plain run
    assert plain_conformant(plain_run(), [*RULES, "a_new_rule"]) is False


def long_run(turns: int = 4) -> Conversation:
    """A conformant run of one agent over several turns, each a call and its answer: every
    request holds the one before's messages and adds its own, as a loop's do."""
    messages: tuple[Message, ...] = (Message(role="system", content="Be brief."),)
    inputs, script, exchanges, calls = [], [], [], []
    for turn in range(turns):
        said, call = f"say {turn}", ToolCall(f"c{turn}", "echo", {"message": str(turn)})
        inputs.append(said)
        script.append((ModelStep(tool_calls=(call,)), ModelStep(text=f"said {turn}")))
        messages += (Message(role="user", content=said),)
        exchanges.append(Exchange(turn, 0, len(calls), ModelRequest(messages=messages, tools=ECHO)))
        calls.append(RecordedCall("echo", f'{{"message":"{turn}"}}', str(turn), True, 0.1))
        messages += (
            Message(role="assistant", tool_calls=(call,)),
            Message(role="tool", content=str(turn), tool_call_id=call.id),
        )
        exchanges.append(Exchange(turn, 1, len(calls), ModelRequest(messages=messages, tools=ECHO)))
        messages += (Message(role="assistant", content=f"said {turn}"),)
    return Conversation(
        user_inputs=tuple(inputs),
        script=tuple(script),
        exchanges=tuple(exchanges),
        calls=tuple(calls),
    )


def test_a_long_plain_run_is_judged_at_once_as_the_one_pass_judges_it() -> None:
    # The plain path looks for each request's history only after what the request before
    # held where it begins with that one's messages: broken anywhere, it must still find
    # what the one pass finds.
    rng = random.Random(2029)
    conformant = long_run()
    assert _one_pass(conformant, RULES) == {} and plain_conformant(conformant, RULES)
    seen = {True: 0, False: 0}
    for mutant in mutants(conformant, rng):
        for rules in [list(RULES), ["history"], ["last_user_input"], ["tool_results"]]:
            clean = not _one_pass(mutant, rules)
            assert plain_conformant(mutant, rules) == clean, (rules, mutant)
            seen[clean] += 1
    assert min(seen.values()) > 100
    # A request that no longer begins with the one before's messages (the loop rewrote its
    # history) is looked through from its first message again.
    exchanges = list(conformant.exchanges)
    last = exchanges[-1].request
    dropped = tuple(m for m in last.messages if m.content != "say 1")
    exchanges[-1] = dataclasses.replace(
        exchanges[-1], request=msgspec.structs.replace(last, messages=dropped)
    )
    broken = dataclasses.replace(conformant, exchanges=tuple(exchanges))
    assert "history" in _one_pass(broken, RULES)
    assert not plain_conformant(broken, RULES) and not plain_conformant(broken, ["history"])


def offering(run: Conversation, tools: tuple[ToolSchema, ...]) -> Conversation:
    """`run` with every request offering `tools` (new schema objects each time)."""
    exchanges = tuple(
        dataclasses.replace(e, request=msgspec.structs.replace(e.request, tools=tools))
        for e in run.exchanges
    )
    return dataclasses.replace(run, exchanges=exchanges)


def test_runs_one_after_another_are_each_judged_by_the_tools_they_offered() -> None:
    """The tools a run offered are worked out once for runs offering equal ones: a run
    after one offering other tools (as many, of other names, or an output tool) is judged
    by its own, as the one pass judges it."""
    run = plain_run()
    schema = {"type": "object"}
    offers = [
        (ToolSchema("echo", "", dict(schema)), ToolSchema("fail", "", dict(schema))),
        (ToolSchema("echo", "", dict(schema)), ToolSchema("fails", "", dict(schema))),
        (ToolSchema("echo", "", dict(schema)), ToolSchema("fail", "", dict(schema))),
        (ToolSchema("echo", "", dict(schema)), ToolSchema("fail", "", {}, output=True)),
        (ToolSchema("echo", "", dict(schema)), ToolSchema("fail", "", dict(schema))),
    ]
    verdicts = []
    for tools in offers:
        each = offering(run, tools)
        clean = not _one_pass(each, RULES)
        assert plain_conformant(each, RULES) == clean, tools
        verdicts.append(clean)
    assert verdicts == [True, False, True, False, True]


def test_equal_tools_nested_past_the_recursion_limit_are_judged_without_comparing_them() -> None:
    """Runs offering equal tools are not told apart by comparing their schemas: two runs
    offering equal but separate schemas nested past Python's recursion limit are judged
    as the one pass judges them, not ended by a RecursionError."""
    run = plain_run()

    def deep() -> dict[str, object]:
        schema: dict[str, object] = {"type": "object"}
        for _ in range(5_000):
            schema = {"type": "object", "properties": {"x": schema}}
        return schema

    for _ in range(2):
        each = offering(run, (ToolSchema("echo", "", deep()), ToolSchema("fail", "", deep())))
        assert plain_conformant(each, RULES) == (not _one_pass(each, RULES))
