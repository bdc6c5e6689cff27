"""`zeroclaw eval merge REPORT...`: the JSON reports of a suite's shards (`--shard I/N`)
combined into the one report of the whole suite, or refused.

Merging proves completeness from the receipts: every shard 1..N exactly once, all of one
suite (the digest of the whole admitted suite), one policy, one harness version, agent and
mode, and no case twice. Then the merged report is the suite's: its verdict, counts, case
reports and exit code are those of an unsharded run (timings aside).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from harness.baseline import BaselineComparison, CaseComparison
from harness.errors import HarnessError
from harness.receipts import SuiteReceipt
from harness.selection import shard_of
from harness.verdict import SuiteReport
from harness.verify import read_report

# What every shard must agree on, read from its receipt or report.
_SAME = (
    ("suite", lambda r: r.suite),
    ("suite kind", lambda r: r.kind),
    ("mode", lambda r: r.mode),
    ("agent", lambda r: r.agent),
    ("fixtures (the suite's digest)", lambda r: r.receipt.suite_sha256),
    ("policy", lambda r: msgspec.structs.astuple(r.receipt.policy)),
    ("harness version", lambda r: r.receipt.harness_version),
    ("framework version", lambda r: r.receipt.framework_version),
    ("provider", lambda r: r.receipt.provider),
    ("shard count", lambda r: r.receipt.shard[1]),
    ("baseline", lambda r: None if r.baseline is None else r.baseline.baseline),
)


class MergeError(HarnessError):
    """The reports cannot be merged into one suite's report (each reason on a line)."""

    def lines(self) -> list[str]:
        return [f"zeroclaw eval: merge: {line}" for line in str(self).splitlines()]


def merge(paths: Sequence[Path]) -> SuiteReport:
    """The whole suite's report from its shards' JSON reports, or `MergeError` naming
    every reason it cannot be."""
    if not paths:
        raise MergeError("name the shards' JSON reports")
    shards = [(path, read_report(path)[0]) for path in paths]
    problems = [p for path, report in shards for p in _shard_problems(path, report)]
    if not problems:
        problems = _agreement_problems(shards) + _coverage_problems(shards)
    if problems:
        raise MergeError("\n".join(problems))
    first = shards[0][1]
    assert first.receipt is not None  # _shard_problems checked every receipt
    cases = sorted((c for _, r in shards for c in r.cases), key=lambda c: c.fixture)
    receipt: SuiteReceipt = msgspec.structs.replace(
        first.receipt, selection=None, shard=None, git_dirty=_any_dirty(shards)
    )
    return SuiteReport(
        suite=first.suite,
        kind=first.kind,
        mode=first.mode,
        agent=first.agent,
        cases=cases,
        duration_ms=max(r.duration_ms for _, r in shards),  # the shards ran side by side
        receipt=receipt,
        baseline=_merged_baseline([r for _, r in shards]),
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
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.status] = counts.get(case.status, 0) + 1
    first = comparisons[0]
    return BaselineComparison(
        baseline=first.baseline,
        level=first.level,
        cases=cases,
        counts=counts,
        confirmed_regressions=[c.id for c in cases if c.confirmed is True],
        unconfirmed_drops=[c.id for c in cases if c.confirmed is False],
        notes=first.notes,
    )


def _shard_problems(path: Path, report: SuiteReport) -> list[str]:
    receipt = report.receipt
    if receipt is None or receipt.shard is None:
        return [f"{path}: not a shard's report (run the suite with --shard I/N)"]
    index, count = receipt.shard
    if receipt.selection != f"--shard {index}/{count}":
        return [f"{path}: shard {index}/{count} also picked cases ({receipt.selection})"]
    return [
        f"{path}: case {case.id!r} is not of shard {index}/{count} (edited, or another run's)"
        for case in report.cases
        if shard_of(case.id, count) != index
    ]


def _agreement_problems(shards: list[tuple[Path, SuiteReport]]) -> list[str]:
    problems = []
    for what, value in _SAME:
        seen: dict[object, list[str]] = {}
        for path, report in shards:
            seen.setdefault(value(report), []).append(str(path))
        if len(seen) > 1:
            groups = "; ".join(", ".join(names) for names in seen.values())
            problems.append(f"the shards differ in {what}: {groups}")
    return problems


def _coverage_problems(shards: list[tuple[Path, SuiteReport]]) -> list[str]:
    problems = []
    count = shards[0][1].receipt.shard[1]  # type: ignore[union-attr, index]
    given: dict[int, list[str]] = {}
    for path, report in shards:
        given.setdefault(report.receipt.shard[0], []).append(str(path))  # type: ignore[union-attr, index]
    for index, names in sorted(given.items()):
        if len(names) > 1:
            problems.append(f"shard {index}/{count} given more than once: {', '.join(names)}")
    missing = [str(i) for i in range(1, count + 1) if i not in given]
    if missing:
        problems.append(f"shard(s) {', '.join(missing)} of {count} missing")
    seen: dict[str, str] = {}
    for path, report in shards:
        for case in report.cases:
            if case.id in seen and seen[case.id] != str(path):
                problems.append(f"case {case.id!r} is in {seen[case.id]} and in {path}")
            seen.setdefault(case.id, str(path))
    return problems


def _any_dirty(shards: list[tuple[Path, SuiteReport]]) -> bool | None:
    flags = [r.receipt.git_dirty for _, r in shards if r.receipt is not None]
    return None if any(f is None for f in flags) else any(flags)
