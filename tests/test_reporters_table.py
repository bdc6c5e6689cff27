"""`harness.reporters.table`: the table on stdout, coloured only on a terminal and never under
NO_COLOR; untrusted text cleaned, no line a workflow command, and on GitHub Actions each
chunk fenced between stop-commands."""

from __future__ import annotations

import io
import json
import re
import unicodedata
from pathlib import Path

import pytest
from conftest import (
    ESC,
    Cli,
    errored_report,
    failing_report,
    passing_report,
    project,
    says,
    suite_report,
)
from test_reporters_github import ATTACKS as FORGERIES
from test_reporters_github import acted_on, runner_commands

from harness.expectations.base import Grade
from harness.reporters.table import (
    TableReporter,
    render_case,
    render_summary,
    render_table,
    use_colour,
)
from harness.run_record import RunRecord
from harness.verdict import CaseReport, SuiteReport

# --- the table ------------------------------------------------------------------------------


def test_table_lines() -> None:
    text = render_table(
        suite_report("regression", passing_report(), failing_report(), errored_report())
    )
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
    text = render_summary(suite_report("regression", passing_report("a"), passing_report("b")))
    assert "2/2 cases passed  ✓" in text
    assert "exit 0" in text


def test_table_has_no_ansi_without_colour() -> None:
    text = render_table(
        suite_report("regression", passing_report(), failing_report(), errored_report()),
        colour=False,
    )
    assert ESC not in text


def test_table_colour_when_asked() -> None:
    assert ESC in render_case(failing_report(), colour=True)
    assert ESC in render_case(passing_report(), colour=True)


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


# --- untrusted text -------------------------------------------------------------------------

NASTY = "\x1b[2J\x1b]0;title\x07\x9b31m\u202eevil\u2066 \ud800 \x00\x7f"


def nasty_cases() -> list[CaseReport]:
    grade = Grade(f"check{ESC}[1m", False, f"saw {NASTY}\nnext {NASTY}", "response")
    return [
        CaseReport.graded(f"id{NASTY}\n::error::x", f"f{NASTY}.json", [grade], RunRecord()),
        CaseReport.errored("err", "err.json", f"provider said {NASTY}\r\n\x1b[1mbold", None),
    ]


def test_no_control_escape_bidi_or_surrogate_reaches_the_terminal() -> None:
    shown = render_table(suite_report("regression", *nasty_cases()), colour=False)
    shown.encode("utf-8")  # a lone surrogate crashed the table
    left = [c for c in shown if unicodedata.category(c) in ("Cc", "Cs") and c != "\n"]
    assert left == []
    assert "\u202e" not in shown and "\u2066" not in shown
    lines = shown.splitlines()
    assert (
        "  ✗ id\\u001b[2J\\u001b]0;title\\u0007\\u009b31m\\u202eevil\\u2066 \ufffd \\u0000\\u007f"
        in (lines[1])
    )
    assert "\\u000a::error::x" in lines[1]  # the id's newline is shown, not acted on
    assert lines[2].startswith("      ✗ check\\u001b[1m: saw \\u001b[2J")
    assert lines[3].startswith("        next \\u001b[2J")
    assert "run error: provider said \\u001b[2J" in lines[4]
    assert lines[5] == "      \\u001b[1mbold"  # CRLF is a line break, as LF


def test_no_line_of_the_table_is_a_workflow_command() -> None:
    forged = "\n".join(FORGERIES)
    grade = Grade("##[error]check", False, forged, "response")
    cases = [
        CaseReport.graded("##[warning]id", "evals/\n::error::f.json", [grade], RunRecord()),
        CaseReport.errored("err", "err.json", forged, None),
    ]
    report = SuiteReport(
        suite="evals/##[error]s", kind="regression", mode="replay", agent="##[error]a", cases=cases
    )
    shown = render_table(report)
    assert acted_on(forged)
    assert runner_commands(shown) == []
    assert "##[" not in shown
    assert "#\\u0023[warning]id" in shown  # shown escaped, still legible


def test_on_github_every_chunk_is_fenced_between_stop_commands() -> None:
    stream = io.StringIO()
    reporter = TableReporter(stream, guard=True)
    report = suite_report("regression", *nasty_cases())
    reporter.start(2)
    for case in report.cases:
        reporter.case_done(case)
    reporter.finish(report)
    out = stream.getvalue()
    tokens = re.findall(r"^::stop-commands::([0-9a-f]{32})$", out, re.M)
    assert len(tokens) == 3 == len(set(tokens))
    assert [line for line in out.splitlines() if line.startswith("::")] == [
        line for t in tokens for line in (f"::stop-commands::{t}", f"::{t}::")
    ]
    assert runner_commands(out) == []
    plain = io.StringIO()
    TableReporter(plain).case_done(report.cases[0])
    assert "stop-commands" not in plain.getvalue()


def test_a_lone_surrogate_in_model_text_does_not_crash_the_run(
    run_cli: Cli, tmp_path: Path
) -> None:
    # Escaped in the fixture's JSON, it is a lone surrogate once parsed.
    data = json.dumps(says("surrogate", "bad \ud800 text", ["zzz"]))
    root = project(tmp_path, {"a.json": data})
    result = run_cli("eval", "run", cwd=root)
    assert result.returncode == 1, result.stderr
    assert 'not found in response: "bad \ufffd text"' in result.stdout
