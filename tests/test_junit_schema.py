"""JUnit XML that real consumers accept: validated against the published Jenkins xunit
schema (shipped in tests/schemas), parsed with junitparser, and consistent with the JSON
report written in the same run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import junitparser
import pytest
import xmlschema
from _support import (
    call,
    echo_fixture,
    fixture,
    run_cli,
    text_step,
    tool_step,
    turn,
    write_suite,
)

SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / "junit-10.xsd"
ESC, NUL = "\x1b", "\x00"


def _add_attribute(schema: str, anchor: str, addition: str) -> str:
    assert schema.count(anchor) == 1, f"the shipped schema changed: {anchor!r}"
    return schema.replace(anchor, anchor + addition)


def junit_schema() -> xmlschema.XMLSchema:
    """The shipped schema, loaded unchanged from disk and extended here, in the test.

    The published junit-10.xsd lacks three attributes the `junit-xml` library writes:
      * testcase `file` and `line`: where the case is defined; GitHub's JUnit actions
        (e.g. mikepenz/action-junit-report) read them to annotate the fixture line;
      * testsuite and testsuites `disabled`: junit-xml's count of disabled cases (always 0).
    Only those attributes are added (optional, `line` a positive integer, `disabled` a
    non-negative integer); everything else is validated as published.
    """
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    text = _add_attribute(
        text,
        '<xs:attribute name="classname" type="xs:string"/>',  # testcase only
        '\n            <xs:attribute name="file" type="xs:string"/>'
        '\n            <xs:attribute name="line" type="xs:positiveInteger"/>',
    )
    text = _add_attribute(
        text,
        '<xs:attribute name="hostname" type="xs:string" />',  # testsuite only
        '\n            <xs:attribute name="disabled" type="xs:nonNegativeInteger"/>',
    )
    text = _add_attribute(
        text,
        '<xs:attribute name="name" type="xs:string" />',  # testsuites only (name optional)
        '\n            <xs:attribute name="disabled" type="xs:nonNegativeInteger"/>',
    )
    return xmlschema.XMLSchema(text)


# --- the schema itself ------------------------------------------------------------------


def test_shipped_schema_is_the_published_one_with_its_licence() -> None:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    assert "jenkinsci/xunit-plugin" in text
    assert "junit-10.xsd" in text
    assert "The MIT License (MIT)" in text
    assert "Copyright (c) 2014, Gregory Boissinot" in text
    # Unchanged on disk: the attributes junit-xml adds are not in it.
    published = xmlschema.XMLSchema(str(SCHEMA_FILE))
    testcase = published.elements["testcase"]
    assert "name" in testcase.attributes
    assert "file" not in testcase.attributes
    assert "line" not in testcase.attributes
    assert "disabled" not in published.elements["testsuite"].attributes
    assert "disabled" not in published.elements["testsuites"].attributes
    extended = junit_schema()
    assert {"file", "line"} <= set(extended.elements["testcase"].attributes)
    assert "disabled" in extended.elements["testsuite"].attributes
    assert "disabled" in extended.elements["testsuites"].attributes


GOOD = """<?xml version="1.0" encoding="utf-8"?>
<testsuites disabled="0" errors="0" failures="1" tests="1" time="0.5">
  <testsuite disabled="0" errors="0" failures="1" name="s" skipped="0" tests="1" time="0.5">
    <testcase name="c" classname="s" time="0.5" file="evals/regression/c.json" line="3">
      <failure type="failure" message="m">details</failure>
    </testcase>
  </testsuite>
