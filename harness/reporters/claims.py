"""What a transcript shows under each model request: the recorded dispatches its answer
asked for (`Unclaimed`), the handoffs made after it (`HandoffsAfter`) and the approvals its
calls were held for (`ApprovalsOf`), and after each turn the response graded where the last
answer's text does not say it (`graded_responses`), for every view of a case (`case_view` in
the terminal, `html_transcript` in the HTML report).

A call is the dispatch of the agent whose request asked for it: in a multi-agent run a
handoff is a scripted tool call that is never dispatched, and the next agent's dispatch of
a tool of the same name must not be shown under it. A run of one agent has no agent on
either side, so nothing changes for it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.approvals import Approval
    from harness.model_boundary import Handoff, ToolCall
    from harness.run_record import RunRecord
    from harness.tool_registry import RecordedCall


def graded_responses(record: RunRecord) -> dict[int, str]:
    """Each turn whose response, the text graded, is not the text of its last model answer:
    a structured output (the JSON of the object the framework built from the model's JSON,
    or from a call to an output tool) or an answer the agent's own code rewrote. A turn
    answered in plain text shows its answer already, and gets nothing more."""
    last: dict[int, str] = {}
    for step in record.transcript or ():
        if step.answer is not None:
            last[step.turn] = step.answer.text
    return {
        turn: response
        for turn, response in enumerate(record.turn_responses)
        if last.get(turn, response) != response
    }


class Unclaimed:
    """The recorded dispatches no answer has claimed yet. `take(call, agent)` gives the one
    of `call`, asked for by `agent`'s request: the first left of that agent and name with
    its arguments, else of that agent and name (a framework may have rewritten the
    arguments). Each dispatch's arguments are made canonical once and each is passed over
    once in all: searching every dispatch left for each call made a page quadratic in a
    case's tool calls."""

    def __init__(self, calls: list[RecordedCall]) -> None:
        from harness.tool_registry import canonical_arguments, canonical_text

        self._canonical = canonical_arguments
        self._calls = calls
        self._taken = [False] * len(calls)
        self._named: dict[tuple[str | None, str], deque[int]] = {}
        self._same: dict[tuple[str | None, str, str], deque[int]] = {}
        for index, call in enumerate(calls):
            self._named.setdefault((call.agent, call.name), deque()).append(index)
            same = (call.agent, call.name, canonical_text(call.arguments))
            self._same.setdefault(same, deque()).append(index)

    def take(self, call: ToolCall, agent: str | None = None) -> RecordedCall | None:
        same_key = (agent, call.name, self._canonical(call.arguments))
        same = self._first(self._same.get(same_key))
        index = same if same is not None else self._first(self._named.get((agent, call.name)))
        if index is None:
            return None
        self._taken[index] = True
        return self._calls[index]

    def left(self) -> list[RecordedCall]:
        """The dispatches never claimed, in the order they were made."""
        return [call for call, taken in zip(self._calls, self._taken, strict=True) if not taken]

    def _first(self, queue: deque[int] | None) -> int | None:
        # A dispatch taken through the other index is dropped here, once.
        while queue and self._taken[queue[0]]:
            queue.popleft()
        return queue[0] if queue else None


class HandoffsAfter:
    """A record's handoffs by the request they followed: `after(turn, step)` gives (once)
    those made after request `step` of `turn` (step -1: before the turn's first request),
    `left()` those no request shown was theirs (a transcript cut short), in order."""

    def __init__(self, handoffs: Iterable[Handoff]) -> None:
        self._by_request: dict[tuple[int, int], list[Handoff]] = {}
        for handoff in handoffs:
            self._by_request.setdefault((handoff.turn, handoff.step), []).append(handoff)

    def after(self, turn: int, step: int) -> list[Handoff]:
        return self._by_request.pop((turn, step), [])

    def left(self) -> list[Handoff]:
        left = [handoff for handoffs in self._by_request.values() for handoff in handoffs]
        self._by_request.clear()
        return sorted(left, key=lambda handoff: (handoff.turn, handoff.step))


class ApprovalsOf:
    """A record's approvals by their call: `of(turn, call_id)` gives (once) the decision on
    that call of that turn, `left()` those no answer shown asked for, in order."""

    def __init__(self, approvals: Iterable[Approval]) -> None:
        self._by_call: dict[tuple[int, str], Approval] = {}
        for approval in approvals:
            self._by_call.setdefault((approval.turn, approval.call_id), approval)

    def of(self, turn: int, call_id: str) -> Approval | None:
        return self._by_call.pop((turn, call_id), None)

    def left(self) -> list[Approval]:
        left = list(self._by_call.values())
        self._by_call.clear()
        return left


def decision_text(approval: Approval) -> str:
    """What was decided on a call held for approval, in words (the run's strings raw: each
    view makes them safe)."""
    if approval.approved:
        return "approved"
    if not approval.decided:
        return "rejected: the fixture gives no decision for it"
    return f"rejected: {approval.reason}" if approval.reason is not None else "rejected"
