"""`harness.reporters.github`: GitHub workflow commands from the harness: one escaped line
per failing case, worst first, at most ten plus a notice, pointing at the fixture line; and
the step summary.

A workflow command is a line of output starting with `::`; the runner reads the command
and its `key=value` properties up to the first `::` after that, and the message after it.
It decodes `%0D`, `%0A` and `%25` in the message, and also `%3A` and `%2C` in properties.
`parse_commands` (in conftest.py) reads output the way the runner does, so a forged command
or a property broken open by a stray `:` or `,` shows up as a wrong parse.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import (
    EXPLODING_LOOP,
    Cli,
    Command,
    assert_well_formed,
    call,
    fixture,
    line_containing,
    parse_command,
    parse_commands,
    project,
    says,
    text_step,
    tool_step,
    turn,
    under_scripted_fixture,
    unescape_data,
    unescape_property,
    write_module,
)

from harness.agent import AgentSurface
from harness.expectations.base import Grade
from harness.problems import AdmissionError, Problem
from harness.reporters.github import (
    MAX_ANNOTATIONS,
    escape_data,
    escape_property,
    problem_command,
    workflow_commands,
)
from harness.run_record import RunRecord
from harness.suite import load_case
from harness.verdict import CaseReport, SuiteReport

FORGED = "%0A::error::forged"


# --- escaping, unit ---------------------------------------------------------------------


def test_escape_data_and_property() -> None:
    assert escape_data("100% a\r\nb") == "100%25 a%0D%0Ab"
    assert escape_data(FORGED) == "%250A::error::forged"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    for text in ["", "plain", "%0A%25", "x\r\ny:z,w%3A", FORGED + "\n::warning::x"]:
        assert unescape_data(escape_data(text)) == text
        assert unescape_property(escape_property(text)) == text


def graded(case_id: str, fixture: str, passes: int, fails: int, detail: str = "no") -> CaseReport:
    grades = [Grade(f"ok_{i}", True, "fine", "response") for i in range(passes)]
    grades += [Grade(f"check_{i}", False, detail, "response") for i in range(fails)]
    return CaseReport.graded(case_id, fixture, grades, RunRecord(final_response="x"), line=7)


def errored(case_id: str, message: str = "boom") -> CaseReport:
    return CaseReport.errored(case_id, f"evals/regression/{case_id}.json", message, None, line=3)


def suite_of(*cases: CaseReport) -> SuiteReport:
    return SuiteReport(
        suite="evals/regression", kind="regression", mode="replay", agent="a", cases=list(cases)
    )


def test_a_forged_message_stays_one_escaped_command() -> None:
    case_id = "weird:id,with::error::inside"
    detail = f'not found in response: "x {FORGED}" then\r\n::error::line two 100%'
    report = suite_of(graded(case_id, "evals/a,b:c.json", 1, 1, detail))
    [raw] = workflow_commands(report)
    [command] = parse_commands(raw)
    assert_well_formed(command)
    assert raw.startswith("::error ")
    assert command.name == "error"
    assert command.properties == {
        "file": "evals/a,b:c.json",
        "line": "7",
        "title": f"zeroclaw-eval: {case_id}",
    }
    assert command.message == f"check_0: {detail}"
    assert "%250A::error::forged" in raw
    assert "%0D%0A::error::line two 100%25" in raw


def test_first_failure_names_the_first_failing_check_or_the_run_error() -> None:
    assert graded("a", "f.json", 2, 1, "why").first_failure() == "check_0: why"
    assert graded("a", "f.json", 0, 3, "why").first_failure() == (
        "check_0: why (+2 more failing check(s))"
    )
    assert errored("e", "it broke\nbadly").first_failure() == "run error: it broke\nbadly"


def test_worst_first_orders_run_errors_then_lowest_score_keeping_suite_order() -> None:
    cases = [
        graded("half-1", "f", 1, 1),
        graded("pass", "f", 2, 0),
        graded("zero-1", "f", 0, 2),
        errored("err-1"),
        graded("third", "f", 2, 1),
        graded("half-2", "f", 2, 2),
        errored("err-2"),
        graded("zero-2", "f", 0, 1),
    ]
    assert [c.id for c in suite_of(*cases).worst_first()] == [
        "err-1",
        "err-2",
        "zero-1",
        "zero-2",
        "half-1",
        "half-2",
        "third",
    ]


def test_at_most_ten_errors_and_a_notice_for_the_rest() -> None:
    cases = [graded(f"case-{i:02d}", f"evals/regression/{i}.json", 0, 1) for i in range(13)]
    commands = [parse_command(c) for c in workflow_commands(suite_of(*cases))]
    assert MAX_ANNOTATIONS == 10
    assert [c.name for c in commands] == ["error"] * 10 + ["notice"]
    assert [c.properties["title"] for c in commands[:10]] == [
        f"zeroclaw-eval: case-{i:02d}" for i in range(10)
    ]
    assert commands[-1].message.startswith("3 more failing case(s) not annotated")

    exactly_ten = [parse_command(c) for c in workflow_commands(suite_of(*cases[:10]))]
    assert [c.name for c in exactly_ten] == ["error"] * 10
    limited = [parse_command(c) for c in workflow_commands(suite_of(*cases[:5]), limit=2)]
    assert [c.name for c in limited] == ["error", "error", "notice"]
    assert limited[-1].message.startswith("3 more")


def test_passing_cases_are_never_annotated_and_a_missing_line_is_left_out() -> None:
    assert workflow_commands(suite_of(graded("p", "f.json", 3, 0))) == []
    unlocated = msgspec.structs.replace(graded("u", "f.json", 0, 1), line=None)
    [command] = [parse_command(c) for c in workflow_commands(suite_of(unlocated))]
    assert set(command.properties) == {"file", "title"}


def test_a_huge_message_is_cut_but_stays_well_formed() -> None:
    report = suite_of(graded("big", "f.json", 0, 1, "%\n" * 5000))
    [command] = parse_commands(workflow_commands(report)[0])
    assert_well_formed(command)
    assert command.message.startswith("check_0: %\n%\n")
    assert command.message.endswith("…")
    assert len(command.message) <= 2001


def test_problem_command_points_at_the_offending_key(tmp_path: Path) -> None:
    path = tmp_path / "d:ir,x" / "bad.json"
    path.parent.mkdir()
    path.write_text(
        '{\n  "model_name": "m",\n  "turns": [],\n  "expects": {\n    "bogus": 1\n  }\n}',
        "utf-8",
    )
    # Admission finds the line while it has the text; the command only reads the problem.
    with pytest.raises(AdmissionError) as refused:
        load_case(path, "replay", AgentSurface("a", frozenset()))
    [found] = refused.value.problems
    assert (found.field, found.line) == ("$.expects.bogus", 5)
    problem = Problem(str(path), "$.expects.bogus", "unknown key\n::error::forged", found.line)
    [command] = parse_commands(problem_command(problem))
    assert_well_formed(command)
    assert command.name == "error"
    assert command.properties["file"] == str(path)
    assert command.properties["line"] == "5"
    assert command.message == "$.expects.bogus: unknown key\n::error::forged"
    # Not JSON, or no file at all: the file is still named, without a line.
    path.write_text("{ not json", "utf-8")
    [broken] = parse_commands(problem_command(Problem(str(path), "$", "not valid JSON")))
    assert broken.properties["file"] == str(path)
    missing = Problem(str(tmp_path / "gone.json"), "$", "cannot read")
    [gone] = parse_commands(problem_command(missing))
    assert "line" not in gone.properties


# --- through the command line -------------------------------------------------------------


def test_done_when_a_forged_response_yields_single_escaped_commands(
    run_cli: Cli, tmp_path: Path
) -> None:
    case_id = "forge:1,x::error::y"
    reply = f"hi {FORGED}\nsecond line\r\n::error::also forged 100%"
    root = project(
        tmp_path,
        {
            "a_forged.json": says("forged", reply, ["hi", "never said"], case_id=case_id),
            "b_error.json": under_scripted_fixture("diverges"),
            "c_pass.json": says("fine", "hi", ["hi"]),
        },
    )
    result = run_cli(
        "eval", "run", "--json-report", "r.json", cwd=root, env={"GITHUB_ACTIONS": "true"}
    )
    assert result.returncode == 1, result.stderr
    report = {c["id"]: c for c in json.loads((root / "r.json").read_text("utf-8"))["cases"]}

    commands = parse_commands(result.stdout)  # table format: commands on stdout
    assert parse_commands(result.stderr) == []
    assert [c.name for c in commands] == ["error", "error"]
    # The forged text made no command line of its own (the runner trims leading whitespace
    # and reads any line starting with `::` as a command).
    command_lines = [
        line for line in re.split(r"\r\n|\r|\n", result.stdout) if line.lstrip().startswith("::")
    ]
    assert command_lines == [c.raw for c in commands]
    assert not any(line.lstrip().startswith("::error::") for line in command_lines)
    for command in commands:
        assert_well_formed(command)
        assert command.raw.startswith("::error ")
        assert command.raw.count("::error ") == 1

    # worst first: the run error, then the failed check
    diverges, forged = commands
    assert diverges.properties["title"] == "zeroclaw-eval: diverges"
    error = report["diverges"]["error"]
    assert "\n" in error  # the replay divergence message spans several lines ...
    assert diverges.message == f"run error: {error}"  # ... and decodes back intact
    assert "%0A" in diverges.raw

    assert forged.properties == {
        "file": "evals/regression/a_forged.json",
        "line": str(line_containing(root / "evals/regression/a_forged.json", '"never said"')),
        "title": f"zeroclaw-eval: {case_id}",
    }
    [failing] = [g for g in report[case_id]["grades"] if not g["passed"]]
    assert forged.message == f"{failing['check']}: {failing['detail']}"
    assert "%250A::error::forged" in forged.raw
    assert "%3A" in forged.raw.partition("::")[2].partition("::")[0]  # `:` escaped in title
    assert "%2C" in forged.raw.partition("::")[2].partition("::")[0]  # and `,`
    assert diverges.properties["line"] == str(
        line_containing(root / "evals/regression/b_error.json", '"user_input"') - 1
    )


def test_the_table_cannot_forge_a_command_either(run_cli: Cli, tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"a.json": fixture("explodes", [turn("explode now", text_step("hi"))],
                           {"response_contains": ["hi"]})},
    )  # fmt: skip
    module = write_module(root, EXPLODING_LOOP)
    result = run_cli(
        "eval", "run", "--agent", f"{module}:factory", cwd=root, env={"GITHUB_ACTIONS": "true"}
    )
    assert result.returncode == 1, result.stderr
    commands = parse_commands(result.stdout)
    assert [c.name for c in commands] == ["error"]  # only the harness's own annotation
    assert commands[0].properties["title"] == "zeroclaw-eval: explodes"


# --- 12 failing cases ---------------------------------------------------------------------

# (file stem, kind): "e" run error, else the fraction of checks that pass.
TWELVE = [
    ("c01", "1/2"),
    ("c02", "0"),
    ("c03", "e"),
    ("c04", "2/3"),
    ("c05", "0"),
    ("c06", "1/2"),
    ("c07", "e"),
    ("c08", "1/2"),
    ("c09", "2/3"),
    ("c10", "1/2"),
    ("c11", "0"),
    ("c12", "2/3"),
]
EXPECTED_ORDER = ["c03", "c07", "c02", "c05", "c11", "c01", "c06", "c08", "c10", "c04"]


def twelve_fixture(stem: str, kind: str) -> dict[str, Any]:
    if kind == "e":
        return under_scripted_fixture(stem)
    needles = {"0": ["zzz"], "1/2": ["hi", "zzz"], "2/3": ["hi", "there", "zzz"]}[kind]
    return says(stem, "hi there", needles)


@pytest.fixture(scope="module")
def twelve(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fixtures = {f"{stem}.json": twelve_fixture(stem, kind) for stem, kind in TWELVE}
    fixtures["c00.json"] = says("c00", "hi", ["hi"])
    return project(tmp_path_factory.mktemp("twelve"), fixtures)


def expected_line(root: Path, stem: str) -> int:
    path = root / "evals" / "regression" / f"{stem}.json"
    if dict(TWELVE)[stem] == "e":
        return line_containing(path, '"user_input"') - 1  # `$.turns[0]`
    return line_containing(path, '"zzz"')  # the failing expectation


def check_twelve(root: Path, commands: list[Command]) -> None:
    assert [c.name for c in commands] == ["error"] * 10 + ["notice"]
    errors = commands[:10]
    assert [c.properties["title"] for c in errors] == [
        f"zeroclaw-eval: {stem}" for stem in EXPECTED_ORDER
    ]
    for command, stem in zip(errors, EXPECTED_ORDER, strict=True):
        assert_well_formed(command)
        assert command.properties["file"] == f"evals/regression/{stem}.json"
        assert command.properties["line"] == str(expected_line(root, stem))
        if dict(TWELVE)[stem] == "e":
            assert command.message.startswith("run error: ")
        else:
            assert command.message.startswith('response_contains("zzz"): not found')
    notice = commands[-1]
    assert notice.message.startswith("2 more failing case(s) not annotated")


def test_twelve_failures_annotated_worst_first_on_stdout_with_the_table(
    run_cli: Cli, twelve: Path
) -> None:
    result = run_cli("eval", "run", cwd=twelve, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1, result.stderr
    assert "1/13 cases passed" in result.stdout
    check_twelve(twelve, parse_commands(result.stdout))
    assert parse_commands(result.stderr) == []


def test_json_format_keeps_stdout_the_document_and_commands_on_stderr(
    run_cli: Cli, twelve: Path
) -> None:
    summary = twelve / "step-summary.md"
    result = run_cli(
        "eval", "run", "--format", "json", "--json-report", "reports/r.json",
        cwd=twelve, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stdout == (twelve / "reports" / "r.json").read_text("utf-8")
    assert json.loads(result.stdout)["totals"]["cases"] == 13
    check_twelve(twelve, parse_commands(result.stderr))


def test_junit_format_keeps_stdout_the_document(run_cli: Cli, twelve: Path) -> None:
    result = run_cli("eval", "run", "--format", "junit", cwd=twelve, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("<?xml")
    assert "::" not in result.stdout.replace("zeroclaw-eval:evals", "")
    check_twelve(twelve, parse_commands(result.stderr))


def test_annotations_none_suppresses_commands_and_the_step_summary(
    run_cli: Cli, twelve: Path
) -> None:
    summary = twelve / "none-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    result = run_cli(
        "eval", "run", "--annotations", "none",
        cwd=twelve, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == 1
    assert parse_commands(result.stdout) == parse_commands(result.stderr) == []
    assert "::" not in result.stdout + result.stderr
    assert summary.read_text("utf-8") == "earlier step\n"


def test_no_commands_without_github_actions(run_cli: Cli, twelve: Path) -> None:
    result = run_cli("eval", "run", cwd=twelve)
    assert result.returncode == 1
    assert parse_commands(result.stdout) == parse_commands(result.stderr) == []
    result = run_cli("eval", "run", cwd=twelve, env={"GITHUB_ACTIONS": "false"})
    assert parse_commands(result.stdout) == parse_commands(result.stderr) == []


def test_annotations_github_emits_them_without_the_env_var(run_cli: Cli, twelve: Path) -> None:
    result = run_cli("eval", "run", "--annotations", "github", "--format", "json", cwd=twelve)
    assert result.returncode == 1
    json.loads(result.stdout)
    check_twelve(twelve, parse_commands(result.stderr))


def test_step_summary_is_appended_and_matches_summary_file(run_cli: Cli, twelve: Path) -> None:
    step = twelve / "github-step-summary.md"
    step.write_text("## from an earlier step\n\nkeep me\n", encoding="utf-8")
    result = run_cli(
        "eval", "run", "--summary", "reports/summary.md",
        cwd=twelve, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)},
    )  # fmt: skip
    assert result.returncode == 1
    summary = (twelve / "reports" / "summary.md").read_text("utf-8")
    assert "### Failing cases" in summary
    assert step.read_text("utf-8") == "## from an earlier step\n\nkeep me\n" + summary + "\n"


def test_step_summary_append_failure_is_reported_not_fatal_to_the_verdict(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(tmp_path, {"a.json": says("ok", "hi", ["hi"])})
    result = run_cli(
        "eval", "run", cwd=root,
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(root / "no" / "dir" / "s.md")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "GITHUB_STEP_SUMMARY" in result.stderr


# --- admission refusals -------------------------------------------------------------------


def refused_project(tmp_path: Path) -> Path:
    bogus = says("bogus", "hi", ["hi"])
    bogus["expects"]["bogus_key"] = 1
    bad_tool = fixture(
        "bad-tool",
        [turn("Go", tool_step(call("c1", name="no_such_tool", q=1)), text_step("hi"))],
        {"response_contains": ["hi"]},
    )
    return project(
        tmp_path,
        {"a_ok.json": says("ok", "hi", ["hi"]), "b_bogus.json": bogus, "c_tool.json": bad_tool},
    )


@pytest.mark.parametrize("action", ["run", "check"])
def test_admission_refusal_is_annotated_at_the_offending_key(
    run_cli: Cli, tmp_path: Path, action: str
) -> None:
    root = refused_project(tmp_path)
    result = run_cli("eval", action, cwd=root, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1
    assert result.stdout == ""
    commands = parse_commands(result.stderr)
    assert commands, result.stderr
    by_file = {c.properties["file"]: c for c in commands}
    assert set(by_file) == {"evals/regression/b_bogus.json", "evals/regression/c_tool.json"}
    for command in commands:
        assert_well_formed(command)
        assert command.raw.startswith("::error ")
    suite = root / "evals" / "regression"
    bogus = by_file["evals/regression/b_bogus.json"]
    assert bogus.properties["line"] == str(line_containing(suite / "b_bogus.json", '"bogus_key"'))
    assert bogus.message.startswith("$.expects.bogus_key: unknown key")
    tool = by_file["evals/regression/c_tool.json"]
    assert tool.properties["line"] == str(line_containing(suite / "c_tool.json", "no_such_tool"))
    assert "no_such_tool" in tool.message
    # without GITHUB_ACTIONS: the same refusal, no commands
    plain = run_cli("eval", action, cwd=root)
    assert plain.returncode == 1
    assert parse_commands(plain.stderr) == []
    assert "b_bogus.json: $.expects.bogus_key: unknown key" in plain.stderr
