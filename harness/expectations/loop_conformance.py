"""Replay conformance: the conversation the script implies, checked against every request
the agent made. On by default in replay; a case opts out of a rule with `loop_exempt`,
naming the rule and why, so the opt-out is visible in review.

Replay answers with the scripted steps whatever the agent sends, so without these checks a
loop that forgets earlier turns or never hands tool results back to the model would pass.
Only violations are graded (category `loop`): a conformant run's report is unchanged.

Every rule is checked in one pass over the conversation (`_one_pass`): each request is
visited once, what the rules read of it worked out once (`_Walk`), and each rule says what
is wrong at it, if anything (`_Rule`; `_ThreadRule` for a rule over each conversation of a
multi-agent run). What a request is checked for is `harness.expectations.conformance`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

import msgspec

from harness.expectations.base import EXPECTS, Context, Evidence, Grade, Kind, clip, q
from harness.expectations.conformance import (
    filtered_problem,
    find_text,
    held,
    lost_instructions,
    missing_problem,
    names_of,
    own_input,
    request_of,
    results_asked,
    results_problems,
    spoken,
    spoken_text,
    step_at,
    summary_problems,
)
from harness.expectations.plain_conformance import plain_conformant
from harness.io.json_paths import child_path
from harness.io.text import clean
from harness.io.validation import Fault, closest
from harness.model_boundary import ModelStep
from harness.tool_registry import RecordedCall
from harness.transcript import Conversation, Exchange, Thread

AT = f"{EXPECTS}.loop_exempt"


class LoopConformance(Kind):
    """`loop_exempt`: rule name -> the reason this case's agent may break it."""

    order = 90
    graded_unset = True
    loop_exempt: dict[str, str] = {}

    def problems(self, context: Context) -> Iterator[Fault]:
        for rule, reason in self.loop_exempt.items():
            where = child_path(AT, rule)
            if rule not in RULES:
                hint = closest(rule, RULES)
                known = f"did you mean {hint}?" if hint else f"rules: {', '.join(RULES)}"
                yield Fault(where, f"unknown conformance rule ({known})")
            elif not reason.strip():
                yield Fault(where, "an exemption needs its reason: say why the agent may")
            if context.mode != "replay":
                yield Fault(where, "conformance is checked in replay only; remove it")

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        conversation = evidence.conversation
        if conversation is None or not conversation.scripted:
            return  # the empty run, and live runs: no script to conform to
        exempt = self.loop_exempt
        rules: Collection[str] = [r for r in RULES if r not in exempt] if exempt else RULES
        if plain_conformant(conversation, rules):
            return  # what the one pass would find, found at once: nothing
        # Every rule checked in one pass over the conversation.
        found = _one_pass(conversation, rules)
        for rule, (where, detail) in found.items():
            yield Grade(f"loop({rule})", False, detail, "loop", where)


Violation = tuple[str, str]  # the fixture field it concerns, and what is wrong


class _Walk:
    """What the rules read of each request, worked out once for all of them as the pass
    goes over the conversation: its scripted step, the calls that answer it, the calls
    never run or replaced, and where it sits among the conversations of a graph."""

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        # Per request: its conversation's number, its place in it, and the conversation.
        self.places: dict[int, tuple[int, int, Thread]] = {}
        self.steps: list[ModelStep | None] = []  # per request visited so far
        self._answered: dict[int, tuple[RecordedCall, ...]] = {}
        self.input_rejected = conversation.rejected("tool_input")
        self.output_rejected = conversation.rejected("tool_output")

    def answered(self, index: int) -> tuple[RecordedCall, ...]:
        found = self._answered.get(index)
        if found is None:
            found = self._answered[index] = self.conversation.answered(index)
        return found


class _Rule:
    """One rule, checked request by request as the pass goes: `check` says its violation
    at a request, if any; the first is the rule's."""

    def __init__(self, walk: _Walk) -> None:
        self.walk = walk
        self.found: Violation | None = None

    @property
    def done(self) -> bool:
        return self.found is not None

    def visit(self, index: int, exchange: Exchange) -> bool:
        """Check the request at `index`; whether the rule is done looking."""
        self.found = self.check(index, exchange)
        return self.found is not None

    def check(self, index: int, exchange: Exchange) -> Violation | None:
        raise NotImplementedError


