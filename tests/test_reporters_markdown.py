"""`harness.reporters.markdown`: the Markdown summary: totals (failed checks counted as
checks), failing cases worst first, collapsed details; the agent in the heading; text from a
model escaped and clipped in table cells and shown exactly in `<pre>` details, no line of it
a workflow command; the refusal of a suite; `--summary PATH` writes it."""

from __future__ import annotations

import html
import json
import re
import unicodedata
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgspec
from conftest import Cli, call, fixture, project, text_step, tool_step, turn
from test_reporters_github import (
    ATTACKS,
    acted_on,
    live_suite,
    not_run_report,
    repeated_report,
    runner_commands,
)

from harness.expectations.base import Grade
from harness.io.problems import Problem
from harness.reporters import markdown
from harness.reporters.json_report import ReportDocument
from harness.reporters.markdown import render_markdown
from harness.run_record import RunRecord
from harness.tracking import history as history_store
from harness.tracking import history_reader
from harness.tracking import trend as summary_trend
from harness.verdict.comparison import STATUSES, BaselineComparison, CaseComparison
from harness.verdict.reports import CaseReport, SuiteReport


def graded(case_id: str, grades: list[Grade], line: int | None = None) -> CaseReport:
    return CaseReport.graded(
        case_id, f"evals/regression/{case_id}.json", grades, RunRecord(final_response="x"), line
    )


def ok(check: str = 'response_contains("hi")') -> Grade:
    return Grade(check, True, "found", "response")


def bad(check: str, detail: str) -> Grade:
    return Grade(check, False, detail, "response")


def errored(case_id: str, message: str) -> CaseReport:
    return CaseReport.errored(case_id, f"evals/regression/{case_id}.json", message, None, line=4)


def suite_of(*cases: CaseReport, kind: str = "regression") -> SuiteReport:
    return SuiteReport(
        suite=f"evals/{kind}",
        kind=kind,  # type: ignore[arg-type]
        mode="replay",
        agent="openai-agents",
        cases=list(cases),
    )


def pre_blocks(markdown: str) -> list[str]:
    """The text each `<pre>` block shows (HTML drops the newline right after `<pre>`)."""
    return [html.unescape(body) for body in re.findall(r"<pre>\n(.*?)</pre>", markdown, re.S)]


def outside_pre(markdown: str) -> str:
    return re.sub(r"<pre>.*?</pre>", "", markdown, flags=re.S)


