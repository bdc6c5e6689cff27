"""`harness.reporters.junit`: JUnit XML that real consumers accept: validated against the
published Jenkins xunit schema (shipped in tests/schemas), parsed with junitparser,
consistent with the JSON report written in the same run; the agent in the suite name and
classname; messages that say what was observed; control characters and markup made safe,
and no line a CI runner would read as a command. A repeated case's runs are Surefire's
`flakyFailure` / `rerunFailure` elements (the Jenkins schema has them; Surefire's element
order is checked by structure), a case not run is `<skipped>`, and the writer needs no
third-party package."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import junitparser
import junitparser.xunit2
import msgspec
import pytest
import xmlschema
from conftest import (
    ESC,
    NUL,
    Cli,
    call,
    echo_fixture,
    errored_report,
    failing_report,
    fixture,
    line_containing,
    passing_report,
    project,
    suite_report,
    text_step,
    tool_step,
    turn,
    under_scripted_fixture,
    write_suite,
)
from test_reporters_github import (
    ATTACKS,
    acted_on,
    live_suite,
    not_run_report,
    repeated_report,
    runner_commands,
)

from harness import run_suite
from harness.expectations.base import Grade
from harness.reporters.json_report import render_json
from harness.reporters.junit import render_junit
from harness.run_record import RunRecord
from harness.verdict.reports import CaseReport, ErrorFrame, SuiteReport

SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / "junit-10.xsd"
AGENT = "[openai-agents]"  # what ends every testcase name of these tests' runs


def case_id(name: str | None) -> str:
    """The case id in a testcase's name, `<case id>[<agent>]`, once its agent is checked."""
    assert name is not None and name.endswith(AGENT), name
    return name[: -len(AGENT)]


def _add_attribute(schema: str, anchor: str, addition: str) -> str:
    assert schema.count(anchor) == 1, f"the shipped schema changed: {anchor!r}"
    return schema.replace(anchor, anchor + addition)


def junit_schema() -> xmlschema.XMLSchema:
    """The shipped schema, loaded unchanged from disk and extended here, in the test.

    The published junit-10.xsd lacks the two testcase attributes the harness writes:
    `file` and `line`, where the case is defined; GitHub's JUnit actions (e.g.
    mikepenz/action-junit-report) read them to annotate the fixture line. Only those are
    added (optional, `line` a positive integer); everything else, the Surefire elements of
    repeated cases (`flakyFailure`, `rerunFailure`, …) included, is validated as published.
    Nothing else is added: the xunit plugin skips a whole file that does not validate.
    """
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    text = _add_attribute(
        text,
        '<xs:attribute name="classname" type="xs:string"/>',  # testcase only
        '\n            <xs:attribute name="file" type="xs:string"/>'
        '\n            <xs:attribute name="line" type="xs:positiveInteger"/>',
    )
    return xmlschema.XMLSchema(text)


# --- the schema itself ------------------------------------------------------------------


def test_shipped_schema_is_the_published_one_with_its_licence() -> None:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    assert "jenkinsci/xunit-plugin" in text
    assert "junit-10.xsd" in text
    assert "The MIT License (MIT)" in text
    assert "Copyright (c) 2014, Gregory Boissinot" in text
    # Unchanged on disk: the attributes the harness adds are not in it.
    published = xmlschema.XMLSchema(str(SCHEMA_FILE))
    testcase = published.elements["testcase"]
    assert "name" in testcase.attributes
    assert "file" not in testcase.attributes
    assert "line" not in testcase.attributes
    extended = junit_schema()
    assert set(extended.elements["testcase"].attributes) == set(testcase.attributes) | {
        "file",
        "line",
    }
    # What a repeated case needs is published: the Surefire run elements in a testcase,
    # properties only in a testsuite.
    children = {e.local_name for e in published.elements["testcase"].type.content.iter_elements()}
    assert {"flakyFailure", "flakyError", "rerunFailure", "rerunError"} <= children
    assert "properties" not in children
    assert "properties" in {
        e.local_name for e in published.elements["testsuite"].type.content.iter_elements()
    }


