"""The replay conformance rules of `loop_conformance` over a plain run (one agent, no
handoff, guardrail or approval: most runs), all at once, request by request: whether the
one pass would find no violation, found without it (the one pass then says what, when a
rule may be broken)."""

from __future__ import annotations

import operator
from collections.abc import Collection

from harness.expectations.conformance import (
    in_order,
    lost_instructions,
    results_problems,
)
from harness.model_boundary import Message, ModelRequest, ToolCall, ToolSchema
from harness.tool_registry import RecordedCall, canonical_arguments
from harness.transcript import Conversation, Exchange

# The rules `plain_conformant` checks: a rule of `loop_conformance` not among them sends
# every run through the one pass, until it is checked here too.
PLAIN_RULES = frozenset(
    {"dispatches", "tool_results", "history", "last_user_input", "offered_tools", "instructions"}
)


def plain_conformant(conversation: Conversation, rules: Collection[str]) -> bool:
    """Whether a plain conversation keeps every rule named in `rules`, checked at once
    request by request: what each rule of `loop_conformance` checks, in the case where
    most of them has nothing to check (one agent, one conversation: no handoff, no
    guardrail, no approval, every request answered by a step of its turn's script).

    True only when the one pass would find no violation; False when one of the rules is
    broken, or the conversation is not plain: the one pass then says what, as always
    (so a violation's words are made in one place). Most runs are plain and conform, and
    for them this is all grading the loop costs: one loop, its state in local variables
    (a walk object's attributes, read and set at every request, cost a third of it)."""
    if not _plain(conversation, rules):
        return False
    exchanges, calls = conversation.exchanges, conversation.calls
    script, inputs = conversation.script, conversation.user_inputs
    dispatches, results = "dispatches" in rules, "tool_results" in rules
    offered = "offered_tools" in rules
    said = _Said(conversation, rules)
    turns, count = min(len(script), len(inputs)), len(exchanges)
    # The tools a request offered (a loop mostly offers the very same ones request after
    # request): their names, and those of its output tools, whose calls are no dispatch.
    offer: object = None
    names: frozenset[str] = frozenset()
    answers: frozenset[str] = frozenset()
    # The step that answered the request before, its turn, and the dispatches it made.
    before: tuple[ToolCall, ...] = ()
    before_turn = -1
    before_ran: tuple[RecordedCall, ...] = ()
    for index, exchange in enumerate(exchanges):
        request, now = exchange.request, exchange.turn
        if request.agent is not None or not 0 <= now < turns:
            return False
        steps = script[now]
        if exchange.step >= len(steps):
            return False
        wanted = steps[exchange.step].tool_calls
        ran = calls[
            exchange.calls_before : exchanges[index + 1].calls_before
            if index + 1 < count
            else len(calls)
        ]
        if wanted and request.tools is not offer:
            offer = request.tools
            names, answers = _offered(request.tools)
        if dispatches and (wanted or ran) and not _dispatched(wanted, ran, answers):
            return False
        if offered and wanted and not names.issuperset(map(_NAME, wanted)):
            return False
        if (
            results
            and before
            and before_turn == now
            and not _results_kept(before, before_ran, exchange)
        ):
            return False
        if not said.kept(now, request):
            return False
        before, before_turn, before_ran = wanted, now, ran
    return True


