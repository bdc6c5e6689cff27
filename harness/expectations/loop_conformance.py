"""Replay conformance: the conversation the script implies, checked against every request
the agent made. On by default in replay; a case opts out of a rule with `loop_exempt`,
naming the rule and why, so the opt-out is visible in review.

Replay answers with the scripted steps whatever the agent sends, so without these checks a
loop that forgets earlier turns or never hands tool results back to the model would pass.
Only violations are graded (category `loop`): a conformant run's report is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from harness.expectations.base import EXPECTS, Context, Evidence, Grade, Kind, clip, q
from harness.io.json_paths import child_path
from harness.io.text import clean
from harness.io.validation import Fault, closest
from harness.model_boundary import Handoff, Message, ModelStep, ToolCall, summarize_request
from harness.tool_registry import RecordedCall, canonical_arguments
from harness.transcript import Conversation, Exchange, Thread

AT = f"{EXPECTS}.loop_exempt"


class LoopConformance(Kind):
    """`loop_exempt`: rule name -> the reason this case's agent may break it."""

    order = 90
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
        for rule, check in RULES.items():
            if rule in self.loop_exempt:
                continue
            violation = next(check(conversation), None)
            if violation is not None:
                where, detail = violation
                yield Grade(f"loop({rule})", False, detail, "loop", where)


Violation = tuple[str, str]  # the fixture field it concerns, and what is wrong


def _step_at(exchange: Exchange) -> str:
    return f"$.turns[{exchange.turn}].steps[{exchange.step}]"


def _held(exchange: Exchange) -> str:
    return summarize_request(exchange.request, width=80)


def _request(exchange: Exchange) -> str:
    """`turn T, request S`, and the agent that asked when the run names one."""
    agent = exchange.request.agent
    said = f"turn {exchange.turn}, request {exchange.step}"
    return said if agent is None else f"{said} (agent {q(clip(agent, 60))})"


def _first(violations: Iterator[Iterator[Violation]]) -> Iterator[Violation]:
    """The first violation of the first conversation that has one."""
    for found in violations:
        violation = next(found, None)
        if violation is not None:
            yield violation
            return


def _tool_results(conversation: Conversation) -> Iterator[Violation]:
    """After a scripted tool-call step, the next request of that conversation in that turn
    carries a result for every call of that step, holding what the tool returned. A
    handoff's call is answered by the framework (its text is not a tool's), and a handoff
    whose filter makes the new agent's history may leave the step's results out. A handoff
    that nests the history summarises the conversation into it, every result of its agents
    so far included: each must be there."""
    return _first(_thread_results(conversation, t) for t in conversation.threads)


def _thread_results(conversation: Conversation, thread: Thread) -> Iterator[Violation]:
    pairs = zip(thread.members, thread.members[1:], thread.handed[1:], strict=False)
    so_far: list[RecordedCall] = []  # every call this conversation's agents made until now
    for earlier, later, handed in pairs:
        previous, exchange = conversation.exchanges[earlier], conversation.exchanges[later]
        step = conversation.step_of(previous)
        dispatched = conversation.answered(earlier)
        so_far += dispatched
        if handed is not None and handed.nested:
            # The summary is the whole conversation so far: every result is in it.
            problems = _summary_problems(tuple(so_far), exchange)
        elif step is not None and _results_asked(previous, exchange, step, handed):
            # A call whose result a tool output guardrail replaced was answered with its
            # message.
            rejected = conversation.rejected("tool_output")
            calls = tuple(c for c in step.tool_calls if c.id not in rejected)
            problems = _results_problems(calls, dispatched, exchange, conversation.unapproved)
        else:
            continue
        for problem in problems:
            yield (
                _step_at(previous),
                f"{_request(exchange)}: {problem}; the request held:\n{_held(exchange)}",
            )
            return


def _results_asked(
    previous: Exchange, exchange: Exchange, step: ModelStep, handed: Handoff | None
) -> bool:
    """Whether `exchange` must carry the results of `step`, a step of its conversation in
    its turn (not where a handoff's filter made the history)."""
    filtered = handed is not None and handed.filtered
    return previous.turn == exchange.turn and bool(step.tool_calls) and not filtered