GOOD = """<?xml version="1.0" encoding="utf-8"?>
<testsuites errors="0" failures="1" tests="1" time="0.5">
  <testsuite errors="0" failures="1" name="s" skipped="0" tests="1" time="0.5">
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
        (
            GOOD.replace(
                "<failure", '<properties><property name="a" value="b"/></properties><failure'
            ),
            "properties in a testcase",
        ),
    ],
)
def test_schema_rejects_what_breaks_it(broken: str, why: str) -> None:
    schema = junit_schema()
    assert schema.is_valid(GOOD)
    assert broken != GOOD, why
    assert not schema.is_valid(broken), why


# --- real runs ----------------------------------------------------------------------------


def wrong_answer(model_name: str, *needles: str) -> dict[str, Any]:
    """Failing checks: each of `needles` is absent from the response, and `exact_tool_calls`
    fails too. Grades come in the grader's family order, so a failing needle comes first."""
    return fixture(
        model_name,
        [turn("Echo hi", tool_step(call("c1", message="hi")), text_step("I said bye"))],
        {"exact_tool_calls": 2, "response_contains": ["bye", *needles]},
    )


def run_with_reports(run_cli: Cli, root: Path) -> tuple[Path, dict[str, Any]]:
    result = run_cli(
        "eval", "run", "--junit-xml", "reports/junit.xml", "--json-report", "reports/report.json",
        cwd=root,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads((root / "reports" / "report.json").read_text("utf-8"))
    return root / "reports" / "junit.xml", report


def test_junit_of_a_real_run_validates_and_agrees_with_the_json_report(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        {
            "a_pass.json": echo_fixture("passes"),
            "b_fail.json": wrong_answer("fails", "hi there"),
            "c_error.json": under_scripted_fixture("errors"),
            "x.json": wrong_answer("x-case"),
        },
    )
    junit, report = run_with_reports(run_cli, root)

    errors = list(junit_schema().iter_errors(str(junit)))
    assert not errors, [f"{e.path}: {e.reason}" for e in errors]

    xml = junitparser.JUnitXml.fromfile(str(junit))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    cases = {case_id(case.name): case for case in suite}
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
    assert first["check"] == 'response_contains("hi there")'
    # The message says what was observed: annotations built from it show nothing else.
    assert failure.message == f"{first['check']}: {first['detail']} (+1 more failing check(s))"
    assert 'not found in response: "I said bye"' in failure.message
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
    by_name = {case_id(tc.get("name")): tc for tc in ET.parse(junit).iter("testcase")}
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
        json_case = next(c for c in report["cases"] if c["id"] == case_id(tc.get("name")))
        assert tc.get("file") == json_case["fixture"]
        assert tc.get("line") == (None if json_case["line"] is None else str(json_case["line"]))


def test_failure_line_points_at_the_failing_list_entry(run_cli: Cli, tmp_path: Path) -> None:
    data = fixture(
        "needle",
        [turn("Say something", text_step("first needle only"))],
        {"response_contains": ["first", "second needle"]},
    )
    root = project(tmp_path, {"a.json": echo_fixture("ok"), "x.json": data})
    junit, _report = run_with_reports(run_cli, root)
    [tc] = [tc for tc in ET.parse(junit).iter("testcase") if case_id(tc.get("name")) == "needle"]
    assert tc.get("file") == "evals/regression/x.json"
    fixture_file = root / "evals" / "regression" / "x.json"
    assert tc.get("line") == str(line_containing(fixture_file, '"second needle"'))


def test_run_error_line_points_at_the_turn(run_cli: Cli, tmp_path: Path) -> None:
    two_turns = fixture(
        "second-turn-errors",
        [
            turn("Say hi", text_step("hi")),
            turn("Echo hi", tool_step(call("c1", message="hi"))),
        ],
        {"response_contains": ["hi"]},
    )
    root = project(tmp_path, {"a.json": two_turns})
    junit, report = run_with_reports(run_cli, root)
    [tc] = list(ET.parse(junit).iter("testcase"))
    assert tc.find("error") is not None
    text = (root / "evals" / "regression" / "a.json").read_text("utf-8").splitlines()
    line = int(tc.get("line") or 0)
    # `$.turns[1]`: the line opening the second turn, just above its user_input.
    assert text[line - 1].strip() == "{"
    assert '"user_input": "Echo hi"' in text[line]
    assert report["cases"][0]["line"] == line


def test_escape_and_nul_in_a_transcript_still_validate(run_cli: Cli, tmp_path: Path) -> None:
    nasty = f"colour {ESC}[31mred{ESC}[0m and a nul {NUL} and <tag> & ]]>"
    failing = fixture(
        "esc-nul-id",
        [turn(f"Say {nasty}", text_step(nasty))],
        {"response_contains": ["absent"], "response_not_contains": ["nul"]},
    )
    erroring = fixture(
        "erroring",
        [turn(f"Echo {nasty}", tool_step(call("c1", message=nasty)))],
        {"response_contains": ["x"]},
    )
    root = project(tmp_path, {"a.json": failing, "b.json": erroring})
    junit, report = run_with_reports(run_cli, root)
    raw = junit.read_bytes()
    assert ESC.encode() not in raw
    assert NUL.encode() not in raw
    errors = list(junit_schema().iter_errors(str(junit)))
    assert not errors, [f"{e.path}: {e.reason}" for e in errors]
    xml = junitparser.JUnitXml.fromfile(str(junit))
    names = [case_id(case.name) for suite in xml for case in suite]
    assert names == ["esc-nul-id", "erroring"]
    error = next(
        case for suite in xml for case in suite if case_id(case.name) == "erroring"
    ).result[0]
    assert "colour \\u001b[31mred" in (error.text or "")  # shown escaped, not dropped
    assert report["totals"] == {
        "cases": 2,
        "passed": 0,
        "failed": 1,
        "errors": 1,
        "not_run": 0,
        "flaky": 0,
    }
    suite = next(iter(xml))
    assert (int(suite.tests), suite.failures, suite.errors) == (2, 1, 1)


# --- JUnit XML ------------------------------------------------------------------------------


def parse_junit(data: bytes) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(data)
    return root, list(root.iter("testcase"))


def junit_file(tmp_path: Path, data: bytes) -> junitparser.JUnitXml:
    path = tmp_path / "junit.xml"
    path.write_bytes(data)
    return junitparser.JUnitXml.fromfile(str(path))


def test_junit_one_testcase_per_case(tmp_path: Path) -> None:
    report = suite_report("regression", passing_report(), failing_report(), errored_report())
    data = render_junit(report)
    root, cases = parse_junit(data)
    assert [case_id(c.get("name")) for c in cases] == ["ok", "bad", "err"]
    assert {c.get("classname") for c in cases} == {"evals/regression[openai-agents]"}
    assert root.get("name") is None and root.find("testsuite").get("name") == (  # type: ignore[union-attr]
        "zeroclaw-eval:evals/regression[openai-agents]"
    )
    assert [c.get("file") for c in cases] == [
        "evals/regression/ok.json",
        "evals/regression/bad.json",
        "evals/regression/err.json",
    ]
    ok, bad, err = cases
    assert float(ok.get("time", "nan")) == pytest.approx(0.012)
    assert float(bad.get("time", "nan")) == pytest.approx(0.25)
    assert ok.find("failure") is None
    assert ok.find("error") is None

    failure = bad.find("failure")
    assert failure is not None
    assert failure.get("message") == (
        'tools_used("echo"): not called; tools called: [] (+1 more failing check(s))'
    )
    assert failure.text is not None
    assert 'tools_used("echo"): not called; tools called: []' in failure.text
    assert "exact_tool_calls(1): 0 tool call(s): []" in failure.text
    assert 'response_contains("hello")' not in failure.text
    assert bad.find("error") is None

    error = err.find("error")
    assert error is not None
    assert err.find("failure") is None
    assert error.get("message") == (
        "case 'err': turn 0 requested more model responses than the trace scripts"
    )
    assert "[0] user: hi" in (error.text or "")

    xml = junit_file(tmp_path, data)
    parsed = [case for ts in xml for case in ts]
    assert [case_id(c.name) for c in parsed] == ["ok", "bad", "err"]
    assert parsed[0].is_passed
    assert isinstance(parsed[1].result[0], junitparser.Failure)
    assert parsed[1].result[0].message == failure.get("message")
    assert isinstance(parsed[2].result[0], junitparser.Error)
    suites = list(xml)
    assert (suites[0].tests, suites[0].failures, suites[0].errors) == (3, 1, 1)


def test_junit_sanitises_control_characters(tmp_path: Path) -> None:
    transcript = f"colour {ESC}[31mred{ESC}[0m and a nul {NUL} byte"
    bad = CaseReport.graded(
        f"bad{ESC}",
        "bad.json",
        [Grade(f'response_contains("{NUL}")', False, f"not found in: {transcript}", "response")],
        RunRecord(final_response=transcript, duration_ms=1.0),
    )
    err = CaseReport.errored("err", "err.json", f"agent printed {ESC}[2J{NUL}", None)
    data = render_junit(suite_report("regression", bad, err))
    assert ESC.encode() not in data
    assert NUL.encode() not in data
    _, cases = parse_junit(data)
    # Shown as escapes: a reader sees what was there, nothing acts on it.
    assert case_id(cases[0].get("name")) == "bad\\u001b"
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        'response_contains("\\u0000"): not found in: colour \\u001b[31mred\\u001b[0m and a '
        "nul \\u0000 byte"
    )
    assert "colour \\u001b[31mred\\u001b[0m and a nul \\u0000 byte" in (failure.text or "")
    error = cases[1].find("error")
    assert error is not None
    assert error.get("message") == "agent printed \\u001b[2J\\u0000"
    xml = junit_file(tmp_path, data)
    assert [case_id(c.name) for ts in xml for c in ts] == ["bad\\u001b", "err"]


