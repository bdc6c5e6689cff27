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
from test_reporters_github import (
    acted_on,
    live_suite,
    not_run_report,
    repeated_report,
    runner_commands,
)

from harness.expectations.base import Grade
from harness.reporters.base import Output
from harness.reporters.table import (
    REPORTER,
    TableReporter,
    render_case,
    render_summary,
    render_table,
    use_colour,
)
from harness.run_record import RunRecord
from harness.verdict.reports import CaseReport, SuiteReport

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


def test_a_passing_case_still_shows_its_warnings_and_diagnostic_judge_grades() -> None:
    from harness.expectations.base import JudgeNote

    note = JudgeNote(rubric="tone", threshold=0.5, score=0.9, gated=False)
    grades = [
        Grade('tools_used("echo")', True, "called", "tool"),
        Grade("request_snapshot", True, "as taken", "snapshot", warn=True),
        Grade("judge(tone)", True, "score 0.9", "judge", judge=note),
    ]
    # A warning that passed, a diagnostic judge grade: each shown under the passing case.
    said = [
        "      ~ request_snapshot (warning): as taken",
        "      ~ judge(tone) (diagnostic): score 0.9",
    ]
    for shown, under in ((grades[:2], said[0]), (grades[::2], said[1])):
        case = CaseReport.graded("ok", "evals/ok.json", shown, RunRecord())
        assert render_case(case).splitlines() == ["  ✓ ok (evals/ok.json)  2/2 checks", under]
    plain = CaseReport.graded("ok", "evals/ok.json", grades[:1], RunRecord())
    assert render_case(plain, counter="[1/2] ") == "  [1/2] ✓ ok (evals/ok.json)  1/1 checks\n"


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


# --- repeated cases, clusters and cases not run ---------------------------------------------

FLAKY = "PPFPPPPFPPPPPPPPPPFP"  # 17 of 20 passed; runs 3, 8 and 19 failed


def test_a_flaky_case_that_passed_shows_its_runs_rate_bar_and_flips() -> None:
    text = render_case(repeated_report("flaky", FLAKY, min_pass_rate=0.8))
    assert text.splitlines() == [
        "  ✓ flaky (evals/live/flaky.json)  17/20 runs  85% (95% Wilson interval 64\u201395%)  "
        "needs ≥ 80%  flaky",
        "      pass@1 0.85  pass^20 0.00",
        '      flipped: tools_used("echo") \u00d73, exact_tool_calls(1) \u00d71',
        "      failing runs: 3, 8, 19; run 3:",
        '      ✗ tools_used("echo"): not called; tools called: []',
    ]


def test_a_repeated_case_that_failed_every_run_carries_the_note() -> None:
    lines = render_case(repeated_report("broken", "FFFFF")).splitlines()
    assert lines[0] == (
        "  ✗ broken (evals/live/broken.json)  0/5 runs  0% (95% Wilson interval 0\u201343%)"
    )
    assert "flaky" not in lines[0]
    assert lines[1] == "      pass@1 0.00  pass^5 0.00"
    assert lines[3].startswith("      note: 0/5 runs passed: a task no run passes is often")
    assert lines[4] == "      failing runs: 1, 2, 3, 4, 5; run 1:"


def test_a_steady_repeated_case_shows_no_flaky_mark_and_no_failing_runs() -> None:
    text = render_case(repeated_report("steady", "PPPPP"))
    assert text.splitlines() == [
        "  ✓ steady (evals/live/steady.json)  5/5 runs  100% (95% Wilson interval 57\u2013100%)",
        "      pass@1 1.00  pass^5 1.00",
    ]


def test_a_repeated_run_error_says_pass_k_is_not_established() -> None:
    lines = render_case(repeated_report("errs", "PEPF")).splitlines()
    assert lines[0] == (
        "  ✗ errs (evals/live/errs.json)  2/3 runs (1 of 4 errored)  "
        "67% (95% Wilson interval 21\u201394%)  flaky"
        "  —  run error: repeat 3/4 runs completed (pass^k not established): provider down: 503"
    )
    assert lines[1] == "      pass@1 0.67  pass^k not established (a run errored)"
    assert lines[-1] == "      failing runs: 2, 4"  # no checks follow a run error


def test_a_case_not_run_has_its_own_mark() -> None:
    assert render_case(not_run_report("later")) == (
        "  - later (evals/live/later.json)  not run: the run stopped after 1 failing case(s) "
        "(--maxfail)\n"
    )
    assert ESC in render_case(not_run_report("later"), colour=True)


def test_flaky_is_marked_in_colour() -> None:
    text = render_case(repeated_report("flaky", FLAKY), colour=True)
    assert "\x1b[33mflaky\x1b[0m" in text


