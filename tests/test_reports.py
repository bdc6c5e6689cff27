"""Reports: the exit-code contract, the table, the JSON document, JUnit XML, atomic files."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest
from _support import fixture, greeting_fixture, text_step, turn, write_suite

from harness import run_suite
from harness.expectations.base import Grade
from harness.modes import resolve_kind
from harness.reporters import atomic
from harness.reporters.atomic import ReportWriteError, write_atomic
from harness.reporters.json_report import render_json
from harness.reporters.junit import render_junit, xml_safe
from harness.reporters.table import render_case, render_summary, render_table, use_colour
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.verdict import SCHEMA, CaseReport, SuiteReport

ESC, NUL = "\x1b", "\x00"


def passing(case_id: str = "ok") -> CaseReport:
    record = RunRecord(final_response="fine", model_calls=1, duration_ms=12.0)
    return CaseReport.graded(
        case_id, f"evals/regression/{case_id}.json", [Grade("c", True, "found", "response")], record
    )


def failing(case_id: str = "bad") -> CaseReport:
    grades = [
        Grade('response_contains("hello")', True, "found", "response"),
        Grade('tools_used("echo")', False, "not called; tools called: []", "tool"),
        Grade("exact_tool_calls(1)", False, "0 tool call(s): []", "tool"),
    ]
    record = RunRecord(final_response="hello", model_calls=2, duration_ms=250.0)
    return CaseReport.graded(case_id, f"evals/regression/{case_id}.json", grades, record)


def errored(case_id: str = "err") -> CaseReport:
    record = RunRecord(model_calls=1, duration_ms=3.0)
    return CaseReport.errored(
        case_id,
        f"evals/regression/{case_id}.json",
        "case 'err': turn 0 requested more model responses than the trace scripts\n  [0] user: hi",
        record,
        "Traceback (most recent call last):\n  ...",
    )


def suite(kind: str, *cases: CaseReport) -> SuiteReport:
    return SuiteReport(
        suite=f"evals/{kind}",
        kind=kind,  # type: ignore[arg-type]
        mode="replay",
        agent="openai-agents",
        cases=list(cases),
        duration_ms=265.0,
    )


# --- the exit-code contract -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "cases", "code"),
    [
        ("regression", "all-pass", 0),
        ("regression", "failed-check", 1),
        ("regression", "run-error", 1),
        ("regression", "no-cases", 1),
        ("capability", "all-pass", 0),
        ("capability", "failed-check", 0),
        ("capability", "run-error", 1),
        ("capability", "no-cases", 1),
        ("live", "all-pass", 0),
        ("live", "failed-check", 1),
        ("live", "run-error", 1),
        ("live", "no-cases", 1),
    ],
)
def test_exit_code_contract(kind: str, cases: str, code: int) -> None:
    chosen = {
        "all-pass": [passing("a"), passing("b")],
        "failed-check": [passing("a"), failing("b")],
        "run-error": [passing("a"), errored("b")],
        "no-cases": [],
    }[cases]
    assert suite(kind, *chosen).exit_code() == code


def test_capability_run_error_gates_even_alongside_failed_checks() -> None:
    assert suite("capability", failing(), errored()).exit_code() == 1


def test_a_case_with_no_grades_never_passes() -> None:
    empty = CaseReport.graded("empty", "x.json", [], RunRecord())
    assert not empty.passed
    assert empty.score is None
    assert suite("regression", empty).exit_code() == 1


def test_totals_and_score() -> None:
    report = suite("regression", passing(), failing(), errored())
    t = report.totals
    assert (t.cases, t.passed, t.failed, t.errors) == (3, 1, 1, 1)
    assert failing().score == pytest.approx(1 / 3)
    assert errored().score is None
    assert not report.all_passed


@pytest.mark.parametrize(
    ("explicit", "directory", "kind"),
    [
        (None, "evals/regression", "regression"),
        (None, "evals/capability", "capability"),
        (None, "evals/capability/", "capability"),
        (None, "evals\\capability", "capability"),
        (None, "evals/live", "live"),
        (None, "capability", "capability"),
        (None, "evals/my-cases", "regression"),
        (None, "evals/capability-extra", "regression"),
        ("capability", "evals/regression", "capability"),
        ("regression", "evals/capability", "regression"),
        ("live", "anything", "live"),
    ],
)
def test_resolve_kind(explicit: str | None, directory: str, kind: str) -> None:
    assert resolve_kind(explicit, directory) == kind


def test_resolve_kind_refuses_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="nightly"):
        resolve_kind("nightly", "evals/regression")


# --- the table ------------------------------------------------------------------------------


def test_table_lines() -> None:
    text = render_table(suite("regression", passing(), failing(), errored()))
    lines = text.splitlines()
    assert "  ✓ ok (evals/regression/ok.json)  1/1 checks" in lines
    assert "  ✗ bad (evals/regression/bad.json)  1/3 checks" in lines
    bad = lines.index("  ✗ bad (evals/regression/bad.json)  1/3 checks")
    assert lines[bad + 1] == '      ✗ tools_used("echo"): not called; tools called: []'
    assert lines[bad + 2] == "      ✗ exact_tool_calls(1): 0 tool call(s): []"
    # A passing check is not listed.
    assert not any('response_contains("hello")' in line for line in lines)
    error_line = next(line for line in lines if line.startswith("  ✗ err"))
    assert "run error: case 'err': turn 0 requested more model responses" in error_line
    # Later lines of a multi-line error are indented under the case.
    assert "        [0] user: hi" in lines
    summary = [line for line in lines if "cases passed" in line]
    assert summary == [
        "  1/3 cases passed  (1 failed, 1 run error(s))"
        "  [regression suite, replay, agent openai-agents: exit 1]"
    ]


def test_table_summary_when_green() -> None:
    text = render_summary(suite("regression", passing("a"), passing("b")))
    assert "2/2 cases passed  ✓" in text
    assert "exit 0" in text


def test_table_has_no_ansi_without_colour() -> None:
    text = render_table(suite("regression", passing(), failing(), errored()), colour=False)
    assert ESC not in text


def test_table_colour_when_asked() -> None:
    assert ESC in render_case(failing(), colour=True)
    assert ESC in render_case(passing(), colour=True)


class FakeTty(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(FakeTty(True)) is True
    assert use_colour(FakeTty(False)) is False
    assert use_colour(io.StringIO()) is False


def test_no_color_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_colour(FakeTty(True)) is False


# --- the JSON document ----------------------------------------------------------------------


def test_json_report_document() -> None:
    report = suite("regression", passing(), failing(), errored())
    document = json.loads(render_json(report))
    assert document["schema"] == SCHEMA == "zeroclaw-eval/report/v1"
    assert document["suite"] == "evals/regression"
    assert document["kind"] == "regression"
    assert document["mode"] == "replay"
    assert document["agent"] == "openai-agents"
    assert document["exit_code"] == 1
    assert document["all_passed"] is False
    assert document["totals"] == {"cases": 3, "passed": 1, "failed": 1, "errors": 1}
    assert [c["id"] for c in document["cases"]] == ["ok", "bad", "err"]
    bad = document["cases"][1]
    assert bad["fixture"] == "evals/regression/bad.json"
    assert bad["passed"] is False
    assert bad["error"] is None
    assert bad["score"] == pytest.approx(1 / 3)
    assert {k: bad["grades"][1][k] for k in ("check", "passed", "detail", "category")} == {
        "check": 'tools_used("echo")',
        "passed": False,
        "detail": "not called; tools called: []",
        "category": "tool",
    }
    assert bad["record"]["final_response"] == "hello"
    assert bad["record"]["model_calls"] == 2
    err = document["cases"][2]
    assert err["error"].startswith("case 'err': turn 0")
    assert err["traceback"].startswith("Traceback")
    assert err["score"] is None


def test_json_report_keeps_the_run_record() -> None:
    call = RecordedCall("echo", '{"message":"日本"}', "日本", True, 0.5)
    record = RunRecord(
        final_response="done ✓",
        turn_responses=["done ✓"],
        calls=[call],
        model_calls=2,
        input_tokens=20,
        output_tokens=8,
        duration_ms=4.0,
    )
    case = CaseReport.graded("c", "c.json", [Grade("x", True, "found", "tool")], record)
    (document_case,) = json.loads(render_json(suite("regression", case)))["cases"]
    assert document_case["record"] == {
        "final_response": "done ✓",
        "turn_responses": ["done ✓"],
        "calls": [
            {
                "name": "echo",
                "arguments": '{"message":"日本"}',
                "result": "日本",
                "success": True,
                "duration_ms": 0.5,
            }
        ],
        "model_calls": 2,
        "input_tokens": 20,
        "output_tokens": 8,
        "duration_ms": 4.0,
        "steps": None,  # kept only for live runs
    }
    assert document_case["duration_ms"] == 4.0


def test_json_report_of_a_green_suite() -> None:
    document = json.loads(render_json(suite("capability", passing())))
    assert document["exit_code"] == 0
    assert document["all_passed"] is True
    assert document["kind"] == "capability"


# --- JUnit XML ------------------------------------------------------------------------------


def parse_junit(data: bytes) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(data)
    return root, list(root.iter("testcase"))


def junit_file(tmp_path: Path, data: bytes) -> junitparser.JUnitXml:
    path = tmp_path / "junit.xml"
    path.write_bytes(data)
    return junitparser.JUnitXml.fromfile(str(path))


def test_junit_one_testcase_per_case(tmp_path: Path) -> None:
    report = suite("regression", passing(), failing(), errored())
    data = render_junit(report)
    _, cases = parse_junit(data)
    assert [c.get("name") for c in cases] == ["ok", "bad", "err"]
    assert {c.get("classname") for c in cases} == {"evals/regression"}
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
    assert failure.get("message") == 'tools_used("echo")'
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
    assert [c.name for c in parsed] == ["ok", "bad", "err"]
    assert parsed[0].is_passed
    assert isinstance(parsed[1].result[0], junitparser.Failure)
    assert parsed[1].result[0].message == 'tools_used("echo")'
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
    data = render_junit(suite("regression", bad, err))
    assert ESC.encode() not in data
    assert NUL.encode() not in data
    _, cases = parse_junit(data)
    assert cases[0].get("name") == "bad\ufffd"
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("message") == 'response_contains("\ufffd")'
    assert "colour \ufffd[31mred\ufffd[0m and a nul \ufffd byte" in (failure.text or "")
    error = cases[1].find("error")
    assert error is not None
    assert error.get("message") == "agent printed \ufffd[2J\ufffd"
    xml = junit_file(tmp_path, data)
    assert [c.name for ts in xml for c in ts] == ["bad\ufffd", "err"]


def test_junit_escapes_markup() -> None:
    bad = CaseReport.graded(
        "a<b>&c",
        'q"uote.json',
        [Grade("check<&>", False, "</failure><x>", "response")],
        RunRecord(duration_ms=1.0),
    )
    _, (case,) = parse_junit(render_junit(suite("regression", bad)))
    assert case.get("name") == "a<b>&c"
    assert case.get("file") == 'q"uote.json'
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "check<&>"
    assert "</failure><x>" in (failure.text or "")


def test_xml_safe_keeps_legal_text() -> None:
    legal = "tab\tnewline\nreturn\r 日本 ✓ \U0001f600 \ue000"
    assert xml_safe(legal) == legal
    assert xml_safe("\x01\x08\x0b\x0c\x1f\ufffe\uffff") == "\ufffd" * 7


def test_end_to_end_control_characters_give_parseable_junit(tmp_path: Path) -> None:
    data = fixture(
        f"noisy{ESC}[0m{NUL}",
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
    assert testcase.get("name") == "noisy\ufffd[0m\ufffd"
    assert testcase.get("file") == "suite/noisy.json"
    failure = testcase.find("failure")
    assert failure is not None
    assert failure.get("message") == 'response_contains("green")'
    # Details quote the response with its control characters visible as escapes.
    assert "\\u001b[31mred" in (failure.text or "")
    assert [c.name for ts in junit_file(tmp_path, xml) for c in ts] == ["noisy\ufffd[0m\ufffd"]
    # The JSON report keeps the exact text, escaped.
    document = json.loads(render_json(report))
    assert document["cases"][0]["record"]["final_response"] == f"{ESC}[31mred{ESC}[0m{NUL}"
    assert document["cases"][0]["id"] == f"noisy{ESC}[0m{NUL}"


# --- atomic report files --------------------------------------------------------------------


def test_write_atomic_writes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "deep" / "report.json"
    write_atomic(target, b"first")
    assert target.read_bytes() == b"first"
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]


def test_write_atomic_refuses_when_parent_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "reports"
    blocker.write_text("not a directory")
    with pytest.raises(ReportWriteError, match="cannot write report"):
        write_atomic(blocker / "junit.xml", b"<x/>")
    assert blocker.read_text() == "not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_write_atomic_leaves_no_partial_file_when_target_is_a_directory(tmp_path: Path) -> None:
    target = tmp_path / "junit.xml"
    target.mkdir()
    with pytest.raises(ReportWriteError, match=r"junit\.xml"):
        write_atomic(target, b"<x/>")
    assert target.is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


def test_write_atomic_keeps_the_old_file_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(b"old, complete")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(ReportWriteError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old, complete"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_green_suite_through_run_suite_reports(tmp_path: Path) -> None:
    report = run_suite(
        write_suite(tmp_path / "evals" / "capability", {"g.json": greeting_fixture("hi")}),
        agent="openai-agents",
        root=tmp_path,
    )
    assert report.kind == "capability"
    assert report.suite.endswith("capability")
    document = json.loads(render_json(report))
    assert document["cases"][0]["fixture"] == "evals/capability/g.json"
    assert document["exit_code"] == 0


def test_junit_document_has_no_line_a_ci_runner_would_read_as_a_command() -> None:
    # `--format junit` puts the document on stdout, where a runner acts on `::` lines.
    error = "boom\n::error::forged\n  ::warning file=x::y"
    case = CaseReport.errored("x", "x.json", error, None)
    xml = render_junit(suite("regression", case)).decode("utf-8")
    assert not [line for line in xml.splitlines() if line.lstrip().startswith("::")]
    parsed = ET.fromstring(xml.encode("utf-8")).find(".//error")
    assert parsed is not None and parsed.text == error  # the text itself is unchanged