def test_junit_escapes_markup() -> None:
    bad = CaseReport.graded(
        "a<b>&c",
        'q"uote.json',
        [Grade("check<&>", False, "</failure><x>", "response")],
        RunRecord(duration_ms=1.0),
    )
    _, (case,) = parse_junit(render_junit(suite_report("regression", bad)))
    assert case_id(case.get("name")) == "a<b>&c"
    assert case.get("file") == 'q"uote.json'
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "check<&>: </failure><x>"
    assert "</failure><x>" in (failure.text or "")


def test_legal_text_is_kept_and_what_xml_forbids_never_written() -> None:
    legal = "tab\tnewline\nCRLF\r\n 日本 ✓ \U0001f600 \ue000"
    forbidden = "\x01\x08\x0b\x0c\x1f\ufffe\uffff\ud800"
    case = CaseReport.errored(f"c{forbidden}", "c.json", f"{legal}\n{forbidden}", None)
    data = render_junit(suite_report("regression", case))
    _, (testcase,) = parse_junit(data)  # a parser would refuse any of them
    assert case_id(testcase.get("name")) == "c\\u0001\\u0008\\u000b\\u000c\\u001f\ufffd\ufffd\ufffd"
    error = testcase.find("error")
    assert error is not None
    assert (error.text or "").startswith(legal.replace("\r\n", "\n"))


