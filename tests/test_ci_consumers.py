"""The JUnit files of a two-agent regression run, read by the consumers CI feeds them to.

The regression session runs the suite once per built-in agent and writes one JUnit file
each; GitHub's JUnit actions, GitLab and report mergers read both. Each consumer must see
the two agents' three results each as six (none folded into another), count them right,
and show what failed from the `message` attribute, which is all an annotation carries:

* junitparser, reading and merging the files;
* the Jenkins xunit schema (tests/schemas/junit-10.xsd, with the `file` and `line` testcase
  attributes added), and Surefire's testcase structure;
* EnricoMi/publish-unit-test-result-action, a Python action built on junitparser: its own
  parsing (`publish.junit.process_junit_xml_elems`) and test statistics
  (`publish.unittestresults.get_test_results`, which identifies a test by file when
  deduplicating by file name, then classname and name), run offline;
* GitLab, which keys a test case by classname and name.

A live run's repeated cases reach the same consumers: a flaky case that passed must count
as passed (its failing runs are `<flakyFailure>`s), one that failed as one failure (its
other failing runs `<rerunFailure>`s), and a case the run never started as skipped.
"""

from __future__ import annotations

import importlib
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import junitparser
import pytest
from conftest import AGENTS, Cli, project, says, under_scripted_fixture
from test_reporters_github import live_suite, not_run_report, repeated_report
from test_reporters_junit import assert_valid, junit_schema

from harness.reporters.junit import render_junit

REPORTS = {"openai-agents": "reports/regression", "pydantic-ai": "reports/regression-pydantic-ai"}


@pytest.fixture
def two_agent_run(run_cli: Cli, tmp_path: Path) -> dict[str, Path]:
    """The JUnit file each built-in agent's run wrote, over one suite of a passing case, a
    failing case and a run error, through the command line, as the regression session
    runs it."""
    root = project(
        tmp_path,
        {
            "a_passes.json": says("passes", "hello there", ["hello"]),
            "b_fails.json": says("fails", "I said bye", ["hello", "goodbye"]),
            "c_errors.json": under_scripted_fixture("errors"),
        },
    )
    files = {}
    for agent in AGENTS:
        junit = root / REPORTS[agent] / "junit.xml"
        result = run_cli("eval", "run", "--agent", agent, "--junit-xml", junit, cwd=root)
        assert result.returncode == 1, result.stderr
        files[agent] = junit
    return files


def test_both_agents_ran_through_the_command_line(two_agent_run: dict[str, Path]) -> None:
    assert set(two_agent_run) == {"openai-agents", "pydantic-ai"} == set(AGENTS)
    assert all(path.is_file() for path in two_agent_run.values())


# --- junitparser ----------------------------------------------------------------------------


def test_junitparser_reads_six_distinct_results_with_their_counts(
    two_agent_run: dict[str, Path],
) -> None:
    merged = junitparser.JUnitXml()
    for agent, path in two_agent_run.items():
        xml = junitparser.JUnitXml.fromfile(str(path))
        [suite] = list(xml)
        assert suite.name == f"zeroclaw-eval:evals/regression[{agent}]"
        assert (int(suite.tests), suite.failures, suite.errors, suite.skipped) == (3, 1, 1, 0)
        assert {case.classname for case in suite} == {f"evals/regression[{agent}]"}
        merged += xml
    merged.update_statistics()
    assert (int(merged.tests), merged.failures, merged.errors) == (6, 2, 2)
    identities = [(case.classname, case.name) for suite in merged for case in suite]
    assert len(identities) == len(set(identities)) == 6
    assert sorted(name for _classname, name in identities) == sorted(
        f"{case}[{agent}]" for agent in AGENTS for case in ("passes", "fails", "errors")
    )


def test_messages_say_what_was_observed(two_agent_run: dict[str, Path]) -> None:
    for agent, path in two_agent_run.items():
        xml = junitparser.JUnitXml.fromfile(str(path))
        cases = {c.name.removesuffix(f"[{agent}]"): c for s in xml for c in s}
        assert cases["passes"].is_passed
        [failure] = cases["fails"].result
        assert isinstance(failure, junitparser.Failure)
        assert failure.message == (
            'response_contains("hello"): not found in response: "I said bye" '
            "(+1 more failing check(s))"
        )
        assert 'response_contains("goodbye")' in (failure.text or "")  # the body: all of them
        [error] = cases["errors"].result
        assert isinstance(error, junitparser.Error)
        assert error.message and "turn 0" in error.message
        assert "\n" not in error.message
        assert (error.text or "").startswith(error.message.rstrip("…"))