def table_rows(markdown: str, header: str) -> list[list[str]]:
    """Cells of the table whose header line starts with `header` (escaped pipes kept)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


MIXED = suite_of(
    graded("passes", [ok()]),
    graded("half", [ok(), bad('response_contains("zzz")', "not found in response: \"hi\"")], 9),
    errored("broken", "case 'broken': turn 0 asked for more\n  [0] user: \"hi\""),
    graded(
        "zero",
        [bad("tools_used(\"echo\")", "not called; tools called: []"),
         bad("exact_tool_calls(1)", "0 tool call(s): []")],
        12,
    ),
)  # fmt: skip


def test_totals_table() -> None:
    md = render_markdown(MIXED)
    assert md.startswith(
        "## ❌ zeroclaw-eval[openai-agents]: regression suite <code>evals/regression</code> "
        "failed (exit 1)"
    )
    [row] = table_rows(md, "| cases |")
    # "failed checks" counts checks: one in "half", two in "zero"
    assert row == ["4", "1", "3", "1", "0", "0", "25.0%", "openai-agents", "replay"]
    assert (
        "| cases | passed | failed checks | run errors | not run | flaky | pass rate | agent "
        "| mode |"
    ) in md
    # An ordinary run has no interval line and no sections for repeats or cases not run.
    assert "Suite pass rate" not in md
    assert "### Repeated cases" not in md and "### Not run" not in md


def test_failing_cases_table_is_worst_first_with_the_first_failure() -> None:
    md = render_markdown(MIXED)
    rows = table_rows(md, "| case | fixture | first failure |")
    assert [r[0] for r in rows] == ["<code>broken</code>", "<code>zero</code>", "<code>half</code>"]
    assert rows[0][1] == "<code>evals/regression/broken.json:4</code>"
    assert rows[1][1] == "<code>evals/regression/zero.json:12</code>"
    assert rows[2][1] == "<code>evals/regression/half.json:9</code>"
    # a cell is one line: the run error's newline is folded
    assert rows[0][2] == (
        "run error: case &#x27;broken&#x27;: turn 0 asked for more [0] user: &quot;hi&quot;"
    )
    assert rows[1][2] == (
        "tools_used(&quot;echo&quot;): not called; tools called: [] (+1 more failing check(s))"
    )
    assert "<code>passes</code>" not in md


def test_details_hold_every_failing_check_of_each_failing_case() -> None:
    md = render_markdown(MIXED)
    assert md.count("<details>") == md.count("</details>") == 3
    summaries = re.findall(r"<summary>(.*)</summary>", md)
    assert summaries == [
        "<code>broken</code> — run error",
        "<code>zero</code> — 2 failing check(s)",
        "<code>half</code> — 1 failing check(s)",
    ]
    bodies = pre_blocks(md)
    assert bodies == [
        "case 'broken': turn 0 asked for more\n  [0] user: \"hi\"",
        'tools_used("echo"): not called; tools called: []\nexact_tool_calls(1): 0 tool call(s): []',
        'response_contains("zzz"): not found in response: "hi"',
    ]
    # the blocks alternate open/close (never nested, never left open), outside the text
    tags = re.findall(r"</?details>", outside_pre(md))
    assert tags == ["<details>", "</details>"] * 3
    for block in re.findall(r"<details>.*?</details>", md, re.S):
        assert block.count("<summary>") == 1
        assert block.count("<pre>") == block.count("</pre>") == 1


def test_pipes_and_html_in_model_output_are_escaped_in_cells() -> None:
    detail = 'not found in response: "a | b <script>alert(1)</script> &amp; <img src=x>"'
    md = render_markdown(
        suite_of(graded("evil|<b>id</b>", [bad('response_contains("x")', detail)], 3))
    )
    rows = table_rows(md, "| case | fixture | first failure |")
    assert len(rows) == 1 and len(rows[0]) == 3  # the pipes did not add columns
    cell = rows[0][2]
    assert "a \\| b" in cell
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in cell
    assert "&amp;amp;" in cell
    assert "&lt;img src=x&gt;" in cell
    assert rows[0][0] == "<code>evil\\|&lt;b&gt;id&lt;/b&gt;</code>"
    assert "<script" not in md and "<img" not in md and "<b>" not in md
    assert "<code>evil|&lt;b&gt;id&lt;/b&gt;</code>" in md  # the details summary
    # the details show the exact text
    assert pre_blocks(md) == [f'response_contains("x"): {detail}']


def test_long_and_multiline_cells_stay_one_bounded_line() -> None:
    detail = "line one\nline two\r\n" + "x" * 1000
    md = render_markdown(suite_of(graded("long", [bad("c", detail)], 1)))
    [row] = table_rows(md, "| case | fixture | first failure |")
    assert row[2].startswith("c: line one line two xxx")
    assert row[2].endswith("…")
    assert len(row[2]) == 120


def test_a_transcript_with_backtick_fences_stays_inside_its_block() -> None:
    transcript = "here is code:\n```python\nprint('hi')\n```\nand a ````` run, then </pre> too"
    md = render_markdown(suite_of(errored("fences", transcript)))
    assert pre_blocks(md) == [transcript]
    # In the cell every backtick is escaped: no code span, no fence.
    assert not re.search(r"(?<!\\)`", outside_pre(md))
    assert "<details>" in outside_pre(md) and "</details>" in outside_pre(md)
    # nothing of the transcript leaks out of the block (the cell shows its first failure)
    assert "print(" not in outside_pre(md).split("<summary>", 1)[1]


def test_a_green_suite_says_every_case_passed() -> None:
    md = render_markdown(suite_of(graded("a", [ok()]), graded("b", [ok(), ok("tools_used")])))
    assert md.startswith(
        "## ✅ zeroclaw-eval[openai-agents]: regression suite <code>evals/regression</code> "
        "passed (exit 0)"
    )
    assert "Every case passed." in md
    assert "Failing cases" not in md and "<details>" not in md
    [row] = table_rows(md, "| cases |")
    assert row[:7] == ["2", "2", "0", "0", "0", "0", "100.0%"]


def test_an_empty_suite_is_not_called_green() -> None:
    md = render_markdown(suite_of())
    assert "failed (exit 1)" in md
    [row] = table_rows(md, "| cases |")
    assert row[:7] == ["0", "0", "0", "0", "0", "0", "0.0%"]


def test_capability_note_only_when_capability_checks_failed() -> None:
    note = "Capability suites are tracked, not gated"
    failing = graded("f", [bad("c", "no")], 2)
    md = render_markdown(suite_of(graded("p", [ok()]), failing, kind="capability"))
    assert note in md
    assert "capability suite <code>evals/capability</code> passed (exit 0)" in md
    assert note not in render_markdown(suite_of(graded("p", [ok()]), failing))
    assert note not in render_markdown(suite_of(graded("p", [ok()]), kind="capability"))
    errors_only = render_markdown(suite_of(errored("e", "boom"), kind="capability"))
    assert note not in errors_only
    assert "failed (exit 1)" in errors_only


# --- through the command line -------------------------------------------------------------


def pipes_and_error_project(tmp_path: Path) -> Path:
    return project(
        tmp_path,
        {
            "a.json": fixture("ok", [turn("hi", text_step("hi"))], {"response_contains": ["hi"]}),
            "b.json": fixture(
                "pipes",
                [turn("hi", text_step("a | b <i>x</i> ```fence```"))],
                {"response_contains": ["hi", "zzz"]},
            ),
            "c.json": fixture(
                "error",
                [turn("Echo", tool_step(call("c1", message="hi")))],
                {"response_contains": ["hi"]},
            ),
        },
    )


def report_from_json(path: Path) -> SuiteReport:
    document = msgspec.json.decode(path.read_bytes(), type=ReportDocument)
    return SuiteReport(
        suite=document.suite,
        kind=document.kind,
        mode=document.mode,
        agent=document.agent,
        cases=document.cases,
        duration_ms=document.duration_ms,
    )


def test_summary_flag_writes_the_same_markdown_with_the_other_reports(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = pipes_and_error_project(tmp_path)
    reports = root / "reports"
    reports.mkdir()
    (reports / "summary.md").write_text("stale content " * 500, encoding="utf-8")
    step = root / "step.md"
    step.write_text("before\n", encoding="utf-8")
    result = run_cli(
        "eval", "run",
        "--summary", "reports/summary.md",
        "--json-report", "reports/report.json",
        "--junit-xml", "reports/junit.xml",
        cwd=root, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    summary = (reports / "summary.md").read_text("utf-8")
    # the same run: the Markdown is exactly what the JSON report of that run renders to
    assert summary == render_markdown(report_from_json(reports / "report.json"))
    assert "stale content" not in summary
    assert step.read_text("utf-8") == "before\n" + summary + "\n"
    assert sorted(p.name for p in reports.iterdir()) == ["junit.xml", "report.json", "summary.md"]
    rows = table_rows(summary, "| case | fixture | first failure |")
    assert [r[0] for r in rows] == ["<code>error</code>", "<code>pipes</code>"]
    assert "a \\| b &lt;i&gt;x&lt;/i&gt;" in rows[1][2]
    assert json.loads((reports / "report.json").read_text("utf-8"))["totals"]["errors"] == 1


def test_summary_flag_without_github_actions_and_on_a_green_suite(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        {"a.json": fixture("ok", [turn("hi", text_step("hi"))], {"response_contains": ["hi"]})},
    )
    result = run_cli("eval", "run", "--format", "json", "--summary", "out/s.md", cwd=root)
    assert result.returncode == 0, result.stderr
    json.loads(result.stdout)  # stdout stays the JSON document
    summary = (root / "out" / "s.md").read_text("utf-8")
    assert "Every case passed." in summary
    assert "passed (exit 0)" in summary


def test_unwritable_summary_path_exits_1(run_cli: Cli, tmp_path: Path) -> None:
    root = pipes_and_error_project(tmp_path)
    (root / "summary.md").mkdir()
    (root / "summary.md" / "keep").write_text("x", encoding="utf-8")
    result = run_cli("eval", "run", "--summary", "summary.md", cwd=root)
    assert result.returncode == 1
    assert "summary.md: cannot write report" in result.stderr
    assert [p.name for p in (root / "summary.md").iterdir()] == ["keep"]
    assert not [p for p in root.iterdir() if p.name.endswith(".partial")]


# --- untrusted text in every cell -----------------------------------------------------------


def test_cells_are_clipped_and_escaped_and_the_details_keep_everything() -> None:
    long_id = "id-" + "x" * 300
    detail = "saw `code` | a [link](https://example.invalid) ![img](x) \\| and " + "y" * 300
    md = render_markdown(suite_of(graded(long_id, [bad("check", detail)], 3)))
    [row] = table_rows(md, "| case | fixture | first failure |")
    case_cell = row[0].removeprefix("<code>").removesuffix("</code>")
    assert case_cell == "id-" + "x" * 116 + "…"  # 120 characters shown
    failure = row[2]
    assert failure.startswith(
        "check: saw \\`code\\` \\| a \\[link](https://example.invalid) !\\[img](x) \\\\\\| and yyy"
    )
    assert failure.endswith("y…")
    assert not re.search(r"(?<!\\)[`|]", failure)  # every backtick and pipe escaped
    assert pre_blocks(md) == [f"check: {detail}"]  # the details hold it all


def test_control_characters_and_bidi_are_shown_escaped_in_every_cell() -> None:
    nasty = "\x1b[2J\x1b]0;title\x07\u202eevil\u2066\ud800\x9b1m"
    case = CaseReport.graded(
        f"id{nasty}", f"evals/{nasty}.json", [bad(f"c{nasty}", f"d{nasty}")], RunRecord(), 2
    )
    report = SuiteReport(
        suite=f"evals/{nasty}", kind="regression", mode="replay", agent=f"a{nasty}", cases=[case]
    )
    md = render_markdown(report)
    md.encode("utf-8")  # the surrogate is replaced, not left to crash the write
    assert [c for c in md if unicodedata.category(c) in ("Cc", "Cs") and c != "\n"] == []
    assert "\u202e" not in md and "\u2066" not in md
    escaped = "\\u001b[2J\\u001b]0;title\\u0007\\u202eevil\\u2066\ufffd\\u009b1m"
    [row] = table_rows(md, "| case | fixture | first failure |")
    assert row[0] == f"<code>id{escaped.replace(chr(92), chr(92) * 2)}</code>"
    assert pre_blocks(md) == [f"c{escaped}: d{escaped}"]
    assert f"zeroclaw-eval[a{escaped.replace(chr(92), chr(92) * 2)}]" in md.splitlines()[0]


def test_no_line_of_the_summary_is_a_workflow_command() -> None:
    forged = "\n".join(ATTACKS)
    case = CaseReport.graded(
        "##[warning]id", "evals/##[error]f.json", [bad("##[error]c", forged)], RunRecord(), 2
    )
    errored_case = errored("err", forged)
    md = render_markdown(suite_of(case, errored_case))
    assert acted_on(forged)
    assert runner_commands(md) == []
    assert "##[" not in md
    # What GitHub shows is still the text itself.
    shown = forged.replace("\r\n", "\n").replace("\r", "\\u000d").replace("\x85", "\\u0085")
    shown = shown.replace("\u2028", "\\u2028")
    assert pre_blocks(md) == [f"##[error]c: {shown}", shown][::-1]
    assert "<code>#&#35;[warning]id</code>" in md


def test_the_heading_names_the_agent() -> None:
    for agent in ("openai-agents", "pydantic-ai"):
        report = SuiteReport(
            suite="evals/regression", kind="regression", mode="replay", agent=agent, cases=[]
        )
        assert render_markdown(report).startswith(f"## ❌ zeroclaw-eval[{agent}]: regression")


def test_the_refusal_names_files_lines_fields_and_messages() -> None:
    problems = [
        Problem("evals/regression/b.json", "$.expects.bogus", "unknown key (did you | mean)", 5),
        Problem("evals/regression/c.json", "$", "not valid JSON: Expecting value (line 4)", 4),
        Problem("evals/regression/##[error]d.json", "$.id", "case id '\x1b[2J' refused"),
    ]
    md = markdown.render_refusal(problems, "pydantic-ai", "evals/regression")
    assert md.startswith(
        "## ❌ zeroclaw-eval[pydantic-ai]: suite <code>evals/regression</code> refused (exit 1)"
    )
    assert "3 problem(s) in 3 file(s); nothing was run" in md
    rows = table_rows(md, "| file | line | field | problem |")
    assert rows == [
        [
            "<code>evals/regression/b.json</code>",
            "5",
            "<code>$.expects.bogus</code>",
            "unknown key (did you \\| mean)",
        ],
        [
            "<code>evals/regression/c.json</code>",
            "4",
            "<code>$</code>",
            "not valid JSON: Expecting value (line 4)",
        ],
        [
            "<code>evals/regression/#&#35;[error]d.json</code>",
            "",
            "<code>$.id</code>",
            "case id &#x27;\\\\u001b[2J&#x27; refused",
        ],
    ]
    assert runner_commands(md) == []
    many = markdown.render_refusal([problems[0]] * 60)
    assert len(table_rows(many, "| file |")) == 50
    assert "… and 10 more problem(s)" in many
    assert many.startswith("## ❌ zeroclaw-eval: suite refused (exit 1)")


# --- repeated cases, clusters and cases not run ---------------------------------------------

FLAKY = "PPFPPPPFPPPPPPPPPPFP"  # 17 of 20 passed; runs 3, 8 and 19 failed
DASH = "\u2013"


def repeated_suite() -> SuiteReport:
    return live_suite(
        repeated_report("flaky-pass", FLAKY, min_pass_rate=0.8),
        repeated_report("flaky-fail", FLAKY, cluster="tools"),
        repeated_report("broken", "FFFFF", cluster="tools"),
        repeated_report("errs", "PEPF"),
        not_run_report("later"),
    )


def test_totals_count_flaky_and_not_run_cases() -> None:
    [row] = table_rows(render_markdown(repeated_suite()), "| cases |")
    # Failed checks of failing cases only: flaky-pass passed, whatever its run 3 failed.
    assert row == ["5", "1", "2", "1", "1", "3", "20.0%", "openai-agents", "live"]


def test_the_suite_pass_rate_with_its_interval_and_units() -> None:
    report = repeated_suite()
    stats = report.statistics
    assert stats.low is not None and stats.high is not None
    [line] = [line for line in render_markdown(report).splitlines() if "Suite pass rate" in line]
    assert line == (
        f"**Suite pass rate** {stats.pass_rate * 100:.0f}% "
        f"[{stats.low * 100:.0f}{DASH}{stats.high * 100:.0f}%] (a repeated case counts with "
        "its share of passing runs): 95% CI over 2 independent units (3 cases, 1 cluster); "
        "3 of 4 repeated case(s) flaky."
    )


def test_an_unavailable_interval_says_why_and_what_it_would_rest_on() -> None:
    md = render_markdown(live_suite(repeated_report("flaky", FLAKY, min_pass_rate=0.8)))
    assert (
        "**Suite pass rate** 85% (a repeated case counts with its share of passing runs): "
        "95% CI unavailable: fewer than two independent units (1 case(s) completed, "
        "1 independent unit(s)); 1 of 1 repeated case(s) flaky."
    ) in md
    assert "Every case passed." in md


def test_repeated_cases_have_a_section_of_their_own() -> None:
    md = render_markdown(repeated_suite())
    rows = table_rows(
        md,
        "| case | runs | pass rate [95% Wilson interval] | pass^k | flaky | flipped checks "
        "| note |",
    )
    times = "\u00d7"
    assert rows[0] == [
        "<code>flaky-pass</code>",
        "17/20",
        f"85% [64{DASH}95%] (needs ≥ 80%)",
        "pass@1 0.85, pass^20 0.00",
        "yes",
        f"tools_used(&quot;echo&quot;) {times}3, exact_tool_calls(1) {times}1",
        "",
    ]
    assert [r[0] for r in rows] == [
        "<code>flaky-pass</code>",
        "<code>flaky-fail</code>",
        "<code>broken</code>",
        "<code>errs</code>",
    ]
    assert rows[2][4] == "no"
    assert rows[2][6].startswith("0/5 runs passed: a task no run passes is often a broken task")
    assert rows[3][1] == "2/3 (1 of 4 errored)"
    assert rows[3][3] == "pass@1 0.67, pass^k not established (a run errored)"


def test_a_failing_repeated_case_says_how_its_runs_came_out_and_which_failed_first() -> None:
    md = render_markdown(repeated_suite())
    rows = table_rows(md, "| case | fixture | first failure |")
    assert [r[0] for r in rows] == ["<code>errs</code>", "<code>broken</code>",
                                    "<code>flaky-fail</code>"]  # fmt: skip
    assert rows[2][2] == (
        "17/20 runs passed (needs every run); run 3: tools_used(&quot;echo&quot;): not called; "
        "tools called: []"
    )
    assert "<summary><code>flaky-fail</code> — run 3 of 20: 1 failing check(s)</summary>" in md
    assert "<code>flaky-pass</code> —" not in md  # it passed: no details


def test_cases_not_run_are_listed_and_are_no_failure() -> None:
    md = render_markdown(repeated_suite())
    rows = table_rows(md, "| case | fixture | first failure |")
    assert "<code>later</code>" not in [r[0] for r in rows]
    section = md[md.index("### Not run") :]
    assert section.splitlines()[2:5] == [
        "1 case(s) never started (the run stopped after 1 failing case(s) (--maxfail)); "
        "the gate fails on them:",
        "",
        "* <code>later</code> (<code>evals/live/later.json</code>)",
    ]


def test_a_run_that_stopped_early_is_not_called_green() -> None:
    report = suite_of(graded("a", [ok()]), not_run_report("later"))
    md = render_markdown(report)
    assert "Every case passed." not in md and "### Failing cases" not in md
    assert "### Not run" in md and "failed (exit 1)" in md


def test_not_run_cases_past_the_limit_are_counted() -> None:
    report = live_suite(*(not_run_report(f"c{i}") for i in range(markdown.MAX_NOT_RUN + 3)))
    md = render_markdown(report)
    assert md.count("* <code>c") == markdown.MAX_NOT_RUN
    assert "* … and 3 more" in md


def test_run_text_of_a_repeated_case_is_escaped_and_inert() -> None:
    forged = "\n".join(ATTACKS)
    case = repeated_report("flaky", FLAKY, min_pass_rate=0.8)
    assert case.repeat is not None
    stats = msgspec.structs.replace(
        case.repeat, flips={f"##[error]`x`|{forged}": 2}, note=f"<b>{forged}</b>"
    )
    md = render_markdown(live_suite(msgspec.structs.replace(case, repeat=stats)))
    assert runner_commands(md) == [] and "##[" not in md
    [row] = table_rows(md, "| case | runs |")
    assert len(row) == 7  # the pipe did not add a column
    assert "&lt;b&gt;" in row[6] and "\\`x\\`" in row[5]


def test_no_suite_pass_rate_rests_on_no_completed_case() -> None:
    md = render_markdown(live_suite(repeated_report("down", "EEE")))
    assert "**Suite pass rate** unavailable: no case completed." in md
    [row] = table_rows(md, "| case | runs |")
    assert row[1:4] == [
        "0/0 (3 of 3 errored)",
        DASH,
        "no run completed, pass^k not established (a run errored)",
    ]


# --- the baseline ---------------------------------------------------------------------------


def comparison(*cases: CaseComparison) -> BaselineComparison:
    counts = {status: sum(c.status == status for c in cases) for status in STATUSES}
    return BaselineComparison(
        baseline="evals/baselines/capability.json",
        level=0.05,
        cases=list(cases),
        counts=counts,
        confirmed_regressions=[c.id for c in cases if c.confirmed is True],
        unconfirmed_drops=[c.id for c in cases if c.confirmed is False],
    )


REGRESSED = CaseComparison(
    id="hard",
    status="regression",
    confirmed=True,
    categories=["response", "tool_dispatch"],
    why="passed in the baseline, fails now (response, tool_dispatch)",
)
DROPPED = CaseComparison(
    id="wobbly",
    status="regression",
    confirmed=False,
    p_value=0.29102,
    categories=["response"],
    why="pass proportion 9/10 in the baseline, 7/10 now (one-sided Fisher exact test, "
    "p = 0.291 >= 0.05): an unconfirmed drop",
)
CHANGED = CaseComparison(
    id="edited",
    status="unverifiable",
    why="the fixture changed (sha256 0123456789ab in the baseline, ba9876543210 now): "
    "refresh the baseline (--write-baseline)",
)
SAME = CaseComparison(id="steady", status="unchanged", why="passes, as in the baseline")


def compared(against: BaselineComparison, fail_on_regression: bool = False) -> SuiteReport:
    report = suite_of(graded("hard", [bad("c", "no")], 2), kind="capability")
    return msgspec.structs.replace(report, baseline=against, fail_on_regression=fail_on_regression)


def section(md: str, heading: str) -> str:
    """From `heading` to the next heading of its level or higher (or the end)."""
    start = md.index(heading + "\n")
    level = heading.split(" ", 1)[0]
    pattern = re.compile(f"^#{{2,{len(level)}}} ", re.M)
    ends = [m.start() for m in pattern.finditer(md) if m.start() > start]
    return md[start : ends[0] if ends else len(md)]


def test_no_baseline_section_without_a_comparison() -> None:
    assert "### Baseline" not in render_markdown(MIXED)


def test_the_baseline_section_counts_every_status() -> None:
    md = render_markdown(compared(comparison(REGRESSED, DROPPED, CHANGED, SAME)))
    part = section(md, "### Baseline")
    assert (
        "Compared case by case with <code>evals/baselines/capability.json</code>; over "
        "repeated runs a drop is a confirmed regression at p < 0.05 (one-sided Fisher exact "
        "test)."
    ) in part
    [row] = table_rows(part, "| regression | error |")
    header = part.splitlines()[part.splitlines().index("| " + " | ".join(STATUSES) + " |")]
    assert (
        header == "| regression | error | unverifiable | new | removed | improvement | unchanged |"
    )
    assert row == ["2 (1 confirmed)", "0", "1", "0", "0", "0", "1"]


def test_confirmed_regressions_with_categories_and_unconfirmed_drops_with_p_values() -> None:
    md = render_markdown(compared(comparison(REGRESSED, DROPPED, CHANGED, SAME)))
    assert table_rows(section(md, "#### Confirmed regressions"), "| case | categories |") == [
        [
            "<code>hard</code>",
            "response, tool_dispatch",
            DASH,
            "passed in the baseline, fails now (response, tool_dispatch)",
        ]
    ]
    assert table_rows(section(md, "#### Unconfirmed drops"), "| case | p-value |") == [
        [
            "<code>wobbly</code>",
            "0.291",
            "pass proportion 9/10 in the baseline, 7/10 now (one-sided Fisher exact test, "
            "p = 0.291 &gt;= 0.05): an unconfirmed drop",
        ]
    ]
    assert table_rows(section(md, "#### Unverifiable"), "| case | why |") == [
        ["<code>edited</code>", CHANGED.why]
    ]
    # An unchanged case is counted, not listed.
    assert "<code>steady</code>" not in md


def test_sections_of_no_case_are_left_out() -> None:
    md = render_markdown(compared(comparison(SAME)))
    assert "### Baseline" in md
    for heading in ("Confirmed regressions", "Unconfirmed drops", "Unverifiable"):
        assert f"#### {heading}" not in md
    [row] = table_rows(md, "| regression | error |")
    assert row[0] == "0"


def test_the_baseline_section_says_whether_the_gate_failed() -> None:
    failing = render_markdown(compared(comparison(REGRESSED, SAME), fail_on_regression=True))
    assert "**`--fail-on-regression`: the gate fails** on 1 confirmed regression(s)." in failing
    assert "failed (exit 1)" in failing.splitlines()[0]
    held = render_markdown(compared(comparison(DROPPED, SAME), fail_on_regression=True))
    assert "`--fail-on-regression`: no confirmed regression, the baseline fails nothing." in held
    assert "passed (exit 0)" in held.splitlines()[0]
    ungated = render_markdown(compared(comparison(REGRESSED)))
    assert (
        "Regressions are not gated (no `--fail-on-regression`): 1 confirmed regression(s) "
        "reported only."
    ) in ungated
    assert "Regressions are not gated (no `--fail-on-regression`)." in render_markdown(
        compared(comparison(SAME))
    )


def test_baseline_text_is_escaped_and_inert() -> None:
    forged = "\n".join(ATTACKS)
    hostile = msgspec.structs.replace(
        REGRESSED, id=f"x`|</code>{forged}", categories=["a|b"], why=f"<b>{forged}</b>"
    )
    against = msgspec.structs.replace(
        comparison(hostile), baseline="##[error]`b`.json", notes=[f"the agent is {forged}"]
    )
    md = render_markdown(compared(against))
    assert runner_commands(md) == [] and "##[" not in md
    [row] = table_rows(section(md, "#### Confirmed regressions"), "| case | categories |")
    assert len(row) == 4  # no pipe added a column
    assert row[0].startswith("<code>x\\`\\|&lt;/code&gt;") and row[0].endswith("</code>")
    assert row[1] == "a\\|b" and row[3].startswith("&lt;b&gt;")
    assert "<code>#&#35;[error]\\`b\\`.json</code>" in md
    assert not re.search(r"(?<!\\)`", section(md, "#### Confirmed regressions"))


def test_a_confirmed_regression_fails_the_gate_in_the_summary_of_a_run(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        {
            "a.json": fixture("ok", [turn("hi", text_step("hi"))], {"response_contains": ["hi"]}),
            "b.json": fixture("hard", [turn("hi", text_step("hi"))], {"response_contains": ["x"]}),
        },
        suite="evals/capability",
    )
    args = ("eval", "run", "--suite-kind", "capability")
    written = run_cli(*args, "--write-baseline", "baseline.json", cwd=root)
    assert written.returncode == 0, written.stderr
    # The baseline says `hard` passed: this run's failure is a confirmed regression.
    baseline = json.loads((root / "baseline.json").read_text("utf-8"))
    for case in baseline["cases"]:
        if case["id"] == "hard":
            case.update(verdict="passed", passes=1, failed_categories=[])
    (root / "baseline.json").write_text(json.dumps(baseline), encoding="utf-8")
    result = run_cli(
        *args, "--baseline", "baseline.json", "--fail-on-regression", "--summary", "s.md",
        cwd=root,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    part = section((root / "s.md").read_text("utf-8"), "### Baseline")
    assert "<code>baseline.json</code>" in part
    assert table_rows(part, "| regression | error |") == [
        ["1 (1 confirmed)", "0", "0", "0", "0", "0", "1"]
    ]
    [row] = table_rows(part, "| case | categories |")
    assert row[:3] == ["<code>hard</code>", "response", DASH]
    assert "**`--fail-on-regression`: the gate fails** on 1 confirmed regression(s)." in part


# --- the trend ------------------------------------------------------------------------------

START = datetime(2025, 5, 1, 4, 17, tzinfo=timezone.utc)
CHART_LINE = re.compile(
    r'    title "[A-Za-z0-9 ,.:/_-]+"'
    r'|    x-axis \[(?:"[A-Za-z0-9 ,.:/_-]+"(?:, )?)+\]'
    r'|    y-axis "[A-Za-z0-9 ,.:/_-]+" 0 --> 100'
    r"|    line \[(?:\d{1,3}\.\d(?:, )?)+\]"
)


def capability(verdicts: dict[str, bool], agent: str = "openai-agents") -> SuiteReport:
    cases = [graded(i, [ok() if v else bad("c", "no")]) for i, v in verdicts.items()]
    return SuiteReport(
        suite="evals/capability", kind="capability", mode="replay", agent=agent, cases=cases
    )


def record(directory: Path, *runs: SuiteReport) -> None:
    """Each of `runs` written as a history entry, a day apart, oldest first. Its cases took
    time, as a real run's do: no earlier entry is a copy of a report built here."""
    for day, report in enumerate(runs):
        timed = [msgspec.structs.replace(c, duration_ms=1000.0 + day) for c in report.cases]
        entry = history_store.entry_of(msgspec.structs.replace(report, cases=timed))
        entry = msgspec.structs.replace(
            entry, recorded_at=(START + timedelta(days=day)).isoformat(timespec="seconds")
        )
        history_store.write(directory, entry)