def test_end_to_end_control_characters_give_parseable_junit(tmp_path: Path) -> None:
    data = fixture(
        "noisy",
        [turn("Show colours", text_step(f"{ESC}[31mred{ESC}[0m{NUL}"))],
        {"response_contains": ["green"]},
    )
    report = run_suite(
        write_suite(tmp_path / "suite", {"noisy.json": data}),
        agent="openai-agents",
        root=tmp_path,
    )
    (case,) = report.cases
    assert case.error is None
    assert not case.passed
    xml = render_junit(report)
    assert ESC.encode() not in xml
    assert NUL.encode() not in xml
    _, (testcase,) = parse_junit(xml)
    assert case_id(testcase.get("name")) == "noisy"
    assert testcase.get("file") == "suite/noisy.json"
    failure = testcase.find("failure")
    assert failure is not None
    assert failure.get("message") == (
        'response_contains("green"): not found in response: "\\u001b[31mred\\u001b[0m\\u0000"'
    )
    # Details quote the response with its control characters visible as escapes.
    assert "\\u001b[31mred" in (failure.text or "")
    assert [case_id(c.name) for ts in junit_file(tmp_path, xml) for c in ts] == ["noisy"]
    # The JSON report keeps the exact text, escaped.
    document = json.loads(render_json(report))
    assert document["cases"][0]["record"]["final_response"] == f"{ESC}[31mred{ESC}[0m{NUL}"
    assert document["cases"][0]["id"] == "noisy"


# --- JUnit XML on stdout --------------------------------------------------------------------------


def test_junit_document_has_no_line_a_ci_runner_would_read_as_a_command() -> None:
    # `--format junit` puts the document on stdout, where a runner acts on `::` lines.
    error = "boom\n::error::forged\n  ::warning file=x::y"
    case = CaseReport.errored("x", "x.json", error, None)
    xml = render_junit(suite_report("regression", case)).decode("utf-8")
    assert not [line for line in xml.splitlines() if line.lstrip().startswith("::")]
    parsed = ET.fromstring(xml.encode("utf-8")).find(".//error")
    assert parsed is not None and parsed.text == error  # the text itself is unchanged


def test_no_legacy_command_or_whitespace_trick_survives_in_the_document() -> None:
    forged = "\n".join(ATTACKS)
    grade = Grade("##[error]check", False, forged, "response")
    cases = [
        CaseReport.graded("##[warning]id", "##[error]f.json", [grade], RunRecord()),
        CaseReport.errored("err", "err.json", forged, None),
    ]
    report = SuiteReport(
        suite="evals/##[error]s", kind="regression", mode="replay", agent="##[notice]a", cases=cases
    )
    xml = render_junit(report)
    assert acted_on(forged)
    assert runner_commands(xml.decode("utf-8")) == []
    assert b"##[" not in xml
    root = ET.fromstring(xml)
    failure, error = root.find(".//failure"), root.find(".//error")
    assert failure is not None and error is not None
    # The parsed text is the run's, CRLF read as LF and the other breaks shown escaped.
    shown = forged.replace("\r\n", "\n").replace("\r", "\\u000d").replace("\x85", "\\u0085")
    shown = shown.replace("\u2028", "\\u2028")
    assert error.text == shown
    assert failure.text == f"##[error]check: {shown}"
    name = root.find(".//testcase").get("name")  # type: ignore[union-attr]
    assert name == "##[warning]id[##[notice]a]"