class _ThreadRule(_Rule):
    """A rule over each conversation of a multi-agent run (`Conversation.threads`) on its
    own: its violation is the first of the first conversation that has one, wherever that
    falls among the requests."""

    def __init__(self, walk: _Walk) -> None:
        super().__init__(walk)
        self._states: dict[int, Any] = {}
        self._first: dict[int, Violation] = {}  # per conversation, its first violation

    @property
    def done(self) -> bool:
        return 0 in self._first  # no later conversation's can come before it

    def visit(self, index: int, exchange: Exchange) -> bool:
        number, position, thread = self.walk.places[index]
        if self._first and number >= min(self._first):
            return False
        state = self._states.get(number)
        if state is None:
            state = self._states[number] = self.start(thread)
        violation = self.member(state, thread, position, exchange)
        if violation is None:
            return False
        self._first[number] = violation
        self.found = self._first[min(self._first)]
        return self.done

    def start(self, thread: Thread) -> Any:
        """What the rule keeps of one conversation as its requests are visited."""
        raise NotImplementedError

    def member(
        self, state: Any, thread: Thread, position: int, exchange: Exchange
    ) -> Violation | None:
        raise NotImplementedError


def _one_pass(conversation: Conversation, names: Iterable[str]) -> dict[str, Violation]:
    """Each named rule's first violation, in the order named, found in one pass over the
    conversation for all of them (a rule stops looking once it has its own)."""
    walk = _Walk(conversation)
    rules = {name: _CHECKS[name](walk) for name in names}
    if any(isinstance(r, _ThreadRule) for r in rules.values()):
        walk.places = {
            member: (number, position, thread)
            for number, thread in enumerate(conversation.threads)
            for position, member in enumerate(thread.members)
        }
    active = list(rules.values())
    for index, exchange in enumerate(conversation.exchanges):
        if not active:
            break
        walk.steps.append(conversation.step_of(exchange))
        finished = False
        for rule in active:
            finished |= rule.visit(index, exchange)
        if finished:
            active = [r for r in active if not r.done]
    return {name: rule.found for name, rule in rules.items() if rule.found is not None}


def _checked(name: str, conversation: Conversation) -> Iterator[Violation]:
    """The rule `name` on its own: its first violation, if any."""
    yield from _one_pass(conversation, (name,)).values()


class _Dispatches(_Rule):
    """The tool boundary saw what the script asked for: after each step, its calls were
    dispatched once each by the agent that asked, and nothing else. Compared by tool name: a
    framework may fill in defaults or coerce arguments before the tool runs. A step that
    handed off has one call per handoff the framework answered itself, never dispatched; a
    call a tool input guardrail rejected was never run; a call to an output tool the
    request offered is the agent's final answer, which the framework validates itself, never
    a dispatch. A scripted call the framework refuses to run (arguments its schema rejects)
    breaks this rule: such a case says so with `loop_exempt`."""

    def __init__(self, walk: _Walk) -> None:
        super().__init__(walk)
        # A call rejected for approval is never run: the script asks for the others.
        self.unrun = walk.input_rejected | walk.conversation.unapproved

    def check(self, index: int, exchange: Exchange) -> Violation | None:
        step = self.walk.steps[index]
        ran = sorted(c.name for c in self.walk.answered(index))
        calls = step.tool_calls if step is not None else ()
        tools = exchange.request.tools
        answers = {t.name for t in tools if t.output} if calls else set()
        asked = sorted(c.name for c in calls if c.id not in self.unrun and c.name not in answers)
        handed = len(self.walk.conversation.handoffs_after(index))
        if not handed and ran == asked:
            return None
        unran = list(asked)
        for name in ran:
            if name in unran:
                unran.remove(name)
        if len(unran) != handed or len(ran) + handed != len(asked):
            made = f" and made {handed} handoff(s)" if handed else ""
            return (
                step_at(exchange),
                f"{request_of(exchange).replace('request', 'step', 1)}: the script called "
                f"{names_of(asked)}, the agent dispatched {names_of(ran)}{made}",
            )
        return None