def _results_problems(
    calls: tuple[ToolCall, ...],
    dispatched: tuple[RecordedCall, ...],
    exchange: Exchange,
    rejected: frozenset[str] = frozenset(),
) -> Iterator[str]:
    messages = exchange.request.messages
    by_id = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    scripted_ids = {c.id for c in calls}
    trailing = _trailing_results(messages)
    unused = list(dispatched)
    for position, call in enumerate(calls):
        result = by_id.get(call.id)
        if result is None and position < len(trailing) and not by_id.keys() & scripted_ids:
            result = trailing[position]  # the loop numbers calls its own way: by position
        if result is None:
            yield f"no tool result for {_call(call)} was passed back to the model"
            return
        if call.id and not result.tool_call_id:
            # Every framework keeps the ids (the SDK's call_id, pydantic-ai's
            # tool_call_id), and a provider refuses a tool result that names no call.
            yield (
                f"the result passed back for {_call(call)} carries no tool_call_id: a "
                "provider refuses a tool result that does not name the call it answers"
            )
            return
        if call.id in rejected:
            continue  # never run: its result is the rejection the framework sends
        ran = _take_dispatch(unused, call)
        if ran is not None and not _carries(result.content, ran):
            yield (
                f"the result passed back for {_call(call)} was "
                f"{q(clip(result.content, 120))}, but the tool returned {q(clip(ran.result, 120))}"
            )
            return


def _summary_problems(dispatched: tuple[RecordedCall, ...], exchange: Exchange) -> Iterator[str]:
    """A nested handoff's history is one summary of the conversation: what each tool
    returned is in it, word for word (or as JSON text)."""
    text = _spoken_text(exchange.request.messages)
    for ran in dispatched:
        if _find(text, ran.result, 0) < 0:
            yield (
                f"the result of {clean(ran.name)} ({q(clip(ran.result, 120))}) is not in the "
                "history the handoff nested"
            )
            return


def _spoken_text(messages: tuple[Message, ...]) -> str:
    """The messages' text after the instructions, in order: where a nested handoff's
    summary holds the conversation inside one message."""
    return "\n".join(m.content for m in messages if m.role != "system")


def _find(text: str, needle: str, start: int) -> int:
    """Where `needle` is in `text` from `start`, as it is or as JSON text (a summary may
    quote a message as JSON); -1: nowhere."""
    quoted = json.dumps(needle, ensure_ascii=False)[1:-1]
    hits = [at for at in (text.find(needle, start), text.find(quoted, start)) if at >= 0]
    return min(hits, default=-1)


def _call(call: ToolCall) -> str:
    # The script's id and name on one line: a detail's own lines are the harness's.
    return f"{clean(call.id)} ({clean(call.name)})"