def test_the_failure_message_is_the_first_failing_check_with_what_was_observed() -> None:
    observed = "not found in response: " + "x" * 2000
    grades = [
        Grade('response_contains("a")', True, "found", "response"),
        Grade('response_contains("b")', False, observed, "response"),
        Grade("exact_tool_calls(1)", False, "0 tool call(s): []", "tool"),
    ]
    failing = CaseReport.graded("f", "f.json", grades, RunRecord(), line=3)
    first_line = "case 'e': turn 0 asked for more " + "y" * 1000
    erroring = CaseReport.errored("e", "e.json", f"\n{first_line}\n  [0] user: hi", None)
    xml = junitparser.JUnitXml.fromstring(
        render_junit(suite_report("regression", failing, erroring))
    )
    cases = {case_id(case.name): case for suite in xml for case in suite}
    [failure] = cases["f"].result
    assert isinstance(failure, junitparser.Failure)
    message = failure.message or ""
    assert message.startswith('response_contains("b"): not found in response: xxx')
    assert message.endswith("x… (+1 more failing check(s))")
    assert len(message) == 500  # clipped, the count kept
    # The body keeps every failing check, whole.
    assert f'response_contains("b"): {observed}' in (failure.text or "")
    assert "exact_tool_calls(1): 0 tool call(s): []" in (failure.text or "")
    [error] = cases["e"].result
    assert isinstance(error, junitparser.Error)
    assert error.message == first_line[:499] + "…"
    assert error.text == f"\n{first_line}\n  [0] user: hi"


def test_each_agent_gets_its_own_suite_name_and_classname() -> None:
    names = {}
    for agent in ("openai-agents", "pydantic-ai"):
        report = SuiteReport(
            suite="evals/regression",
            kind="regression",
            mode="replay",
            agent=agent,
            cases=[passing_report("same-id")],
        )
        root = ET.fromstring(render_junit(report))
        suite = root.find("testsuite")
        assert suite is not None
        [case] = suite.iter("testcase")
        names[agent] = (suite.get("name"), case.get("classname"), case.get("name"))
    assert names == {
        "openai-agents": (
            "zeroclaw-eval:evals/regression[openai-agents]",
            "evals/regression[openai-agents]",
            "same-id[openai-agents]",
        ),
        "pydantic-ai": (
            "zeroclaw-eval:evals/regression[pydantic-ai]",
            "evals/regression[pydantic-ai]",
            "same-id[pydantic-ai]",
        ),
    }


# --- repeated cases, clusters and cases not run ---------------------------------------------

# Surefire's testcase content is a sequence (maven-surefire's surefire-test-report-3.0.xsd),
# not the Jenkins schema's choice: these children, at most once where marked, in this order.
SUREFIRE_ORDER = (
    "failure",
    "rerunFailure",
    "flakyFailure",
    "skipped",
    "error",
    "rerunError",
    "flakyError",
    "system-out",
    "system-err",
)
SUREFIRE_ONCE = {"skipped", "error", "system-out", "system-err"}
SUREFIRE_RUNS = {"rerunFailure", "flakyFailure", "rerunError", "flakyError"}


def surefire_problems(data: bytes) -> list[str]:
    """What Surefire's schema would refuse in each testsuite, checked by structure: that
    schema's root is one testsuite and it has no `file`/`line` testcase attributes, so the
    document cannot be validated against it whole. A run element needs `type` and a
    `<stackTrace>` first (then `<system-out>`/`<system-err>` only); `time` has at most three
    decimals; `properties` come before the testcases; `failure`/`error` need `type`."""
    problems = []
    for suite in ET.fromstring(data).iter("testsuite"):
        tags = [child.tag for child in suite]
        if "properties" in tags and tags.index("properties") != 0:
            problems.append("properties after a testcase")
        for case in suite.iter("testcase"):
            name = case.get("name")
            if not re.fullmatch(r"\d*(\.\d{0,3})?", case.get("time", "")):
                problems.append(f"{name}: time {case.get('time')!r}")
            children = [child.tag for child in case]
            if any(tag not in SUREFIRE_ORDER for tag in children):
                problems.append(f"{name}: unknown child in {children}")
                continue
            if children != sorted(children, key=SUREFIRE_ORDER.index):
                problems.append(f"{name}: out of order: {children}")
            problems += [f"{name}: {t} twice" for t in SUREFIRE_ONCE if children.count(t) > 1]
            for child in case:
                if child.tag in SUREFIRE_RUNS | {"failure", "error"} and not child.get("type"):
                    problems.append(f"{name}: {child.tag} without type")
                if child.tag in SUREFIRE_RUNS:
                    inner = [c.tag for c in child]
                    if inner[:1] != ["stackTrace"] or set(inner[1:]) - {"system-out", "system-err"}:
                        problems.append(f"{name}: {child.tag} holds {inner}")
    return problems


