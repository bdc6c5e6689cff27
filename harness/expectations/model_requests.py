"""Expectations on what crossed the model boundary: the requests the agent made, graded
against what the case says the model must (or must not) have been told.

In replay the final response is scripted, so it cannot show that the agent told the model
anything; these checks read every request the agent sent (the run's `Conversation`), in
both modes. A run that made no request fails every one of them, the negative ones too: a
dead agent never passes as one that withheld something.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    NonNegative,
    Strict,
    blank_entries,
    clip,
    misspelt_absent_tools,
    q,
    q_list,
)
from harness.io.validation import Fault
from harness.model_boundary import Role
from harness.transcript import Exchange

NO_REQUEST = "no model request was made"
NEVER_OFFERED = "a tool it does not have is never offered, so the check could never fail"


class RequestExpect(Strict):
    """A message of `role` whose content holds `needle`, in a request of turn `turn` (any of
    its requests; with `step`, the one answered by that step of the turn). Both count from
    0, as `$.turns[turn].steps[step]` does."""

    turn: Annotated[int, NonNegative]
    role: Role
    needle: str
    step: Annotated[int, NonNegative] | None = None


class ModelRequests(Kind):
    """`request_contains` / `request_not_contains` (`{turn, step?, role, needle}`),
    `tools_offered` / `tools_not_offered` (in every request), and `instructions_contain`
    (the system message of the first request)."""

    order = 80
    request_contains: list[RequestExpect] = []
    request_not_contains: list[RequestExpect] = []
    tools_offered: list[str] = []
    tools_not_offered: list[str] = []
    instructions_contain: list[str] = []

    def problems(self, context: Context) -> Iterator[Fault]:
        for family, entries in self._families():
            for i, entry in enumerate(entries):
                at = f"{EXPECTS}.{family}[{i}]"
                if not entry.needle.strip():
                    yield Fault(f"{at}.needle", "empty or whitespace-only needle asserts nothing")
                yield from _where_problems(entry, at, context)
        yield from blank_entries("tools_offered", self.tools_offered)
        yield from blank_entries("tools_not_offered", self.tools_not_offered)
        yield from misspelt_absent_tools(
            "tools_not_offered", self.tools_not_offered, context, NEVER_OFFERED
        )
        yield from blank_entries("instructions_contain", self.instructions_contain)

    def _families(self) -> tuple[tuple[str, list[RequestExpect]], ...]:
        return (
            ("request_contains", self.request_contains),
            ("request_not_contains", self.request_not_contains),
        )

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        conversation = evidence.conversation
        exchanges = conversation.exchanges if conversation is not None else ()
        for family, entries in self._families():
            for i, entry in enumerate(entries):
                present = family == "request_contains"
                yield _request_grade(family, i, entry, exchanges, present)
        for i, name in enumerate(self.tools_offered):
            yield _offered_grade(i, name, exchanges)
        for i, name in enumerate(self.tools_not_offered):
            yield _not_offered_grade(i, name, exchanges, evidence.agent_tools)
        for i, needle in enumerate(self.instructions_contain):
            yield _instructions_grade(i, needle, exchanges)


def _where_problems(entry: RequestExpect, at: str, context: Context) -> Iterator[Fault]:
    """A turn the fixture does not have, or a step its turn does not script, names a request
    no run can make: the check could never pass (or, negated, never fail)."""
    turns = context.turn_steps
    if turns is None:
        return
    if entry.turn >= len(turns):
        yield Fault(
            f"{at}.turn",
            f"turn {entry.turn} does not exist: the fixture has {len(turns)} turn(s), "
            "counted from 0",
        )
        return
    steps = turns[entry.turn]
    if entry.step is not None and steps is not None and entry.step >= steps:
        yield Fault(
            f"{at}.step",
            f"step {entry.step} does not exist: turn {entry.turn} scripts {steps} step(s), "
            "counted from 0",
        )


def _at(exchange: Exchange) -> str:
    return f"turn {exchange.turn}, request {exchange.step}"


def _request_grade(
    family: str,
    index: int,
    entry: RequestExpect,
    exchanges: tuple[Exchange, ...],
    present: bool,
) -> Grade:
    """One `request_contains` (present) or `request_not_contains` entry."""
    where = f"turn {entry.turn}" if entry.step is None else f"turn {entry.turn}, step {entry.step}"
    check = f"{family}({where}, {q(entry.role)}, {q(entry.needle)})"
    field = f"{EXPECTS}.{family}[{index}]"
    if not exchanges:
        return Grade(check, False, NO_REQUEST, "request", field)
    of_turn = [e for e in exchanges if e.turn == entry.turn]
    chosen = [e for e in of_turn if entry.step is None or e.step == entry.step]
    if not chosen:
        detail = f"turn {entry.turn} made no model request"
        if of_turn:
            detail = (
                f"no request of turn {entry.turn} was answered by step {entry.step}: "
                f"the turn made {len(of_turn)} request(s)"
            )
        return Grade(check, False, detail, "request", field)
    hit = next(
        (
            (exchange, message.content)
            for exchange in chosen
            for message in exchange.request.messages
            if message.role == entry.role and entry.needle in message.content
        ),
        None,
    )
    if present:
        ok = hit is not None
        detail = f"found in {_at(hit[0])}" if hit is not None else _not_found(entry, chosen)
    else:
        ok = hit is None
        detail = (
            f"absent from {len(chosen)} request(s)"
            if hit is None
            else f"unexpectedly present in {_at(hit[0])}: {entry.role} message {q(clip(hit[1]))}"
        )
    return Grade(check, ok, detail, "request", field)


def _not_found(entry: RequestExpect, chosen: list[Exchange]) -> str:
    """What the last request searched held in messages of the entry's role."""
    last = chosen[-1]
    held = [m.content for m in last.request.messages if m.role == entry.role]
    shown = q_list(held) if held else "none"
    if len(chosen) == 1:
        return f"not found in {_at(last)}; its {entry.role} messages: {shown}"
    return (
        f"not found in {len(chosen)} request(s) of turn {entry.turn}; the {entry.role} "
        f"messages of the last ({_at(last)}): {shown}"
    )