def mermaid(md: str) -> list[str]:
    """The lines inside the one Mermaid block, checked well formed: the block opens and
    closes on fence lines of its own, holds an `xychart-beta` chart of title, x-axis,
    y-axis and line, and no other fence is in the summary."""
    lines = md.splitlines()
    fences = [i for i, line in enumerate(lines) if line.lstrip().startswith(("```", "~~~"))]
    assert len(fences) == 2, fences
    start, end = fences
    assert lines[start] == "```mermaid" and lines[end] == "```"
    body = lines[start + 1 : end]
    assert body[0] == "xychart-beta"
    assert [line.split()[0] for line in body[1:]] == ["title", "x-axis", "y-axis", "line"]
    for line in body[1:]:
        assert CHART_LINE.fullmatch(line), line
    return body


def points(md: str) -> tuple[list[str], list[float]]:
    body = mermaid(md)
    labels = re.findall(r'"([^"]*)"', body[2])
    values = [float(v) for v in body[4].removeprefix("    line [").removesuffix("]").split(", ")]
    return labels, values


def test_no_trend_without_a_history_directory(tmp_path: Path) -> None:
    report = capability({"a": True})
    assert "### Trend" not in render_markdown(report)
    assert "```" not in render_markdown(report)
    assert "### Trend" in render_markdown(report, tmp_path / "none-yet")


