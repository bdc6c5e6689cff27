"""Where a JSON report disagrees with itself: every field of it that is derived from
others, derived again and compared.

A report is a file anyone can edit. What a run derives (a case's verdict and score from
its grades or its runs, a repeat block's statistics from the runs it lists, the totals,
the suite's statistics, `all_passed`, `partial`, the baseline comparison's lists and
counts, the exit code) must be what its sources give, or the edit is named at its JSON
path. Shared by `zeroclaw eval verify` and `zeroclaw eval merge`; what needs the fixtures
on disk (a case's id and cluster, the runs and pass rate its fixture asks for) is
`harness.tracking.verify`'s.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from harness.defaults import MAX_REPEAT
from harness.io.text import clip
from harness.modes import MODES
from harness.run.repeats import stats_of, truncated
from harness.verdict.comparison import BaselineComparison, CaseComparison
from harness.verdict.policy import Attempt, runs_passed
from harness.verdict.reports import CaseReport, RepeatStats, SuiteReport, score_of

# A value quoted in a problem is cut here.
_SAID = 200
# Past any run's tokens, model calls or milliseconds (a year is 3.2e10 ms), and small
# enough that their squares and sums stay exact enough for the statistics.
_MAX_MEASURE = 1e15


def consistency_problems(report: SuiteReport, raw: dict[str, Any]) -> list[str]:
    """Every field of `report` (read from the document `raw`) that is not what the fields
    it is derived from give."""
    problems = [*_run_problems(report)]
    for index, case in enumerate(report.cases):
        problems += _case_problems(f"$.cases[{index}]", case, report)
    if report.baseline is not None:
        problems += _baseline_problems(report.baseline, report.cases)
    derived = {
        "totals": msgspec.to_builtins(report.totals),
        "all_passed": report.all_passed,
        "partial": report.partial,
    }
    try:
        derived["statistics"] = msgspec.to_builtins(report.statistics)
    except ValueError as exc:  # a pass proportion no run gives (said at its case too)
        problems.append(f"$.statistics: cannot be derived from its cases: {exc}")
    for field, value in derived.items():
        if raw.get(field) != value:
            problems.append(
                f"$.{field}: {_said(raw.get(field))}, but its cases give {_said(value)}"
            )
    if raw.get("exit_code") != int(report.exit_code()):
        problems.append(
            f"$.exit_code: {raw.get('exit_code')}, but its cases under its policy give "
            f"{int(report.exit_code())}"
        )
    return problems


def _said(value: Any) -> str:
    """A value as the report spells it, clipped: a forged field may be of any length."""
    return clip(msgspec.json.encode(value).decode("utf-8"), _SAID)


def _run_problems(report: SuiteReport) -> Iterator[str]:
    """The suite's fields its receipt also says."""
    if report.mode not in MODES:
        yield f"$.mode: {report.mode!r} is no mode ({', '.join(MODES)})"
    receipt = report.receipt
    if receipt is None:
        return
    if receipt.repeat is not None and report.mode != "live":
        yield f"$.receipt.repeat: {receipt.repeat}, but a replay runs each case once"
    if receipt.agent != report.agent:
        yield f"$.agent: {report.agent!r}, but the receipt's agent is {receipt.agent!r}"
    if (receipt.provider == "scripted") != (report.mode == "replay"):
        yield (
            f"$.mode: {report.mode!r}, but the receipt's provider is {receipt.provider!r} "
            "(a replay's provider is 'scripted', and only a replay's)"
        )


