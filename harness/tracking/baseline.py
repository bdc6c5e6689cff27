"""Baselines: a transcript-free record of a run's per-case verdicts, and a later run
compared with it case by case.

`--write-baseline FILE` writes one (`write_baseline`), `--baseline FILE` compares the run
with it (`compare`), `--fail-on-regression` lets a confirmed regression fail the gate of
any suite kind. A baseline holds, per case, its verdict, pass counts, the categories of
the checks it failed, its tokens, the hash of its fixture and the tools it could use:
never fixture text, check texts or model output. A case whose fixture, provider or tool
surface changed since the baseline is unverifiable (the baseline must be refreshed), not
a regression: the old verdict says nothing about a different case.

With repeated runs a verdict that went from passed to failed is a regression confirmed
only when the drop in pass proportion is significant: a one-sided Fisher exact test at
`level` (default 0.05). An unconfirmed drop is reported as such and never fails a gate.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from harness.defaults import DEFAULT_REGRESSION_LEVEL, MAX_REPEAT
from harness.errors import HarnessError
from harness.io.atomic import ReportWriteError
from harness.verdict.comparison import BaselineComparison, BudgetGates, CaseComparison

if TYPE_CHECKING:
    from harness.verdict.reports import CaseReport, SuiteReport

SCHEMA = "zeroclaw-eval/baseline/v1"
DEFAULT_LEVEL = DEFAULT_REGRESSION_LEVEL
# A baseline is small (a few hundred bytes a case); a larger file is not one.
MAX_BASELINE_BYTES = 16 << 20

Verdict = Literal["passed", "failed", "error"]


class BaselineError(HarnessError):
    """A baseline file that cannot be read or is not a valid baseline (exit 1)."""


class BaselineRefused(ReportWriteError):
    """A baseline that cannot be written from this run. A report write failure: the run's
    other reports are still written, and the run exits 1."""


# A case runs at most MAX_REPEAT times and its tokens fit in 64 bits: a count past either
# is a damaged file, not a run to compare with (its token delta was said in its hundreds
# of digits).
Runs = Annotated[int, msgspec.Meta(ge=0, le=MAX_REPEAT)]
Tokens = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class _Strict(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Every baseline struct refuses unknown keys: a misspelt field is never ignored."""


class BaselineCase(_Strict, kw_only=True, frozen=True):
    id: str
    fixture: str  # from the repository root, as reports name it
    fixture_sha256: str | None  # None: the report carried no hash
    verdict: Verdict
    passes: Runs  # runs that passed, of `runs`
    runs: Runs  # runs that completed without a run error (1 for a single run)
    failed_categories: list[str] = []
    tokens: Tokens = 0  # input + output; a repeated case's mean, rounded
    # The split of `tokens`, for the cost gate; None: a baseline written before it was kept.
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    # The sorted names of the tools the case could use (the agent's, narrowed by the
    # fixture's `tools` and, live, by `live_allowed_tools`); None: not known.
    tool_surface: list[str] | None = None
    # Each rubric's judge setup and gate (`CaseReport.judge_keys`); left out (UNSET) when
    # the case has no judge grade, and in a baseline written before judges were keyed.
    judge: dict[str, str] | msgspec.UnsetType = msgspec.UNSET


class BaselineReceipt(_Strict, kw_only=True, frozen=True):
    """What made the run, as far as comparability goes (no git state, no Python version:
    they change with every refresh and decide nothing)."""

    harness_version: str
    agent: str
    framework: str | None
    framework_version: str | None
    provider: str  # "scripted" in replay; "<host>/<model>" in live


class Baseline(_Strict, kw_only=True, frozen=True):
    schema: str = SCHEMA
    suite: str
    kind: str
    mode: str
    agent: str
    receipt: BaselineReceipt | None = None  # None: the run had no receipt
    cases: list[BaselineCase]


