"""`zeroclaw eval verify REPORT`: is this JSON report for exactly these fixtures, under
this policy, and does it agree with itself?

The receipts make a green CI artifact say which bar it passed: each case's fixture hash is
recomputed from the suite on disk (a fixture added, removed or changed is named), the
policy recorded is compared with the one the harness applies to that suite kind, and the
verdicts are re-derived from the grades (a flipped `passed`, edited totals or exit code
are caught). Without a signing key this proves consistency, not authorship.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from harness.errors import HarnessError
from harness.fixture import fixture_hash
from harness.inputs import InputError, read_bounded
from harness.modes import SuiteKind, kind_of_directory
from harness.policy import Attempt, policy_for
from harness.receipts import policy_of
from harness.runner import display_path
from harness.suite import fixture_paths
from harness.verdict import SCHEMA, CaseReport, SuiteReport

MAX_REPORT_BYTES = 512 << 20
MAX_FIXTURE_BYTES = 1 << 20


class VerifyError(HarnessError):
    """The report cannot be read as a report at all."""


@dataclass(frozen=True)
class Verdict:
    problems: list[str]
    summary: str

    @property
    def verified(self) -> bool:
        return not self.problems


def read_report(path: Path) -> tuple[SuiteReport, dict[str, Any]]:
    """The report at `path` as the verdict model, and its raw document (for the fields
    the model derives rather than stores: totals, exit code)."""
    from harness.reporters.json_report import document_type

    try:
        data = read_bounded(path, MAX_REPORT_BYTES)
    except InputError as exc:
        raise VerifyError(f"{path}: {exc.reason}") from None
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise VerifyError(f"{path}: not JSON: {exc}") from None
    except RecursionError:
        raise VerifyError(f"{path}: not JSON that can be read: nested too deeply") from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else None
        raise VerifyError(f"{path}: $.schema: not a {SCHEMA} report (found {found!r})")
    try:
        document = msgspec.convert(raw, document_type())
    except msgspec.ValidationError as exc:
        raise VerifyError(f"{path}: {exc}") from None
    report = SuiteReport(
        suite=document.suite,
        kind=document.kind,
        mode=document.mode,
        agent=document.agent,
        cases=document.cases,
        duration_ms=document.duration_ms,
        receipt=document.receipt,
        baseline=document.baseline,
        fail_on_regression=document.receipt is not None
        and document.receipt.policy.fail_on_regression,
    )
    return report, raw


def verify(
    report_path: Path,
    suite: Path,
    root: Path,
    kind: SuiteKind | None = None,
    fail_on_regression: bool = False,
) -> Verdict:
    """Every way the report at `report_path` is not exactly the run of the fixtures in
    `suite` (fixture paths relative to `root`) under the policy the suite gets: its kind
    (`kind`, else what the directory's name implies) and, when asked, a regression gate.
    The bar comes from the suite, never from the report, which could name a laxer one."""
    report, raw = read_report(report_path)
    expected = kind if kind is not None else kind_of_directory(suite)
    problems = [
        *_fixture_problems(report, suite, root),
        *_bar_problems(report, expected, fail_on_regression),
        *_policy_problems(report),
        *consistency_problems(report, raw),
    ]
    policy = policy_for(report.kind)
    summary = (
        f"{report_path} is for exactly the {len(report.cases)} fixture(s) of {suite} under "
        f"the {report.kind} policy ({policy.summary}); its gate: exit {raw.get('exit_code')}"
    )
    return Verdict(problems, summary)


def _fixture_problems(report: SuiteReport, suite: Path, root: Path) -> list[str]:
    on_disk: dict[str, str] = {}
    problems = []
    try:
        paths = fixture_paths(suite)
    except OSError as exc:
        return [f"{suite}: cannot list the suite: {exc.strerror or exc}"]
    for path in paths:
        shown = display_path(path, root)
        try:
            on_disk[shown] = fixture_hash(read_bounded(path, MAX_FIXTURE_BYTES).decode("utf-8"))
        except (InputError, ValueError, UnicodeDecodeError):
            problems.append(f"{shown}: cannot be read as a fixture")
    reported = {c.fixture: c for c in report.cases}
    for shown in sorted(on_disk.keys() - reported.keys()):
        problems.append(f"{shown}: a fixture of the suite the report has no case for")
    for shown in sorted(reported.keys() - on_disk.keys()):
        problems.append(f"{shown}: the report has a case ({reported[shown].id}) for no fixture")
    for shown in sorted(on_disk.keys() & reported.keys()):
        recorded = reported[shown].fixture_sha256
        if recorded != on_disk[shown]:
            problems.append(
                f"{shown}: the fixture changed since the report (hash {_short(recorded)} in "
                f"the report, {_short(on_disk[shown])} on disk)"
            )
    return problems


def _short(digest: str | None) -> str:
    return "none" if digest is None else digest[:12]


def _bar_problems(report: SuiteReport, kind: SuiteKind, fail_on_regression: bool) -> list[str]:
    problems = []
    if report.kind != kind:
        problems.append(
            f"$.kind: the report was judged as a {report.kind} suite, but this suite is "
            f"{kind} (--suite-kind to say otherwise)"
        )
    if fail_on_regression and not report.fail_on_regression:
        problems.append(
            "$.receipt.policy.fail_on_regression: the report's gate did not fail on "
            "regressions against a baseline"
        )
    return problems


def _policy_problems(report: SuiteReport) -> list[str]:
    if report.receipt is None:
        return ["$.receipt: missing: the report says nothing of how it was made"]
    recorded = report.receipt.policy
    applied = policy_of(report.kind, recorded.fail_on_regression)
    if recorded.kind != report.kind:
        return [f"$.receipt.policy.kind: {recorded.kind!r}, but the report is a {report.kind} run"]
    if msgspec.structs.asdict(recorded) != msgspec.structs.asdict(applied):
        return [
            f"$.receipt.policy: {recorded.summary!r} is not the {report.kind} policy this "
            f"harness applies ({applied.summary!r})"
        ]
    return []


def consistency_problems(report: SuiteReport, raw: dict[str, Any]) -> list[str]:
    """Where the report disagrees with itself: a verdict its grades do not give, totals
    that do not count its cases, an exit code its cases do not give."""
    problems = [
        f"$.cases[{i}] ({case.id}): says {'passed' if case.passed else 'not passed'}, but "
        f"its grades say {'passed' if should else 'not passed'}"
        for i, case in enumerate(report.cases)
        if (should := _should_pass(case)) is not None and should != case.passed
    ]
    totals = msgspec.to_builtins(report.totals)
    if raw.get("totals") != totals:
        problems.append(f"$.totals: {raw.get('totals')} does not count its cases ({totals})")
    if raw.get("exit_code") != int(report.exit_code()):
        problems.append(
            f"$.exit_code: {raw.get('exit_code')}, but its cases under its policy give "
            f"{int(report.exit_code())}"
        )
    return problems


def _should_pass(case: CaseReport) -> bool | None:
    """What the case's own evidence says its verdict is (None: nothing to re-derive)."""
    if case.error is not None or case.not_run is not None:
        return False
    if case.repeat is None:
        return Attempt(case.grades).passed
    runs = case.repeat.runs
    attempts = [Attempt([], r.error) if r.error else _attempt(r.passed) for r in runs]
    return policy_for("regression").case_passed(attempts, case.repeat.min_pass_rate)


def _attempt(passed: bool) -> Attempt:
    from harness.expectations.base import Grade

    return Attempt([Grade("run", passed, "", "response")])
