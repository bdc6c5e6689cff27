"""The verdict model: what each case and the suite came to, immutable once built.

Everything a reporter needs is here (the failing line of each case included), so no
reporter reads a fixture or asks another reporter.
"""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Sequence
from typing import Any

import msgspec

from harness.errors import ExitCode
from harness.expectations.base import Grade
from harness.modes import SuiteKind
from harness.run_record import RunRecord
from harness.verdict.comparison import BaselineComparison
from harness.verdict.kept import plain_passes
from harness.verdict.policy import passes, policy_for, regression_gate, unknown_share_exceeded
from harness.verdict.receipts import SuiteReceipt
from harness.verdict.repeat_stats import RepeatStats as RepeatStats
from harness.verdict.repeat_stats import RunReceipt as RunReceipt

# v2: a repeated case's `repeat` block, `cluster`, `not_run` and `fixture_sha256` per case;
# the suite's `statistics` and `receipt` blocks; `not_run` and `flaky` in the totals. Later
# optional fields (a reader of v2 may find them missing): `error_frames` and `origin` per
# case.
SCHEMA = "zeroclaw-eval/report/v2"
DETERMINISTIC = "no interval: a deterministic replay samples nothing"


class ErrorFrame(msgspec.Struct, kw_only=True, frozen=True, gc=False):
    """One frame of a run error's traceback (`harness.run.error_frames` picks them): where in
    the user's code it was raised, or passed through."""

    file: str  # from the project root when under it
    line: int
    function: str

    def shown(self) -> str:
        """`file:line in function`, as every report says it (cleaned by the report)."""
        return f"{self.file}:{self.line} in {self.function}"


def share_strings(grades: list[Grade]) -> None:
    """`grades` holding the one copy of each of their strings: a run keeps the grades of
    every case it keeps whole, and across cases most of them repeat (fields, check names,
    `found`). Done as a case is kept whole (`harness.run.results`), not for a plain pass
    kept as a byte."""
    intern, set_field = sys.intern, msgspec.structs.force_setattr
    for g in grades:
        # Set only where another copy is the one kept (a field's text mostly is it).
        if (check := intern(g.check)) is not g.check:
            set_field(g, "check", check)
        if (detail := intern(g.detail)) is not g.detail:
            set_field(g, "detail", detail)
        if (field := intern(g.field)) is not g.field:
            set_field(g, "field", field)


def score_of(grades: list[Grade]) -> float | None:
    """The share of `grades` that passed, of those that decide the case (a diagnostic
    judge grade does not); None: there are none."""
    return _score([g for g in grades if g.gates])


def _score(gating: list[Grade]) -> float | None:
    return sum(g.passed for g in gating) / len(gating) if gating else None


class CaseOrigin(msgspec.Struct, kw_only=True, frozen=True, gc=False):
    """Where an imported case came from (the fixture's `origin`): the trace source and
    format version, the trace (or conversation) and, where one span stands for the case,
    that span; so that what is reported of the case can be put beside its trace."""

    source: str
    trace_id: str
    span_id: str | None = None