def assert_valid(data: bytes) -> None:
    errors = list(junit_schema().iter_errors(data.decode("utf-8")))
    assert not errors, [f"{e.path}: {e.reason}" for e in errors]
    assert surefire_problems(data) == []


def facts(testcase: ET.Element) -> dict[str, str]:
    """The `name=value` lines of a testcase's own `<system-out>`."""
    out = testcase.find("system-out")
    assert out is not None and out.text
    return dict(line.split("=", 1) for line in out.text.split("\n"))


FLAKY_OUTCOMES = "PPFPPPPFPPPPPPPPPPFP"  # 17 of 20 passed; runs 3, 8 and 19 failed


def repeated_suite() -> SuiteReport:
    return live_suite(
        repeated_report("flaky-pass", FLAKY_OUTCOMES, min_pass_rate=0.8),
        repeated_report("flaky-fail", FLAKY_OUTCOMES),
        repeated_report("errored", "PEPF"),
        repeated_report("steady", "PPPPP", cluster="greetings"),
        not_run_report("later"),
    )


def test_the_structure_check_refuses_what_surefire_would() -> None:
    good = render_junit(repeated_suite())
    assert surefire_problems(good) == []
    text = good.decode("utf-8")
    assert surefire_problems(text.replace('time="2.000"', 'time="2.0001"', 1).encode())
    moved = re.sub(r"(<failure .*?</failure>)(\s*)(<rerunFailure .*?</rerunFailure>)",
                   r"\3\2\1", text, count=1, flags=re.S)  # fmt: skip
    assert moved != text and surefire_problems(moved.encode())
    bare = re.sub(r"<stackTrace>.*?</stackTrace>", "", text, count=1, flags=re.S)
    assert surefire_problems(bare.encode())


def test_a_repeated_run_validates_under_both_schemas() -> None:
    assert_valid(render_junit(repeated_suite()))


def test_a_flaky_case_that_passed_has_a_flaky_failure_per_failing_run() -> None:
    root = ET.fromstring(render_junit(repeated_suite()))
    testcase = next(c for c in root.iter("testcase") if case_id(c.get("name")) == "flaky-pass")
    assert testcase.find("failure") is None and testcase.find("error") is None
    assert testcase.find("rerunFailure") is None
    flaky = testcase.findall("flakyFailure")
    assert [f.get("message") for f in flaky] == [
        'run 3 of 20: failed tools_used("echo")',
        'run 8 of 20: failed tools_used("echo")',
        'run 19 of 20: failed tools_used("echo"), exact_tool_calls(1)',
    ]
    assert {f.get("type") for f in flaky} == {"failure"}
    assert flaky[2].findtext("stackTrace") == 'tools_used("echo")\nexact_tool_calls(1)'
    assert flaky[0].findtext("system-out") == "run 3 of 20: 60 tokens, 2 model call(s), 100 ms"
    assert facts(testcase) == {
        "zeroclaw.runs": "17/20",
        "zeroclaw.pass_rate": "0.850",
        "zeroclaw.interval": "0.640-0.948",
        "zeroclaw.flaky": "true",
        "zeroclaw.pass@1": "0.850",
        "zeroclaw.pass^20": "0.000",
        "zeroclaw.min_pass_rate": "0.8",
        "zeroclaw.flips": 'tools_used("echo")=3, exact_tool_calls(1)=1',
    }


def test_a_case_that_failed_has_its_failure_and_a_rerun_failure_per_other_failing_run() -> None:
    root = ET.fromstring(render_junit(repeated_suite()))
    testcase = next(c for c in root.iter("testcase") if case_id(c.get("name")) == "flaky-fail")
    failure = testcase.find("failure")
    assert failure is not None
    assert failure.get("message") == (
        '17/20 runs passed (needs every run); run 3: tools_used("echo"): not called; '
        "tools called: []"
    )
    assert (failure.text or "").startswith('run 3 of 20:\ntools_used("echo"): not called')
    assert testcase.get("line") == "7"  # the first failing run's failing expectation
    reruns = testcase.findall("rerunFailure")
    assert [r.get("message", "")[:12] for r in reruns] == ["run 8 of 20:", "run 19 of 20"]
    assert testcase.find("flakyFailure") is None
    assert facts(testcase)["zeroclaw.runs"] == "17/20"
    assert "zeroclaw.min_pass_rate" not in facts(testcase)