def test_the_summary_adds_the_suite_pass_rate_flaky_and_not_run_counts() -> None:
    report = live_suite(
        repeated_report("flaky", FLAKY, min_pass_rate=0.8),
        repeated_report("broken", "FFFFF", cluster="tools"),
        repeated_report("steady", "PPPPP", cluster="tools"),
        not_run_report("later"),
    )
    stats = report.statistics
    assert stats.low is not None and stats.high is not None
    lines = render_summary(report).splitlines()
    assert lines[1] == (
        "  2/4 cases passed  (1 failed, 1 not run)  [live suite, live, agent openai-agents: exit 1]"
    )
    assert lines[2] == (
        f"  pass rate {stats.pass_rate * 100:.0f}% "
        f"[{stats.low * 100:.0f}\u2013{stats.high * 100:.0f}%], "
        "95% CI over 2 independent units (3 cases, 1 cluster); 1 of 3 repeated case(s) flaky"
    )


def test_the_summary_says_when_the_interval_is_unavailable() -> None:
    lines = render_summary(live_suite(repeated_report("flaky", FLAKY))).splitlines()
    assert lines[2] == (
        "  pass rate 85%, 95% CI unavailable: fewer than two independent units; "
        "1 of 1 repeated case(s) flaky"
    )


def test_an_ordinary_run_stopped_early_counts_its_cases_not_run_on_one_line() -> None:
    report = suite_report("regression", failing_report(), not_run_report("later"))
    assert render_summary(report) == (
        "\n  0/2 cases passed  (1 failed, 1 not run)"
        "  [regression suite, replay, agent openai-agents: exit 1]\n"
    )


def streamed(reporter_jobs: int | None, count: int) -> list[str]:
    stream = io.StringIO()
    reporter = TableReporter(stream, jobs=reporter_jobs)
    cases = [passing_report(f"c{i}") for i in range(count)]
    reporter.start(count)
    for case in cases:
        reporter.case_done(case)
    return [line for line in stream.getvalue().splitlines() if line]


def test_with_several_jobs_each_streamed_line_starts_with_a_counter() -> None:
    assert streamed(4, 3) == [
        f"  [{i}/3] ✓ c{i - 1} (evals/regression/c{i - 1}.json)  1/1 checks" for i in (1, 2, 3)
    ]


def test_one_job_and_a_short_run_stream_as_before() -> None:
    assert streamed(None, 3)[0] == "  ✓ c0 (evals/regression/c0.json)  1/1 checks"
    assert streamed(1, 19)[18].startswith("  ✓ c18 ")
    assert streamed(4, 1) == ["  ✓ c0 (evals/regression/c0.json)  1/1 checks"]


def test_a_long_run_is_counted_even_with_one_job() -> None:
    lines = streamed(None, 20)
    assert lines[0].startswith("  [ 1/20] ✓ c0 ")
    assert lines[19].startswith("  [20/20] ✓ c19 ")


def test_the_reporter_counts_with_jobs_from_the_command_line() -> None:
    stream = io.StringIO()
    [reporter] = REPORTER.build(Output({"jobs": 3}, "table", stream, io.StringIO()))
    reporter.start(2)
    reporter.case_done(passing_report())
    assert stream.getvalue() == "\n  [1/2] ✓ ok (evals/regression/ok.json)  1/1 checks\n"


def test_untrusted_text_of_a_repeated_case_is_cleaned_and_inert() -> None:
    import msgspec

    forged = "\n".join(FORGERIES)
    case = repeated_report("flaky", FLAKY)
    assert case.repeat is not None
    stats = msgspec.structs.replace(
        case.repeat, flips={f"##[error]{forged}{ESC}": 2}, note=f"{forged}\x1b[2J"
    )
    shown = render_table(live_suite(msgspec.structs.replace(case, repeat=stats)))
    assert runner_commands(shown) == []
    assert "##[" not in shown and ESC not in shown


def test_no_suite_pass_rate_rests_on_no_completed_case() -> None:
    report = live_suite(repeated_report("down", "EEE"))
    lines = render_table(report).splitlines()
    assert "  0/0 runs (3 of 3 errored)" in lines[1]
    assert lines[2] == "      no run completed  pass^k not established (a run errored)"
    assert lines[-1] == "  pass rate unavailable: no case completed"


# --- the lines a worker process renders -----------------------------------------------------


