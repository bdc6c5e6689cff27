"""`harness.expectations.loop_conformance`: replay conformance. Every request the agent
makes is checked against the conversation the script implies, so a loop that forgets,
drops or fakes what it should pass back to the model fails the gate."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FAITHFUL_LOOP,
    call,
    fixture,
    refuse_one,
    replay_trace,
    text_step,
    tool_step,
    turn,
    write_module,
    write_suite,
)

from harness import run_suite
from harness.verdict.reports import CaseReport

REPO = Path(__file__).resolve().parents[1]

# One loop, broken in the ways a loop breaks; `good` is the faithful one.
LOOPS = """
from harness import Message, ModelRequest, ToolSchema


class Base:
    forget = drop_results = twice = ok_for_failures = hide_tools = no_ids = False
    instructions = None

    def __init__(self, ctx):
        self.ctx = ctx
        self.messages = []
        self.tools = tuple(
            ToolSchema(t.name, t.description, t.parameters) for t in ctx.tools.tools.values()
        )
        self.turns = 0

    def request(self):
        system = self.instructions
        if callable(system):
            system = system(self.turns)
        head = (Message(role="system", content=system),) if system else ()
        tools = () if self.hide_tools else self.tools
        return ModelRequest(messages=head + tuple(self.messages), tools=tools)

    async def run_turn(self, user_input):
        self.turns += 1
        if self.forget:
            self.messages = []
        self.messages.append(Message(role="user", content=user_input))
        while True:
            step = await self.ctx.model.respond(self.request())
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text))
                return step.text
            self.messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                outcome = await self.ctx.tools.dispatch(call.name, call.arguments)
                if self.twice:
                    await self.ctx.tools.dispatch(call.name, call.arguments)
                text = "ok" if self.ok_for_failures and not outcome.success else outcome.result
                if not self.drop_results:
                    call_id = None if self.no_ids else call.id
                    self.messages.append(Message(role="tool", content=text, tool_call_id=call_id))


class Forget(Base): forget = True
class DropResults(Base): drop_results = True
class Twice(Base): twice = True
class OkForFailures(Base): ok_for_failures = True
class HideTools(Base): hide_tools = True
class NoIds(Base): no_ids = True
class Instructed(Base): instructions = "You are terse."
class Drifting(Base): instructions = staticmethod(lambda n: f"You are terse (turn {n}).")


# Numbers tool calls its own way (consistently on the calls and their results), wraps the
# user's input in a template, keeps final texts stripped.
class OwnIds(Base):

    async def run_turn(self, user_input):
        self.messages.append(Message(role="user", content=f"<user>{user_input}</user>"))
        while True:
            step = await self.ctx.model.respond(self.request())
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text.strip()))
                return step.text
            renamed = tuple(
                type(c)(f"my{i}", c.name, c.arguments) for i, c in enumerate(step.tool_calls)
            )
            self.messages.append(Message(role="assistant", tool_calls=renamed))
            for own, call in zip(renamed, step.tool_calls):
                outcome = await self.ctx.tools.dispatch(call.name, call.arguments)
                self.messages.append(
                    Message(role="tool", content=outcome.result, tool_call_id=own.id)
                )


# `module:make_<Class>`: a factory per loop (a class itself would be taken for an adapter).
for _name, _cls in list(globals().items()):
    if isinstance(_cls, type) and issubclass(_cls, Base):
        globals()[f"make_{_name}"] = (lambda c: lambda ctx: c(ctx))(_cls)