def test_the_chart_holds_the_pass_rate_of_each_run_this_run_last(tmp_path: Path) -> None:
    record(
        tmp_path,
        capability({"a": True, "b": False, "c": False, "d": False}),
        capability({"a": True, "b": True, "c": False, "d": False}),
        capability({"a": False, "b": False, "c": False, "d": False}, agent="pydantic-ai"),
        capability({"a": True, "b": True, "c": True, "d": False}),
    )
    other = msgspec.structs.replace(capability({"a": True}), suite="evals/elsewhere")
    record(tmp_path, other)
    md = render_markdown(capability({"a": True, "b": True, "c": True, "d": True}), tmp_path)
    labels, values = points(md)
    # Another agent's run and another suite's are not this trend.
    assert values == [25.0, 50.0, 75.0, 100.0]
    assert labels == ["1", "2", "3", "now"]
    assert mermaid(md)[1] == '    title "Pass rate in percent, last 4 runs"'
    assert (
        "Pass rate (cases passed of all cases) of the last 4 run(s) of this suite by "
        "<code>openai-agents</code>, the first recorded 2025-05-01 04:17 UTC; `now` is this run."
    ) in md


def test_the_chart_shows_the_last_twenty_runs(tmp_path: Path) -> None:
    runs = [capability({f"c{j}": j < i for j in range(30)}) for i in range(25)]
    record(tmp_path, *runs)
    labels, values = points(render_markdown(capability({"c0": False}), tmp_path))
    assert len(values) == summary_trend.MAX_RUNS == 20
    assert values == [round(i / 30 * 100, 1) for i in range(6, 25)] + [0.0]
    assert labels == [*map(str, range(1, 20)), "now"]


