"""`harness.reporters.markdown`: the Markdown summary: totals (failed checks counted as
checks), failing cases worst first, collapsed details; the agent in the heading; text from a
model escaped and clipped in table cells and shown exactly in `<pre>` details, no line of it
a workflow command; the refusal of a suite; `--summary PATH` writes it."""

from __future__ import annotations

import html
import json
import re
import unicodedata
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
from harness.problems import Problem
from harness.reporters import markdown
from harness.reporters.json_report import ReportDocument
from harness.reporters.markdown import render_markdown
from harness.run_record import RunRecord
from harness.verdict import CaseReport, SuiteReport


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
    rows = table_rows(md, "| case | runs | pass rate | pass^k | flaky | flipped checks | note |")
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