class _ToolResults(_ThreadRule):
    """After a scripted tool-call step, the next request of that conversation in that turn
    carries a result for every call of that step, holding what the tool returned. A
    handoff's call is answered by the framework (its text is not a tool's), and a handoff
    whose filter makes the new agent's history may leave the step's results out. A handoff
    that nests the history summarises the conversation into it, every result of its agents
    so far included: each must be there."""

    def start(self, thread: Thread) -> list[RecordedCall]:
        return []  # every call this conversation's agents made until now

    def member(
        self, so_far: Any, thread: Thread, position: int, exchange: Exchange
    ) -> Violation | None:
        if position == 0:
            return None
        walk, handed = self.walk, thread.handed[position]
        earlier = thread.members[position - 1]
        previous, step = walk.conversation.exchanges[earlier], walk.steps[earlier]
        dispatched = walk.answered(earlier)
        so_far += dispatched
        if handed is not None and handed.nested:
            # The summary is the whole conversation so far: every result is in it.
            problems = summary_problems(tuple(so_far), exchange)
        elif step is not None and results_asked(previous, exchange, step, handed):
            # A call whose result a tool output guardrail replaced was answered with its
            # message.
            calls = tuple(c for c in step.tool_calls if c.id not in walk.output_rejected)
            unapproved = walk.conversation.unapproved
            problems = results_problems(calls, dispatched, exchange, unapproved)
        else:
            return None
        problem = next(problems, None)
        if problem is None:
            return None
        return (
            step_at(previous),
            f"{request_of(exchange)}: {problem}; the request held:\n{held(exchange)}",
        )


class _History(_ThreadRule):
    """Every request of turn N carries the user inputs of turns 0..N and the final texts of
    turns 0..N-1, in order: the conversation so far. A handoff passes it on whole; one with
    a filter of its own passes on what the filter makes, so the new agent's first request
    must hold this turn's input and nothing the conversation never had, and what it holds
    is the conversation from then on. One that nests the history (the framework summarises
    it into one message) must keep it all, in order, in the text of the new agent's
    requests from then on. An agent used as a tool or delegated to holds its own: the input
    its first request was given."""

    class State(msgspec.Struct):
        kept: list[tuple[str, str]] = msgspec.field(default_factory=list)
        turn: int = -1
        previous: Exchange | None = None
        nested: bool = False

    def start(self, thread: Thread) -> _History.State:
        return _History.State()

    def member(
        self, state: Any, thread: Thread, position: int, exchange: Exchange
    ) -> Violation | None:
        conversation, handed = self.walk.conversation, thread.handed[position]
        state.nested = state.nested or (handed is not None and handed.nested)
        if thread.nested and state.previous is None:
            # Not the user's turn: its own.
            state.kept, state.turn = own_input(exchange), exchange.turn
        for later in range(state.turn + 1, exchange.turn + 1):
            final = conversation.final_text(later - 1) if later > 0 else ""
            state.kept += [("assistant", final)] if final else []
            state.kept.append(("user", conversation.user_inputs[later]))
        state.turn = max(state.turn, exchange.turn)
        problem: str | None = None
        if handed is not None and handed.filtered and state.previous is not None:
            problem = filtered_problem(conversation, state.kept, state.previous, exchange)
            state.kept = [(m.role, m.content) for m in exchange.request.messages if spoken(m)]
        else:
            problem = missing_problem(state.kept, exchange, nested=state.nested)
        state.previous = exchange
        if problem is None:
            return None
        return (
            step_at(exchange),
            f"{request_of(exchange)}: {problem}; the request held:\n{held(exchange)}",
        )