class _Said:
    """`history`, `last_user_input` and `instructions` (those of them asked) request by
    request over the one conversation of a plain run. A request of the turn of the one
    before that holds that one's messages and adds no user message (a loop passing tool
    results back) keeps what that one kept, as each rule would find: the history and the
    last input where they were, the system messages all there. Only what neither declared
    instructions for: the rule reads a declaring request otherwise. One object for the
    three rules' state: most runs are plain, and each object made is a cost of every run."""

    __slots__ = (
        "earlier",
        "expected",
        "first",
        "history",
        "inputs",
        "instructions",
        "last_input",
        "matched",
        "messages",
        "position",
        "script",
        "seen",
        "told",
        "turn",
    )

    def __init__(self, conversation: Conversation, rules: Collection[str]) -> None:
        self.script, self.inputs = conversation.script, conversation.user_inputs
        self.history = "history" in rules
        self.last_input = "last_user_input" in rules
        self.instructions = "instructions" in rules
        self.first: list[str | None] = []  # the first request's system message, once seen
        # The messages of the request before, when it declared no instructions, and its turn.
        self.messages: tuple[Message, ...] | None = None
        self.turn = -1
        # `history`: the conversation so far as the rule keeps it, and the last turn told it.
        self.expected: list[tuple[str, str]] = []
        self.told = -1
        # The messages of the request before, where its history was found, and how many
        # entries of `expected` it held: a loop's requests mostly grow one from the other.
        self.seen: tuple[Message, ...] = ()
        self.position = self.matched = 0
        # `last_user_input`: per turn, the inputs of the turns before it that differ from
        # its own (made for a turn after the first, when it is asked).
        self.earlier: dict[int, set[str]] | None = None

    def kept(self, now: int, request: ModelRequest) -> bool:
        messages, seen = request.messages, self.messages
        if request.declared_instructions:
            self.messages = None
        else:
            self.messages = messages
            if seen is not None and now == self.turn and _grown_unsaid(seen, messages):
                return True
        self.turn = now
        if self.history and not self._history_kept(now, messages):
            return False
        if self.last_input and not self._last_input_kept(now, messages):
            return False
        return not self.instructions or _instructions_kept(request, self.first)

    def _history_kept(self, now: int, messages: tuple[Message, ...]) -> bool:
        """`history` at one request: the conversation so far found in order in it."""
        expected, script = self.expected, self.script
        if now > self.told:
            for later in range(self.told + 1, now + 1):
                # `final_text`, for a run no tripwire halted.
                ended = script[later - 1][-1] if later > 0 and script[later - 1] else None
                if ended is not None and ended.text and not ended.tool_calls:
                    expected.append(("assistant", ended.text))
                expected.append(("user", self.inputs[later]))
            self.told = now
        seen = self.seen
        # Found in order from the first message on, each where it is first found: a request
        # that begins with the one before's messages holds what that one held where it did,
        # so only what was kept since is looked for, after it.
        if seen and messages[: len(seen)] == seen:
            position, matched = self.position, self.matched
        else:
            position = matched = 0
        # Found in order from `matched` on: the position after the last one found.
        index, position = in_order(expected, matched, messages, position)
        if index != len(expected):
            return False
        self.seen, self.position, self.matched = messages, position, len(expected)
        return True

    def _last_input_kept(self, turn: int, messages: tuple[Message, ...]) -> bool:
        """`last_user_input` at one request of `turn`."""
        inputs = self.inputs
        want = inputs[turn]
        for at in range(len(messages) - 1, -1, -1):
            message = messages[at]
            if message.role == "user" and want in message.content:
                break
        else:
            return False
        if not turn:
            return True
        if self.earlier is None:
            self.earlier = {}
        earlier = self.earlier.get(turn)
        if earlier is None:
            earlier = self.earlier[turn] = set(inputs[:turn]) - {want}
        if not earlier:
            return True
        return not any(
            m.role == "user" and any(e in m.content for e in earlier) for m in messages[at + 1 :]
        )


def _grown_unsaid(seen: tuple[Message, ...], messages: tuple[Message, ...]) -> bool:
    """Whether `messages` begins with `seen` and adds no user message to it."""
    count = len(seen)
    if len(messages) < count or messages[:count] != seen:
        return False
    for message in messages[count:]:  # noqa: SIM110 (`all` of a generator costs more)
        if message.role == "user":
            return False
    return True


def _plain(conversation: Conversation, rules: Collection[str]) -> bool:
    """Whether nothing but one agent's loop touched the conversation, and every rule of
    `rules` is checked here (any other, the one pass checks)."""
    touched = conversation.handoffs or conversation.guardrails or conversation.approvals
    return not touched and PLAIN_RULES.issuperset(rules)