def _trailing_results(messages: tuple[Message, ...]) -> list[Message]:
    """The tool messages after the last assistant message that called tools."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant" and messages[index].tool_calls:
            return [m for m in messages[index + 1 :] if m.role == "tool"]
    return []


def _take_dispatch(unused: list[RecordedCall], call: ToolCall) -> RecordedCall | None:
    """The recorded dispatch of `call`: the first unmatched one with its name and arguments,
    else of its name (calls are recorded as they finish, which need not be their order)."""
    named = [i for i, r in enumerate(unused) if r.name == call.name]
    if len(named) > 1:
        # Only a choice between calls of one name needs the arguments: the dispatch
        # recorded them canonical already, the script's are made so here, once.
        arguments = canonical_arguments(call.arguments)
        named = [i for i in named if unused[i].arguments == arguments] or named
    return unused.pop(named[0]) if named else None


def _carries(content: str, ran: RecordedCall) -> bool:
    """Whether a tool message tells the model what the tool returned. A framework may
    reword a failure (`ModelRetry: why` reaches the model as `why …`), never hide it."""
    if ran.result in content:
        return True
    if not ran.success:
        _, sep, reason = ran.result.partition(": ")
        return bool(sep) and reason in content
    return False


def _dispatches(conversation: Conversation) -> Iterator[Violation]:
    """The tool boundary saw what the script asked for: after each step, its calls were
    dispatched once each by the agent that asked, and nothing else. Compared by tool name: a
    framework may fill in defaults or coerce arguments before the tool runs. A step that
    handed off has one call per handoff the framework answered itself, never dispatched; a
    call a tool input guardrail rejected was never run; a call to an output tool the
    request offered is the agent's final answer, which the framework validates itself, never
    a dispatch. A scripted call the framework refuses to run (arguments its schema rejects)
    breaks this rule: such a case says so with `loop_exempt`."""
    rejected = conversation.rejected("tool_input")
    for index, exchange in enumerate(conversation.exchanges):
        step = conversation.step_of(exchange)
        ran = sorted(c.name for c in conversation.answered(index))
        answers = {t.name for t in exchange.request.tools if t.output}
        calls = step.tool_calls if step is not None else ()
        # A call rejected for approval is never run: the script asks for the others.
        unrun = rejected | conversation.unapproved
        asked = sorted(c.name for c in calls if c.id not in unrun and c.name not in answers)
        handed = len(conversation.handoffs_after(index))
        unran = list(asked)
        for name in ran:
            if name in unran:
                unran.remove(name)
        if len(unran) != handed or len(ran) + handed != len(asked):
            made = f" and made {handed} handoff(s)" if handed else ""
            yield (
                _step_at(exchange),
                f"{_request(exchange).replace('request', 'step', 1)}: the script called "
                f"{_names(asked)}, the agent dispatched {_names(ran)}{made}",
            )
            return


def _names(names: list[str]) -> str:
    return "[" + ", ".join(map(clean, names)) + "]"


def _history(conversation: Conversation) -> Iterator[Violation]:
    """Every request of turn N carries the user inputs of turns 0..N and the final texts of
    turns 0..N-1, in order: the conversation so far. A handoff passes it on whole; one with
    a filter of its own passes on what the filter makes, so the new agent's first request
    must hold this turn's input and nothing the conversation never had, and what it holds
    is the conversation from then on. One that nests the history (the framework summarises
    it into one message) must keep it all, in order, in the text of the new agent's
    requests from then on. An agent used as a tool or delegated to holds its own: the input
    its first request was given."""
    return _first(_thread_history(conversation, t) for t in conversation.threads)


def _thread_history(conversation: Conversation, thread: Thread) -> Iterator[Violation]:
    kept: list[tuple[str, str]] = []
    turn = -1
    previous: Exchange | None = None
    nested = False
    for index, handed in zip(thread.members, thread.handed, strict=True):
        exchange = conversation.exchanges[index]
        nested = nested or (handed is not None and handed.nested)
        if thread.nested and previous is None:
            kept, turn = _own_input(exchange), exchange.turn  # not the user's turn: its own
        for later in range(turn + 1, exchange.turn + 1):
            final = conversation.final_text(later - 1) if later > 0 else ""
            kept += [("assistant", final)] if final else []
            kept.append(("user", conversation.user_inputs[later]))
        turn = max(turn, exchange.turn)
        problem: str | None = None
        if handed is not None and handed.filtered and previous is not None:
            problem = _filtered_problem(conversation, kept, previous, exchange)
            kept = [(m.role, m.content) for m in exchange.request.messages if _spoken(m)]
        else:
            problem = _missing_problem(kept, exchange, nested=nested)
        if problem is not None:
            yield (
                _step_at(exchange),
                f"{_request(exchange)}: {problem}; the request held:\n{_held(exchange)}",
            )
            return
        previous = exchange


def _own_input(exchange: Exchange) -> list[tuple[str, str]]:
    """What a nested agent was given: the last user message of its first request."""
    given = [m.content for m in exchange.request.messages if m.role == "user"]
    return [("user", given[-1])] if given else [("user", "")]


def _spoken(message: Message) -> bool:
    """A user input or an answer in text: what a history is made of."""
    return message.role == "user" or (message.role == "assistant" and not message.tool_calls)


def _missing_problem(
    kept: list[tuple[str, str]], exchange: Exchange, *, nested: bool = False
) -> str | None:
    messages = exchange.request.messages
    missing = _first_missing_in_text(kept, messages) if nested else _first_missing(kept, messages)
    if missing is None:
        return None
    role, text = missing
    what = "user input" if role == "user" else "final text"
    return f"the {what} {q(clip(text, 120))} is missing or out of order"


def _filtered_problem(
    conversation: Conversation, kept: list[tuple[str, str]], before: Exchange, after: Exchange
) -> str | None:
    """What is wrong with the history a handoff's filter made: the input of the turn lost,
    or a message the conversation never had (the filter may drop, never invent)."""
    current = [item for item in kept if item[0] == "user"][-1:]
    problem = _missing_problem(current, after)
    if problem is not None:
        return problem
    step = conversation.step_of(before)
    had = {(m.role, m.content) for m in before.request.messages if _spoken(m)}
    if step is not None and step.text:
        had.add(("assistant", step.text))
    invented = next(
        (m for m in after.request.messages if _spoken(m) and (m.role, m.content) not in had),
        None,
    )
    if invented is None:
        return None
    return (
        f"the handoff's filter passed on the {invented.role} message "
        f"{q(clip(invented.content, 120))}, which the conversation never had"
    )


def _first_missing(
    expected: list[tuple[str, str]], messages: tuple[Message, ...]
) -> tuple[str, str] | None:
    """The first expected (role, content) not found, in order, among `messages`."""
    position = 0
    for role, text in expected:
        while position < len(messages):
            message = messages[position]
            position += 1
            if message.role == role and text.strip() in message.content:
                break  # a loop may wrap an input in a template, or strip a final text
        else:
            return role, text
    return None


def _first_missing_in_text(
    expected: list[tuple[str, str]], messages: tuple[Message, ...]
) -> tuple[str, str] | None:
    """The first expected (role, content) not found, in order, in the messages' text: a
    nested history holds them inside its summary, whatever role that message has."""
    text = _spoken_text(messages)
    position = 0
    for role, wanted in expected:
        at = _find(text, wanted.strip(), position)
        if at < 0:
            return role, wanted
        position = at + 1
    return None


def _last_user_input(conversation: Conversation) -> Iterator[Violation]:
    """The current turn's user input is the last user message of the conversation so far:
    no earlier turn's input comes after it. (A framework's own follow-up, like pydantic-ai's
    retry prompt, may: it is not a user input of the script.) For an agent used as a tool or
    delegated to, the input its first request was given."""
    return _first(_thread_last_input(conversation, t) for t in conversation.threads)


def _thread_last_input(conversation: Conversation, thread: Thread) -> Iterator[Violation]:
    own: str | None = None
    nested = False
    for index, handed in zip(thread.members, thread.handed, strict=True):
        exchange = conversation.exchanges[index]
        messages = exchange.request.messages
        nested = nested or (handed is not None and handed.nested)
        if thread.nested:
            own = _own_input(exchange)[0][1] if own is None else own
            want, earlier = own, set[str]()
        else:
            want = conversation.user_inputs[exchange.turn]
            earlier = set(conversation.user_inputs[: exchange.turn]) - {want}
        at = max(
            (i for i, m in enumerate(messages) if m.role == "user" and want in m.content),
            default=None,
        )
        late = None
        if at is not None:
            after = messages[at + 1 :]
            late = next(
                (m for m in after if m.role == "user" and any(e in m.content for e in earlier)),
                None,
            )
        elif nested and _find(_spoken_text(messages), want, 0) >= 0:
            continue  # in the summary a nested handoff made, where the turn's order is kept
        if at is None or late is not None:
            got = "is missing" if late is None else f"comes before {q(clip(late.content, 120))}"
            yield (
                _step_at(exchange),
                f"{_request(exchange)}: this turn's input "
                f"{q(clip(want, 120))} {got}; the request held:\n{_held(exchange)}",
            )
            return


def _offered_tools(conversation: Conversation) -> Iterator[Violation]:
    """Every scripted call names a tool that the request it answers offered the model."""
    for exchange in conversation.exchanges:
        step = conversation.script[exchange.turn][exchange.step]
        offered = {tool.name for tool in exchange.request.tools}
        for call in step.tool_calls:
            if call.name not in offered:
                shown = ", ".join(map(clean, sorted(offered))) or "none"
                yield (
                    f"{_step_at(exchange)}.response.tool_calls",
                    f"turn {exchange.turn}, step {exchange.step} calls {call.name!r}, which the "
                    f"request it answers never offered the model (offered: {shown})",
                )
                return


def _instructions(conversation: Conversation) -> Iterator[Violation]:
    """The instructions a framework agent declared for a request, as its framework resolved
    them (a dynamic function's text, which may change from request to request; pydantic-ai's
    system prompts where its history holds them), reach it as a system message. A request
    declaring none (an own loop's) holds the system message of its agent's first request,
    unchanged (each agent of a graph has its own). One walk of each request serves both."""
    first: dict[str | None, str | None] = {}
    for exchange in conversation.exchanges:
        request = exchange.request
        system = [m.content for m in request.messages if m.role == "system"]
        lost = _lost_instructions(request.declared_instructions, system)
        if lost is not None:
            yield (
                _step_at(exchange),
                f"{_request(exchange)}: the instructions the agent declared "
                f"({q(clip(lost, 120))}) never reached the model: no system message of the "
                f"request holds them; the request held:\n{_held(exchange)}",
            )
            return
        if request.declared_instructions:
            continue
        if request.agent not in first:
            first[request.agent] = system[0] if system else None
            continue
        kept = first[request.agent]
        if kept is not None and kept not in system:
            yield (
                _step_at(exchange),
                f"{_request(exchange)}: the instructions of the first "
                f"request ({q(clip(kept, 120))}) are missing or changed; the request held:\n"
                f"{_held(exchange)}",
            )
            return


def _lost_instructions(declared: tuple[str, ...], system: list[str]) -> str | None:
    """The first declared text no system message holds (an adapter may join several into
    one message); None: every one arrived."""
    for text in declared:
        wanted = text.strip()
        if wanted and not any(wanted in content for content in system):
            return text
    return None


RULES: dict[str, Callable[[Conversation], Iterator[Violation]]] = {
    "dispatches": _dispatches,
    "tool_results": _tool_results,
    "history": _history,
    "last_user_input": _last_user_input,
    "offered_tools": _offered_tools,
    "instructions": _instructions,
}