class _LastUserInput(_ThreadRule):
    """The current turn's user input is the last user message of the conversation so far:
    no earlier turn's input comes after it. (A framework's own follow-up, like pydantic-ai's
    retry prompt, may: it is not a user input of the script.) For an agent used as a tool or
    delegated to, the input its first request was given."""

    class State(msgspec.Struct):
        own: str | None = None
        nested: bool = False

    def start(self, thread: Thread) -> _LastUserInput.State:
        return _LastUserInput.State()

    def member(
        self, state: Any, thread: Thread, position: int, exchange: Exchange
    ) -> Violation | None:
        conversation, handed = self.walk.conversation, thread.handed[position]
        messages = exchange.request.messages
        state.nested = state.nested or (handed is not None and handed.nested)
        if thread.nested:
            state.own = own_input(exchange)[0][1] if state.own is None else state.own
            want, earlier = state.own, set[str]()
        else:
            want = conversation.user_inputs[exchange.turn]
            earlier = set(conversation.user_inputs[: exchange.turn]) - {want}
        at = next(
            (
                i
                for i in range(len(messages) - 1, -1, -1)
                if messages[i].role == "user" and want in messages[i].content
            ),
            None,
        )
        late = None
        if at is not None:
            late = next(
                (
                    m
                    for m in messages[at + 1 :]
                    if m.role == "user" and any(e in m.content for e in earlier)
                ),
                None,
            )
        elif state.nested and find_text(spoken_text(messages), want, 0) >= 0:
            return None  # in the summary a nested handoff made, where the turn's order is kept
        if at is None or late is not None:
            got = "is missing" if late is None else f"comes before {q(clip(late.content, 120))}"
            return (
                step_at(exchange),
                f"{request_of(exchange)}: this turn's input "
                f"{q(clip(want, 120))} {got}; the request held:\n{held(exchange)}",
            )
        return None


class _OfferedTools(_Rule):
    """Every scripted call names a tool that the request it answers offered the model."""

    def check(self, index: int, exchange: Exchange) -> Violation | None:
        step = self.walk.conversation.script[exchange.turn][exchange.step]
        if not step.tool_calls:
            return None
        offered = {tool.name for tool in exchange.request.tools}
        for call in step.tool_calls:
            if call.name not in offered:
                shown = ", ".join(map(clean, sorted(offered))) or "none"
                return (
                    f"{step_at(exchange)}.response.tool_calls",
                    f"turn {exchange.turn}, step {exchange.step} calls {call.name!r}, which the "
                    f"request it answers never offered the model (offered: {shown})",
                )
        return None


class _Instructions(_Rule):
    """The instructions a framework agent declared for a request, as its framework resolved
    them (a dynamic function's text, which may change from request to request; pydantic-ai's
    system prompts where its history holds them), reach it as a system message. A request
    declaring none (an own loop's) holds the system message of its agent's first request,
    unchanged (each agent of a graph has its own)."""

    def __init__(self, walk: _Walk) -> None:
        super().__init__(walk)
        self.first: dict[str | None, str | None] = {}

    def check(self, index: int, exchange: Exchange) -> Violation | None:
        request = exchange.request
        system = [m.content for m in request.messages if m.role == "system"]
        lost = lost_instructions(request.declared_instructions, system)
        if lost is not None:
            return (
                step_at(exchange),
                f"{request_of(exchange)}: the instructions the agent declared "
                f"({q(clip(lost, 120))}) never reached the model: no system message of the "
                f"request holds them; the request held:\n{held(exchange)}",
            )
        if request.declared_instructions:
            return None
        if request.agent not in self.first:
            self.first[request.agent] = system[0] if system else None
            return None
        kept = self.first[request.agent]
        if kept is None or kept in system:
            return None
        return (
            step_at(exchange),
            f"{request_of(exchange)}: the instructions of the first "
            f"request ({q(clip(kept, 120))}) are missing or changed; the request held:\n"
            f"{held(exchange)}",
        )


_CHECKS: dict[str, Callable[[_Walk], _Rule]] = {
    "dispatches": _Dispatches,
    "tool_results": _ToolResults,
    "history": _History,
    "last_user_input": _LastUserInput,
    "offered_tools": _OfferedTools,
    "instructions": _Instructions,
}
# Each rule on its own, by the name `loop_exempt` gives it; the kind checks those listed
# here, all of them in one pass.
RULES: dict[str, Callable[[Conversation], Iterator[Violation]]] = {
    name: functools.partial(_checked, name) for name in _CHECKS
}