_NAME = operator.attrgetter("name")


Offer = tuple[frozenset[str], frozenset[str]]
# The tools the run before offered last, and `_offered` of them: a suite's runs mostly offer
# the very same schemas (frozen: the same ones have the same names, and output tools alike).
# Compared one by one by identity, never by value: equal schemas nested deep enough would
# exhaust the recursion limit comparing their parameters.
_LAST_OFFER: list[tuple[tuple[ToolSchema, ...], Offer]] = [((), (frozenset(), frozenset()))]


def _offered(tools: tuple[ToolSchema, ...]) -> Offer:
    """The names of `tools`, and those of its output tools (mostly none)."""
    last = _LAST_OFFER[0]
    if len(last[0]) == len(tools) and all(map(operator.is_, last[0], tools)):
        return last[1]
    names: set[str] = set()
    answers: set[str] = set()
    for tool in tools:
        names.add(tool.name)
        if tool.output:
            answers.add(tool.name)
    offer = frozenset(names), frozenset(answers)
    _LAST_OFFER[0] = (tools, offer)
    return offer


def _results_kept(
    calls: tuple[ToolCall, ...], ran: tuple[RecordedCall, ...], exchange: Exchange
) -> bool:
    """`tool_results` at one request of a plain run: `results_problems` finds nothing.
    Seen at once where a loop passes the results back as its last messages, in the order
    of the calls, each call's id its own: each result is then the one its call's id finds,
    and each call's dispatch the one in its place, of its name (and, where the step calls
    one tool more than once, of its arguments: `take_dispatch`'s choice)."""
    messages, n = exchange.request.messages, len(calls)
    if n == 1 and len(ran) == 1 and messages:  # mostly: one call, its result passed back last
        call, result, done = calls[0], messages[-1], ran[0]
        if (
            result.role == "tool"
            and call.id
            and result.tool_call_id == call.id
            and done.name == call.name
            and done.result in result.content
        ):
            return True
    elif len(ran) == n <= len(messages) and len({c.id for c in calls}) == n:
        alike = n > 1 and len(set(map(_NAME, calls))) < n
        for call, result, done in zip(calls, messages[-n:], ran, strict=True):
            if (
                result.role != "tool"
                or not call.id
                or result.tool_call_id != call.id
                or done.name != call.name
                or done.result not in result.content
                or (alike and done.arguments != canonical_arguments(call.arguments))
            ):
                break
        else:
            return True
    return next(results_problems(calls, ran, exchange), None) is None


def _dispatched(
    wanted: tuple[ToolCall, ...], ran: tuple[RecordedCall, ...], answers: frozenset[str]
) -> bool:
    """`dispatches` at one request of a plain run: what ran is what the step asked for
    (`answers`: the output tools its request offered, whose calls are no dispatch)."""
    if (
        len(ran) == len(wanted)
        and not answers
        and list(map(_NAME, ran)) == list(map(_NAME, wanted))
    ):
        return True  # in the order asked, even
    asked = sorted(c.name for c in wanted if c.name not in answers)
    return sorted(map(_NAME, ran)) == asked


def _instructions_kept(request: ModelRequest, first: list[str | None]) -> bool:
    """`instructions` at one request of a plain run (`first`: its first request's system
    message, once that request is seen)."""
    messages = request.messages
    if first and not request.declared_instructions:
        kept = first[0]
        # Mostly the loop's first message, as it was: said without listing the others.
        if kept is None or (
            messages and messages[0].role == "system" and messages[0].content == kept
        ):
            return True
    system = [m.content for m in messages if m.role == "system"]
    if request.declared_instructions:
        return lost_instructions(request.declared_instructions, system) is None
    if not first:
        first.append(system[0] if system else None)
        return True
    kept = first[0]
    return kept is None or kept in system