"""
BROKEN = {
    "forget": "Forget",
    "drop_results": "DropResults",
    "twice": "Twice",
    "ok_for_failures": "OkForFailures",
    "no_ids": "NoIds",
}


@pytest.fixture
def loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_module(tmp_path, LOOPS, "loops")


def run_loop(module: str, cls: str, suite: Path) -> list[CaseReport]:
    return run_suite(suite, agent=f"{module}:make_{cls}").cases


def loop_failures(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed and g.category == "loop"}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_every_broken_loop_fails_the_regression_suite(loops: str, broken: str) -> None:
    cases = run_loop(loops, BROKEN[broken], REPO / "evals" / "regression")
    assert any(not c.passed for c in cases), broken


def test_the_faithful_loop_passes_the_regression_suite(loops: str) -> None:
    cases = run_loop(loops, "Base", REPO / "evals" / "regression")
    assert [(c.id, c.error, loop_failures(c)) for c in cases if not c.passed] == []


TWO_TURNS = fixture(
    "two-turns",
    [
        turn("Echo alpha", tool_step(call("c1", message="alpha")), text_step("alpha echoed")),
        turn("Now fail", tool_step(call("c2", "fail", reason="nope")), text_step("it failed")),
    ],
    {"response_contains": ["it failed"], "exact_tool_calls": 2},
)


def one_case(tmp_path: Path, data: dict[str, object], module: str, cls: str) -> CaseReport:
    suite = write_suite(tmp_path / "suite", {"case.json": data})
    (case,) = run_loop(module, cls, suite)
    assert case.error is None, case.error
    return case


@pytest.mark.parametrize(
    ("cls", "rule", "says"),
    [
        ("Forget", "history", 'the user input "Echo alpha" is missing or out of order'),
        ("DropResults", "tool_results", "no tool result for c1 (echo) was passed back"),
        ("OkForFailures", "tool_results", 'for c2 (fail) was "ok", but the tool returned "nope"'),
        ("NoIds", "tool_results", "the result passed back for c1 (echo) carries no tool_call_id"),
        ("HideTools", "offered_tools", "calls 'echo', which the request it answers never offered"),
        ("Drifting", "instructions", 'the instructions of the first request ("You are terse'),
    ],
)
def test_each_rule_names_what_the_request_lacked(
    tmp_path: Path, loops: str, cls: str, rule: str, says: str
) -> None:
    case = one_case(tmp_path, TWO_TURNS, loops, cls)
    failures = loop_failures(case)
    assert list(failures) == [f"loop({rule})"], failures
    assert says in failures[f"loop({rule})"]
    grade = next(g for g in case.grades if g.check == f"loop({rule})")
    assert grade.field.startswith("$.turns[")


def test_a_conformant_run_adds_no_grade(tmp_path: Path, loops: str) -> None:
    for cls in ("Base", "Instructed"):
        case = one_case(tmp_path / cls, TWO_TURNS, loops, cls)
        assert case.passed
        assert [g.check for g in case.grades] == [
            'response_contains("it failed")',
            "exact_tool_calls(2)",
        ]


def test_an_exemption_with_its_reason_lifts_exactly_that_rule(tmp_path: Path, loops: str) -> None:
    data = {
        **TWO_TURNS,
        "expects": {
            **TWO_TURNS["expects"],  # type: ignore[dict-item]
            "loop_exempt": {"history": "this agent starts every turn afresh on purpose"},
        },
    }
    assert one_case(tmp_path / "a", data, loops, "Forget").passed
    assert loop_failures(one_case(tmp_path / "b", data, loops, "DropResults")) != {}


@pytest.mark.parametrize(
    ("exempt", "mode", "field", "message"),
    [
        (
            {"histroy": "why"},
            "replay",
            "$.expects.loop_exempt.histroy",
            "unknown conformance rule (did you mean history?)",
        ),
        (
            {"history": "  "},
            "replay",
            "$.expects.loop_exempt.history",
            "an exemption needs its reason: say why the agent may",
        ),
    ],
)
def test_exemptions_are_admitted_strictly(
    tmp_path: Path, exempt: dict[str, str], mode: str, field: str, message: str
) -> None:
    data = replay_trace()
    data["expects"]["loop_exempt"] = exempt
    refuse_one(tmp_path, data, field, message)


def test_an_exemption_is_refused_in_live_mode(tmp_path: Path) -> None:
    from conftest import live_trace

    data = live_trace()
    data["expects"]["loop_exempt"] = {"history": "summarises on purpose"}
    refuse_one(
        tmp_path,
        data,
        "$.expects.loop_exempt.history",
        "conformance is checked in replay only; remove it",
        mode="live",
    )


def test_the_faithful_test_loop_conforms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{write_module(tmp_path, FAITHFUL_LOOP)}:factory"
    suite = write_suite(tmp_path / "suite", {"case.json": TWO_TURNS})
    (case,) = run_suite(suite, agent=spec).cases
    assert case.passed, [(g.check, g.detail) for g in case.grades if not g.passed]


def test_a_correct_loop_with_its_own_ids_and_input_template_conforms(
    tmp_path: Path, loops: str
) -> None:
    # Results matched by position when the loop's ids are its own; user inputs found inside
    # a template; a final text kept stripped.
    case = one_case(tmp_path, TWO_TURNS, loops, "OwnIds")
    assert case.passed, loop_failures(case)


def test_results_of_one_tool_are_matched_by_their_arguments_not_their_finishing_order() -> None:
    from harness.expectations.loop_conformance import RULES
    from harness.model_boundary import Message, ModelRequest, ModelStep, ToolCall
    from harness.tool_registry import RecordedCall
    from harness.transcript import Conversation, Exchange

    first = ToolCall("c1", "slow", {"s": "first"})
    second = ToolCall("c2", "slow", {"s": "second"})
    asked = ModelRequest(messages=(Message(role="user", content="go"),))
    answered = ModelRequest(
        messages=(
            Message(role="user", content="go"),
            Message(role="assistant", tool_calls=(first, second)),
            Message(role="tool", content="first", tool_call_id="c1"),
            Message(role="tool", content="second", tool_call_id="c2"),
        )
    )
    conversation = Conversation(
        user_inputs=("go",),
        script=((ModelStep(tool_calls=(first, second)), ModelStep(text="done")),),
        exchanges=(Exchange(0, 0, 0, asked), Exchange(0, 1, 2, answered)),
        # The second call finished first, so it was recorded first.
        calls=(
            RecordedCall("slow", '{"s":"second"}', "second", True, 1.0),
            RecordedCall("slow", '{"s":"first"}', "first", True, 300.0),
        ),
    )
    assert list(RULES["tool_results"](conversation)) == []
    assert list(RULES["dispatches"](conversation)) == []


# Two agents: triage hands every turn to billing (its call answered by the loop with a
# transfer text, never dispatched); billing echoes and answers. `Forgetful` starts billing
# on the turn's input alone, as a handoff that drops the history would.
HANDOFF_LOOPS = """
from harness import Message, ModelRequest, ToolSchema