</testsuites>
"""


@pytest.mark.parametrize(
    ("broken", "why"),
    [
        (GOOD.replace('<testcase name="c" ', "<testcase "), "testcase without name"),
        (GOOD.replace("<failure", "<failed").replace("</failure>", "</failed>"), "unknown element"),
        (
            GOOD.replace('tests="1" time="0.5">\n    <testcase', 'time="0.5">\n    <testcase'),
            "no tests",
        ),
        (GOOD.replace('line="3"', 'line="three"'), "line not an integer"),
        (GOOD.replace('time="0.5">\n  <testsuite', 'time="half">\n  <testsuite'), "time pattern"),
        (GOOD.replace('name="c" classname', 'name="c" colour="red" classname'), "unknown attr"),
    ],
)
def test_schema_rejects_what_breaks_it(broken: str, why: str) -> None:
    schema = junit_schema()
    assert schema.is_valid(GOOD)
    assert broken != GOOD, why
    assert not schema.is_valid(broken), why


# --- real runs ----------------------------------------------------------------------------


def project(tmp_path: Path, fixtures: dict[str, Any]) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.zeroclaw.eval]\nsuite_dir = "evals/regression"\n',
        encoding="utf-8",
    )
    write_suite(root / "evals" / "regression", fixtures)
    return root


def wrong_answer(model_name: str, *needles: str) -> dict[str, Any]:
    """Failing checks: each of `needles` is absent from the response, and `exact_tool_calls`
    fails too. Grades come in the grader's family order, so a failing needle comes first."""
    return fixture(
        model_name,
        [turn("Echo hi", tool_step(call("c1", message="hi")), text_step("I said bye"))],
        {"exact_tool_calls": 2, "response_contains": ["bye", *needles]},
    )


def under_scripted(model_name: str) -> dict[str, Any]:
    """A run error: the turn asks for a model response after the last scripted step."""
    return fixture(
        model_name,
        [turn("Echo hi", tool_step(call("c1", message="hi")))],
        {"response_contains": ["hi"]},
    )


