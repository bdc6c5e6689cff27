"""`zeroclaw eval verify REPORT`: is this JSON report for exactly these fixtures, under
this policy, and does it agree with itself?

The receipts make a green CI artifact say which bar it passed: each case's fixture hash is
recomputed from the suite on disk (a fixture added, removed or changed is named), the
policy recorded is compared with the one the harness applies to that suite kind, what a
case's fixture decides is taken from the fixture (its id and cluster, how many runs it
gets, the pass rate its runs must reach: never the report's), and every field the report
derives is derived again (`harness.tracking.consistency`: a flipped `passed`, a repeat block no run
made, edited totals, statistics or exit code are caught). Without a signing key this
proves consistency, not authorship.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from harness.errors import HarnessError
from harness.fixtures.schema import LlmTrace, fixture_hash, parse_fixture
from harness.fixtures.suite import display_path, fixture_paths, read_fixture
from harness.io.files import InputError, read_bounded
from harness.io.problems import AdmissionError
from harness.modes import SuiteKind, kind_of_directory
from harness.run.repeats import runs_for
from harness.tracking.consistency import consistency_problems, runs_said
from harness.verdict.policy import policy_for
from harness.verdict.receipts import policy_of
from harness.verdict.reports import SCHEMA, SuiteReport, document_type

MAX_REPORT_BYTES = 512 << 20


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
    if "\0" in document.suite:  # it names a directory, and no path holds a NUL
        raise VerifyError(f"{path}: $.suite: holds a NUL character: no suite is named so")
    report = SuiteReport(
        suite=document.suite,
        kind=document.kind,
        mode=document.mode,
        agent=document.agent,
        cases=document.cases,
        duration_ms=document.duration_ms,
        receipt=document.receipt,
        baseline=document.baseline,
        unused_snapshots=document.unused_snapshots,
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
    traces, problems = _fixture_problems(report, suite, root)
    problems += [
        *_case_problems(report, traces),
        *bar_problems(report, expected, fail_on_regression),
        *policy_problems(report),
        *consistency_problems(report, raw),
    ]
    policy = policy_for(report.kind)
    summary = (
        f"{report_path} is for exactly the {len(report.cases)} fixture(s) of {suite} under "
        f"the {report.kind} policy ({policy.summary}); its gate: exit {raw.get('exit_code')}"
    )
    return Verdict(problems, summary)


def _fixture_problems(
    report: SuiteReport, suite: Path, root: Path
) -> tuple[dict[str, LlmTrace], list[str]]:
    """The suite's fixtures as on disk (each as reports name it), and how the report's
    cases are not them: a fixture with no case or more than one, a case of no fixture, a
    fixture changed since."""
    on_disk: dict[str, str] = {}
    traces: dict[str, LlmTrace] = {}
    problems = []
    # A suite that cannot be listed is refused by `fixture_paths` (an AdmissionError naming
    # the directory), as every command refuses it.
    for path in fixture_paths(suite):
        shown = display_path(path, root)
        try:
            text = read_fixture(path)
            on_disk[shown] = fixture_hash(text)
            traces[shown] = parse_fixture(text, shown)
        except (ValueError, RecursionError, AdmissionError):
            problems.append(f"{shown}: cannot be read as a fixture")
    reported = {c.fixture: c for c in report.cases}
    counted = Counter(c.fixture for c in report.cases)
    for shown in sorted(on_disk.keys() - reported.keys()):
        problems.append(f"{shown}: a fixture of the suite the report has no case for")
    for shown in sorted(reported.keys() - on_disk.keys()):
        problems.append(f"{shown}: the report has a case ({reported[shown].id}) for no fixture")
    for shown in sorted(on_disk.keys() & reported.keys()):
        if counted[shown] > 1:
            problems.append(f"{shown}: the report has {counted[shown]} cases for it")
        recorded = reported[shown].fixture_sha256
        if recorded != on_disk[shown]:
            problems.append(
                f"{shown}: the fixture changed since the report (hash {_short(recorded)} in "
                f"the report, {_short(on_disk[shown])} on disk)"
            )
    return traces, problems


def _case_problems(report: SuiteReport, traces: dict[str, LlmTrace]) -> list[str]:
    """What each case's fixture decides, as the fixture decides it: the case's id and
    cluster, how many runs it gets (its `repeat`, or the run's `--repeat` the receipt
    records) and the pass rate its runs must reach."""
    override = report.receipt.repeat if report.receipt is not None else None
    problems = []
    for index, case in enumerate(report.cases):
        trace = traces.get(case.fixture)
        if trace is None:
            continue  # said above: a case of no fixture
        at = f"$.cases[{index}]"
        if case.id != trace.case_id:
            problems.append(f"{at}.id: {case.id!r}, but its fixture's case is {trace.case_id!r}")
        if case.cluster != trace.cluster:
            problems.append(
                f"{at}.cluster: {case.cluster!r}, but its fixture's is {trace.cluster!r}"
            )
        if case.not_run is not None:
            continue
        runs = runs_for(trace.repeat, report.mode, override)
        asks = "the run's --repeat" if report.mode == "live" and override else "the fixture"
        stats = case.repeat
        if stats is None:
            if runs > 1:
                problems.append(f"{at}.repeat: missing, but {asks} asks for {runs} runs")
            continue
        if stats.requested != runs:
            problems.append(
                f"{at}.repeat.requested: {runs_said(stats.requested)}, but {asks} asks for {runs}"
            )
        if stats.min_pass_rate != trace.min_pass_rate:
            problems.append(
                f"{at}.repeat.min_pass_rate: {stats.min_pass_rate}, but the fixture's is "
                f"{'none' if trace.min_pass_rate is None else trace.min_pass_rate}"
                + (" (every run must pass)" if trace.min_pass_rate is None else "")
            )
    return problems


def _short(digest: str | None) -> str:
    return "none" if digest is None else digest[:12]


def bar_problems(report: SuiteReport, kind: SuiteKind, fail_on_regression: bool) -> list[str]:
    """How the report's gate is not the one the suite is held to: its kind (the suite's,
    never the report's own) and, when asked, failing on confirmed regressions."""
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


def policy_problems(report: SuiteReport) -> list[str]:
    """How the policy the receipt records is not the one this harness applies to the
    report's kind."""
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
