"""Human approval of tool calls: the decisions a case gives (a fixture turn's `approvals`),
the desk an adapter asks when its framework holds a call for approval (the SDK's
`needs_approval`, pydantic-ai's deferred tools), and the record of every request.

The desk answers from the fixture and nothing else: a request the fixture does not decide
is rejected (so nothing a human did not approve runs) and recorded as undecided, which
grading fails naming the call; the run goes on, as it would with a person saying no.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec


class Decision(msgspec.Struct, frozen=True):
    """One human decision: approve the call, or reject it (with the reason the model is
    told, None: the framework's own rejection text)."""

    approve: bool
    reason: str | None = None


class _Decided(Protocol):
    @property
    def approve(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...


class _Turn(Protocol):
    """A fixture's turn, as far as its decisions go (`fixtures.schema.Turn`)."""

    @property
    def approvals(self) -> Mapping[str, _Decided] | None: ...


def decisions_of(turns: Sequence[_Turn]) -> tuple[dict[str, Decision], ...]:
    """The human decisions of each turn, keyed as the fixture keys them."""
    return tuple(
        [
            {key: Decision(d.approve, d.reason) for key, d in turn.approvals.items()}
            if turn.approvals
            else {}
            for turn in turns
        ]
    )


class Approval(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A tool call held for approval and what was decided: in which turn (-1 while the
    agent started), the call's id and tool, whether it was approved, the reason given with
    a rejection, `decided` false when the case gave no decision (the call was rejected),
    and the agent of a graph whose call it was."""

    turn: int
    call_id: str
    tool: str
    approved: bool
    reason: str | None = None
    decided: bool = True
    agent: str | None = None


class ApprovalDesk:
    """One case's approvals: `decisions` per turn, keyed by the scripted call's id (replay)
    or by tool name (`by_tool`: live, where the provider makes the ids up); `requests`, each
    request made, in order."""

    def __init__(
        self, decisions: Sequence[Mapping[str, Decision]] = (), *, by_tool: bool = False
    ) -> None:
        self._decisions = decisions
        self._by_tool = by_tool
        self.turn = -1
        self.requests: list[Approval] = []

    def start_turn(self, index: int) -> None:
        self.turn = index

    def decide(self, call_id: str, tool: str, agent: str | None = None) -> Approval:
        """The decision for call `call_id` of `tool`, which the agent's framework holds for
        approval; recorded. Undecided: rejected, and recorded so."""
        given = self._decisions[self.turn] if 0 <= self.turn < len(self._decisions) else {}
        decision = given.get(tool if self._by_tool else call_id)
        if decision is None:
            made = Approval(self.turn, call_id, tool, False, decided=False, agent=agent)
        else:
            reason = None if decision.approve else decision.reason
            made = Approval(self.turn, call_id, tool, decision.approve, reason, agent=agent)
        self.requests.append(made)
        return made