class CaseReport(msgspec.Struct, kw_only=True, frozen=True, gc=False):
    """What one case came to. Untracked by the garbage collector (data only, never a
    cycle): a run keeps one per case, and the collector need not walk them all again and
    again."""

    id: str
    fixture: str
    passed: bool
    error: str | None = None
    traceback: str | None = None
    # The run error's frames in the user's code, innermost last (None: it has none).
    error_frames: list[ErrorFrame] | None = None
    grades: list[Grade] = []
    score: float | None = None
    duration_ms: float = 0.0
    # Line in the fixture of what failed (the failing expectation, or the turn that
    # errored), for annotations; None for a passing case.
    line: int | None = None
    record: RunRecord | None = None
    # A repeated case: its runs' statistics (its grades and record are its first failing
    # run's, else its first run's).
    repeat: RepeatStats | None = None
    cluster: str | None = None
    # Why the run stopped (`--maxfail`) before this case started: never run, never passed.
    not_run: str | None = None
    # SHA-256 of the canonical fixture the case ran (`harness.fixtures.schema.fixture_hash`).
    fixture_sha256: str | None = None
    # The sorted names of the tools the case could use, for baselines; None: not known.
    tool_surface: list[str] | None = None
    # The trace the case was imported from (None: not imported).
    origin: CaseOrigin | None = None

    @classmethod
    def graded(
        cls,
        id: str,
        fixture: str,
        grades: list[Grade],
        record: RunRecord,
        line: int | None = None,
    ) -> CaseReport:
        # `Attempt(grades).passed` and `score_of(grades)`, the grades that decide the case
        # found once for both.
        gating = [g for g in grades if g.gates]
        passed = passes(gating)
        return cls(
            id=id,
            fixture=fixture,
            passed=passed,
            grades=grades,
            score=_score(gating),
            duration_ms=record.duration_ms,
            line=None if passed else line,
            record=record,
        )

    @classmethod
    def errored(
        cls,
        id: str,
        fixture: str,
        error: str,
        record: RunRecord | None,
        traceback: str | None = None,
        line: int | None = None,
        frames: list[ErrorFrame] | None = None,
    ) -> CaseReport:
        return cls(
            id=id,
            fixture=fixture,
            passed=False,
            error=error,
            traceback=traceback,
            error_frames=frames,
            duration_ms=record.duration_ms if record else 0.0,
            line=line,
            record=record,
        )

    @classmethod
    def unrun(cls, id: str, fixture: str, reason: str) -> CaseReport:
        """A case the run stopped before starting."""
        return cls(id=id, fixture=fixture, passed=False, not_run=reason)

    @property
    def flaky(self) -> bool:
        return self.repeat is not None and self.repeat.flaky

    @property
    def plain(self) -> bool:
        """A plain pass: passed, no repeat or cluster, no judge grade or failed check (what
        its id, fixture and score say of it is all a run whose reports wrote it out keeps)."""
        if not self.passed or self.repeat is not None or self.cluster is not None:
            return False
        return not any(g.judge is not None or not g.passed for g in self.grades)

    @property
    def failing_grades(self) -> list[Grade]:
        """The failing grades that decide the case (a diagnostic judge grade never does)."""
        return [g for g in self.grades if g.fails]

    @property
    def diagnostic_grades(self) -> list[Grade]:
        """The judge grades that are only diagnostic: shown, never deciding the case."""
        return [g for g in self.grades if not g.gates]

    @property
    def judge_keys(self) -> dict[str, str] | None:
        """Each rubric's judge setup and whether it gated, as `<setup hash>/gated` or
        `/diagnostic`; None when no grade is a judge's. Baselines and history keep it, so
        a verdict that changed with the judge (its setup, or its calibration's gate) is
        never read as the agent's regression."""
        found = {
            g.judge.rubric: f"{g.judge.setup}/{'gated' if g.judge.gated else 'diagnostic'}"
            for g in self.grades
            if g.judge is not None
        }
        return found or None

    @property
    def failed_categories(self) -> list[str]:
        """The categories of its failing checks, each once, sorted."""
        return sorted({g.category for g in self.failing_grades})

    @property
    def tokens(self) -> int:
        """The tokens its record says it spent, input and output (0: it has none)."""
        record = self.record
        return record.input_tokens + record.output_tokens if record is not None else 0

    @property
    def model_calls(self) -> int:
        """The model calls its record counts (0: it has none)."""
        return self.record.model_calls if self.record is not None else 0

    def diagnostic_lines(self) -> list[str]:
        """Each diagnostic judge grade with its figures, as every report shows it: never a
        failure of the case, always in sight."""
        return [
            f"{g.check} ({'warning' if g.warn else 'diagnostic'}): {g.detail}"
            for g in self.diagnostic_grades
        ]

    def failure_lines(self) -> list[str]:
        """Each failing check with what was observed, as every report shows it; then, for
        a case no check decides, why; then its diagnostic judge grades."""
        lines = [f"{g.check}: {g.detail}" for g in self.failing_grades]
        if not lines and not self.passed and self.error is None and self.not_run is None:
            lines.append(self.first_failure())
        return lines + self.diagnostic_lines()

    def first_failure(self) -> str:
        """The one line that says why this case failed."""
        head, more = self.failure_parts()
        return head + more

    def failure_parts(self) -> tuple[str, str]:
        """`first_failure` in two parts: what failed first with what was observed (or the
        run error), and how many more checks failed; a report that must be short clips
        the first and keeps the second."""
        if self.not_run is not None:
            return f"not run: {self.not_run}", ""
        if self.error is not None:
            return f"run error: {self.error}", ""
        failing = self.failing_grades
        if not failing:
            diagnostic = self.diagnostic_grades
            if diagnostic and len(diagnostic) == len(self.grades):
                note = diagnostic[0].judge
                why = f" ({note.why})" if note is not None and note.why else ""
                return f"no check decides the case: its judge grades are diagnostic{why}", ""
            return "the case produced no grades", ""
        grade = failing[0]
        more = f" (+{len(failing) - 1} more failing check(s))" if len(failing) > 1 else ""
        return f"{grade.check}: {grade.detail}", more


