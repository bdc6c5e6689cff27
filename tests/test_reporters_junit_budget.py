"""`harness.reporters.junit` and the token and cost gates: a case over its gate is a failing
testcase whose message has the figures (a case failing anyway adds them to its failure), and
the suite's own overrun a failing testcase of its own and a `<testsuite>` property; the
document stays valid under the Jenkins xunit schema and Surefire's order, and junitparser's
counts agree with the document's."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
from conftest import Cli
from test_reporters_junit import assert_valid
from test_tracking_budget_gate import (
    BASELINE,
    SUITE,
    BudgetGates,
    _cheaper_baseline,
    _project,
    against,
    run_of,
    spent,
)

from harness.reporters.junit import render_junit

AGENT = "openai-agents"


def parsed(data: bytes, tmp_path: Path) -> junitparser.TestSuite:
    path = tmp_path / "junit.xml"
    path.write_bytes(data)
    return next(iter(junitparser.JUnitXml.fromfile(str(path))))


def test_an_overrun_is_a_failure_with_its_figures(tmp_path: Path) -> None:
    before = run_of(spent("grew", 80, 20), spent("steady", 80, 20), spent("bad", 80, 20))
    now = run_of(spent("grew", 200, 20), spent("steady", 80, 20), spent("bad", 200, 20, False))
    gates = BudgetGates(max_token_growth=0.2, max_suite_token_growth=0.1)
    data = render_junit(against(before, now, gates))
    assert_valid(data)
    suite = parsed(data, tmp_path)
    results = {case.name: case.result for case in suite}
    grew = results[f"grew[{AGENT}]"]
    assert len(grew) == 1 and isinstance(grew[0], junitparser.Failure)
    assert grew[0].type == "budget"
    assert grew[0].message == (
        "over its gate, failing it: case 'grew': tokens 100 -> 220 (+120.0%), "
        "over the 20.0% allowed"
    )
    assert results[f"steady[{AGENT}]"] == []
    bad = results[f"bad[{AGENT}]"][0]  # its own failure first, then the figures
    assert bad.message.startswith("c: missing; and over its gate, failing it: case 'bad'")
    assert "tokens 100 -> 220" in (bad.text or "")
    budget = results[f"suite-budget[{AGENT}]"][0]
    assert budget.message == (
        "over its gate, failing it: the suite: tokens 300 -> 540 (+80.0%), over the 10.0% allowed"
    )
    # The counts as written agree with the testcases (junitparser recounts them).
    root = ET.fromstring(data).find("testsuite")
    assert root is not None
    assert (root.get("tests"), root.get("failures")) == ("4", "3")
    suite.update_statistics()
    assert (suite.tests, suite.failures, suite.errors) == (4, 3, 0)
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["zeroclaw.overrun.tokens"].startswith("the suite: tokens 300 -> 540")


def test_no_overrun_leaves_the_document_as_it_was(tmp_path: Path) -> None:
    before = run_of(spent("steady", 80, 20))
    report = against(before, run_of(spent("steady", 80, 20)), BudgetGates(max_token_growth=0.2))
    data = render_junit(report)
    assert b"budget" not in data and b"<properties>" not in data
    assert parsed(data, tmp_path).tests == 1


def test_a_run_over_the_gate_writes_it_into_its_junit(run_cli: Cli, tmp_path: Path) -> None:
    root = _project(tmp_path)
    _cheaper_baseline(run_cli, root, 0.5)
    over = run_cli(
        "eval", "run", "--baseline", BASELINE, "--max-suite-token-growth", "0.5",
        "--junit-xml", "j.xml", "--html", "r.html", cwd=root,
    )  # fmt: skip
    assert over.returncode == 1, over.stderr
    data = (root / "j.xml").read_bytes()
    assert_valid(data)
    suite = parsed(data, tmp_path)
    failed = {c.name: c.result[0].message for c in suite if c.result}
    assert list(failed) == [f"suite-budget[{AGENT}]"]
    assert "the suite: tokens" in failed[f"suite-budget[{AGENT}]"]
    assert "over the 50.0% allowed" in failed[f"suite-budget[{AGENT}]"]
    page = (root / "r.html").read_text("utf-8")
    assert 'id="overruns">Over its gate, failing it: the suite: tokens' in page
    assert SUITE in page