# --- the Jenkins xunit schema ---------------------------------------------------------------


def test_both_files_validate_against_the_jenkins_schema(two_agent_run: dict[str, Path]) -> None:
    schema = junit_schema()
    for path in two_agent_run.values():
        errors = list(schema.iter_errors(str(path)))
        assert not errors, [f"{e.path}: {e.reason}" for e in errors]


# --- EnricoMi/publish-unit-test-result-action, offline -------------------------------------


def publish_action() -> tuple[Any, Any]:
    """The action's own parsing modules (`publish.junit`, `publish.unittestresults`), kept
    unchanged under tests/consumers/publish/ (see its README) and imported from there."""
    consumers = str(Path(__file__).parent / "consumers")
    if consumers not in sys.path:
        sys.path.insert(0, consumers)
    junit = importlib.import_module("publish.junit")
    results = importlib.import_module("publish.unittestresults")
    return junit, results


@pytest.mark.parametrize("dedup_classes_by_file_name", [False, True])
def test_the_publish_action_sees_six_tests(
    two_agent_run: dict[str, Path], dedup_classes_by_file_name: bool
) -> None:
    junit, results = publish_action()
    files = [str(path) for path in two_agent_run.values()]
    parsed = junit.process_junit_xml_elems(
        junit.parse_junit_xml_files(files, large_files=False, drop_testcases=False)
    )
    assert parsed.errors == []
    cases = parsed.cases
    assert len(cases) == 6
    stats = results.get_test_results(parsed.with_commit("0" * 40), dedup_classes_by_file_name)
    assert (stats.tests, stats.tests_failures, stats.tests_errors) == (6, 2, 2)
    assert (stats.suites, stats.cases) == (2, 6)
    assert {case.class_name for case in cases} == {
        "evals/regression[openai-agents]",
        "evals/regression[pydantic-ai]",
    }
    # Its annotations show the message: what was observed, at the fixture's line.
    for case in cases:
        assert case.test_file is not None and case.test_file.startswith("evals/regression/")
        if case.result == "failure":
            assert case.message is not None
            assert 'not found in response: "I said bye"' in case.message
            assert case.line is not None
        if case.result == "error":
            assert case.message is not None and "turn 0" in case.message


# --- mikepenz/action-junit-report, the check run ci.yml publishes -------------------------
#
# Its annotation title, which is also the test's row in the check's detailed summary
# (`detailed_summary: true`, `include_passed: true`), as the version ci.yml pins builds it
# (v5.6.2, commit 3585e9575db828022551b4231f165eb59a0e74e3, src/testParser.ts:
# `resolveFileAndLine` and `createTestCaseAnnotation`; src/table.ts: `buildSummaryTables`),
# with ci.yml's settings (no `check_title_template`, `resolve_ignore_classname` false):
#
#   fileName = testcase.file || failure.file || suite.file || classname.split('.').slice(-1)[0]
#   title = fileName !== testcase.name ? `${fileName}.${testcase.name}` : testcase.name
#   title += ` (failure ${i + 1}/${n})` when the testcase holds n > 1 <failure> elements
#
# (`resolveFileAndLine` changes the file name only for a Rust stack trace, which no case
# has.) Neither the classname nor the suite name is in it: one file per agent, both
# files' titles and summary rows are all the action shows to tell the agents apart.


def action_junit_report_titles(case: ET.Element, suite: ET.Element) -> list[str]:
    """The annotation titles the action makes of one `<testcase>`: one per `<failure>`,
    one for a test case without."""
    name = case.get("name") or ""
    failures = case.findall("failure")
    titles = []
    for index, failure in enumerate(failures or [None]):
        own = failure.get("file") if failure is not None else None
        file = case.get("file") or own or suite.get("file")
        file_name = file or (case.get("classname") or name).split(".")[-1]
        title = f"{file_name}.{name}" if file_name != name else name
        if len(failures) > 1:
            title += f" (failure {index + 1}/{len(failures)})"
        titles.append(title)
    return titles


def test_the_junit_actions_titles_and_summary_rows_name_the_agent(
    two_agent_run: dict[str, Path],
) -> None:
    titles: dict[str, list[str]] = {}
    for agent, path in two_agent_run.items():
        for suite in ET.parse(path).iter("testsuite"):
            for case in suite.iter("testcase"):
                titles.setdefault(agent, []).extend(action_junit_report_titles(case, suite))
    every = [title for shown in titles.values() for title in shown]
    assert len(every) == len(set(every)) == 6  # the two agents' failures never read as one
    for agent, shown in titles.items():
        assert all(title.endswith(f"[{agent}]") for title in shown), shown
    assert "evals/regression/b_fails.json.fails[pydantic-ai]" in titles["pydantic-ai"]