class Against(msgspec.Struct, frozen=True):
    """What a run is compared with: the baseline, as named, and how; `gates` are the token
    and cost gates (`harness.tracking.budget_gate`), None: none."""

    baseline: Baseline
    shown: str
    level: float = DEFAULT_LEVEL
    fail_on_regression: bool = False
    gates: BudgetGates | None = None


# --- writing ------------------------------------------------------------------------------


def verdict_of(case: CaseReport) -> Verdict:
    if case.error is not None or case.not_run is not None:
        return "error"
    return "passed" if case.passed else "failed"


def case_tokens(case: CaseReport) -> int:
    """A case's tokens, input and output: a repeated case's mean, rounded."""
    if case.repeat is not None:
        return round(case.repeat.tokens_mean)
    return case.tokens


def case_split(case: CaseReport) -> tuple[float, float]:
    """A case's input and output tokens: its record's; a repeated case's mean tokens split
    as its record's (the last run's) are."""
    record = case.record
    if record is None:
        return 0.0, 0.0
    if case.repeat is None:
        return float(record.input_tokens), float(record.output_tokens)
    total = record.input_tokens + record.output_tokens
    mean = case.repeat.tokens_mean
    share = record.input_tokens / total if total else 1.0
    return mean * share, mean * (1.0 - share)


def _counts(case: CaseReport) -> tuple[int, int]:
    if case.repeat is not None:
        return case.repeat.passes, case.repeat.completed
    if case.error is not None or case.not_run is not None:
        return 0, 0
    return int(case.passed), 1


def case_entry(case: CaseReport) -> BaselineCase:
    passes, runs = _counts(case)
    split = case_split(case)
    return BaselineCase(
        id=case.id,
        fixture=case.fixture,
        fixture_sha256=case.fixture_sha256,
        verdict=verdict_of(case),
        passes=passes,
        runs=runs,
        failed_categories=case.failed_categories,
        tokens=case_tokens(case),
        input_tokens=round(split[0]),
        output_tokens=round(split[1]),
        tool_surface=case.tool_surface,
        judge=_judge_keys(case),
    )


def baseline_of(report: SuiteReport, shown: str = "baseline") -> Baseline:
    """The baseline of `report`, refused (`BaselineRefused`, naming the file as `shown`
    and the cases) when a case left no run record: a case that errored before its agent
    started, or was never run, has no verdict to compare later runs with."""
    missing = [c.id for c in report.cases if c.record is None]
    if missing:
        raise BaselineRefused(
            f"{shown}: cannot write baseline: no run record for case(s) "
            f"{', '.join(repr(i) for i in missing)} (a run error before the agent started, "
            "or not run); make them run, then write the baseline again"
        )
    receipt = report.receipt
    return Baseline(
        suite=report.suite,
        kind=report.kind,
        mode=report.mode,
        agent=report.agent,
        receipt=None
        if receipt is None
        else BaselineReceipt(
            harness_version=receipt.harness_version,
            agent=receipt.agent,
            framework=receipt.framework,
            framework_version=receipt.framework_version,
            provider=receipt.provider,
        ),
        cases=[case_entry(c) for c in report.cases],
    )


def render_baseline(report: SuiteReport, shown: str = "baseline") -> bytes:
    """The baseline document of `report`, as written (see `baseline_of` for refusals)."""
    baseline = baseline_of(report, shown)
    try:
        encoded = msgspec.json.encode(baseline)
    except UnicodeEncodeError:  # a lone surrogate in a case id or path
        from harness.io.text import without_surrogates

        encoded = msgspec.json.encode(without_surrogates(msgspec.to_builtins(baseline)))
    return msgspec.json.format(encoded, indent=2) + b"\n"


def write_baseline(report: SuiteReport, path: Path) -> None:
    """Write the baseline of `report` to `path` atomically (a reader sees the old file or
    the whole new one)."""
    from harness.io.atomic import write_atomic

    write_atomic(path, render_baseline(report, str(path)))


# --- reading ------------------------------------------------------------------------------