def _case_problems(at: str, case: CaseReport, report: SuiteReport) -> list[str]:
    """One case's verdict, score, line and error against its grades or runs."""
    score: float | None
    if case.repeat is not None:
        unsound = _unsound_runs(f"{at}.repeat.runs", case.repeat)
        if unsound:
            return unsound  # nothing can be derived from them
        derived = stats_of(case.repeat.runs, case.repeat.min_pass_rate)
        problems = _repeat_problems(at, case, report, derived)
        errored = derived.completed < derived.requested
        should = runs_passed(derived.passes, derived.requested, errored, derived.min_pass_rate)
        score = derived.proportion
        evidence = "runs"
    else:
        problems = _single_problems(at, case, report)
        should, score = _single_verdict(case)
        evidence = "grades"
    if case.passed != should:
        problems.append(
            f"{at}.passed ({case.id}): says {_verdict(case.passed)}, but its {evidence} say "
            f"{_verdict(should)}"
        )
    if case.score != score:
        problems.append(f"{at}.score: {_said(case.score)}, but its {evidence} give {_said(score)}")
    if case.passed and case.line is not None:
        problems.append(f"{at}.line: {case.line}, but a passing case has no failing line")
    return problems


def _verdict(passed: bool) -> str:
    return "passed" if passed else "not passed"


def _single_verdict(case: CaseReport) -> tuple[bool, float | None]:
    """The verdict and score of a case run once, from its grades."""
    if case.error is not None or case.not_run is not None:
        return False, None
    return Attempt(case.grades).passed, score_of(case.grades)


def _single_problems(at: str, case: CaseReport, report: SuiteReport) -> list[str]:
    problems = []
    if case.error is not None and case.not_run is not None:
        problems.append(f"{at}.not_run: a case that never ran has no run error ({at}.error)")
    override = report.receipt.repeat if report.receipt is not None else None
    if report.mode == "live" and override is not None and override > 1 and case.not_run is None:
        problems.append(f"{at}.repeat: missing: the run's --repeat asks for {override} runs")
    return problems


def _unsound_runs(at: str, stats: RepeatStats) -> list[str]:
    """Runs no statistics can be derived from: more than a case is ever run, or counts
    and durations no run has (negative, not finite, past any real one)."""
    if len(stats.runs) > MAX_REPEAT:
        return [f"{at}: {len(stats.runs)} runs, but no case runs more than {MAX_REPEAT} times"]
    problems = []
    for index, run in enumerate(stats.runs):
        for field in ("tokens", "model_calls", "duration_ms"):
            value = getattr(run, field)
            if not (math.isfinite(value) and 0 <= value <= _MAX_MEASURE):
                problems.append(f"{at}[{index}].{field}: {value} is no run's")
    return problems


def _repeat_problems(
    at: str, case: CaseReport, report: SuiteReport, derived: RepeatStats
) -> list[str]:
    """A repeat block is a live run's of two runs or more, and every field of it is
    `derived`, what the runs it lists give; the case's grades are its first failing run's
    (else its first run's) and its error the first run error."""
    stats = case.repeat
    assert stats is not None
    problems = []
    if report.mode != "live":
        problems.append(
            f"{at}.repeat: a replay runs each case once: no run of it has a repeat block"
        )
    if stats.requested < 2:
        problems.append(
            f"{at}.repeat.requested: {runs_said(stats.requested)}, but a repeat block is of 2 runs "
            "or more"
        )
    rate = stats.min_pass_rate
    if rate is not None and not 0 < rate <= 1:
        problems.append(f"{at}.repeat.min_pass_rate: {rate} is no pass rate (0 < rate <= 1)")
    problems += _runs_problems(f"{at}.repeat.runs", stats)
    for field in msgspec.structs.fields(RepeatStats):
        found, given = getattr(stats, field.name), getattr(derived, field.name)
        if field.name != "runs" and found != given:
            problems.append(
                f"{at}.repeat.{field.name}: {_said(found)}, but its runs give {_said(given)}"
            )
    problems += _shown_run_problems(at, case, stats)
    return problems