def _offered(exchange: Exchange) -> list[str]:
    return sorted(tool.name for tool in exchange.request.tools)


def _offered_grade(index: int, name: str, exchanges: tuple[Exchange, ...]) -> Grade:
    check, field = f"tools_offered({q(name)})", f"{EXPECTS}.tools_offered[{index}]"
    if not exchanges:
        return Grade(check, False, NO_REQUEST, "request", field)
    lacking = next((e for e in exchanges if name not in _offered(e)), None)
    if lacking is None:
        return Grade(check, True, f"offered in {len(exchanges)} request(s)", "request", field)
    detail = f"not offered in {_at(lacking)}; it offered: {q_list(_offered(lacking))}"
    return Grade(check, False, detail, "request", field)


def _not_offered_grade(
    index: int, name: str, exchanges: tuple[Exchange, ...], agent_tools: frozenset[str] | None
) -> Grade:
    check, field = f"tools_not_offered({q(name)})", f"{EXPECTS}.tools_not_offered[{index}]"
    if not exchanges:
        return Grade(check, False, NO_REQUEST, "request", field)
    offering = next((e for e in exchanges if name in _offered(e)), None)
    if offering is not None:
        detail = f"offered in {_at(offering)}; it offered: {q_list(_offered(offering))}"
        return Grade(check, False, detail, "request", field)
    detail = f"not offered in {len(exchanges)} request(s)"
    if agent_tools is not None and name not in agent_tools:
        detail += " (not a tool the agent registers)"
    return Grade(check, True, detail, "request", field)


def _instructions_grade(index: int, needle: str, exchanges: tuple[Exchange, ...]) -> Grade:
    check = f"instructions_contain({q(needle)})"
    field = f"{EXPECTS}.instructions_contain[{index}]"
    if not exchanges:
        return Grade(check, False, NO_REQUEST, "request", field)
    first = exchanges[0]
    system = [m.content for m in first.request.messages if m.role == "system"]
    if not system:
        detail = f"the first request ({_at(first)}) has no system message"
        return Grade(check, False, detail, "request", field)
    if any(needle in text for text in system):
        return Grade(check, True, "found", "request", field)
    shown = q(clip(system[0])) if len(system) == 1 else q_list(system)
    detail = f"not found in the system message of the first request ({_at(first)}): {shown}"
    return Grade(check, False, detail, "request", field)