def load_baseline(path: Path | str) -> Baseline:
    """The baseline at `path`, read bounded and decoded strictly; `BaselineError` naming
    the file and the field when it cannot be read, is not JSON, has another schema, or
    has an empty or duplicate case id."""
    from harness.io.files import InputError, decode_json, read_bounded

    shown = str(path)
    try:
        data = read_bounded(path, MAX_BASELINE_BYTES)
    except InputError as exc:
        hint = " (write one with --write-baseline FILE)" if exc.missing else ""
        raise BaselineError(f"{shown}: cannot read baseline: {exc.reason}{hint}") from None
    try:
        raw = decode_json(data)
    except msgspec.DecodeError as exc:
        raise BaselineError(f"{shown}: not a baseline: not JSON ({exc})") from None
    found = raw.get("schema") if isinstance(raw, dict) else None
    if found != SCHEMA:
        raise BaselineError(
            f"{shown}: $.schema: not a {SCHEMA} baseline (found {found!r}); "
            "write it again with --write-baseline"
        )
    try:
        baseline = msgspec.convert(raw, Baseline)
    except msgspec.ValidationError as exc:
        raise BaselineError(f"{shown}: not a valid baseline: {exc}") from None
    problems = _problems(baseline)
    if problems:
        raise BaselineError("\n".join(f"{shown}: {p}" for p in problems))
    return baseline


def _problems(baseline: Baseline) -> list[str]:
    problems: list[str] = []
    seen: dict[str, int] = {}
    for index, case in enumerate(baseline.cases):
        at = f"$.cases[{index}]"
        if not case.id.strip():
            problems.append(f"{at}.id: empty case id")
            continue
        key = unicodedata.normalize("NFC", case.id)
        if key in seen:
            problems.append(
                f"{at}.id: duplicate case id {case.id!r}, also at $.cases[{seen[key]}].id"
            )
        seen.setdefault(key, index)
        if not 0 <= case.passes <= case.runs:
            problems.append(
                f"{at}.passes: {case.passes} of {case.runs} runs: need 0 <= passes <= runs"
            )
    return problems


# --- comparing ----------------------------------------------------------------------------


