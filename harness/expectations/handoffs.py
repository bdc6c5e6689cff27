"""Expectations on control passed between the agents of a multi-agent graph: which agents
were handed to, in order, and which agent gave the last answer."""

from __future__ import annotations

from collections.abc import Iterator

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    agent_name_problem,
    q,
    q_list,
)
from harness.io.validation import Fault


class Handoffs(Kind):
    """`handoffs` (the exact ordered list of agents handed to over the whole case; `[]`:
    none) and `final_agent` (the agent that produced the last turn's final answer), read
    from the handoffs and the final agent the model boundary recorded."""

    order = 32
    handoffs: list[str] | None = None
    final_agent: str | None = None

    def problems(self, context: Context) -> Iterator[Fault]:
        for i, name in enumerate(self.handoffs or ()):
            problem = agent_name_problem(name, context)
            if problem is not None:
                yield Fault(f"{EXPECTS}.handoffs[{i}]", problem)
        if self.final_agent is not None:
            problem = agent_name_problem(self.final_agent, context)
            if problem is not None:
                yield Fault(f"{EXPECTS}.final_agent", problem)

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        record = evidence.record
        if self.handoffs is not None:
            made = [h.target for h in record.handoffs]
            ok = made == self.handoffs
            expected = q_list(self.handoffs)
            if ok:
                detail = f"handed to {expected}" if made else "no handoff"
            else:
                detail = f"handoffs: expected {expected}, the run handed to {q_list(made)}"
            yield Grade(f"handoffs({expected})", ok, detail, "agent", f"{EXPECTS}.handoffs")
        if self.final_agent is not None:
            final = record.final_agent
            ok = final == self.final_agent
            if ok:
                detail = "answered last"
            elif final is None:
                detail = "no agent of the graph gave the last answer (none was recorded)"
            else:
                detail = f"the last answer came from {q(final)}"
            check = f"final_agent({q(self.final_agent)})"
            yield Grade(check, ok, detail, "agent", f"{EXPECTS}.final_agent")
