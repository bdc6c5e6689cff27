"""`zeroclaw eval merge REPORT...`: the JSON reports of a suite's shards (`--shard I/N`)
combined into the one report of the whole suite, or refused.

Merging proves completeness from the receipts: every shard 1..N exactly once, all of one
suite (the digest of the whole admitted suite), one policy, one harness version, agent,
mode and commit, no case twice, and the merged cases' fixtures hash to that digest (so no
case was dropped from a shard's report either). Each shard's report must agree with itself
as `zeroclaw eval verify` checks it (`harness.tracking.consistency`), and be judged as the suite is:
the gate's kind is the suite's (`--suite-kind`, else what the suite directory's name
implies, as for a run), never the shards' own. Then the merged report is the suite's: its
verdict, counts, case reports and exit code are those of an unsharded run (timings aside).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from harness.errors import HarnessError
from harness.fixtures.selection import MAX_SHARDS, shard_of
from harness.modes import SuiteKind, kind_of_directory
from harness.tracking.consistency import consistency_problems
from harness.tracking.verify import VerifyError, bar_problems, policy_problems, read_report
from harness.verdict.comparison import BaselineComparison, CaseComparison
from harness.verdict.receipts import SuiteReceipt, suite_hash
from harness.verdict.reports import CaseReport, SuiteReport

# A shard count's missing shards named one by one up to this many, then counted.
_NAMED = 20

Shard = tuple[Path, SuiteReport, dict[str, Any]]  # its path, report and raw document

# What every shard must agree on, read from its receipt or report.
_SAME = (
    ("suite", lambda r: r.suite),
    ("suite kind", lambda r: r.kind),
    ("mode", lambda r: r.mode),
    ("agent", lambda r: r.agent),
    ("fixtures (the suite's digest)", lambda r: r.receipt.suite_sha256),
    ("policy", lambda r: msgspec.structs.astuple(r.receipt.policy)),
    ("harness version", lambda r: r.receipt.harness_version),
    ("git commit", lambda r: r.receipt.git_commit),
    ("framework version", lambda r: r.receipt.framework_version),
    ("provider", lambda r: r.receipt.provider),
    ("shard count", lambda r: r.receipt.shard[1]),
    ("runs of each case (--repeat)", lambda r: r.receipt.repeat),
    ("baseline", lambda r: None if r.baseline is None else r.baseline.baseline),
    ("regression level", lambda r: None if r.baseline is None else r.baseline.level),
)


class MergeError(HarnessError):
    """The reports cannot be merged into one suite's report (each reason on a line)."""

    def lines(self) -> list[str]:
        return [f"zeroclaw eval: merge: {line}" for line in str(self).splitlines()]


def merge(
    paths: Sequence[Path], kind: SuiteKind | None = None, fail_on_regression: bool = False
) -> SuiteReport:
    """The whole suite's report from its shards' JSON reports, or `MergeError` naming
    every reason it cannot be. Each shard must have been judged as the suite is: as a
    `kind` suite (else the kind its directory's name implies) and, when asked, failing on
    confirmed regressions."""
    if not paths:
        raise MergeError("name the shards' JSON reports")
    shards, problems = _read(paths)
    for path, report, raw in shards:
        expected = kind if kind is not None else kind_of_directory(report.suite)
        problems += _shard_problems(path, report, raw, expected, fail_on_regression)
    if not problems:
        problems = _agreement_problems(shards)
        if not problems:  # coverage is only told against one shard count
            problems = _coverage_problems(shards)
    cases = sorted((c for _, r, _ in shards for c in r.cases), key=lambda c: c.fixture)
    if not problems:
        problems = _completeness_problems(shards[0][1], cases)
    if problems:
        raise MergeError("\n".join(problems))
    first = shards[0][1]
    assert first.receipt is not None  # _shard_problems checked every receipt
    receipt: SuiteReceipt = msgspec.structs.replace(
        first.receipt, selection=None, shard=None, git_dirty=_any_dirty(shards)
    )
    return SuiteReport(
        suite=first.suite,
        kind=first.kind,
        mode=first.mode,
        agent=first.agent,
        cases=cases,
        duration_ms=max(r.duration_ms for _, r, _ in shards),  # the shards ran side by side
        receipt=receipt,
        baseline=_merged_baseline([r for _, r, _ in shards]),
        fail_on_regression=first.fail_on_regression,
    )


def _merged_baseline(reports: list[SuiteReport]) -> BaselineComparison | None:
    """The shards' comparisons with one baseline as the whole suite's: each case as its
    shard compared it, and a baseline case `removed` only when no shard ran it (each shard
    sees every other shard's cases as removed)."""
    comparisons = [r.baseline for r in reports if r.baseline is not None]
    if not comparisons:
        return None
    ran = {c.id for r in reports for c in r.cases}
    seen: dict[str, CaseComparison] = {}
    for comparison in comparisons:
        for case in comparison.cases:
            if case.status == "removed" and case.id in ran:
                continue
            seen.setdefault(case.id, case)
    cases = sorted(seen.values(), key=lambda c: c.id)
    # Counted again over the merged cases, as an unsharded comparison counts them.
    first = comparisons[0]
    # A case's token or cost overrun is its shard's to say; a shard's sum is not the suite's.
    overruns = [o for c in comparisons for o in c.overruns if o.case is not None]
    notes = list(dict.fromkeys(n for c in comparisons for n in c.budget_notes))
    if any(o.case is None for c in comparisons for o in c.overruns):
        notes.append("a shard's tokens or cost grew over a suite-wide gate: not re-measured here")
    return BaselineComparison.of(first.baseline, first.level, cases, first.notes, overruns, notes)