def compare(
    baseline: Baseline, report: SuiteReport, level: float = DEFAULT_LEVEL, shown: str = ""
) -> BaselineComparison:
    """Each case of `report` against its baseline entry (matched by id), and each baseline
    case this run lacks; `shown` names the baseline file."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"the regression level must be in (0, 1), got {level}")
    before = {unicodedata.normalize("NFC", c.id): c for c in baseline.cases}
    provider = _provider_change(baseline, report)
    results: list[CaseComparison] = []
    for case in report.cases:
        old = before.pop(unicodedata.normalize("NFC", case.id), None)
        if old is None:
            results.append(CaseComparison(id=case.id, status="new", why="not in the baseline"))
        else:
            results.append(_compare_case(old, case, level, provider))
    for old in before.values():
        was = {"passed": "passed", "failed": "failed", "error": "a run error"}[old.verdict]
        why = f"in the baseline ({was}), not in this run"
        results.append(CaseComparison(id=old.id, status="removed", why=why))
    return BaselineComparison.of(shown, level, results, _notes(baseline, report))


def _provider_change(baseline: Baseline, report: SuiteReport) -> str | None:
    before = baseline.receipt.provider if baseline.receipt is not None else None
    now = report.receipt.provider if report.receipt is not None else None
    if before is None or now is None or before == now:
        return None
    return f"the provider changed ({before} in the baseline, {now} now)"


def _notes(baseline: Baseline, report: SuiteReport) -> list[str]:
    """What differs for the whole run but leaves its cases comparable: the same fixtures,
    provider and tools under another agent is what a baseline is for."""
    notes = []
    for what, before, now in (
        ("suite", baseline.suite, report.suite),
        ("suite kind", baseline.kind, report.kind),
        ("mode", baseline.mode, report.mode),
        ("agent", baseline.agent, report.agent),
    ):
        if before != now:
            notes.append(f"the baseline's {what} is {before!r}, this run's {now!r}")
    return notes


def _unverifiable(old: BaselineCase, case: CaseReport, provider: str | None) -> str | None:
    reasons = []
    if old.fixture_sha256 and case.fixture_sha256 and old.fixture_sha256 != case.fixture_sha256:
        reasons.append(
            f"the fixture changed (sha256 {old.fixture_sha256[:12]} in the baseline, "
            f"{case.fixture_sha256[:12]} now)"
        )
    if provider is not None:
        reasons.append(provider)
    if old.tool_surface is not None and case.tool_surface is not None:
        added = sorted(set(case.tool_surface) - set(old.tool_surface))
        gone = sorted(set(old.tool_surface) - set(case.tool_surface))
        if added or gone:
            change = [f"+{name}" for name in added] + [f"-{name}" for name in gone]
            reasons.append(f"the tool surface changed ({', '.join(change)})")
    judge = judge_change(None if old.judge is msgspec.UNSET else old.judge, case.judge_keys)
    if judge is not None:
        reasons.append(judge)
    if not reasons:
        return None
    return "; ".join(reasons) + ": refresh the baseline (--write-baseline)"


def judge_change(before: dict[str, str] | None, now: dict[str, str] | None) -> str | None:
    """What changed of the case's judge since `before` (None: nothing, or not known): a
    rubric's judge setup (rubric, model, template…) or its gate (its calibration)."""
    if before is None or now is None or before == now:
        return None
    changed = []
    for rubric in sorted(set(before) | set(now)):
        was, is_ = before.get(rubric), now.get(rubric)
        if was == is_:
            continue
        if was is None or is_ is None:
            changed.append(f"{rubric} {'added' if was is None else 'removed'}")
        elif was.split("/")[0] != is_.split("/")[0]:
            changed.append(f"{rubric}: setup {was[:12]} then, {is_[:12]} now")
        else:
            changed.append(f"{rubric}: {was.split('/')[-1]} then, {is_.split('/')[-1]} now")
    return f"the judge changed ({'; '.join(changed)}), not the agent"


def _judge_keys(case: CaseReport) -> dict[str, str] | msgspec.UnsetType:
    keys = case.judge_keys
    return msgspec.UNSET if keys is None else keys


def _compare_case(
    old: BaselineCase, case: CaseReport, level: float, provider: str | None
) -> CaseComparison:
    if case.error is not None or case.not_run is not None:
        what = "not run" if case.not_run is not None else "a run error"
        why = f"{what} now (baseline: {old.verdict})"
        return CaseComparison(id=case.id, status="error", why=why)
    changed = _unverifiable(old, case, provider)
    if changed is not None:
        return CaseComparison(id=case.id, status="unverifiable", why=changed)
    delta = case_tokens(case) - old.tokens
    if old.verdict == "passed" and not case.passed:
        return _regression(old, case, level, delta)
    passes, runs = _counts(case)
    if (old.runs > 1 or runs > 1) and passes * old.runs < old.passes * runs:
        # Repeated runs: a drop in the share of passing runs is tested even when both
        # verdicts are "failed" (under pass^n a flaky case already fails: 19/20 → 0/20
        # is still a collapse).
        return _regression(old, case, level, delta)
    if old.verdict != "passed" and case.passed:
        why = (
            f"{'failed' if old.verdict == 'failed' else 'a run error'} in the baseline, passes now"
        )
        return CaseComparison(id=case.id, status="improvement", token_delta=delta, why=why)
    now = "passes" if case.passed else "fails"
    why = (
        f"{now}, as in the baseline" if old.verdict != "error" else f"{now} (baseline: a run error)"
    )
    return CaseComparison(id=case.id, status="unchanged", token_delta=delta, why=why)