class Faithful:
    keeps_history = True

    def __init__(self, ctx):
        self.ctx = ctx
        self.history = []
        self.tools = tuple(
            ToolSchema(t.name, t.description, t.parameters) for t in ctx.tools.tools.values()
        )

    async def run_turn(self, user_input):
        self.history.append(Message(role="user", content=user_input))
        messages, agent = list(self.history), "triage"
        while True:
            request = ModelRequest(messages=tuple(messages), tools=self.tools, agent=agent)
            step = await self.ctx.model.respond(request)
            if not step.tool_calls:
                self.history.append(Message(role="assistant", content=step.text))
                return step.text
            messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                if agent == "triage":
                    self.ctx.model.handoff("triage", "billing")
                    agent = self.ctx.tools.agent = "billing"
                    result = "transferred to billing"
                else:
                    result = (await self.ctx.tools.dispatch(call.name, call.arguments)).result
                messages.append(Message(role="tool", content=result, tool_call_id=call.id))
            if agent == "billing" and not self.keeps_history and len(messages) > 3:
                # The handoff and its transfer text kept, the earlier turns dropped.
                messages = [Message(role="user", content=user_input), *messages[-2:]]


class Forgetful(Faithful):
    keeps_history = False


def make_Faithful(ctx):
    return Faithful(ctx)


def make_Forgetful(ctx):
    return Forgetful(ctx)