def test_this_run_is_the_last_point_once_whether_its_entry_is_written_or_not(
    tmp_path: Path,
) -> None:
    record(tmp_path, capability({"a": False, "b": False}), capability({"a": True, "b": False}))
    report = capability({"a": True, "b": True})
    before = render_markdown(report, tmp_path)
    history_store.write(tmp_path, history_store.entry_of(report, START + timedelta(days=9)))
    after = render_markdown(report, tmp_path)
    assert points(before) == points(after) == (["1", "2", "now"], [0.0, 50.0, 100.0])
    assert before == after


def test_a_history_entry_stored_differently_is_still_found_as_this_run(tmp_path: Path) -> None:
    # A lone surrogate is written as U+FFFD: this run's entry reads back changed.
    report = capability({"id\ud800": True, "b": False})
    record(tmp_path, capability({"b": False}))
    history_store.write(tmp_path, history_store.entry_of(report))
    assert points(render_markdown(report, tmp_path)) == (["1", "now"], [0.0, 50.0])


def test_cases_that_flipped_regressions_first(tmp_path: Path) -> None:
    record(
        tmp_path,
        capability({"z-lost": True, "a-lost": True, "fixed": False, "same": True, "gone": True}),
    )
    report = capability({"z-lost": False, "a-lost": False, "fixed": True, "same": True})
    broken = errored("crashed", "boom")
    md = render_markdown(msgspec.structs.replace(report, cases=[*report.cases, broken]), tmp_path)
    part = section(md, "#### Cases that flipped since the previous run (2025-05-01 04:17 UTC)")
    assert table_rows(part, "| case | then | this run | change |") == [
        ["<code>a-lost</code>", "passed", "failed", "regression"],
        ["<code>z-lost</code>", "passed", "failed", "regression"],
        ["<code>fixed</code>", "failed", "passed", "fixed"],
    ]