def _regression(old: BaselineCase, case: CaseReport, level: float, delta: int) -> CaseComparison:
    categories = case.failed_categories
    passes, runs = _counts(case)
    if old.runs <= 1 and runs <= 1:
        # One run each: the verdicts are all there is, and a replay is deterministic.
        why = f"passed in the baseline, fails now ({', '.join(categories) or 'no grades'})"
        return CaseComparison(
            id=case.id,
            status="regression",
            confirmed=True,
            categories=categories,
            token_delta=delta,
            why=why,
        )
    from harness.verdict.statistics import fisher_one_sided

    p = fisher_one_sided(old.passes, old.runs, passes, runs)
    confirmed = p < level
    verdict = f"p = {p:.4g} < {level:g}: confirmed" if confirmed else f"p = {p:.4g} >= {level:g}"
    why = (
        f"pass proportion {old.passes}/{old.runs} in the baseline, {passes}/{runs} now "
        f"(one-sided Fisher exact test, {verdict})"
    )
    if not confirmed:
        why += ": an unconfirmed drop"
    return CaseComparison(
        id=case.id,
        status="regression",
        confirmed=confirmed,
        p_value=p,
        categories=categories,
        token_delta=delta,
        why=why,
    )


# --- saying it ----------------------------------------------------------------------------

_SHOWN_IDS = 5  # a summary line names this many cases of a kind, then counts the rest


def _listed(items: list[str]) -> str:
    more = len(items) - _SHOWN_IDS
    return ", ".join(items[:_SHOWN_IDS]) + (f", and {more} more" if more > 0 else "")


def summary(comparison: BaselineComparison, fail_on_regression: bool = False) -> str:
    """One line: e.g. `against evals/baselines/capability.json: 1 confirmed regression
    (hard-case: response), 1 improvement, 9 unchanged`."""
    by_status: dict[str, list[CaseComparison]] = {}
    for case in comparison.cases:
        by_status.setdefault(case.status, []).append(case)
    regressions = by_status.get("regression", [])
    confirmed = [c for c in regressions if c.confirmed]
    unconfirmed = [c for c in regressions if not c.confirmed]
    parts = []
    if confirmed:
        named = [f"{c.id}: {', '.join(c.categories) or 'no grades'}" for c in confirmed]
        plural = "" if len(confirmed) == 1 else "s"
        parts.append(f"{len(confirmed)} confirmed regression{plural} ({_listed(named)})")
    if unconfirmed:
        named = [f"{c.id}: p = {c.p_value:.3g}" for c in unconfirmed]
        plural = "" if len(unconfirmed) == 1 else "s"
        parts.append(f"{len(unconfirmed)} unconfirmed drop{plural} ({_listed(named)})")
    for status, word in (("error", "run error"), ("unverifiable", "unverifiable")):
        cases = by_status.get(status, [])
        if cases:
            plural = "s" if status == "error" and len(cases) > 1 else ""
            parts.append(f"{len(cases)} {word}{plural} ({_listed([c.id for c in cases])})")
    for status, word in (("new", "new"), ("removed", "removed"), ("improvement", "improvement")):
        count = len(by_status.get(status, []))
        if count:
            parts.append(f"{count} {word}{'s' if status == 'improvement' and count > 1 else ''}")
    unchanged = by_status.get("unchanged", [])
    if unchanged:
        tokens = sum(c.token_delta or 0 for c in unchanged)
        parts.append(f"{len(unchanged)} unchanged (tokens {tokens:+d})")
    line = f"against {comparison.baseline}: " + (", ".join(parts) or "no cases")
    if any(c.p_value is not None for c in regressions):
        line += (
            f"; over repeated runs a drop is confirmed at p < {comparison.level:g} "
            "(one-sided Fisher exact test)"
        )
    if by_status.get("unverifiable"):
        line += "; refresh the baseline for the unverifiable (--write-baseline)"
    if confirmed and fail_on_regression:
        line += "; --fail-on-regression: the gate fails"
    if comparison.overruns:
        grown = _listed([o.describe() for o in comparison.overruns])
        line += f"; over the token/cost gates ({grown}): the gate fails"
    return line
