"""`harness.reporters.table`: the table on stdout, coloured only on a terminal and never under
NO_COLOR."""

from __future__ import annotations

import io

import pytest
from conftest import ESC, errored_report, failing_report, passing_report, suite_report

from harness.reporters.table import render_case, render_summary, render_table, use_colour

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
