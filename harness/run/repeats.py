"""A repeated case: how many runs it gets, and its runs combined into one verdict with
their statistics.

A real model answers differently each time, so one run of a live case is one sample. A
case with `repeat: n` (or a run with `--repeat n`) runs n times, each run fully isolated
(fresh agent, backend, registry, workspace). By default it passes only when every run
passed (pass^n): a gate must not certify a behaviour that works "most of the time"; a case
may declare `min_pass_rate` instead. A run that errored is kept as evidence, and a set of
runs one of which errored establishes neither pass^k nor a rate: the case is a run error.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.fixtures.suite import Case
from harness.modes import Mode
from harness.verdict import statistics
from harness.verdict.policy import Attempt, policy_for
from harness.verdict.reports import CaseReport, RepeatStats, RunReceipt


def runs_of(case: Case, mode: Mode, override: int | None) -> int:
    """How many runs `case` gets: `--repeat` when given, else its `repeat`, else one."""
    if mode != "live" or override is not None:
        # The fixture is not read again where its `repeat` decides nothing: a replay case
        # reads it once, as it runs, and a fixture changed since admission is its run error.
        return runs_for(None, mode, override)
    return runs_for(case.trace.repeat, mode, override)


def runs_for(repeat: int | None, mode: str, override: int | None) -> int:
    """How many runs a case whose fixture declares `repeat` gets in `mode` under
    `--repeat override`. A replay is deterministic and always runs once (admission refuses
    `repeat` there, and the command line `--repeat`)."""
    if mode != "live":
        return 1
    if override is not None:
        return override
    return repeat or 1


def receipt(number: int, run: CaseReport) -> RunReceipt:
    return RunReceipt(
        run=number,
        passed=run.passed,
        error=run.error,
        failed_checks=[g.check for g in run.failing_grades],
        undecided=run.error is None and not run.passed and not run.failing_grades,
        tokens=run.tokens,
        model_calls=run.model_calls,
        duration_ms=run.duration_ms,
    )


def repeat_stats(runs: Sequence[CaseReport], min_pass_rate: float | None) -> RepeatStats:
    """The statistics of a case's runs (in run order)."""
    return stats_of([receipt(number, run) for number, run in enumerate(runs, 1)], min_pass_rate)


def stats_of(receipts: Sequence[RunReceipt], min_pass_rate: float | None) -> RepeatStats:
    """The statistics of a case's runs from their receipts alone, so that a report's
    repeat block can be derived again from the runs it lists (`zeroclaw eval verify`)."""
    requested = len(receipts)
    done = [r for r in receipts if r.error is None]
    passes = sum(r.passed for r in done)
    n = len(done)
    pass_at_k, pass_hat_k = statistics.curves(n, passes)
    tokens_mean, tokens_sd = statistics.mean_sd([float(r.tokens) for r in done])
    calls_mean, calls_sd = statistics.mean_sd([float(r.model_calls) for r in done])
    duration_mean, duration_sd = statistics.mean_sd([r.duration_ms for r in done])
    return RepeatStats(
        requested=requested,
        completed=n,
        passes=passes,
        proportion=passes / n if n else 0.0,
        interval=statistics.wilson(passes, n),
        pass_at_k=pass_at_k,
        pass_hat_k=None if n < requested else pass_hat_k,
        min_pass_rate=min_pass_rate,
        flaky=0 < passes < n,
        flips=_flips(done),
        tokens_mean=tokens_mean,
        tokens_sd=tokens_sd,
        model_calls_mean=calls_mean,
        model_calls_sd=calls_sd,
        duration_ms_mean=duration_mean,
        duration_ms_sd=duration_sd,
        note=statistics.suspect_note(passes, n),
        runs=list(receipts),
    )


def _flips(done: Sequence[RunReceipt]) -> dict[str, int]:
    """Each check that failed in some completed run against the completed runs it did not
    fail in: a check a run grades only when it fails (a loop rule) flips too."""
    failed = [set(r.failed_checks) for r in done]
    names = set().union(*failed)
    return statistics.flips([{name: name not in f for name in names} for f in failed])


def truncated(stats: RepeatStats) -> str | None:
    """A repeated case's run error when a run errored (the first run error, said with
    how many runs completed), else None."""
    first = next((r.error for r in stats.runs if r.error is not None), None)
    if first is None:
        return None
    return (
        f"repeat {stats.completed}/{stats.requested} runs completed (pass^k not "
        f"established): {first}"
    )


def combine(case: Case, runs: Sequence[CaseReport]) -> CaseReport:
    """One report for a case from its runs: a single run is its own report; n runs give
    the verdict of the case's rule, the first failing run's grades and record (else the
    first run's), and their statistics."""
    cluster = case.trace.cluster
    if len(runs) == 1 and cluster is None:
        return runs[0]
    min_pass_rate = case.trace.min_pass_rate
    stats = repeat_stats(runs, min_pass_rate)
    shown = next((r for r in runs if not r.passed), runs[0])
    attempts = [Attempt(r.grades, r.error) for r in runs]
    # The kind only changes the gate, never how a case is judged.
    error = truncated(stats)
    passed = error is None and policy_for("regression").case_passed(attempts, min_pass_rate)
    # Where the run error said was raised: in the first run that errored.
    errored = next((r for r in runs if r.error is not None), None)
    frames = errored.error_frames if errored is not None else None
    return CaseReport(
        id=shown.id,
        fixture=shown.fixture,
        passed=passed,
        error=error,
        traceback=shown.traceback,
        error_frames=frames,
        grades=shown.grades,
        score=stats.proportion if len(runs) > 1 else shown.score,
        duration_ms=sum(r.duration_ms for r in runs),
        line=None if passed else shown.line,
        record=shown.record,
        repeat=stats if len(runs) > 1 else None,
        cluster=cluster,
    )