def _read(paths: Sequence[Path]) -> tuple[list[Shard], list[str]]:
    """Every report that reads, and why each other one does not."""
    shards: list[Shard] = []
    problems = []
    for path in paths:
        try:
            report, raw = read_report(path)
        except VerifyError as exc:
            problems.append(str(exc))
            continue
        shards.append((path, report, raw))
    return shards, problems


def _shard_problems(
    path: Path, report: SuiteReport, raw: dict[str, Any], kind: SuiteKind, regressions: bool
) -> list[str]:
    """How one shard's report is not a shard's, disagrees with itself, or was not judged
    as the suite is (`kind`, and failing on confirmed regressions when `regressions`)."""
    receipt = report.receipt
    if receipt is None or receipt.shard is None:
        return [f"{path}: not a shard's report (run the suite with --shard I/N)"]
    index, count = receipt.shard
    if not 1 <= index <= count <= MAX_SHARDS:
        return [f"{path}: $.receipt.shard: {index}/{count} is no shard of 1 to {MAX_SHARDS}"]
    if receipt.selection != f"--shard {index}/{count}":
        return [f"{path}: shard {index}/{count} also picked cases ({receipt.selection})"]
    # A report that does not agree with itself (a flipped verdict, edited totals) would
    # carry its edit into the merged gate, which no longer shows it; one judged by a laxer
    # bar than the suite's would carry that bar.
    said = bar_problems(report, kind, regressions) + policy_problems(report)
    said += consistency_problems(report, raw)
    problems = [f"{path}: {problem}" for problem in said]
    return problems + [
        f"{path}: case {case.id!r} is not of shard {index}/{count} (edited, or another run's)"
        for case in report.cases
        if shard_of(case.id, count) != index
    ]


def _agreement_problems(shards: list[Shard]) -> list[str]:
    problems = []
    for what, value in _SAME:
        seen: dict[object, list[str]] = {}
        for path, report, _ in shards:
            seen.setdefault(value(report), []).append(str(path))
        if len(seen) > 1:
            groups = "; ".join(", ".join(names) for names in seen.values())
            problems.append(f"the shards differ in {what}: {groups}")
    return problems


def _coverage_problems(shards: list[Shard]) -> list[str]:
    problems = []
    count = shards[0][1].receipt.shard[1]  # type: ignore[union-attr, index]
    given: dict[int, list[str]] = {}
    for path, report, _ in shards:
        given.setdefault(report.receipt.shard[0], []).append(str(path))  # type: ignore[union-attr, index]
    for index, names in sorted(given.items()):
        if len(names) > 1:
            problems.append(f"shard {index}/{count} given more than once: {', '.join(names)}")
    if len(given) < count:
        missing = [str(i) for i in range(1, count + 1) if i not in given]
        named = ", ".join(missing[:_NAMED])
        more = f" and {len(missing) - _NAMED} more" if len(missing) > _NAMED else ""
        problems.append(f"shard(s) {named}{more} of {count} missing")
    # A case twice in one report, or in two (a shard given twice is said above instead).
    seen: dict[str, Path] = {}
    for path, report, _ in shards:
        here: set[str] = set()
        for case in report.cases:
            if case.id in here:
                problems.append(f"{path}: case {case.id!r} is in it twice")
            elif seen.setdefault(case.id, path) != path:
                problems.append(f"case {case.id!r} is in {seen[case.id]} and in {path}")
            here.add(case.id)
    return problems


def _completeness_problems(first: SuiteReport, cases: list[CaseReport]) -> list[str]:
    """The merged cases are every fixture of the suite the shards were run on: their
    paths and fixture hashes give the suite's digest. Told after coverage, this finds a
    case dropped from a shard's report (every receipt still names the whole suite)."""
    assert first.receipt is not None
    expected = first.receipt.suite_sha256
    unhashed = [c.id for c in cases if c.fixture_sha256 is None]
    if unhashed:
        return [f"case {unhashed[0]!r} carries no fixture hash: its fixture is not vouched for"]
    merged = suite_hash((c.fixture, c.fixture_sha256 or "") for c in cases)
    if merged != expected:
        return [
            f"the shards' {len(cases)} case(s) are not the suite they were run on (its "
            "digest in every receipt): a case is missing from a shard's report, or was "
            "edited into one"
        ]
    return []


def _any_dirty(shards: list[Shard]) -> bool | None:
    flags = [r.receipt.git_dirty for _, r, _ in shards if r.receipt is not None]
    return None if any(f is None for f in flags) else any(flags)
