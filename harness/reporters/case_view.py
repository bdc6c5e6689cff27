"""One case read in the terminal: its verdict, error, grades and transcript (`zeroclaw
eval show CASE_ID`, and `run -v` for every failing case).

In a multi-agent run each answer and tool call names its agent (`← [billing] model calls
…`, `tool [billing] echo(…)`) and each handoff is a line after the request it followed
(`handoff: triage → billing`); a run of one agent names none. Each tripwire is a line
after the transcript (`guardrail tripped: "math_homework" (input guardrail …)`).

Every string is the run's (model text, tool results, case ids, agent names): cleaned and
made inert before it is shown, long values clipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from harness.expectations.guardrails import describe
from harness.io.text import clean, clean_lines, clip, inert
from harness.model_boundary import Message, ModelStep
from harness.reporters.claims import (
    ApprovalsOf,
    HandoffsAfter,
    Unclaimed,
    decision_text,
    graded_responses,
)
from harness.run_record import RunRecord

if TYPE_CHECKING:
    from harness.approvals import Approval
    from harness.fixtures.suite import Case
    from harness.model_boundary import Handoff
    from harness.tool_registry import RecordedCall
    from harness.transcript import TranscriptStep
    from harness.verdict.reports import CaseReport

WIDTH = 160  # characters of one value shown on one line


def render_case(case: CaseReport) -> str:
    """The whole case, one block of lines, ending in a newline."""
    return "\n".join(inert(line) for line in _lines(case)) + "\n"


def _lines(case: CaseReport) -> Iterator[str]:
    verdict = "passed" if case.passed else ("not run" if case.not_run else "FAILED")
    yield f"case {clean(case.id)} ({clean(case.fixture)}): {verdict}"
    if case.not_run is not None:
        yield f"  not run: {clean(case.not_run)}"
    if case.error is not None:
        yield "  run error:"
        yield from _indented(case.error, "    ")
        if case.error_frames:
            yield "  raised at (innermost last):"
            yield from (f"    {_one(frame.shown())}" for frame in case.error_frames)
    if case.repeat is not None:
        stats = case.repeat
        yield (
            f"  runs: {stats.passes}/{stats.completed} passed of {stats.requested}"
            + (" (flaky)" if stats.flaky else "")
        )
    if case.grades:
        yield "  checks:"
        for grade in case.grades:
            mark = "✓" if grade.passed else "✗"
            # A detail's lines are the harness's own (what a request held, say): shown as
            # lines, under the check; what it quotes of the run has its newlines escaped.
            first, *rest = clean_lines(grade.detail).split("\n")
            yield f"    {mark} {_one(grade.check)}: {clip(first, WIDTH)}"
            yield from (f"        {clip(line, WIDTH)}" for line in rest)
    if case.record is not None:
        yield from _record_lines(case.record)


def _record_lines(record: RunRecord) -> Iterator[str]:
    transcript = record.transcript
    handoffs = HandoffsAfter(record.handoffs)
    if transcript is None:
        yield (
            "  no transcript kept (a JSON report keeps failing cases' only; the last run's "
            "state, `show` without --report, keeps every case's)"
        )
        for index, response in enumerate(record.turn_responses):
            yield f"  turn {index} answered: {_one(response)}"
        yield from (f"  tool call {_recorded(c)}" for c in record.calls)
        yield from _handoffs_left(handoffs)
        yield from _tripped(record)
        yield from (_approval_left(a) for a in record.approvals)
        return
    calls = Unclaimed(record.calls)
    graded = graded_responses(record)
    approvals = ApprovalsOf(record.approvals)
    turn: int | None = None
    for step in transcript:
        if step.turn != turn:
            yield from _graded_line(graded, turn)
            turn = step.turn
            yield f"  turn {turn}:" if turn >= 0 else "  starting the agent:"
            yield from _handoff_lines(handoffs.after(turn, -1))
        yield from _step_lines(step, calls, approvals)
        yield from _handoff_lines(handoffs.after(step.turn, step.step))
    yield from _graded_line(graded, turn)
    for call in calls.left():
        yield f"  tool call {_recorded(call)}"
    yield from _handoffs_left(handoffs)
    yield from (_approval_left(a) for a in approvals.left())
    yield from _tripped(record)


def _tripped(record: RunRecord) -> Iterator[str]:
    # Every tripwire, with its kind, agent and turn: a turn a guardrail stopped before the
    # model was asked has no request to show it under.
    for run in record.guardrails:
        if run.tripped:
            yield f"  guardrail tripped: {_one(describe(run))}"


def _graded_line(graded: dict[int, str], turn: int | None) -> Iterator[str]:
    if turn is not None and turn in graded:
        yield f"    = response graded: {_one(graded[turn])}"


def _step_lines(step: TranscriptStep, calls: Unclaimed, approvals: ApprovalsOf) -> Iterator[str]:
    for message in step.sent:
        yield f"    → {_message(message)}"
    # Who asked, in a multi-agent run; a run of one agent names none.
    by = f"[{_one(step.agent)}] " if step.agent is not None else ""
    yield f"    ← {by}{_answer(step.answer)}"
    for asked in step.answer.tool_calls if step.answer is not None else ():
        approval = approvals.of(step.turn, asked.id)
        if approval is not None:
            yield f"      {_approval(approval)}"
        call = calls.take(asked, step.agent)
        if call is not None:
            yield f"      tool {_recorded(call)} in {call.duration_ms:.0f} ms"


def _approval(approval: Approval) -> str:
    held = f"{clean(approval.tool)} {clean(approval.call_id)}"
    return f"approval of {held}: {_one(decision_text(approval))}"


def _approval_left(approval: Approval) -> str:
    where = "as the agent started" if approval.turn < 0 else f"in turn {approval.turn}"
    return f"  {where}, {_approval(approval)}"


def _handoff_lines(handoffs: list[Handoff]) -> Iterator[str]:
    for handoff in handoffs:
        yield f"    handoff: {_one(handoff.source)} → {_one(handoff.target)}"


def _handoffs_left(handoffs: HandoffsAfter) -> Iterator[str]:
    for handoff in handoffs.left():
        where = "as the agent started" if handoff.turn < 0 else f"in turn {handoff.turn}"
        yield (
            f"  handoff {where} after request {handoff.step}: "
            f"{_one(handoff.source)} → {_one(handoff.target)}"
        )


def _recorded(call: RecordedCall) -> str:
    by = f"[{_one(call.agent)}] " if call.agent is not None else ""
    return by + _call(call.name, call.arguments, call.result, call.success)


def _message(message: Message) -> str:
    parts = [_one(message.content)] if message.content else []
    parts += [f"calls {c.name}({_json(c.arguments)})" for c in message.tool_calls]
    if message.tool_call_id:
        parts.insert(0, f"result for {clean(message.tool_call_id)}:")
    return f"{message.role}: {' '.join(parts) or '(empty)'}"


def _answer(step: ModelStep | None) -> str:
    if step is None:
        return "no answer (the run stopped here)"
    if step.tool_calls:
        return "model calls " + ", ".join(
            f"{c.name}({_json(c.arguments)})" for c in step.tool_calls
        )
    return f"model answers {_one(step.text)}"


def _call(name: str, arguments: str, result: str, success: bool) -> str:
    status = "" if success else " (failed)"
    return f"{clean(name)}({_one(arguments)}) → {_one(result)}{status}"


def _json(value: object) -> str:
    return _one(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _one(text: str) -> str:
    """A value on one line: newlines and controls shown escaped, clipped."""
    return clip(clean(text), WIDTH)


def _indented(text: str, prefix: str) -> Iterator[str]:
    for line in clean_lines(text).split("\n"):
        yield prefix + clip(line, WIDTH * 2)


def case_line(case: Case, root: Path) -> str:
    """One admitted case as `zeroclaw eval list` shows it: id, fixture, and the kinds of
    expectations it declares (their keys), tab-separated."""
    expects = case.trace.expects
    declared = (
        [k for k, v in msgspec.structs.asdict(expects).items() if v not in (None, [], {}, False)]
        if expects is not None
        else []
    )
    from harness.fixtures.suite import display_path

    fixture = display_path(case.path, root)
    return inert("\t".join([clean(case.id), clean(fixture), ",".join(declared) or "-"]))