"""


def handed_turn(text: str, message: str, answer: str) -> dict[str, object]:
    return turn(
        text,
        # The loop's handoff is the model calling `fail`: the loop never dispatches it.
        tool_step(call(f"h-{message}", "fail", reason="to billing")),
        tool_step(call(f"e-{message}", message=message)),
        text_step(answer),
    )


HANDED_TWICE = fixture(
    "handed-twice",
    [
        handed_turn("Echo alpha", "alpha", "alpha echoed"),
        handed_turn("Echo beta", "beta", "beta echoed"),
    ],
    {"response_contains": ["beta echoed"], "exact_tool_calls": 2},
)


@pytest.fixture
def handoff_loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_module(tmp_path, HANDOFF_LOOPS, "handoff_loops")


def test_a_handoff_passing_the_whole_history_conforms_with_no_exemption(
    tmp_path: Path, handoff_loops: str
) -> None:
    # The handoff's call is answered by the loop, not dispatched: neither `dispatches` nor
    # `tool_results` asks for a dispatch of it.
    case = one_case(tmp_path, HANDED_TWICE, handoff_loops, "Faithful")
    assert case.passed, loop_failures(case)


def test_a_specialist_that_drops_the_history_after_a_handoff_is_caught_naming_it(
    tmp_path: Path, handoff_loops: str
) -> None:
    case = one_case(tmp_path, HANDED_TWICE, handoff_loops, "Forgetful")
    failures = loop_failures(case)
    assert list(failures) == ["loop(history)"], failures
    assert failures["loop(history)"].startswith(
        'turn 1, request 1 (agent "billing"): the user input "Echo alpha" is missing'
    ), failures


def test_a_handoff_step_that_also_dispatches_nothing_else_is_a_dispatch_violation() -> None:
    # A step that handed off answers one of its calls itself; every other call is dispatched.
    from harness.expectations.loop_conformance import RULES
    from harness.model_boundary import Handoff, Message, ModelRequest, ModelStep, ToolCall
    from harness.transcript import Conversation, Exchange

    handing = ToolCall("h1", "transfer_to_billing", {})
    echo = ToolCall("e1", "echo", {"message": "x"})
    asked = ModelRequest(messages=(Message(role="user", content="go"),), agent="triage")
    after = ModelRequest(messages=(Message(role="user", content="go"),), agent="billing")
    conversation = Conversation(
        user_inputs=("go",),
        script=((ModelStep(tool_calls=(handing, echo)), ModelStep(text="done")),),
        exchanges=(Exchange(0, 0, 0, asked), Exchange(0, 1, 0, after)),
        calls=(),
        handoffs=(Handoff(0, 0, "triage", "billing"),),
    )
    (violation,) = RULES["dispatches"](conversation)
    assert violation[1] == (
        'turn 0, step 0 (agent "triage"): the script called [echo, transfer_to_billing], '
        "the agent dispatched [] and made 1 handoff(s)"
    )


# --- a handoff that nests the history (the SDK's nest_handoff_history) ----------------------

SUMMARY = (
    "For context, here is the conversation so far:\n<CONVERSATION HISTORY>\n"
    "1. user: Hi, I am Ann\n"
    '2. {"content": [{"text": "Hello Ann, how can I help?"}], "role": "assistant"}\n'
    "3. user: Is INV-1 paid?\n"
    '4. {"call_id": "c0", "output": "account of \\"Ann\\": AC-7", "type": "function_call_output"}\n'
    "</CONVERSATION HISTORY>"
)


def nested_handoff(summary: str) -> Any:
    """Two turns; in the second the triage agent looks the account up, then hands off to
    billing with the history nested into `summary`, and billing answers."""
    from harness.model_boundary import (
        Handoff,
        Message,
        ModelRequest,
        ModelStep,
        ToolCall,
        ToolSchema,
    )
    from harness.tool_registry import RecordedCall
    from harness.transcript import Conversation, Exchange

    offered = (ToolSchema("account_of", "", {}), ToolSchema("transfer_to_billing", "", {}))

    def said(*messages: tuple[str, str] | Message, agent: str = "triage") -> ModelRequest:
        return ModelRequest(
            messages=tuple(
                m if isinstance(m, Message) else Message(role=m[0], content=m[1])  # type: ignore[arg-type]
                for m in messages
            ),
            tools=offered if agent == "triage" else (),
            agent=agent,
        )

    looked = (
        Message(role="assistant", tool_calls=(ToolCall("c0", "account_of", {}),)),
        Message(role="tool", content='account of "Ann": AC-7', tool_call_id="c0"),
    )
    history = (("user", "Hi, I am Ann"), ("assistant", "Hello Ann, how can I help?"))
    return Conversation(
        user_inputs=("Hi, I am Ann", "Is INV-1 paid?"),
        script=(
            (ModelStep(text="Hello Ann, how can I help?"),),
            (
                ModelStep(tool_calls=(ToolCall("c0", "account_of", {}),)),
                ModelStep(tool_calls=(ToolCall("c1", "transfer_to_billing", {}),)),
                ModelStep(text="INV-1 is paid."),
            ),
        ),
        exchanges=(
            Exchange(0, 0, 0, said(("user", "Hi, I am Ann"))),
            Exchange(1, 0, 0, said(*history, ("user", "Is INV-1 paid?"))),
            Exchange(1, 1, 1, said(*history, ("user", "Is INV-1 paid?"), *looked)),
            Exchange(1, 2, 1, said(("system", "Bill."), ("assistant", summary), agent="billing")),
        ),
        calls=(RecordedCall("account_of", "{}", 'account of "Ann": AC-7', True, 0, "triage"),),
        handoffs=(Handoff(1, 1, "triage", "billing", nested=True),),
    )


def violations(conversation: Any) -> dict[str, str]:
    from harness.expectations.loop_conformance import RULES

    found = {rule: next(check(conversation), None) for rule, check in RULES.items()}
    return {rule: violation[1] for rule, violation in found.items() if violation is not None}


def test_a_nested_handoffs_summary_holding_the_conversation_conforms() -> None:
    # The conversation is in one message of the summary, quoted as JSON where the framework
    # quotes it: no rule asks for the messages one by one.
    assert violations(nested_handoff(SUMMARY)) == {}


@pytest.mark.parametrize(
    ("lost", "rule", "detail"),
    [
        (
            "1. user: Hi, I am Ann\n",
            "history",
            'turn 1, request 2 (agent "billing"): the user input "Hi, I am Ann" is missing',
        ),
        (
            "3. user: Is INV-1 paid?\n",
            "last_user_input",
            'turn 1, request 2 (agent "billing"): this turn\'s input "Is INV-1 paid?" is missing',
        ),
        (
            '4. {"call_id": "c0", "output": "account of \\"Ann\\": AC-7", "type": '
            '"function_call_output"}\n',
            "tool_results",
            'turn 1, request 2 (agent "billing"): the result of account_of ("account of '
            '\\"Ann\\": AC-7") is not in the history the handoff nested',
        ),
    ],
    ids=["earlier-turn", "this-turn", "tool-result"],
)
def test_a_nested_summary_that_lost_part_of_the_conversation_is_caught(
    lost: str, rule: str, detail: str
) -> None:
    assert lost in SUMMARY
    found = violations(nested_handoff(SUMMARY.replace(lost, "")))
    assert rule in found, found
    assert found[rule].startswith(detail), found[rule]


def test_the_same_summary_after_a_handoff_passing_the_history_whole_breaks_the_rules() -> None:
    # What lets the summary pass is the handoff saying it nested the history: handed on
    # whole, the conversation's messages must be there one by one.
    from harness.model_boundary import Handoff

    whole = dataclasses.replace(
        nested_handoff(SUMMARY), handoffs=(Handoff(1, 1, "triage", "billing"),)
    )
    assert {"history", "last_user_input"} <= violations(whole).keys()
