"""What one model request is checked for by the replay conformance rules
(`loop_conformance`): the results a step's calls passed back, the conversation so far in
order, a nested handoff's summary, and how a violation names the request that broke it."""

from __future__ import annotations

import json
from collections.abc import Iterator

from harness.expectations.base import clip, q
from harness.io.text import clean
from harness.model_boundary import (
    Handoff,
    Message,
    ModelStep,
    ToolCall,
    summarize_request,
)
from harness.tool_registry import RecordedCall, canonical_arguments
from harness.transcript import Conversation, Exchange


def step_at(exchange: Exchange) -> str:
    return f"$.turns[{exchange.turn}].steps[{exchange.step}]"


def held(exchange: Exchange) -> str:
    return summarize_request(exchange.request, width=80)


def request_of(exchange: Exchange) -> str:
    """`turn T, request S`, and the agent that asked when the run names one."""
    agent = exchange.request.agent
    said = f"turn {exchange.turn}, request {exchange.step}"
    return said if agent is None else f"{said} (agent {q(clip(agent, 60))})"


def results_asked(
    previous: Exchange, exchange: Exchange, step: ModelStep, handed: Handoff | None
) -> bool:
    """Whether `exchange` must carry the results of `step`, a step of its conversation in
    its turn (not where a handoff's filter made the history)."""
    filtered = handed is not None and handed.filtered
    return previous.turn == exchange.turn and bool(step.tool_calls) and not filtered


def results_problems(
    calls: tuple[ToolCall, ...],
    dispatched: tuple[RecordedCall, ...],
    exchange: Exchange,
    rejected: frozenset[str] = frozenset(),
) -> Iterator[str]:
    messages = exchange.request.messages
    by_id = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    # Only a result not found by its id asks for the results by position (worked out then).
    trailing: list[Message] | None = None
    unused = list(dispatched)
    for position, call in enumerate(calls):
        result = by_id.get(call.id)
        if result is None:
            if trailing is None:
                own_ids = bool(by_id.keys() & {c.id for c in calls})
                trailing = [] if own_ids else trailing_results(messages)
            if position < len(trailing):
                result = trailing[position]  # the loop numbers calls its own way: by position
        if result is None:
            yield f"no tool result for {call_named(call)} was passed back to the model"
            return
        if call.id and not result.tool_call_id:
            # Every framework keeps the ids (the SDK's call_id, pydantic-ai's
            # tool_call_id), and a provider refuses a tool result that names no call.
            yield (
                f"the result passed back for {call_named(call)} carries no tool_call_id: a "
                "provider refuses a tool result that does not name the call it answers"
            )
            return
        if call.id in rejected:
            continue  # never run: its result is the rejection the framework sends
        ran = take_dispatch(unused, call)
        if ran is not None and not carries(result.content, ran):
            yield (
                f"the result passed back for {call_named(call)} was "
                f"{q(clip(result.content, 120))}, but the tool returned {q(clip(ran.result, 120))}"
            )
            return


def summary_problems(dispatched: tuple[RecordedCall, ...], exchange: Exchange) -> Iterator[str]:
    """A nested handoff's history is one summary of the conversation: what each tool
    returned is in it, word for word (or as JSON text)."""
    text = spoken_text(exchange.request.messages)
    for ran in dispatched:
        if find_text(text, ran.result, 0) < 0:
            yield (
                f"the result of {clean(ran.name)} ({q(clip(ran.result, 120))}) is not in the "
                "history the handoff nested"
            )
            return


def spoken_text(messages: tuple[Message, ...]) -> str:
    """The messages' text after the instructions, in order: where a nested handoff's
    summary holds the conversation inside one message."""
    return "\n".join(m.content for m in messages if m.role != "system")


def find_text(text: str, needle: str, start: int) -> int:
    """Where `needle` is in `text` from `start`, as it is or as JSON text (a summary may
    quote a message as JSON); -1: nowhere."""
    quoted = json.dumps(needle, ensure_ascii=False)[1:-1]
    hits = [at for at in (text.find(needle, start), text.find(quoted, start)) if at >= 0]
    return min(hits, default=-1)


def call_named(call: ToolCall) -> str:
    # The script's id and name on one line: a detail's own lines are the harness's.
    return f"{clean(call.id)} ({clean(call.name)})"