def line_containing(path: Path, needle: str) -> int:
    hits = [n for n, line in enumerate(path.read_text("utf-8").splitlines(), 1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def run_with_reports(root: Path) -> tuple[Path, dict[str, Any]]:
    result = run_cli(
        "eval", "run", "--junit-xml", "reports/junit.xml", "--json-report", "reports/report.json",
        cwd=root,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads((root / "reports" / "report.json").read_text("utf-8"))
    return root / "reports" / "junit.xml", report


def test_junit_of_a_real_run_validates_and_agrees_with_the_json_report(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "a_pass.json": echo_fixture("passes"),
            "b_fail.json": wrong_answer("fails", "hi there"),
            "c_error.json": under_scripted("errors"),
            "x.json": wrong_answer("x-case"),
        },
    )
    junit, report = run_with_reports(root)

    errors = list(junit_schema().iter_errors(str(junit)))
    assert not errors, [f"{e.path}: {e.reason}" for e in errors]

    xml = junitparser.JUnitXml.fromfile(str(junit))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    cases = {case.name: case for case in suite}
    assert list(cases) == [c["id"] for c in report["cases"]]  # one testcase per case, in order
    assert list(cases) == ["passes", "fails", "errors", "x-case"]

    totals = report["totals"]
    skipped_in_json = totals["cases"] - totals["passed"] - totals["failed"] - totals["errors"]
    for counted in (suite, xml):
        counted_tests = int(counted.tests)
        assert (counted_tests, counted.failures, counted.errors) == (
            totals["cases"],
            totals["failed"],
            totals["errors"],
        )
    assert int(suite.skipped) == skipped_in_json == 0
    assert sum(case.is_skipped for case in suite) == 0
    assert sum(isinstance(r, junitparser.Failure) for c in suite for r in c.result) == 2
    assert sum(isinstance(r, junitparser.Error) for c in suite for r in c.result) == 1

    assert cases["passes"].is_passed
    [failure] = cases["fails"].result
    assert isinstance(failure, junitparser.Failure)
    json_fails = next(c for c in report["cases"] if c["id"] == "fails")
    first = next(g for g in json_fails["grades"] if not g["passed"])
    assert failure.message == first["check"] == 'response_contains("hi there")'
    assert 'response_contains("hi there")' in (failure.text or "")
    assert "exact_tool_calls(2)" in (failure.text or "")  # every failing check is listed
    assert 'response_contains("bye")' not in (failure.text or "")  # passing ones are not
    [error] = cases["errors"].result
    assert isinstance(error, junitparser.Error)
    json_error = next(c for c in report["cases"] if c["id"] == "errors")["error"]
    assert "\n" in json_error
    assert error.message == json_error.splitlines()[0]
    assert error.text == json_error

    # `file` is the fixture relative to the project root, `line` the failing expectation's.
    by_name = {tc.get("name"): tc for tc in ET.parse(junit).iter("testcase")}
    suite_dir = root / "evals" / "regression"
    assert by_name["x-case"].get("file") == "evals/regression/x.json"
    assert by_name["passes"].get("file") == "evals/regression/a_pass.json"
    assert by_name["x-case"].get("line") == str(
        line_containing(suite_dir / "x.json", '"exact_tool_calls": 2')
    )
    assert by_name["fails"].get("line") == str(
        line_containing(suite_dir / "b_fail.json", '"hi there"')
    )
    for tc in by_name.values():
        json_case = next(c for c in report["cases"] if c["id"] == tc.get("name"))
        assert tc.get("file") == json_case["fixture"]
        assert tc.get("line") == (None if json_case["line"] is None else str(json_case["line"]))


def test_failure_line_points_at_the_failing_list_entry(tmp_path: Path) -> None:
    data = fixture(
        "needle",
        [turn("Say something", text_step("first needle only"))],
        {"response_contains": ["first", "second needle"]},
    )
    root = project(tmp_path, {"a.json": echo_fixture("ok"), "x.json": data})
    junit, _report = run_with_reports(root)
    [tc] = [tc for tc in ET.parse(junit).iter("testcase") if tc.get("name") == "needle"]
    assert tc.get("file") == "evals/regression/x.json"
    fixture_file = root / "evals" / "regression" / "x.json"
    assert tc.get("line") == str(line_containing(fixture_file, '"second needle"'))


def test_run_error_line_points_at_the_turn(tmp_path: Path) -> None:
    two_turns = fixture(
        "second-turn-errors",
        [
            turn("Say hi", text_step("hi")),
            turn("Echo hi", tool_step(call("c1", message="hi"))),
        ],
        {"response_contains": ["hi"]},
    )
    root = project(tmp_path, {"a.json": two_turns})
    junit, report = run_with_reports(root)
    [tc] = list(ET.parse(junit).iter("testcase"))
    assert tc.find("error") is not None
    text = (root / "evals" / "regression" / "a.json").read_text("utf-8").splitlines()
    line = int(tc.get("line") or 0)
    # `$.turns[1]`: the line opening the second turn, just above its user_input.
    assert text[line - 1].strip() == "{"
    assert '"user_input": "Echo hi"' in text[line]
    assert report["cases"][0]["line"] == line


def test_escape_and_nul_in_a_transcript_still_validate(tmp_path: Path) -> None:
    nasty = f"colour {ESC}[31mred{ESC}[0m and a nul {NUL} and <tag> & ]]>"
    failing = fixture(
        f"esc{ESC}nul{NUL}id",
        [turn(f"Say {nasty}", text_step(nasty))],
        {"response_contains": ["absent"], "response_not_contains": ["nul"]},
    )
    erroring = fixture(
        "erroring",
        [turn(f"Echo {nasty}", tool_step(call("c1", message=nasty)))],
        {"response_contains": ["x"]},
    )
    root = project(tmp_path, {"a.json": failing, "b.json": erroring})
    junit, report = run_with_reports(root)
    raw = junit.read_bytes()
    assert ESC.encode() not in raw
    assert NUL.encode() not in raw
    errors = list(junit_schema().iter_errors(str(junit)))
    assert not errors, [f"{e.path}: {e.reason}" for e in errors]
    xml = junitparser.JUnitXml.fromfile(str(junit))
    names = [case.name for suite in xml for case in suite]
    assert names == ["esc\ufffdnul\ufffdid", "erroring"]
    assert report["totals"] == {"cases": 2, "passed": 0, "failed": 1, "errors": 1}
    suite = next(iter(xml))
    assert (int(suite.tests), suite.failures, suite.errors) == (2, 1, 1)
