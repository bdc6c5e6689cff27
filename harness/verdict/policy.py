"""Suite policy: the verdict of a case from its attempts, and each suite kind's gate.

Pure functions of what the run produced, so every rule is tested here on its own; the
place where repeats and baselines plug in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.errors import ExitCode
from harness.expectations.base import Grade
from harness.modes import SUITE_KINDS, SuiteKind


@dataclass(frozen=True)
class Attempt:
    """One run of a case: its grades, or the run error that stopped it."""

    grades: Sequence[Grade]
    error: str | None = None

    @property
    def passed(self) -> bool:
        # Ran without error, produced at least one grade that decides it (a diagnostic
        # judge grade does not), and every such grade passed.
        return self.error is None and passes([g for g in self.grades if g.gates])


def passes(gating: Sequence[Grade]) -> bool:
    """Whether a run that ran without error and graded `gating` (its grades that decide
    it) passed."""
    return bool(gating) and all(g.passed for g in gating)


class CaseOutcome(Protocol):
    """What a gate reads of a case's report."""

    @property
    def passed(self) -> bool: ...

    @property
    def error(self) -> str | None: ...


@dataclass(frozen=True)
class SuitePolicy:
    """How one kind of suite turns case verdicts into the process exit code."""

    kind: SuiteKind
    gates_checks: bool  # a failed check fails the gate (not for tracked suites)
    summary: str  # one line for reports saying what the gate means

    def case_passed(self, attempts: Sequence[Attempt], min_pass_rate: float | None = None) -> bool:
        """A case passes when it was attempted and every attempt passed (pass^n), or, when
        the case declares `min_pass_rate`, when no attempt errored and at least that share
        passed. Capability suites judge cases the same way; only their gate differs."""
        errored = any(a.error is not None for a in attempts)
        return runs_passed(sum(a.passed for a in attempts), len(attempts), errored, min_pass_rate)

    def exit_code(self, cases: Sequence[CaseOutcome], passes: int = 0) -> ExitCode:
        """`PASSED` or `FAILED` for this suite's verdicts (`cases`, and `passes` more plain
        passes). An empty suite never passes; a run error or a case the run stopped before
        always fails (the suite could not measure what it exists for)."""
        # `not_run` is read when present: outcomes of the earlier protocol lack it.
        if not (cases or passes) or any(
            c.error is not None or getattr(c, "not_run", None) is not None for c in cases
        ):
            return ExitCode.FAILED
        if self.gates_checks and not all(c.passed for c in cases):
            return ExitCode.FAILED
        if unknown_share_exceeded(cases) is not None:
            return ExitCode.FAILED
        return ExitCode.PASSED


# The most of a run's gated judge checks that may be "unknown" (the judge said the
# transcript lacks the evidence): past it the judge cannot grade what the suite is about,
# and the gate fails whatever the suite kind (each unknown also fails its own check).
MAX_UNKNOWN_SHARE = 0.10


def unknown_share_exceeded(cases: Sequence[CaseOutcome]) -> str | None:
    """Why the share of unknown verdicts among the gated judge checks of `cases` fails
    the gate, or None when it does not."""
    notes = [
        g.judge
        for c in cases
        for g in getattr(c, "grades", ())
        if g.judge is not None and g.judge.gated
    ]
    unknown = sum(n.unknown for n in notes)
    if not notes or unknown / len(notes) <= MAX_UNKNOWN_SHARE:
        return None
    return (
        f"{unknown} of {len(notes)} gated judge checks were unknown, over the "
        f"{MAX_UNKNOWN_SHARE:.0%} limit: the judge cannot grade what this suite is about"
    )


def runs_passed(passes: int, runs: int, errored: bool, min_pass_rate: float | None) -> bool:
    """The case rule on counts: `passes` of `runs` attempts passed, `errored` when one of
    them was a run error (a report's repeat block holds no more than this)."""
    if runs == 0:
        return False
    if min_pass_rate is None:
        return passes == runs
    if errored:
        return False  # a truncated set of runs establishes no rate
    return passes >= min_pass_rate * runs - 1e-9


POLICIES: dict[SuiteKind, SuitePolicy] = {
    "regression": SuitePolicy("regression", True, "gated: exit 0 iff every case passed"),
    "capability": SuitePolicy(
        "capability",
        False,
        "tracked, not gated: failed checks do not fail the run; run errors do",
    ),
    "live": SuitePolicy("live", True, "opt-in, real provider: exit 0 iff every case passed"),
}
assert tuple(POLICIES) == SUITE_KINDS


def policy_for(kind: SuiteKind) -> SuitePolicy:
    return POLICIES[kind]


def regression_gate(
    code: ExitCode, confirmed: int, fail_on_regression: bool, overruns: int = 0
) -> ExitCode:
    """The exit code once a baseline has been compared with: `code` (the suite kind's
    gate), or FAILED for any kind when `fail_on_regression` and `confirmed` regressions
    were found, or when a token or cost gate found `overruns` (a figure grown over the
    share its gate allows). An unconfirmed drop, a new failing case or a removed passing
    case lowers the pass rate but is no regression of a case, and never fails this gate."""
    if (fail_on_regression and confirmed > 0) or overruns > 0:
        return ExitCode.FAILED
    return code