def trailing_results(messages: tuple[Message, ...]) -> list[Message]:
    """The tool messages after the last assistant message that called tools."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant" and messages[index].tool_calls:
            return [m for m in messages[index + 1 :] if m.role == "tool"]
    return []


def take_dispatch(unused: list[RecordedCall], call: ToolCall) -> RecordedCall | None:
    """The recorded dispatch of `call`: the first unmatched one with its name and arguments,
    else of its name (calls are recorded as they finish, which need not be their order)."""
    named = [i for i, r in enumerate(unused) if r.name == call.name]
    if len(named) > 1:
        # Only a choice between calls of one name needs the arguments: the dispatch
        # recorded them canonical already, the script's are made so here, once.
        arguments = canonical_arguments(call.arguments)
        named = [i for i in named if unused[i].arguments == arguments] or named
    return unused.pop(named[0]) if named else None


def carries(content: str, ran: RecordedCall) -> bool:
    """Whether a tool message tells the model what the tool returned. A framework may
    reword a failure (`ModelRetry: why` reaches the model as `why …`), never hide it."""
    if ran.result in content:
        return True
    if not ran.success:
        _, sep, reason = ran.result.partition(": ")
        return bool(sep) and reason in content
    return False


def names_of(names: list[str]) -> str:
    return "[" + ", ".join(map(clean, names)) + "]"


def own_input(exchange: Exchange) -> list[tuple[str, str]]:
    """What a nested agent was given: the last user message of its first request."""
    given = [m.content for m in exchange.request.messages if m.role == "user"]
    return [("user", given[-1])] if given else [("user", "")]


def spoken(message: Message) -> bool:
    """A user input or an answer in text: what a history is made of."""
    return message.role == "user" or (message.role == "assistant" and not message.tool_calls)


def missing_problem(
    kept: list[tuple[str, str]], exchange: Exchange, *, nested: bool = False
) -> str | None:
    messages = exchange.request.messages
    missing = first_missing_in_text(kept, messages) if nested else first_missing(kept, messages)
    if missing is None:
        return None
    role, text = missing
    what = "user input" if role == "user" else "final text"
    return f"the {what} {q(clip(text, 120))} is missing or out of order"


def filtered_problem(
    conversation: Conversation, kept: list[tuple[str, str]], before: Exchange, after: Exchange
) -> str | None:
    """What is wrong with the history a handoff's filter made: the input of the turn lost,
    or a message the conversation never had (the filter may drop, never invent)."""
    current = [item for item in kept if item[0] == "user"][-1:]
    problem = missing_problem(current, after)
    if problem is not None:
        return problem
    step = conversation.step_of(before)
    had = {(m.role, m.content) for m in before.request.messages if spoken(m)}
    if step is not None and step.text:
        had.add(("assistant", step.text))
    invented = next(
        (m for m in after.request.messages if spoken(m) and (m.role, m.content) not in had),
        None,
    )
    if invented is None:
        return None
    return (
        f"the handoff's filter passed on the {invented.role} message "
        f"{q(clip(invented.content, 120))}, which the conversation never had"
    )


def first_missing(
    expected: list[tuple[str, str]], messages: tuple[Message, ...]
) -> tuple[str, str] | None:
    """The first expected (role, content) not found, in order, among `messages`."""
    index, _ = in_order(expected, 0, messages, 0)
    return expected[index] if index < len(expected) else None


def first_missing_in_text(
    expected: list[tuple[str, str]], messages: tuple[Message, ...]
) -> tuple[str, str] | None:
    """The first expected (role, content) not found, in order, in the messages' text: a
    nested history holds them inside its summary, whatever role that message has."""
    text = spoken_text(messages)
    position = 0
    for role, wanted in expected:
        at = find_text(text, wanted.strip(), position)
        if at < 0:
            return role, wanted
        position = at + 1
    return None


def lost_instructions(declared: tuple[str, ...], system: list[str]) -> str | None:
    """The first declared text no system message holds (an adapter may join several into
    one message); None: every one arrived."""
    for text in declared:
        wanted = text.strip()
        if wanted and not any(wanted in content for content in system):
            return text
    return None


def in_order(
    expected: list[tuple[str, str]], start: int, messages: tuple[Message, ...], position: int
) -> tuple[int, int]:
    """`expected[start:]` looked for in order among `messages` from `position` on: the
    index of the first one missing (`len(expected)`: none) and the position after the last
    one found."""
    for index in range(start, len(expected)):
        role, text = expected[index]
        while position < len(messages):
            message = messages[position]
            position += 1
            if message.role == role and text.strip() in message.content:
                break  # a loop may wrap an input in a template, or strip a final text
        else:
            return index, position
    return len(expected), position