# --- GitLab ---------------------------------------------------------------------------------


def test_gitlab_keys_keep_every_result(two_agent_run: dict[str, Path]) -> None:
    # GitLab's JUnit parser keys a test case by classname and name; a repeated key replaces
    # the earlier result, which is how half of a two-agent run went missing.
    keys = []
    for path in two_agent_run.values():
        for case in ET.parse(path).iter("testcase"):
            keys.append(f"{case.get('classname')}_{case.get('name')}")
    assert len(keys) == len(set(keys)) == 6


# --- a live run with repeated cases ---------------------------------------------------------

FLAKY = "PPFPPPPFPPPPPPPPPPFP"  # 17 of 20 passed; runs 3, 8 and 19 failed
OURS = "[openai-agents]"  # the agent ending each test name of the live run below


@pytest.fixture
def repeated_run(tmp_path: Path) -> Path:
    """The JUnit file of a live run: a flaky case that passed (`min_pass_rate`), one that
    failed (every run must pass), a steady clustered case, and one the run never started."""
    report = live_suite(
        repeated_report("flaky-pass", FLAKY, min_pass_rate=0.8),
        repeated_report("flaky-fail", FLAKY),
        repeated_report("steady", "PPPPP", cluster="greetings"),
        not_run_report("later"),
    )
    path = tmp_path / "reports" / "live" / "junit.xml"
    path.parent.mkdir(parents=True)
    path.write_bytes(render_junit(report))
    return path


def test_a_repeated_run_validates(repeated_run: Path) -> None:
    assert_valid(repeated_run.read_bytes())  # the Jenkins schema, and Surefire's structure


def test_junitparser_counts_a_flaky_pass_as_passed(repeated_run: Path) -> None:
    xml = junitparser.JUnitXml.fromfile(str(repeated_run))
    [suite] = list(xml)
    assert (int(suite.tests), suite.failures, suite.errors, suite.skipped) == (4, 1, 0, 1)
    cases = {case.name.removesuffix(OURS): case for case in suite}
    assert cases["flaky-pass"].is_passed and cases["steady"].is_passed
    assert cases["flaky-fail"].is_failure and cases["later"].is_skipped
    [failure] = cases["flaky-fail"].result
    assert failure.message.startswith("17/20 runs passed (needs every run); run 3: ")
    assert "zeroclaw.runs=17/20" in (cases["flaky-pass"].system_out or "")
    suite.update_statistics()  # recounting from the testcases agrees with the attributes
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (4, 1, 0, 1)


@pytest.mark.parametrize("dedup_classes_by_file_name", [False, True])
def test_the_publish_action_counts_a_flaky_pass_as_passed(
    repeated_run: Path, dedup_classes_by_file_name: bool
) -> None:
    junit, results = publish_action()
    parsed = junit.process_junit_xml_elems(
        junit.parse_junit_xml_files([str(repeated_run)], large_files=False, drop_testcases=False)
    )
    assert parsed.errors == []
    assert (parsed.suite_tests, parsed.suite_failures, parsed.suite_skipped) == (4, 1, 1)
    outcome = {case.test_name.removesuffix(OURS): case.result for case in parsed.cases}
    assert outcome == {
        "flaky-pass": "success",
        "flaky-fail": "failure",
        "steady": "success",
        "later": "skipped",
    }
    stats = results.get_test_results(parsed.with_commit("0" * 40), dedup_classes_by_file_name)
    assert (stats.tests, stats.tests_failures, stats.tests_errors, stats.tests_skipped) == (
        4,
        1,
        0,
        1,
    )
    cases = {case.test_name.removesuffix(OURS): case for case in parsed.cases}
    # Its annotation of the failure says how the runs came out, at the fixture's line.
    assert cases["flaky-fail"].message.startswith("17/20 runs passed (needs every run)")
    assert cases["flaky-fail"].line == 7
    assert "zeroclaw.flaky=true" in (cases["flaky-pass"].stdout or "")
    assert cases["later"].message == "not run: the run stopped after 1 failing case(s) (--maxfail)"


def test_gitlab_keys_one_result_per_repeated_case(repeated_run: Path) -> None:
    cases = list(ET.parse(repeated_run).iter("testcase"))
    keys = [f"{case.get('classname')}_{case.get('name')}" for case in cases]
    assert len(keys) == len(set(keys)) == 4  # the runs of a case are one test case
