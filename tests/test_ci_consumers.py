"""The JUnit files of a two-agent regression run, read by the consumers CI feeds them to.

The regression session runs the suite once per built-in agent and writes one JUnit file
each; GitHub's JUnit actions, GitLab and report mergers read both. Each consumer must see
the two agents' three results each as six (none folded into another), count them right,
and show what failed from the `message` attribute, which is all an annotation carries:

* junitparser, reading and merging the files;
* the Jenkins xunit schema (tests/schemas/junit-10.xsd, with the attributes junit-xml adds);
* EnricoMi/publish-unit-test-result-action, a Python action built on junitparser: its
  parsing (`publish.junit.process_junit_xml_elems`) and its test identity
  (`publish.unittestresults.get_test_results`: file when deduplicating by file name, else
  nothing, then classname and name), reproduced below step by step;
* GitLab, which keys a test case by classname and name.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import junitparser
import pytest
from conftest import AGENTS, Cli, project, says, under_scripted_fixture
from test_reporters_junit import junit_schema

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
        ["passes", "fails", "errors"] * 2
    )


def test_messages_say_what_was_observed(two_agent_run: dict[str, Path]) -> None:
    for path in two_agent_run.values():
        cases = {c.name: c for s in junitparser.JUnitXml.fromfile(str(path)) for c in s}
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


class UnitTestCase(NamedTuple):
    """What the action keeps of a test case (`publish.unittestresults.UnitTestCase`)."""

    result_file: str
    test_file: str | None
    line: int | None
    class_name: str | None
    test_name: str | None
    result: str
    message: str | None
    content: str | None


def _most_severe(results: list[Any]) -> list[Any]:
    # `publish.junit.get_results`: the results of the most severe state only.
    states: dict[str, list[Any]] = {}
    for result in results:
        if result is not None:
            states.setdefault(result._tag, []).append(result)
    for state in ("error", "failure", "success", "skipped", "disabled"):
        if state in states:
            return states[state]
    return []


def _cases(suite: junitparser.TestSuite) -> list[junitparser.TestCase]:
    # `get_cases`: test cases of nested suites first, then the suite's own.
    nested = list(suite.iterchildren(junitparser.TestSuite))
    own = list(suite.iterchildren(junitparser.TestCase))
    return [case for inner in nested for case in _cases(inner)] + own


def publish_action_cases(files: list[Path]) -> list[UnitTestCase]:
    """`process_junit_xml_elems` over `parse_junit_xml_files`: each file parsed with
    junitparser's etree, `JUnitXml.fromroot`, its suites, their cases."""
    parsed = []
    for path in files:
        tree = junitparser.junitparser.etree.parse(str(path))
        junit = junitparser.JUnitXml.fromroot(tree.getroot())
        suites = junit if junit._tag == "testsuites" else [junit]
        for suite in suites:
            for case in _cases(suite):
                if case.classname is None and case.name is None:
                    continue
                results = _most_severe(list(case.result))
                messages = [r.message for r in results if r is not None and r.message]
                contents = [r.text for r in results if r is not None and r.text is not None]
                line = case._elem.get("line")
                parsed.append(
                    UnitTestCase(
                        result_file=str(path),
                        test_file=case._elem.get("file"),
                        line=int(line) if line else None,
                        class_name=case.classname,
                        test_name=case.name,
                        result=results[0]._tag if results else "success",
                        message="\n".join(messages) if messages else None,
                        content="\n".join(contents) if contents else None,
                    )
                )
    return parsed


def publish_action_tests(
    cases: list[UnitTestCase], dedup_classes_by_file_name: bool
) -> dict[tuple[str | None, str | None, str | None], str]:
    """`get_test_results`: cases grouped into tests by identity, each test's state the most
    severe of its cases'."""
    grouped: dict[tuple[str | None, str | None, str | None], set[str]] = {}
    for case in cases:
        file = case.test_file if dedup_classes_by_file_name else None
        grouped.setdefault((file, case.class_name, case.test_name), set()).add(case.result)
    order = ("error", "failure", "success", "skipped")
    return {test: next(s for s in order if s in states) for test, states in grouped.items()}


@pytest.mark.parametrize("dedup_classes_by_file_name", [False, True])
def test_the_publish_action_sees_six_tests(
    two_agent_run: dict[str, Path], dedup_classes_by_file_name: bool
) -> None:
    cases = publish_action_cases(list(two_agent_run.values()))
    assert len(cases) == 6
    tests = publish_action_tests(cases, dedup_classes_by_file_name)
    assert len(tests) == 6, sorted(tests)
    assert Counter(tests.values()) == {"success": 2, "failure": 2, "error": 2}
    assert {class_name for _f, class_name, _n in tests} == {
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


# --- GitLab ---------------------------------------------------------------------------------


def test_gitlab_keys_keep_every_result(two_agent_run: dict[str, Path]) -> None:
    # GitLab's JUnit parser keys a test case by classname and name; a repeated key replaces
    # the earlier result, which is how half of a two-agent run went missing.
    keys = []
    for path in two_agent_run.values():
        for case in ET.parse(path).iter("testcase"):
            keys.append(f"{case.get('classname')}_{case.get('name')}")
    assert len(keys) == len(set(keys)) == 6