class JudgeTotals(msgspec.Struct, frozen=True, kw_only=True):
    """What the LLM judge did in a run, apart from the agent: its verdicts, how many gate,
    how many of the gated were unknown, how many it was asked now (not replayed) and the
    tokens those cost."""

    verdicts: int = 0
    gated: int = 0
    diagnostic: int = 0
    gated_unknown: int = 0
    asked: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    # Why the share of unknown gated verdicts fails the gate (None: it does not).
    gate_problem: str | None = None

    def said(self) -> str:
        """One line for every report (two when the unknown verdicts fail the gate)."""
        line = (
            f"judge: {self.verdicts} verdict(s), {self.gated} gated, {self.diagnostic} "
            f"diagnostic, {self.gated_unknown} gated unknown; asked {self.asked} now "
            f"({self.input_tokens} input + {self.output_tokens} output tokens, not the "
            "agent's), the rest replayed"
        )
        if self.gate_problem is not None:
            line += f"\n  gate failed: {self.gate_problem}"
        return line


def _judge_totals(cases: Sequence[CaseReport]) -> JudgeTotals | None:
    """The judge's totals over `cases`; None: no case has a judge grade."""
    notes = [g.judge for c in cases for g in c.grades if g.judge is not None]
    if not notes:
        return None
    return JudgeTotals(
        verdicts=len(notes),
        gated=sum(n.gated for n in notes),
        diagnostic=sum(not n.gated for n in notes),
        gated_unknown=sum(n.gated and n.unknown for n in notes),
        asked=sum(n.live for n in notes),
        input_tokens=sum(n.input_tokens for n in notes),
        output_tokens=sum(n.output_tokens for n in notes),
        gate_problem=unknown_share_exceeded(cases),
    )


class Totals(msgspec.Struct, frozen=True):
    cases: int
    passed: int
    failed: int
    errors: int
    not_run: int = 0
    flaky: int = 0  # repeated cases whose runs disagreed, passed or not


class SuiteStatistics(msgspec.Struct, kw_only=True, frozen=True):
    """The suite's pass rate over the cases that completed (a repeated case counts with its
    pass proportion), with, for a live run, a 95% interval that counts each cluster as one
    unit; `note` says what the interval rests on, or why there is none."""

    pass_rate: float
    low: float | None  # None: a replay (nothing sampled), or fewer than two independent units
    high: float | None
    standard_error: float | None
    cases: int  # cases it rests on (run errors and cases not run are left out)
    units: int  # independent units: clusters, and each unclustered case
    repeated: int  # cases run more than once
    flaky: int  # repeated cases whose runs disagreed
    note: str


class UnusedSnapshots(msgspec.Struct, kw_only=True, frozen=True):
    """The request snapshots of the run's agent setting that no case of the suite uses (its
    fixture deleted or renamed), found after a run of the whole suite: each file as reports
    name it; whether `--update-snapshots` removed them; whether they fail the gate (the
    suite's `unused_snapshots = "fail"`; by default they are a warning)."""

    files: list[str]
    removed: bool = False
    fails: bool = False

    def lines(self) -> list[str]:
        """What every report says of them, a line each: what was found or done, then each file."""
        if self.removed:
            head = f"{len(self.files)} unused request snapshot(s) removed (--update-snapshots):"
        else:
            said = "failing the gate" if self.fails else "a warning"
            head = (
                f"{len(self.files)} request snapshot(s) no case of the suite uses ({said}); "
                "remove them with --update-snapshots:"
            )
        return [head, *(f"  {name}" for name in self.files)]