def test_a_first_run_and_a_run_that_changed_nothing_say_so(tmp_path: Path) -> None:
    report = capability({"a": True})
    first = render_markdown(report, tmp_path)
    assert points(first) == (["now"], [100.0])
    assert "The first run in this history: nothing to compare with." in first
    record(tmp_path, capability({"a": True}))
    again = render_markdown(report, tmp_path)
    assert "No case changed its verdict since the previous run (2025-05-01 04:17 UTC)." in again
    assert "#### Cases that flipped" not in again


def test_a_hostile_case_id_cannot_leave_the_table_or_touch_the_chart(tmp_path: Path) -> None:
    hostile = [
        "x\n```\n%%{init: {'theme': 'dark'}}%%\nclick a href \"javascript:alert(1)\"",
        '"] line [999',
        "~~~\n::error::forged",
        "`` ` ``|</code><script>",
        "a\r\n##[error]b\u2028c",
    ]
    record(tmp_path, capability({case: True for case in hostile}))
    md = render_markdown(capability({case: False for case in hostile}), tmp_path)
    assert points(md) == (["1", "now"], [100.0, 0.0])  # the block is as it should be
    assert runner_commands(md) == [] and "##[" not in md and "<script>" not in md
    chart = "\n".join(mermaid(md))
    assert "%%" not in chart and "javascript" not in chart and "999" not in chart
    rows = table_rows(md, "| case | then | this run | change |")
    assert len(rows) == len(hostile)
    assert all(len(row) == 4 and row[3] == "regression" for row in rows)
    table = section(md, "#### Cases that flipped since the previous run (2025-05-01 04:17 UTC)")
    assert not re.search(r"(?<!\\)`", table)  # no code span, no fence


