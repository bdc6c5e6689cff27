"""`expects.judge`: rubrics an LLM judge grades the run against, what the judge is shown of
the run, and the protocol of the judge a run asks (`harness.judge` implements it).

The kind never calls a judge itself: the runner asks the run's judge for every rubric of
the case (a recorded reply in replay, a live call when recording) and hands the verdicts
to grading as `Evidence.judged`. A rubric without a verdict fails, gated: fail closed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Protocol

import msgspec

from harness.expectations.base import (
    EXPECTS,
    Context,
    Evidence,
    Grade,
    JudgeNote,
    Kind,
    Strict,
    is_blank,
    q,
)
from harness.io.problems import unsafe_name_problem
from harness.io.validation import Fault
from harness.tool_registry import RecordedCall

# Re-asking a judge is paid for: a handful of samples shows a majority, more shows little
# more. Odd, so a strict majority always exists.
MAX_SAMPLES = 9
MAX_NAME = 64


class Rubric(Strict, kw_only=True):
    """One rubric: what the judge grades the run against, and the score it must reach."""

    name: str
    rubric: str
    # The lowest score that passes. 0 is refused: every score reaches it.
    threshold: Annotated[float, msgspec.Meta(gt=0, le=1)]
    # Whether the judge also sees the tool calls and their results (it always sees the
    # task's turns and the final response, never the expectations).
    include_transcript: bool = False
    # Samples asked of the judge; the verdict is their strict majority (a failed sample is
    # a failed vote).
    samples: Annotated[int, msgspec.Meta(ge=1, le=MAX_SAMPLES)] = 1


class Material(msgspec.Struct, frozen=True, kw_only=True):
    """What the judge is shown of one run: the user's turns, the agent's answer to each
    (the last is the final response), and the tool calls with their results when a
    rubric asks for them."""

    user_inputs: tuple[str, ...]
    responses: tuple[str, ...]
    calls: tuple[RecordedCall, ...] = ()


class Judge(Protocol):
    """The judge of a run: a verdict per rubric of a case, never raising for what the judge
    did (a failed call, an unparseable or unrecorded reply is a verdict without a score).
    `harness.judge.service.JudgeService` is the one built in."""

    async def judge(
        self, case_id: str, rubrics: Sequence[Rubric], material: Material
    ) -> Mapping[str, JudgeNote]: ...


class JudgeRubrics(Kind):
    """`judge`: a list of rubrics, each one check graded by the run's LLM judge."""

    order = 97
    judge: list[Rubric] = []

    def problems(self, context: Context) -> Iterator[Fault]:
        seen: dict[str, int] = {}
        for i, rubric in enumerate(self.judge):
            at = f"{EXPECTS}.judge[{i}]"
            if is_blank(rubric.name):
                yield Fault(f"{at}.name", "empty or whitespace-only rubric name")
            elif len(rubric.name) > MAX_NAME:
                yield Fault(f"{at}.name", f"longer than {MAX_NAME} characters")
            else:
                unsafe = unsafe_name_problem("rubric name", rubric.name)
                if unsafe is not None:
                    yield Fault(f"{at}.name", unsafe)
                elif rubric.name in seen:
                    yield Fault(
                        f"{at}.name",
                        f"duplicate rubric name {rubric.name!r} (also $.expects.judge"
                        f"[{seen[rubric.name]}]): a verdict is kept by its rubric's name",
                    )
                seen.setdefault(rubric.name, i)
            if is_blank(rubric.rubric):
                yield Fault(f"{at}.rubric", "empty or whitespace-only rubric: it asks nothing")
            if rubric.samples % 2 == 0:
                yield Fault(
                    f"{at}.samples",
                    f"{rubric.samples} is even: a strict majority of the samples needs an "
                    "odd count",
                )

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        for i, rubric in enumerate(self.judge):
            note = None if evidence.judged is None else evidence.judged.get(rubric.name)
            if note is None:
                note = JudgeNote(
                    rubric=rubric.name,
                    threshold=rubric.threshold,
                    score=None,
                    reason="not judged: no judge graded this run",
                    gated=True,
                    why="a rubric without a verdict fails closed",
                )
            yield Grade(
                f"judge({q(rubric.name)})",
                verdict_passed(note),
                describe(note),
                "judge",
                f"{EXPECTS}.judge[{i}]",
                note,
            )


def verdict_passed(note: JudgeNote) -> bool:
    """A verdict passes when the judge gave a score, knew enough to give it, and reached
    the rubric's threshold."""
    return note.score is not None and not note.unknown and note.score >= note.threshold


def describe(note: JudgeNote) -> str:
    """The detail every report shows: score against threshold, the reason, and whether it
    gates (and why)."""
    if note.score is None:
        outcome = "no verdict"
    elif note.unknown:
        outcome = f"unknown (score {note.score:.2f}; the transcript lacks the evidence)"
    else:
        relation = "≥" if note.score >= note.threshold else "<"
        outcome = f"score {note.score:.2f} {relation} threshold {note.threshold:.2f}"
    status = "gated" if note.gated else "diagnostic"
    why = f": {note.why}" if note.why else ""
    return f"{outcome}: {note.reason} [{status}{why}]"