class SuiteReport(msgspec.Struct, kw_only=True, frozen=True):
    suite: str
    kind: SuiteKind
    mode: str
    agent: str
    # In suite order; a run whose reporters wrote each case out as it was kept holds its
    # plain passes a byte each (`harness.verdict.kept.KeptCases`), read as any sequence.
    cases: Sequence[CaseReport]
    duration_ms: float = 0.0
    # What the run was made from and judged by (`harness.verdict.receipts`); None for a report
    # built by hand.
    receipt: SuiteReceipt | None = None
    # The run against a baseline (`--baseline`), and whether a confirmed regression
    # fails the gate (`--fail-on-regression`), whatever the suite kind.
    baseline: BaselineComparison | None = None
    fail_on_regression: bool = False
    # After a run of the whole suite: the snapshots no case of it uses (None: not looked for).
    unused_snapshots: UnusedSnapshots | None = None

    def _whole(self) -> tuple[Sequence[CaseReport], int]:
        """The cases held whole, in suite order, and how many plain passes besides them the
        run held as a byte each (`harness.verdict.kept`): what every figure of the verdict
        is counted from, without making those passes again."""
        whole, passes = plain_passes(self.cases)
        return (whole if isinstance(whole, Sequence) else list(whole)), passes

    @property
    def totals(self) -> Totals:
        cases, passes = self._whole()
        passed = sum(c.passed for c in cases) + passes
        errors = sum(c.error is not None for c in cases)
        unrun = sum(c.not_run is not None for c in cases)
        failed = len(self.cases) - passed - errors - unrun
        flaky = sum(c.flaky for c in cases)
        return Totals(len(self.cases), passed, failed, errors, unrun, flaky)

    @property
    def statistics(self) -> SuiteStatistics:
        from harness.verdict.statistics import clustered_interval

        cases, passes = self._whole()
        items = (  # one at a time: a suite's statistics hold no list of its cases
            (c.cluster, c.repeat.proportion if c.repeat is not None else float(c.passed))
            for c in cases
            if c.error is None and c.not_run is None
        )
        # A plain pass is a case of its own that passed: its place among them changes
        # nothing, the interval's sums being exact.
        interval = clustered_interval(itertools.chain(items, itertools.repeat((None, 1.0), passes)))
        # A replay answers from its script: run again, the suite gives the same rate, so
        # nothing was sampled and an interval would claim an uncertainty there is not.
        sampled = self.mode == "live"
        return SuiteStatistics(
            pass_rate=interval.estimate,
            low=interval.low if sampled else None,
            high=interval.high if sampled else None,
            standard_error=interval.standard_error if sampled else None,
            cases=interval.cases,
            units=interval.units,
            repeated=sum(c.repeat is not None for c in cases),
            flaky=sum(c.flaky for c in cases),
            note=interval.note if sampled else DETERMINISTIC,
        )

    @property
    def judge_totals(self) -> JudgeTotals | None:
        """What the LLM judge did in this run (None: no case has a judge grade)."""
        return _judge_totals(self._whole()[0])

    def judge_rubrics(self) -> list[tuple[str, int, int, str, str]]:
        """Per rubric (name, in order of first use): its verdicts, how many passed,
        "gated" or "diagnostic", and why (a calibrated rubric's why holds its figures)."""
        found: dict[str, list[Any]] = {}
        for case in self._whole()[0]:
            for g in case.grades:
                note = g.judge
                if note is not None:
                    row = found.setdefault(note.rubric, [0, 0, "", ""])
                    row[0] += 1
                    row[1] += g.passed
                    row[2], row[3] = ("gated" if note.gated else "diagnostic"), note.why
        return [(name, *row) for name, row in found.items()]

    @property
    def partial(self) -> str | None:
        """What the run picked when it ran part of the suite (-k, --case, --shard): its
        gate is then not the suite's, and every report says so."""
        return self.receipt.selection if self.receipt is not None else None

    @property
    def all_passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self._whole()[0])

    def exit_code(self) -> ExitCode:
        """The process exit code of `zeroclaw eval run` for this verdict, by the suite
        kind's policy (`harness.verdict.policy`); FAILED also, for any kind, when a confirmed
        regression against the baseline is to fail it, a token or cost gate found a
        figure grown over its share, or unused snapshots are to fail it."""
        code = policy_for(self.kind).exit_code(*self._whole())
        unused = self.unused_snapshots
        if unused is not None and unused.fails and not unused.removed and unused.files:
            code = ExitCode.FAILED if code is ExitCode.PASSED else code
        comparison = self.baseline
        if comparison is None:
            return regression_gate(code, 0, self.fail_on_regression)
        confirmed, overruns = len(comparison.confirmed_regressions), len(comparison.overruns)
        return regression_gate(code, confirmed, self.fail_on_regression, overruns)

    def worst_first(self) -> list[CaseReport]:
        """Failing cases, run errors first, then lowest score; ties keep suite order."""
        failing = [c for c in self._whole()[0] if not c.passed]
        return sorted(failing, key=lambda c: (c.error is None, c.score or 0.0))


@functools.cache
def document_type() -> Any:
    """The JSON report document's struct (`schema` SCHEMA): what reports are written as
    and read back by `verify`, `merge` and `show`; built on first use."""
    return msgspec.defstruct(
        "ReportDocument",
        [
            ("schema", str),
            ("suite", str),
            ("kind", SuiteKind),
            ("mode", str),
            ("agent", str),
            ("exit_code", int),
            ("all_passed", bool),
            ("totals", Totals),
            ("statistics", SuiteStatistics),
            ("receipt", SuiteReceipt | None),
            ("partial", str | None),
            ("duration_ms", float),
            ("cases", list[CaseReport]),
            ("baseline", BaselineComparison | None, None),
            ("unused_snapshots", UnusedSnapshots | None, None),
            # The last run's report only: the file beside it that holds its passing cases'
            # transcripts (`harness.reporters.last_run`); None in any other report.
            ("transcripts", str | None, None),
        ],
        kw_only=True,
        module=__name__,
    )