def test_a_damaged_history_entry_cannot_break_the_chart(tmp_path: Path) -> None:
    folder = history_store.suite_directory(tmp_path, "evals/capability")
    folder.mkdir(parents=True)
    for day, rate, when in (
        (1, 7.5, "2025-05-01T04:17:00+00:00"),
        (2, -3.0, "2025-05-02T04:17:00+00:00"),
        (3, 0.5, '2025"]\n```\n::error::x'),
        (4, 0.5, "2025-05-04T04:17:00+00:00"),
    ):
        entry = msgspec.structs.replace(
            history_store.entry_of(capability({"a": True})), recorded_at=when, pass_rate=rate
        )
        name = f"2025050{day}T041700Z-nogit-openai-agents-0000000{day}.json"
        (folder / name).write_bytes(history_store.encode(entry))
    md = render_markdown(capability({"a": True}), tmp_path)
    assert runner_commands(md) == []
    # Rates out of range and a time that is none are passed over; no line of them is drawn.
    assert points(md) == (["1", "now"], [50.0, 100.0])


def test_chart_labels_keep_only_whitelisted_characters() -> None:
    assert summary_trend.label('a"b]`c%%d;e#f\ng(h)') == "abcdefgh"
    assert summary_trend.label('"`[]') == "-"
    assert len(summary_trend.label("x" * 100)) == summary_trend.LABEL_LIMIT


def test_the_summary_of_a_run_with_a_history_directory_shows_its_trend(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        {
            "a.json": fixture("ok", [turn("hi", text_step("hi"))], {"response_contains": ["hi"]}),
            "b.json": fixture("hard", [turn("hi", text_step("hi"))], {"response_contains": ["x"]}),
        },
        suite="evals/capability",
    )
    step = root / "step.md"
    args = ("eval", "run", "--suite-kind", "capability", "--history-dir", "history")
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)}
    # The summary file is rendered before the history entry is written, the step summary
    # (without --summary) after: each shows this run once.
    for run in range(3):
        result = run_cli(*args, "--summary", "s.md", cwd=root, env={} if run else github)
        assert result.returncode == 0, result.stderr
        _, values = points((root / "s.md").read_text("utf-8"))
        assert values == [50.0] * (run + 1)
    step.write_text("", encoding="utf-8")
    assert run_cli(*args, cwd=root, env=github).returncode == 0
    summary = step.read_text("utf-8")
    assert points(summary) == (["1", "2", "3", "now"], [50.0] * 4)
    assert "No case changed its verdict since the previous run" in summary
    assert len(history_reader.load(root / "history", "evals/capability")) == 4
