"""Expectations on guardrails: which guardrails' tripwires tripped, in order, and the
fail-closed rule that a tripwire the case does not name is a failed check naming it.

A tripwire is what the record's `guardrails` say tripped: an SDK input or output guardrail
whose `tripwire_triggered` was true, a tool guardrail that rejected content or raised, a
pydantic-ai output validator whose retries ran out or a usage limit exceeded.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    Kind,
    clip,
    is_blank,
    q,
    q_list,
)
from harness.io.problems import escaped, unsafe_name_problem
from harness.io.validation import Fault, did_you_mean
from harness.model_boundary import GuardrailRun

AT = f"{EXPECTS}.guardrails_tripped"


class Guardrails(Kind):
    """`guardrails_tripped`: the exact ordered list of the guardrails that tripped over the
    whole case (`[]`: none, which needs a companion check, as every check an empty run
    passes). Without it, any tripwire is a failed check naming the guardrail: a run a
    guardrail stopped is never a pass the case did not ask for."""

    order = 33
    graded_unset = True
    guardrails_tripped: list[str] | None = None

    def problems(self, context: Context) -> Iterator[Fault]:
        for i, name in enumerate(self.guardrails_tripped or ()):
            problem = guardrail_name_problem(name, context)
            if problem is not None:
                yield Fault(f"{AT}[{i}]", problem)

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        tripped = [run for run in evidence.record.guardrails if run.tripped]
        if self.guardrails_tripped is None:
            # Fail-closed, like replay conformance: only a tripwire is graded, so a run no
            # guardrail stopped reports nothing here (and the empty run asserts nothing).
            for run in tripped:
                yield Grade(
                    f"guardrail_tripped({q(run.name)})",
                    False,
                    f"unexpected tripwire: {describe(run)}; a case that expects it names it "
                    "in guardrails_tripped",
                    "guardrail",
                    EXPECTS,
                )
            return
        names = [run.name for run in tripped]
        expected = q_list(self.guardrails_tripped)
        ok = names == self.guardrails_tripped
        if ok:
            detail = "; ".join(map(describe, tripped)) if tripped else "no guardrail tripped"
        elif not tripped:
            detail = f"guardrails_tripped: expected {expected}, no guardrail tripped"
        else:
            shown = "; ".join(map(describe, tripped))
            detail = f"guardrails_tripped: expected {expected}, the run tripped {shown}"
        yield Grade(f"guardrails_tripped({expected})", ok, detail, "guardrail", AT)


def describe(run: GuardrailRun) -> str:
    """A guardrail run in one line: its name, kind, agent, turn, what it did."""
    said = [f"{run.kind} guardrail"]
    if run.tool is not None:
        call = f" (call {q(clip(run.call_id, 60))})" if run.call_id else ""
        said.append(f"on tool {q(clip(run.tool, 60))}{call}")
    if run.agent is not None:
        said.append(f"of agent {q(clip(run.agent, 60))}")
    said.append(f"in turn {run.turn}" if run.turn >= 0 else "while starting")
    what = [] if run.behavior is None else [run.behavior]
    if run.message:
        what.append(q(clip(run.message, 120)))
    if run.halted:
        what.append("ended the turn")
    tail = f": {', '.join(what)}" if what else ""
    return f"{q(clip(run.name, 120))} ({' '.join(said)}{tail})"


def guardrail_name_problem(name: str, context: Context) -> str | None:
    """Why `name` cannot name a guardrail of the agent under test, or None when it can. An
    unknown name is refused only when the agent's guardrails are known: a guardrail the
    agent does not have can never trip."""
    if is_blank(name):
        return "empty or whitespace-only guardrail name"
    unsafe = unsafe_name_problem("guardrail name", name)
    if unsafe is not None:
        return unsafe
    known = context.guardrails
    if known is None or name in known:
        return None
    if not known:
        return f"{name!r} is not a guardrail of {context.agent}, which has none"
    hint = did_you_mean(name, known)
    listed = ", ".join(escaped(g) for g in sorted(known))
    return f"{name!r} is not a guardrail of {context.agent}{hint}; its guardrails: {listed}"