def test_a_repeated_run_error_is_the_error_with_the_other_runs_beside_it() -> None:
    root = ET.fromstring(render_junit(repeated_suite()))
    testcase = next(c for c in root.iter("testcase") if case_id(c.get("name")) == "errored")
    error = testcase.find("error")
    assert error is not None
    assert error.get("message") == (
        "repeat 3/4 runs completed (pass^k not established): provider down: 503"
    )
    # Run 2's error is the case's; run 4 failed its checks.
    [rerun] = testcase.findall("rerunFailure")
    assert rerun.get("message") == 'run 4 of 4: failed tools_used("echo")'
    assert testcase.find("rerunError") is None
    assert [c.tag for c in testcase] == ["rerunFailure", "error", "system-out"]
    found = facts(testcase)
    assert found["zeroclaw.runs"] == "2/3" and found["zeroclaw.runs_requested"] == "4"
    assert found["zeroclaw.pass^k"] == "not established (a run errored)"


def test_other_run_errors_are_rerun_errors_and_flaky_errors() -> None:
    failed = repeated_report("two-errors", "EPEF")
    root = ET.fromstring(render_junit(live_suite(failed)))
    [rerun_error] = root.iter("rerunError")
    assert rerun_error.get("message") == "run 3 of 4: run error: provider down: 503"
    assert rerun_error.get("type") == "error"
    assert rerun_error.findtext("stackTrace") == "provider down: 503"
    assert len(list(root.iter("rerunFailure"))) == 1
    assert_valid(render_junit(live_suite(failed)))


def test_a_case_not_run_is_skipped_and_counted() -> None:
    data = render_junit(repeated_suite())
    root = ET.fromstring(data)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped"))\
        == ("5", "1", "1", "1")  # fmt: skip
    testcase = next(c for c in root.iter("testcase") if case_id(c.get("name")) == "later")
    skipped = testcase.find("skipped")
    assert skipped is not None
    assert skipped.get("message") == (
        "not run: the run stopped after 1 failing case(s) (--maxfail)"
    )
    assert list(testcase) == [skipped]


def test_the_suite_statistics_are_properties_of_the_testsuite() -> None:
    report = repeated_suite()
    suite = ET.fromstring(render_junit(report)).find("testsuite")
    assert suite is not None
    assert suite[0].tag == "properties"
    values = {p.get("name"): p.get("value") for p in suite[0]}
    stats = report.statistics
    assert values == {
        "zeroclaw.pass_rate": f"{stats.pass_rate:.3f}",
        "zeroclaw.interval": f"{stats.low:.3f}-{stats.high:.3f}",
        "zeroclaw.interval_note": stats.note,
        "zeroclaw.cases": "3",
        "zeroclaw.units": "3",
        "zeroclaw.repeated": "4",
        "zeroclaw.flaky": "3",
        "zeroclaw.not_run": "1",
    }
    steady = next(c for c in suite.iter("testcase") if case_id(c.get("name")) == "steady")
    assert facts(steady)["zeroclaw.cluster"] == "greetings"
    assert facts(steady)["zeroclaw.flaky"] == "false"


def test_an_unavailable_interval_says_so() -> None:
    one = live_suite(repeated_report("only", FLAKY_OUTCOMES))
    suite = ET.fromstring(render_junit(one)).find("testsuite")
    assert suite is not None
    values = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert values["zeroclaw.interval"] == "unavailable"
    assert (
        values["zeroclaw.interval_note"] == "95% CI unavailable: fewer than two independent units"
    )


def test_an_ordinary_run_has_no_properties_or_system_out() -> None:
    data = render_junit(suite_report("regression", passing_report(), failing_report()))
    assert b"<properties" not in data and b"<system-out" not in data
    assert b"flaky" not in data and b"rerun" not in data
    assert_valid(data)