@pytest.mark.parametrize("colour", [False, True])
def test_the_table_of_a_run_in_workers_is_the_one_this_process_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, colour: bool
) -> None:
    from conftest import echo_fixture, failing_fixture, under_scripted_fixture, write_suite

    from harness import pipeline
    from harness.reporters import table
    from harness.reporters.table import TableLines, TableReporter, render_case

    class Rendered(TableReporter):
        """The table as this process renders every case itself (told each case whole:
        the run's plain passes come with their reports, as every case does)."""

        worker_parts = None

        def __init__(self, stream: io.StringIO, jobs: int) -> None:
            super().__init__(stream, jobs=jobs)
            self.takes_passes = False

        def case_done(self, case: CaseReport) -> None:
            self._done += 1
            folded = self._changes.fold(case)
            self._write(render_case(case, self._colour, self._counter(), folded))

    taken: list[str] = []
    real = TableLines.take

    def counted(case: CaseReport) -> str | None:
        lines = real(case)
        if lines is not None:
            taken.append(lines)
        return lines

    monkeypatch.setattr(table.TableLines, "take", staticmethod(counted))
    cases = {f"{n}a.json": echo_fixture(f"echo-{n}", f"m{n}") for n in range(4)}
    cases |= {f"{n}b.json": failing_fixture(f"bad-{n}") for n in range(2)}
    cases["9c.json"] = under_scripted_fixture("under")
    suite = write_suite(tmp_path / "suite", cases)
    monkeypatch.delenv("NO_COLOR", raising=False)
    ours, theirs = FakeTty(colour), FakeTty(colour)
    reporters = [TableReporter(ours, jobs=2), Rendered(theirs, jobs=2)]
    report = pipeline.run(pipeline.RunOptions(suite, root=tmp_path, jobs=2), reporters)
    assert len(report.cases) == 7 and (report.totals.failed, report.totals.errors) == (2, 1)
    assert len(taken) == 7  # every case's lines came from its worker
    assert ours.getvalue() == theirs.getvalue()
    assert "[7/7] " in ours.getvalue() and (ESC in ours.getvalue()) == colour


def test_the_lines_a_worker_rendered_for_a_folded_case_are_let_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A case with a detail folded into an earlier case's is rendered here; the lines its
    worker rendered are let go as it is told, not held until the run is over."""
    from harness.reporters import table
    from harness.reporters.table import TableLines, TableReporter

    reporter = TableReporter(io.StringIO(), jobs=2)
    monkeypatch.setattr(reporter._changes, "fold", lambda case: {"detail": "as above"})
    case = passing_report()
    TableLines.hold(case, TableLines.render(case))
    reporter.start(1)
    reporter.case_done(case)
    assert id(case) not in table.TableLines._held


@pytest.mark.parametrize(("guard", "colour"), [(False, False), (True, False), (False, True)])
def test_plain_passes_told_together_write_what_each_told_alone_writes(
    guard: bool, colour: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.verdict.kept import Passes

    monkeypatch.delenv("NO_COLOR", raising=False)
    cases = [passing_report(f"case-{n}") for n in range(5)]
    alone, together = FakeTty(colour), FakeTty(colour)
    one, batch = TableReporter(alone, guard, jobs=2), TableReporter(together, guard, jobs=2)
    lines = one.worker_parts
    assert lines is batch.worker_parts and one.takes_passes
    for reporter in (one, batch):
        reporter.start(len(cases))
    for case in cases:
        lines.hold(case, lines.render(case))
        one.case_done(case)
    made = [(n, case.id, case.score, (lines.render(case),)) for n, case in enumerate(cases)]
    batch.passes_done(Passes((lines,), made[:2]))
    batch.passes_done(Passes((lines,), made[2:]))
    assert (ESC in together.getvalue()) == colour
    tokens = re.compile(r"[0-9a-f]{32}")  # each chunk's own token
    assert tokens.sub("T", together.getvalue()) == tokens.sub("T", alone.getvalue())
    assert "[5/5] " in together.getvalue()


@pytest.mark.parametrize("total", [9, 10, 12, 100, 101])
def test_plain_passes_told_together_are_counted_to_the_width_of_the_total(total: int) -> None:
    from harness.verdict.kept import Passes

    cases = [passing_report(f"case-{n}") for n in range(total)]
    alone, together = io.StringIO(), io.StringIO()
    one, batch = TableReporter(alone, jobs=2), TableReporter(together, jobs=2)
    lines = one.worker_parts
    for reporter in (one, batch):
        reporter.start(total)
    for case in cases:
        lines.hold(case, lines.render(case))
        one.case_done(case)
    made = [(n, case.id, case.score, (lines.render(case),)) for n, case in enumerate(cases)]
    for start in range(0, total, 7):  # runs of passes crossing a width, as workers send them
        batch.passes_done(Passes((lines,), made[start : start + 7]))
    assert together.getvalue() == alone.getvalue()
    width = len(str(total))
    assert f"  [{'1'.rjust(width)}/{total}] " in together.getvalue()
    assert f"  [{total}/{total}] " in together.getvalue()