def runs_said(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _runs_problems(at: str, stats: RepeatStats) -> list[str]:
    """Each run's receipt: numbered in order, and passed exactly when it completed with no
    failing check and some check decided it (a completed run always has a grade: no grade
    is a failing one; a run graded only by diagnostic judge grades is undecided)."""
    problems = []
    for index, run in enumerate(stats.runs):
        if run.run != index + 1:
            problems.append(f"{at}[{index}].run: {run.run}, but it is run {index + 1}")
        should = run.error is None and not run.failed_checks and not run.undecided
        if run.passed != should:
            problems.append(
                f"{at}[{index}].passed: {_said(run.passed)}, but its error, failed checks "
                f"and undecided flag say {_verdict(should)}"
            )
        elif run.undecided and (run.error is not None or run.failed_checks):
            problems.append(
                f"{at}[{index}].undecided: true, but the run "
                + ("errored" if run.error is not None else "failed checks")
            )
    return problems


def _shown_run_problems(at: str, case: CaseReport, stats: RepeatStats) -> list[str]:
    problems: list[str] = []
    if not stats.runs:
        return problems
    shown = next((r for r in stats.runs if not r.passed), stats.runs[0])
    failing = [g.check for g in case.grades if g.fails]
    if failing != shown.failed_checks:
        problems.append(
            f"{at}.grades: fail {', '.join(failing) or 'nothing'}, but they are run "
            f"{shown.run}'s, which failed {', '.join(shown.failed_checks) or 'nothing'}"
        )
    error = truncated(stats)
    if case.error != error:
        problems.append(f"{at}.error: {_said(case.error)}, but its runs give {_said(error)}")
    duration = sum(r.duration_ms for r in stats.runs)
    if case.duration_ms != duration:
        problems.append(
            f"{at}.duration_ms: {case.duration_ms}, but its runs took {duration} in all"
        )
    return problems


def _baseline_problems(comparison: BaselineComparison, cases: Sequence[CaseReport]) -> list[str]:
    """The comparison's lists and counts are what its cases give, and its cases are the
    report's: each once, a run error where the report has one, no regression of a case
    that passed its one run."""
    at = "$.baseline"
    problems = []
    derived = BaselineComparison.of(
        comparison.baseline, comparison.level, comparison.cases, comparison.notes
    )
    for field in ("confirmed_regressions", "unconfirmed_drops", "counts"):
        found, value = getattr(comparison, field), getattr(derived, field)
        if found != value:
            problems.append(f"{at}.{field}: {found}, but its cases give {value}")
    reported = {c.id: c for c in cases}
    compared = Counter(c.id for c in comparison.cases if c.status != "removed")
    if compared != Counter(c.id for c in cases):
        problems.append(f"{at}.cases: not the report's cases, each once")
    for index, entry in enumerate(comparison.cases):
        case = reported.get(entry.id)
        problems += _entry_problems(f"{at}.cases[{index}]", entry, case, comparison.level)
    return problems


def _entry_problems(
    at: str, entry: CaseComparison, case: CaseReport | None, level: float
) -> list[str]:
    problems = []
    if (entry.status == "regression") != (entry.confirmed is not None):
        problems.append(f"{at}.confirmed: {_said(entry.confirmed)} for a case {entry.status}")
    elif entry.status == "regression" and entry.confirmed != (
        entry.p_value is None or entry.p_value < level
    ):
        problems.append(
            f"{at}.confirmed: {_said(entry.confirmed)}, but its p-value "
            f"{_said(entry.p_value)} at level {level} gives the other"
        )
    if case is None:
        if entry.status != "removed":
            problems.append(f"{at}.status: {entry.status}, but the report has no case {entry.id!r}")
        return problems
    ran = case.error is None and case.not_run is None
    if (entry.status == "error") == ran or entry.status == "removed":
        problems.append(f"{at}.status: {entry.status}, but the case {_outcome(case)}")
    elif entry.status == "regression" and case.passed and case.repeat is None:
        problems.append(f"{at}.status: regression, but the case passed its one run")
    elif entry.status == "improvement" and not case.passed:
        problems.append(f"{at}.status: improvement, but the case did not pass")
    return problems


def _outcome(case: CaseReport) -> str:
    if case.not_run is not None:
        return "was not run"
    if case.error is not None:
        return "is a run error"
    return "ran"