def test_junitparser_counts_a_flaky_pass_as_passed_and_sees_it_flaky(tmp_path: Path) -> None:
    xml = junit_file(tmp_path, render_junit(repeated_suite()))
    [suite] = list(xml)
    cases = {case_id(case.name): case for case in suite}
    assert cases["flaky-pass"].is_passed
    assert not cases["flaky-fail"].is_passed and cases["flaky-fail"].is_failure
    assert cases["later"].is_skipped
    assert cases["errored"].is_error
    flavoured = junitparser.xunit2.JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    by_name = {case_id(case.name): case for s in flavoured for case in s}
    assert by_name["flaky-pass"].is_flaky and len(by_name["flaky-pass"].flaky_failures()) == 3
    assert by_name["flaky-fail"].is_rerun and len(by_name["flaky-fail"].rerun_failures()) == 2
    xml.update_statistics()  # recounted from the testcases, the attributes are the same
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (5, 1, 1, 1)


def test_run_text_in_a_repeated_case_is_cleaned_and_inert() -> None:
    forged = "\n".join(ATTACKS)
    flaky = repeated_report(f"id{ESC}", FLAKY_OUTCOMES, cluster=f"##[error]c\n::error::x{NUL}")
    stats = flaky.repeat
    assert stats is not None
    runs = [
        msgspec.structs.replace(r, failed_checks=[f"{forged}{ESC}"]) if not r.passed else r
        for r in stats.runs
    ]
    flips = {f"{forged}{NUL}": 3}
    stats = msgspec.structs.replace(stats, runs=runs, flips=flips, note=f"note {forged}")
    report = live_suite(msgspec.structs.replace(flaky, repeat=stats))
    data = render_junit(report)
    assert ESC.encode() not in data and NUL.encode() not in data and b"##[" not in data
    assert runner_commands(data.decode("utf-8")) == []
    assert_valid(data)
    testcase = ET.fromstring(data).find(".//testcase")
    assert testcase is not None
    assert case_id(testcase.get("name")) == "id\\u001b"
    trace = testcase.findtext("rerunFailure/stackTrace") or ""
    # A check name is one line: its breaks and controls are shown escaped, kept legible.
    assert trace.endswith("\\u001b") and "\\u000a" in trace and "\n" not in trace


def test_the_writer_needs_no_third_party_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "junit_xml", None)  # an import of it would fail
    assert_valid(render_junit(repeated_suite()))
    assert_valid(render_junit(suite_report("regression", passing_report(), errored_report())))


def test_no_rate_rests_on_no_completed_run() -> None:
    data = render_junit(live_suite(repeated_report("down", "EEE")))
    assert_valid(data)
    testcase = ET.fromstring(data).find(".//testcase")
    assert testcase is not None
    assert facts(testcase) == {
        "zeroclaw.runs": "0/0",
        "zeroclaw.runs_requested": "3",
        "zeroclaw.flaky": "false",
        "zeroclaw.pass^k": "not established (a run errored)",
    }
    # Run 1's error is the case's; runs 2 and 3 errored too.
    assert [e.tag for e in testcase] == ["error", "rerunError", "rerunError", "system-out"]


def test_a_run_errors_frames_follow_it_in_the_error_body() -> None:
    frames = [
        ErrorFrame(file="agent.py", line=14, function="run_turn"),
        ErrorFrame(file="::error::x\n##[error]y.py", line=2, function=f"f{ESC}[31m"),
    ]
    case = msgspec.structs.replace(errored_report(), error_frames=frames)
    data = render_junit(suite_report("regression", case))
    assert_valid(data)
    body = ET.fromstring(data).findtext(".//testcase/error") or ""
    assert body.endswith(
        "\n\nraised at (innermost last):\n  agent.py:14 in run_turn\n"
        "  ::error::x\\u000a##[error]y.py:2 in f\\u001b[31m"
    ), body
    assert runner_commands(data.decode("utf-8")) == []


@pytest.mark.parametrize("line", [None, 7])
def test_a_plain_pass_is_written_without_a_tree_as_the_tree_writes_it(
    line: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.reporters import junit

    odd = "a&b <\"c\"> 'd' ##[x] ::e"
    case = msgspec.structs.replace(passing_report(odd), fixture=f"evals/{odd}\t.json", line=line)
    bare = junit._bare_testcase("s&[a]", f"{odd}[a]", case)
    warned = Grade("request_snapshot", True, "as taken", "snapshot", warn=True)
    with_warning = msgspec.structs.replace(case, grades=[*case.grades, warned])
    assert bare is not None  # written without a tree...
    assert junit._bare_testcase("s&[a]", f"{odd}[a]", with_warning) is None  # (its system-out)
    assert bare == junit._testcase("s&", "a", case)
    monkeypatch.setattr(junit, "_bare_testcase", lambda *args: None)
    assert bare == junit._testcase("s&", "a", case)  # ...as the tree writes it
