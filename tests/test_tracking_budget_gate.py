"""The token and cost gates against a baseline: a case (or the suite) whose tokens or, live
with a price, cost grew over its share fails the gate of any suite kind, with the figures,
in the summary line, the JSON report and the Markdown summary; settings from flags and the
configuration, refused where they cannot apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _openai_server import OpenAIServer
from conftest import (
    ECHO_CASE,
    LIVE_KEY,
    LIVE_KEY_ENV,
    Cli,
    echo_fixture,
    greeting_fixture,
    make_project,
    project,
    suite_report,
)

from harness.errors import ExitCode
from harness.expectations.base import Grade
from harness.reporters.markdown import render_markdown
from harness.run_record import RunRecord
from harness.tracking.baseline import baseline_of, compare, summary
from harness.tracking.budget_gate import gated
from harness.verdict.comparison import BudgetGates, Overrun, Price
from harness.verdict.reports import CaseReport, SuiteReport

SUITE = "evals/capability"
BASELINE = "evals/baselines/capability.json"


def spent(case_id: str, input_tokens: int, output_tokens: int, passed: bool = True) -> CaseReport:
    record = RunRecord(final_response="ok", input_tokens=input_tokens, output_tokens=output_tokens)
    grade = Grade("c", passed, "found" if passed else "missing", "response")
    return CaseReport.graded(case_id, f"{SUITE}/{case_id}.json", [grade], record)


def against(before: SuiteReport, now: SuiteReport, gates: BudgetGates) -> SuiteReport:
    baseline = baseline_of(before)
    comparison = gated(compare(baseline, now, shown=BASELINE), baseline, now, gates)
    return msgspec.structs.replace(now, baseline=comparison)


def run_of(*cases: CaseReport) -> SuiteReport:
    return suite_report("capability", *cases)


# --- tokens ---------------------------------------------------------------------------------


def test_a_case_over_its_token_share_fails_the_gate_with_the_figures() -> None:
    before = run_of(spent("grew", 80, 20), spent("steady", 80, 20))
    now = run_of(spent("grew", 110, 20), spent("steady", 90, 20))
    report = against(before, now, BudgetGates(max_token_growth=0.2))
    assert report.baseline is not None
    assert report.baseline.overruns == [
        Overrun(figure="tokens", case="grew", before=100, now=130, limit=0.2)
    ]
    # A capability suite is not gated on its checks: the token gate fails it all the same.
    assert report.exit_code() == ExitCode.FAILED
    line = summary(report.baseline)
    assert line.endswith(
        "; over the token/cost gates (case 'grew': tokens 100 -> 130 (+30.0%), over the "
        "20.0% allowed): the gate fails"
    )


def test_growth_up_to_the_share_passes() -> None:
    before = run_of(spent("a", 80, 20))
    for now, limit in ((120, 0.2), (100, 0.0), (50, 0.0)):
        report = against(
            before, run_of(spent("a", now - 20, 20)), BudgetGates(max_token_growth=limit)
        )
        assert report.baseline is not None and report.baseline.overruns == [], (now, limit)
        assert report.exit_code() == ExitCode.PASSED


def test_the_suite_gate_sums_the_cases_compared() -> None:
    # Each case grows 15%, under the case gate of 20%; together they grow 15%, over 10%.
    before = run_of(spent("a", 100, 0), spent("b", 100, 0), spent("gone", 1000, 0))
    now = run_of(spent("a", 115, 0), spent("b", 115, 0), spent("new", 5000, 0))
    gates = BudgetGates(max_token_growth=0.2, max_suite_token_growth=0.1)
    report = against(before, now, gates)
    assert report.baseline is not None
    # New and removed cases count in neither sum: their tokens measure no change.
    assert report.baseline.overruns == [
        Overrun(figure="tokens", case=None, before=200, now=230, limit=0.1)
    ]
    assert report.baseline.overruns[0].describe() == (
        "the suite: tokens 200 -> 230 (+15.0%), over the 10.0% allowed"
    )


def test_a_case_with_no_baseline_tokens_is_said_not_measured() -> None:
    report = against(run_of(spent("a", 0, 0)), run_of(spent("a", 50, 0)), BudgetGates(0.1))
    assert report.baseline is not None and report.baseline.overruns == []
    assert report.baseline.budget_notes == [
        "1 case(s) spent no tokens in the baseline: no share of 0 to measure their growth by"
    ]


def test_no_gate_leaves_the_comparison_as_it_was() -> None:
    before, now = run_of(spent("a", 10, 0)), run_of(spent("a", 1000, 0))
    report = against(before, now, BudgetGates())
    assert report.baseline == compare(baseline_of(before), now, shown=BASELINE)
    assert report.exit_code() == ExitCode.PASSED


# --- cost -----------------------------------------------------------------------------------

PRICE = Price(input=1.0, output=10.0)  # per million tokens


def test_cost_weighs_output_over_input() -> None:
    # Tokens stay at 1000, but the output share triples: the cost grows by 90%.
    before = run_of(spent("a", 900, 100))
    now = run_of(spent("a", 700, 300))
    gates = BudgetGates(max_token_growth=0.0, max_cost_growth=0.5, price=PRICE)
    report = against(before, now, gates)
    assert report.baseline is not None
    (overrun,) = report.baseline.overruns
    assert (overrun.figure, overrun.case, overrun.limit) == ("cost", "a", 0.5)
    assert overrun.before == pytest.approx(0.0019) and overrun.now == pytest.approx(0.0037)
    assert overrun.describe() == "case 'a': cost 0.0019 -> 0.0037 (+94.7%), over the 50.0% allowed"
    assert report.exit_code() == ExitCode.FAILED


def test_a_suite_cost_gate_and_a_baseline_without_the_split() -> None:
    before = run_of(spent("a", 900, 100), spent("b", 900, 100))
    now = run_of(spent("a", 900, 150), spent("b", 900, 100))
    gates = BudgetGates(max_suite_cost_growth=0.1, price=PRICE)
    report = against(before, now, gates)
    assert report.baseline is not None
    assert [(o.case, o.figure) for o in report.baseline.overruns] == [(None, "cost")]
    # A baseline from before the split was kept: said, not guessed.
    baseline = baseline_of(before)
    old = msgspec.structs.replace(
        baseline,
        cases=[msgspec.structs.replace(c, input_tokens=None) for c in baseline.cases],
    )
    comparison = gated(compare(old, now, shown=BASELINE), old, now, gates)
    assert comparison.overruns == []
    assert comparison.budget_notes == [
        "2 case(s) have no input/output split in the baseline, so no cost: write the baseline "
        "again (--write-baseline) to gate their cost"
    ]


def test_the_markdown_summary_shows_the_overruns() -> None:
    before = run_of(spent("grew", 80, 20))
    report = against(before, run_of(spent("grew", 200, 20)), BudgetGates(max_token_growth=0.2))
    text = render_markdown(report)
    assert (
        "* over its gate, failing it: case &#x27;grew&#x27;: tokens 100 -&gt; 220 (+120.0%), "
        "over the 20.0% allowed\n" in text
    )
    assert "Regressions are not gated (no `--fail-on-regression`)." in text


# --- through the command line ---------------------------------------------------------------


def _project(tmp_path: Path, config: str = "") -> Path:
    root = project(
        tmp_path,
        {"a_echo.json": echo_fixture("echo-case"), "b_hi.json": greeting_fixture("hi-case")},
        suite=SUITE,
    )
    if config:
        pyproject = root / "pyproject.toml"
        pyproject.write_text(pyproject.read_text("utf-8") + f"{config}\n", "utf-8")
    return root


def _cheaper_baseline(run_cli: Cli, root: Path, factor: float) -> None:
    """Write the baseline, then make every case's tokens in it `factor` of what they were:
    the run to come then spends 1/factor of it, as an agent grown wordier would."""
    written = run_cli("eval", "run", "--write-baseline", BASELINE, cwd=root)
    assert written.returncode == 0, written.stderr
    path = root / BASELINE
    document = json.loads(path.read_text("utf-8"))
    for case in document["cases"]:
        for key in ("tokens", "input_tokens", "output_tokens"):
            case[key] = round(case[key] * factor)
    path.write_text(json.dumps(document), "utf-8")


def test_a_run_over_the_token_gate_fails_naming_the_figures(run_cli: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path)
    _cheaper_baseline(run_cli, root, 0.5)
    within = run_cli("eval", "run", "--baseline", BASELINE, "--max-token-growth", "150%", cwd=root)
    assert within.returncode == 0, within.stderr
    over = run_cli(
        "eval", "run", "--baseline", BASELINE, "--max-token-growth", "0.5",
        "--json-report", "r.json", cwd=root,
    )  # fmt: skip
    assert over.returncode == 1, over.stderr
    assert "case 'echo-case': tokens 32 -> 64 (+100.0%), over the 50.0% allowed" in over.stderr
    assert "the gate fails" in over.stderr
    report = json.loads((root / "r.json").read_text("utf-8"))
    assert report["exit_code"] == 1
    assert {o["case"] for o in report["baseline"]["overruns"]} == {"echo-case", "hi-case"}
    # The report as written is consistent with itself: `verify` recomputes the same gate.
    verified = run_cli("eval", "verify", "r.json", "--suite", SUITE, cwd=root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "its gate: exit 1" in verified.stdout


def test_the_gate_comes_from_the_configuration(run_cli: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path, "max_suite_token_growth = 0.5")
    _cheaper_baseline(run_cli, root, 0.5)
    over = run_cli("eval", "run", "--baseline", BASELINE, cwd=root)
    assert over.returncode == 1, over.stderr
    assert "the suite: tokens" in over.stderr
    # Without --baseline the configured gate has nothing to compare with, and is left alone.
    assert run_cli("eval", "run", cwd=root).returncode == 0


def test_misused_gate_settings_are_refused(run_cli: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path)
    alone = run_cli("eval", "run", "--max-token-growth", "0.1", cwd=root)
    assert alone.returncode == 2
    assert "--max-token-growth applies to a comparison: give --baseline FILE" in alone.stderr
    _cheaper_baseline(run_cli, root, 1.0)
    replay = run_cli("eval", "run", "--baseline", BASELINE, "--max-cost-growth", "0.1", cwd=root)
    assert replay.returncode == 2
    assert "--max-cost-growth applies to live mode only" in replay.stderr
    bad = run_cli("eval", "run", "--baseline", BASELINE, "--max-token-growth", "-1", cwd=root)
    assert bad.returncode == 2 and "must be a finite share of 0 or more" in bad.stderr
    root2 = _project(tmp_path / "two", "max_token_growth = -0.5")
    refused = run_cli("eval", "run", cwd=root2)
    assert refused.returncode != 0 and "max_token_growth" in refused.stderr


# --- live: cost at the configured price -----------------------------------------------------


def _live_run(run_cli: Cli, root: Path, *extra: str) -> Any:
    return run_cli(
        "eval", "run", "--suite", "evals/live", "--mode", "live", *extra,
        cwd=root, env={LIVE_KEY_ENV: LIVE_KEY},
    )  # fmt: skip


def test_a_live_run_over_the_cost_gate_fails(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    prices = '[tool.zeroclaw.eval.prices]\n"loopback-tiny" = { input = 1.0, output = 100.0 }'
    root = make_project(
        tmp_path / "p", tiny_server.base_url, {"echo.json": ECHO_CASE}, extra=prices
    )
    written = _live_run(run_cli, root, "--write-baseline", "b.json")
    assert written.returncode == 0, written.stderr
    document = json.loads((root / "b.json").read_text("utf-8"))
    (case,) = document["cases"]
    assert case["input_tokens"] + case["output_tokens"] == case["tokens"] > 0
    # The same tokens, but the baseline's output was half of it: at 100x the input price
    # the cost grows though the tokens do not.
    case["input_tokens"] += case["output_tokens"] // 2
    case["output_tokens"] -= case["output_tokens"] // 2
    (root / "b.json").write_text(json.dumps(document), "utf-8")
    ok = _live_run(run_cli, root, "--baseline", "b.json", "--max-token-growth", "0")
    assert ok.returncode == 0, ok.stderr
    over = _live_run(run_cli, root, "--baseline", "b.json", "--max-cost-growth", "10%")
    assert over.returncode == 1, over.stderr
    assert "case 'live-echo': cost" in over.stderr and "over the 10.0% allowed" in over.stderr


def test_a_live_cost_gate_without_a_price_is_refused(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    root = make_project(tmp_path / "p", tiny_server.base_url, {"echo.json": ECHO_CASE})
    assert _live_run(run_cli, root, "--write-baseline", "b.json").returncode == 0
    refused = _live_run(run_cli, root, "--baseline", "b.json", "--max-cost-growth", "0.1")
    assert refused.returncode != 0
    assert "a cost gate needs the price of live_model 'loopback-tiny'" in refused.stderr


def test_merged_shards_keep_each_case_overrun(run_cli: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path)
    _cheaper_baseline(run_cli, root, 0.5)
    gate = ("--baseline", BASELINE, "--max-token-growth", "0.5", "--max-suite-token-growth", "0.5")
    for index in (1, 2):
        run_cli(
            "eval", "run", *gate, "--shard", f"{index}/2", "--json-report", f"s{index}.json",
            cwd=root,
        )  # fmt: skip
    merged = run_cli("eval", "merge", "s1.json", "s2.json", "--json-report", "m.json", cwd=root)
    assert merged.returncode == 1, merged.stderr  # the overruns still fail the merged gate
    comparison = json.loads((root / "m.json").read_text("utf-8"))["baseline"]
    assert sorted(o["case"] for o in comparison["overruns"]) == ["echo-case", "hi-case"]
    assert comparison["budget_notes"] == [
        "a shard's tokens or cost grew over a suite-wide gate: not re-measured here"
    ]
