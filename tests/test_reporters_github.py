"""`harness.reporters.github`: GitHub workflow commands from the harness: one escaped line
per failing case, worst first, `::error` for what the gate fails on and `::warning` for what
it only tracks, at most ten of each per step (shared by every run in the step) plus a
notice, pointing at the fixture line and naming the agent; and nothing else in the output
that GitHub's runner would act on.

`runner_commands` reads output the way actions/runner does (below), so a forged command, a
property broken open by a stray `:` or `,`, or a stop-commands block left open shows up.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import pytest
from conftest import (
    EXPLODING_LOOP,
    Cli,
    assert_well_formed,
    call,
    case_of,
    fixture,
    line_containing,
    live_trace,
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

from harness.agents.protocol import AgentSurface
from harness.expectations.base import Grade
from harness.fixtures.suite import load_case
from harness.io.problems import AdmissionError, Problem
from harness.reporters import github
from harness.reporters.github import escape_data, escape_property, problem_command
from harness.run.repeats import combine
from harness.run_record import RunRecord
from harness.verdict.reports import CaseReport, SuiteReport

FORGED = "%0A::error::forged"

# --- repeated cases, built as the runner builds them -------------------------------------

FLICKERS = 'tools_used("echo")'


def repeated_report(
    case_id: str,
    outcomes: str,
    *,
    min_pass_rate: float | None = None,
    cluster: str | None = None,
    line: int | None = 7,
) -> CaseReport:
    """A repeated case's report from synthetic runs, combined by `harness.run.repeats.combine`
    as a live run combines them: `outcomes` has a letter per run, `P` passed, `F` failed
    (its `tools_used` check, and `exact_tool_calls` too in every third failing run), `E` a
    run error."""
    extra: dict[str, Any] = {"id": case_id, "repeat": len(outcomes)}
    if min_pass_rate is not None:
        extra["min_pass_rate"] = min_pass_rate
    if cluster is not None:
        extra["cluster"] = cluster
    case = case_of(live_trace(**extra))
    fixture_path = f"evals/live/{case_id}.json"
    runs, failures = [], 0
    for letter in outcomes:
        record = RunRecord(
            final_response="hello", model_calls=2, input_tokens=40, output_tokens=20,
            duration_ms=100.0,
        )  # fmt: skip
        if letter == "E":
            runs.append(CaseReport.errored(case_id, fixture_path, "provider down: 503", record))
            continue
        failing = letter == "F"
        both = failing and failures % 3 == 2
        failures += failing
        grades = [
            Grade('response_contains("hello")', True, "found", "response"),
            Grade(FLICKERS, not failing, "not called; tools called: []" if failing else "ok",
                  "tool"),
            Grade("exact_tool_calls(1)", not both, "0 tool call(s): []" if both else "ok",
                  "tool"),
        ]  # fmt: skip
        runs.append(CaseReport.graded(case_id, fixture_path, grades, record, line=line))
    return combine(case, runs)


def not_run_report(case_id: str) -> CaseReport:
    return CaseReport.unrun(
        case_id,
        f"evals/live/{case_id}.json",
        "the run stopped after 1 failing case(s) (--maxfail)",
    )


def live_suite(*cases: CaseReport, kind: str = "live") -> SuiteReport:
    return SuiteReport(
        suite=f"evals/{kind}",
        kind=kind,
        mode="live",
        agent="openai-agents",
        cases=list(cases),  # type: ignore[arg-type]
    )


# --- GitHub's runner, modelled --------------------------------------------------------------
#
# actions/runner hands every line of a step's stdout and stderr to
# ActionCommandManager.TryProcessCommand, which tries ActionCommand.TryParseV2, then the
# legacy ActionCommand.TryParse:
#   * a line ends at CR, LF or CRLF (TextReader.ReadLine);
#   * `::name props::data` is a command when the line starts with it once TrimStart() has
#     removed .NET whitespace (char.IsWhiteSpace: no-break space, NEL, ideographic space…);
#   * `##[name props]data` is a command wherever `##[` appears in the line;
#   * the name must be registered; `stop-commands` registers its token and ignores every
#     command until one named by the token.

DOTNET_WHITESPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
DOTNET_WHITESPACE += "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
REGISTERED = frozenset(
    {
        "add-mask",
        "add-matcher",
        "add-path",
        "debug",
        "echo",
        "endgroup",
        "error",
        "group",
        "notice",
        "remove-matcher",
        "save-state",
        "set-env",
        "set-output",
        "stop-commands",
        "warning",
    }
)


class RunnerCommand(NamedTuple):
    name: str
    properties: dict[str, str]
    message: str
    line: str


def runner_lines(output: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", output)


def _v2(line: str, names: set[str]) -> RunnerCommand | None:
    text = line.lstrip(DOTNET_WHITESPACE)
    end = text.find("::", 2)
    if not text.startswith("::") or end < 0:
        return None
    name, _, props = text[2:end].partition(" ")
    if name.lower() not in names:
        return None
    properties = {}
    for prop in filter(None, props.split(",")):
        key, _, value = prop.partition("=")
        if key and value:
            properties[key] = unescape_property(value)
    return RunnerCommand(name.lower(), properties, unescape_data(text[end + 2 :]), line)


def _legacy(line: str, names: set[str]) -> RunnerCommand | None:
    start = line.find("##[")
    end = line.find("]", start)
    if start < 0 or end < 0:
        return None
    name, _, props = line[start + 3 : end].partition(" ")
    if name.lower() not in names:
        return None
    properties = dict(p.partition("=")[::2] for p in filter(None, props.split(";")))
    return RunnerCommand(name.lower(), properties, unescape_data(line[end + 1 :]), line)


def acted_on(output: str) -> bool:
    """Whether some line of `output` is a command the runner would act on."""
    return any(_v2(line, set(REGISTERED)) or _legacy(line, set(REGISTERED)) for line in
               runner_lines(output))  # fmt: skip


def runner_commands(output: str) -> list[RunnerCommand]:
    """Every command the runner would act on in `output`; the output must not leave
    command processing stopped (the harness's own annotations after it would be lost)."""
    names, token, found = set(REGISTERED), None, []
    for line in runner_lines(output):
        command = _v2(line, names) or _legacy(line, names)
        if command is None:
            continue
        if token is not None:
            if command.name == token:
                names.discard(token)
                token = None
            continue
        if command.name == "stop-commands":
            token = command.message.lower()
            assert token and token not in REGISTERED, line
            names.add(token)
            continue
        found.append(command)
    assert token is None, "the output leaves the runner's command processing stopped"
    return found


def assert_only_harness_commands(output: str, expected: list[str]) -> list[RunnerCommand]:
    """The runner acts on exactly the harness's own commands (names `expected`), each well
    formed, none of them forged."""
    commands = runner_commands(output)
    assert [c.name for c in commands] == expected, [c.line for c in commands]
    for command in commands:
        assert_well_formed(parse_command(command.line))
        assert command.line.startswith(f"::{command.name} "), command.line
        assert command.properties["title"].startswith("zeroclaw-eval"), command.line
    return commands


def test_the_runner_model_finds_what_the_runner_would_act_on() -> None:
    forged = [
        "::error::plain",
        "  \t::warning file=x::indented",
        "\u00a0::error::after a no-break space",
        "\u3000::error::after an ideographic space",
        "\x85::error::after NEL",
        "text then ##[error]legacy anywhere",
        "ok\r::error::after a bare CR",
    ]
    names = [c.name for c in runner_commands("\n".join(forged))]
    assert names == ["error", "warning", "error", "error", "error", "error", "error"]
    inert = ["x ::error::mid-line", "#[error] one hash", "::unknown::x", "\u200b::error::zwsp"]
    assert runner_commands("\n".join(inert)) == []
    stopped = "::stop-commands::t0k\n::error::ignored\n##[error]ignored\n::t0k::\n::error::seen"
    assert [c.message for c in runner_commands(stopped)] == ["seen"]
    with pytest.raises(AssertionError, match="stopped"):
        runner_commands("::stop-commands::t0k\n::error::lost")


@pytest.fixture(autouse=True)
def _own_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests running on GitHub Actions must not share the real step's annotation budget.
    for name in ("RUNNER_TEMP", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GITHUB_ACTION", raising=False)


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


def suite_of(*cases: CaseReport, kind: str = "regression", agent: str = "a") -> SuiteReport:
    return SuiteReport(
        suite=f"evals/{kind}",
        kind=kind,  # type: ignore[arg-type]
        mode="replay",
        agent=agent,
        cases=list(cases),
    )


def commands_of(report: SuiteReport, budget: Any = None) -> list[RunnerCommand]:
    return runner_commands("\n".join(github.workflow_commands(report, budget)))


def test_a_forged_message_stays_one_escaped_command() -> None:
    case_id = "weird:id,with::error::inside"
    detail = f'not found in response: "x {FORGED}" then\r\n::error::line two 100%'
    report = suite_of(graded(case_id, "evals/a,b:c.json", 1, 1, detail))
    [raw] = github.workflow_commands(report)
    [command] = parse_commands(raw)
    assert_well_formed(command)
    assert raw.startswith("::error ")
    assert command.name == "error"
    assert command.properties == {
        "file": "evals/a,b:c.json",
        "line": "7",
        "title": f"zeroclaw-eval[a]: {case_id}",
    }
    # CRLF is a line break like LF; neither can end the command.
    assert command.message == f"check_0: {detail}".replace("\r\n", "\n")
    assert "%250A::error::forged" in raw
    assert "%0A::error::line two 100%25" in raw


def test_control_characters_and_newlines_in_ids_and_files_never_reach_the_annotation() -> None:
    esc = "\x1b"
    case_id = f"id\n::error::forged{esc}]0;title\x07\u202e"
    report = suite_of(
        graded(case_id, f"evals/a\r\n::warning::x{esc}[2J.json", 0, 1, f"saw {esc}[31mred\x9b2J"),
        agent=f"agent{esc}[1m",
    )
    [command] = commands_of(report)
    shown = command.properties["title"] + command.properties["file"] + command.message
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", shown), shown
    assert "\n" not in command.properties["title"] + command.properties["file"]
    assert command.properties["title"] == (
        "zeroclaw-eval[agent\\u001b[1m]: id\\u000a::error::forged\\u001b]0;title\\u0007\\u202e"
    )
    assert command.properties["file"] == "evals/a\\u000d\\u000a::warning::x\\u001b[2J.json"
    assert command.message == "check_0: saw \\u001b[31mred\\u009b2J"


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
    commands = commands_of(suite_of(*cases))
    assert github.MAX_ANNOTATIONS == 10
    assert [c.name for c in commands] == ["error"] * 10 + ["notice"]
    assert [c.properties["title"] for c in commands[:10]] == [
        f"zeroclaw-eval[a]: case-{i:02d}" for i in range(10)
    ]
    assert commands[-1].message.startswith("3 more failing case(s) not annotated")

    exactly_ten = commands_of(suite_of(*cases[:10]))
    assert [c.name for c in exactly_ten] == ["error"] * 10
    limited = commands_of(suite_of(*cases[:5]), github.Budget(2))
    assert [c.name for c in limited] == ["error", "error", "notice"]
    assert limited[-1].message.startswith("3 more")


def test_tracked_failed_checks_are_warnings_and_only_what_the_gate_fails_on_is_an_error() -> None:
    cases = [graded("fails", "f.json", 1, 1), errored("breaks"), graded("passes", "f.json", 1, 0)]
    capability = commands_of(suite_of(*cases, kind="capability"))
    assert [(c.name, c.properties["title"]) for c in capability] == [
        ("error", "zeroclaw-eval[a]: breaks"),  # a run error fails even a tracked suite
        ("warning", "zeroclaw-eval[a]: fails"),
    ]
    for kind in ("regression", "live"):
        assert [c.name for c in commands_of(suite_of(*cases, kind=kind))] == ["error", "error"]
    # Each level has its own ten.
    many = [graded(f"f{i:02d}", "f.json", 0, 1) for i in range(12)] + [errored("e")]
    levels = [c.name for c in commands_of(suite_of(*many, kind="capability"))]
    assert levels == ["error"] + ["warning"] * 10 + ["notice"]


def test_passing_cases_are_never_annotated_and_a_missing_line_is_left_out() -> None:
    assert github.workflow_commands(suite_of(graded("p", "f.json", 3, 0))) == []
    unlocated = msgspec.structs.replace(graded("u", "f.json", 0, 1), line=None)
    [command] = commands_of(suite_of(unlocated))
    assert set(command.properties) == {"file", "title"}


def test_a_huge_message_is_cut_but_stays_well_formed() -> None:
    report = suite_of(graded("big", "f.json", 0, 1, "%\n" * 5000))
    [command] = parse_commands(github.workflow_commands(report)[0])
    assert_well_formed(command)
    assert command.message.startswith("check_0: %\n%\n")
    assert command.message.endswith("…")
    assert len(command.message) <= 2001
    two = graded("big2", "f.json", 0, 2, "y" * 5000)
    [cut] = commands_of(suite_of(two))
    assert cut.message.endswith("y… (+1 more failing check(s))")  # the count survives the cut
    assert len(cut.message) <= 2000


FLAKY = "PPFPPPPFPPPPPPPPPPFP"  # 17 of 20 passed; runs 3, 8 and 19 failed


def test_a_flaky_case_that_failed_says_so_in_its_title_and_message() -> None:
    report = live_suite(repeated_report("flaky", FLAKY), repeated_report("broken", "FFFFF"))
    commands = commands_of(report)
    assert [(c.name, c.properties["title"]) for c in commands] == [
        ("error", "zeroclaw-eval[openai-agents]: broken (0/5 runs)"),
        ("error", "zeroclaw-eval[openai-agents]: flaky (flaky 17/20)"),
    ]
    assert commands[1].message == (
        '17/20 runs passed (needs every run); run 3: tools_used("echo"): not called; '
        "tools called: []"
    )
    assert commands[1].properties["file"] == "evals/live/flaky.json"
    assert commands[1].properties["line"] == "7"  # its first failing run's failing check


def test_a_flaky_case_that_passed_gets_a_notice() -> None:
    report = live_suite(repeated_report("flaky", FLAKY, min_pass_rate=0.8))
    [command] = commands_of(report)
    assert command.name == "notice"
    assert command.properties["title"] == "zeroclaw-eval[openai-agents]: flaky (flaky 17/20)"
    assert command.message.startswith("flaky: 17/20 runs passed (needs ≥ 80%); run 3: ")
    steady = live_suite(repeated_report("steady", "PPPPP"))
    assert github.workflow_commands(steady) == []


def test_flaky_notices_never_take_the_notices_that_count_what_was_left_out() -> None:
    failing = [graded(f"f{i:02d}", "f.json", 0, 1) for i in range(12)]
    flaky = [repeated_report(f"flaky{i}", FLAKY, min_pass_rate=0.8) for i in range(12)]
    budget = github.Budget(10)
    names = [c.name for c in commands_of(live_suite(*failing, *flaky), budget)]
    assert names == ["error"] * 10 + ["notice"] + ["notice"] * 9  # the count first


def test_cases_not_run_get_one_notice_and_no_annotation_each() -> None:
    report = suite_of(graded("bad", "f.json", 0, 1), not_run_report("a"), not_run_report("b"))
    commands = commands_of(report)
    assert [c.name for c in commands] == ["error", "notice"]
    assert commands[0].properties["title"] == "zeroclaw-eval[a]: bad"
    assert commands[1].properties == {"title": "zeroclaw-eval[a]"}
    assert commands[1].message == (
        "2 case(s) not run: the run stopped after 1 failing case(s) (--maxfail); the gate "
        "fails on them; see the job summary or the JUnit report"
    )


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
    [found] = [p for p in refused.value.problems if p.field == "$.expects.bogus"]
    assert found.line == 5
    problem = Problem(str(path), "$.expects.bogus", "unknown key\n::error::forged", found.line)
    [command] = parse_commands(problem_command(problem))
    assert_well_formed(command)
    assert command.name == "error"
    assert command.properties["file"] == str(path)
    assert command.properties["line"] == "5"
    assert command.properties["title"] == "zeroclaw-eval: fixture refused"
    assert command.message == "$.expects.bogus: unknown key\n::error::forged"
    titled = parse_command(problem_command(problem, "pydantic-ai"))
    assert titled.properties["title"] == "zeroclaw-eval[pydantic-ai]: fixture refused"
    # Not JSON, or no file at all: the file is still named, without a line.
    path.write_text("{ not json", "utf-8")
    [broken] = parse_commands(problem_command(Problem(str(path), "$", "not valid JSON")))
    assert broken.properties["file"] == str(path)
    missing = Problem(str(tmp_path / "gone.json"), "$", "cannot read")
    [gone] = parse_commands(problem_command(missing))
    assert "line" not in gone.properties


# --- the step's budget, shared by every run in the step ------------------------------------


def step_env(temp: Path, action: str = "__run_2") -> dict[str, str]:
    return {
        "GITHUB_ACTIONS": "true",
        "RUNNER_TEMP": str(temp),
        "GITHUB_RUN_ID": "4242",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_JOB": "eval-regression",
        "GITHUB_ACTION": action,
    }


def test_the_budget_is_shared_through_a_file_in_runner_temp(tmp_path: Path) -> None:
    first = github.Budget.for_step(step_env(tmp_path))
    second = github.Budget.for_step(step_env(tmp_path))
    assert first.path is not None and first.path == second.path
    assert first.path.parent == tmp_path
    assert (first.take("error", 7), second.take("error", 7), second.take("warning", 3)) == (7, 3, 3)
    assert first.take("error", 1) == 0
    assert json.loads(first.path.read_text("ascii")) == {"error": 10, "warning": 3}
    assert first.path.stat().st_mode & 0o077 == 0  # only the job's user can touch it
    other_step = github.Budget.for_step(step_env(tmp_path, "__run_3"))
    assert other_step.path != first.path and other_step.take("error", 10) == 10


def test_without_the_step_variables_each_process_counts_for_itself(tmp_path: Path) -> None:
    for missing in ("RUNNER_TEMP", "GITHUB_RUN_ID", "GITHUB_JOB", "GITHUB_ACTION"):
        env = step_env(tmp_path)
        del env[missing]
        budget = github.Budget.for_step(env)
        assert budget.path is None, missing
        assert (budget.take("error", 8), budget.take("error", 8)) == (8, 2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="symbolic links and modes")
def test_a_planted_link_or_foreign_file_is_never_written_through(tmp_path: Path) -> None:
    env = step_env(tmp_path)
    path = github.Budget.for_step(env).path
    assert path is not None
    precious = tmp_path / "precious.txt"
    precious.write_text("keep", "utf-8")
    path.symlink_to(precious)
    budget = github.Budget.for_step(env)
    assert (budget.take("error", 8), budget.take("error", 8)) == (8, 2)  # per process
    assert precious.read_text("utf-8") == "keep" and path.is_symlink()
    path.unlink()
    path.write_text("not counts", "utf-8")
    assert github.Budget.for_step(env).take("error", 12) == 10
    assert path.read_text("utf-8") == "not counts"


def test_a_counts_file_nested_too_deeply_is_not_counts(tmp_path: Path) -> None:
    env = step_env(tmp_path)
    path = github.Budget.for_step(env).path
    assert path is not None
    # Within the bytes the counter reads, and deeper than Python's parser follows.
    deep = "[" * 2000 + "]" * 2000
    path.write_text(deep, "ascii")
    budget = github.Budget.for_step(env)
    assert (budget.take("error", 8), budget.take("error", 8)) == (8, 2)  # per process
    assert path.read_text("ascii") == deep


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

    # table format: commands on stdout, the forged text none of them
    diverges, forged = assert_only_harness_commands(result.stdout, ["error", "error"])
    assert runner_commands(result.stderr) == []

    # worst first: the run error, then the failed check
    assert diverges.properties["title"] == "zeroclaw-eval[openai-agents]: diverges"
    error = report["diverges"]["error"]
    assert "\n" in error  # the replay divergence message spans several lines ...
    assert diverges.message == f"run error: {error}"  # ... and decodes back intact
    assert "%0A" in diverges.line

    assert forged.properties == {
        "file": "evals/regression/a_forged.json",
        "line": str(line_containing(root / "evals/regression/a_forged.json", '"never said"')),
        "title": f"zeroclaw-eval[openai-agents]: {case_id}",
    }
    [failing] = [g for g in report[case_id]["grades"] if not g["passed"]]
    assert forged.message == f"{failing['check']}: {failing['detail']}"
    assert "%250A::error::forged" in forged.line
    properties = forged.line.partition("::")[2].partition("::")[0]
    assert "%3A" in properties and "%2C" in properties  # `:` and `,` escaped in the title
    assert diverges.properties["line"] == str(
        line_containing(root / "evals/regression/b_error.json", '"user_input"') - 1
    )


# Text that would be a workflow command to the runner: the legacy syntax anywhere in a line,
# `::` after Unicode whitespace, a bare CR.
ATTACKS = [
    "legacy ##[error]forged-legacy",
    "##[stop-commands]forged-stop",
    "\u00a0::error::forged-after-nbsp",
    "\u3000::warning::forged-after-ideographic-space",
    "\x85::error::forged-after-nel",
    "ok\r::error::forged-after-cr",
]
FORGERY = "\n".join(ATTACKS)

LOOP_RAISING_FORGERY = f"""
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        if user_input.startswith("explode"):
            raise RuntimeError({FORGERY!r})
        reply = await self.ctx.model.respond(
            ModelRequest(messages=(Message(role="user", content=user_input),))
        )
        return reply.text


def factory(ctx):
    return Session(ctx)
"""


def forgery_project(tmp_path: Path) -> tuple[Path, str]:
    """A suite whose model text, run error, case id and file name all try to forge."""
    root = project(
        tmp_path,
        {
            "a.json": says("says", f"hi {FORGERY}", ["hi", "never"], case_id="##[error]id"),
            "##[warning]file.json": says("file", "hi", ["never"]),
            "c.json": fixture(
                "explodes", [turn("explode now", text_step("hi"))], {"response_contains": ["hi"]}
            ),
        },
    )
    return root, f"{write_module(root, LOOP_RAISING_FORGERY)}:factory"


@pytest.mark.parametrize("fmt", ["table", "json", "junit"])
def test_no_source_can_forge_a_command_on_stdout_or_stderr(
    run_cli: Cli, tmp_path: Path, fmt: str
) -> None:
    root, agent = forgery_project(tmp_path)
    result = run_cli(
        "eval", "run", "--agent", agent, "--format", fmt,
        cwd=root, env={"GITHUB_ACTIONS": "true"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    on_stdout = ["error"] * 3 if fmt == "table" else []
    assert_only_harness_commands(result.stdout, on_stdout)
    assert_only_harness_commands(result.stderr, [] if fmt == "table" else ["error"] * 3)
    if fmt == "json":  # the document still holds the exact text
        document = json.loads(result.stdout)
        cases = {c["id"]: c for c in document["cases"]}
        assert cases["explodes"]["error"] == f"RuntimeError: {FORGERY}"
        assert cases["##[error]id"]["record"]["final_response"] == f"hi {FORGERY}"
    if fmt == "junit":
        assert "forged-after-nbsp" in result.stdout


def test_the_table_wraps_untrusted_text_in_stop_commands(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, agent = forgery_project(tmp_path)
    # Were the table's neutralising to miss something, the runner still ignores it.
    monkeypatch.setattr("harness.reporters.table.inert", lambda text: text, raising=False)
    result = run_cli("eval", "run", "--agent", agent, cwd=root, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1, result.stderr
    assert_only_harness_commands(result.stdout, ["error"] * 3)
    tokens = re.findall(r"^::stop-commands::(.*)$", result.stdout, re.M)
    assert len(tokens) == 4  # each case, and the summary line
    assert all(re.fullmatch("[0-9a-f]{32}", t) for t in tokens) and len(set(tokens)) == 4
    for token in tokens:
        assert f"\n::{token}::\n" in result.stdout
    blocks = re.compile(r"^::stop-commands::(\w+)\n(.*?)^::\1::\n", re.M | re.S)
    wrapped = "".join(text for _token, text in blocks.findall(result.stdout))
    markers = re.findall(r"forged-[a-z-]+", FORGERY)
    assert len(markers) == len(ATTACKS)
    assert all(marker in wrapped for marker in markers)
    assert "cases passed" in wrapped
    outside = blocks.sub("", result.stdout).splitlines()
    table = [line for line in outside if not re.match("::(error|warning|notice) ", line)]
    assert not [line for line in table if "forged-" in line or "##[" in line]


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
    [command] = assert_only_harness_commands(result.stdout, ["error"])
    assert command.properties["title"].endswith("]: explodes")


def capability_project(tmp_path: Path, with_error: bool) -> Path:
    fixtures = {"a.json": says("passes", "hi", ["hi"]), "b.json": says("fails", "hi", ["zzz"])}
    if with_error:
        fixtures["c.json"] = under_scripted_fixture("breaks")
    return project(tmp_path, fixtures, suite="evals/capability")


@pytest.mark.parametrize("with_error", [False, True])
def test_a_tracked_suite_warns_of_failed_checks(
    run_cli: Cli, tmp_path: Path, with_error: bool
) -> None:
    root = capability_project(tmp_path, with_error)
    result = run_cli("eval", "run", cwd=root, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == (1 if with_error else 0), result.stderr
    expected = ["error", "warning"] if with_error else ["warning"]
    commands = assert_only_harness_commands(result.stdout, expected)
    assert commands[-1].properties["title"] == "zeroclaw-eval[openai-agents]: fails"


def many_failures(tmp_path: Path, count: int) -> Path:
    fixtures = {f"c{i:02d}.json": says(f"c{i:02d}", "hi", ["zzz"]) for i in range(count)}
    return project(tmp_path, fixtures)


def test_two_agents_in_one_step_share_ten_error_annotations(run_cli: Cli, tmp_path: Path) -> None:
    root = many_failures(tmp_path, 7)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    seen = []
    for agent in ("openai-agents", "pydantic-ai"):
        result = run_cli("eval", "run", "--agent", agent, cwd=root, env=step_env(temp))
        assert result.returncode == 1, result.stderr
        seen.append(runner_commands(result.stdout))
    first, second = seen
    assert [c.name for c in first] == ["error"] * 7
    assert [c.name for c in second] == ["error"] * 3 + ["notice"]
    assert second[-1].message.startswith("4 more failing case(s) not annotated")
    assert {c.properties["title"].partition(":")[0] for c in first + second[:3]} == {
        "zeroclaw-eval[openai-agents]",
        "zeroclaw-eval[pydantic-ai]",
    }
    # The next step has its own ten.
    later = run_cli("eval", "run", cwd=root, env=step_env(temp, "__run_3"))
    assert [c.name for c in runner_commands(later.stdout)] == ["error"] * 7


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


def check_twelve(root: Path, output: str) -> None:
    commands = assert_only_harness_commands(output, ["error"] * 10 + ["notice"])
    errors = commands[:10]
    assert [c.properties["title"] for c in errors] == [
        f"zeroclaw-eval[openai-agents]: {stem}" for stem in EXPECTED_ORDER
    ]
    for command, stem in zip(errors, EXPECTED_ORDER, strict=True):
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
    check_twelve(twelve, result.stdout)
    assert runner_commands(result.stderr) == []


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
    check_twelve(twelve, result.stderr)


def test_junit_format_keeps_stdout_the_document(run_cli: Cli, twelve: Path) -> None:
    result = run_cli("eval", "run", "--format", "junit", cwd=twelve, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("<?xml")
    assert "::" not in result.stdout.replace("zeroclaw-eval:evals", "")
    check_twelve(twelve, result.stderr)


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
    assert runner_commands(result.stdout) == runner_commands(result.stderr) == []
    assert "::" not in result.stdout + result.stderr
    assert summary.read_text("utf-8") == "earlier step\n"


def test_no_commands_without_github_actions(run_cli: Cli, twelve: Path) -> None:
    result = run_cli("eval", "run", cwd=twelve)
    assert result.returncode == 1
    assert runner_commands(result.stdout) == runner_commands(result.stderr) == []
    assert "::" not in result.stdout  # nor stop-commands blocks: nothing to protect from
    result = run_cli("eval", "run", cwd=twelve, env={"GITHUB_ACTIONS": "false"})
    assert runner_commands(result.stdout) == runner_commands(result.stderr) == []


def test_annotations_github_emits_them_without_the_env_var(run_cli: Cli, twelve: Path) -> None:
    result = run_cli("eval", "run", "--annotations", "github", "--format", "json", cwd=twelve)
    assert result.returncode == 1
    json.loads(result.stdout)
    check_twelve(twelve, result.stderr)


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

SYNTAX_ERROR = '{\n  "model_name": "broken",\n  "turns": [\n    oops\n  ]\n}\n'


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
        {
            "a_ok.json": says("ok", "hi", ["hi"]),
            "b_bogus.json": bogus,
            "c_tool.json": bad_tool,
            "d_syntax.json": SYNTAX_ERROR,
        },
    )


@pytest.mark.parametrize("action", ["run", "check"])
def test_admission_refusal_is_annotated_at_the_offending_key(
    run_cli: Cli, tmp_path: Path, action: str
) -> None:
    root = refused_project(tmp_path)
    result = run_cli("eval", action, cwd=root, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1
    assert result.stdout == ""
    commands = runner_commands(result.stderr)
    assert commands, result.stderr
    by_file = {c.properties["file"]: c for c in commands}
    assert set(by_file) == {
        "evals/regression/b_bogus.json",
        "evals/regression/c_tool.json",
        "evals/regression/d_syntax.json",
    }
    for command in commands:
        assert_well_formed(parse_command(command.line))
        assert command.line.startswith("::error ")
        assert command.properties["title"] == "zeroclaw-eval: fixture refused"
    suite = root / "evals" / "regression"
    bogus = by_file["evals/regression/b_bogus.json"]
    assert bogus.properties["line"] == str(line_containing(suite / "b_bogus.json", '"bogus_key"'))
    assert bogus.message.startswith("$.expects.bogus_key: unknown key")
    tool = by_file["evals/regression/c_tool.json"]
    assert tool.properties["line"] == str(line_containing(suite / "c_tool.json", "no_such_tool"))
    assert "no_such_tool" in tool.message
    # A JSON syntax error is annotated at the line of the error, the one its message names.
    syntax = by_file["evals/regression/d_syntax.json"]
    assert syntax.properties["line"] == str(line_containing(suite / "d_syntax.json", "oops"))
    assert "line 4" in syntax.message
    # without GITHUB_ACTIONS: the same refusal, no commands
    plain = run_cli("eval", action, cwd=root)
    assert plain.returncode == 1
    assert runner_commands(plain.stderr) == []
    assert "b_bogus.json: $.expects.bogus_key: unknown key" in plain.stderr


def test_a_refused_suite_is_named_in_the_step_summary(run_cli: Cli, tmp_path: Path) -> None:
    root = refused_project(tmp_path)
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n", encoding="utf-8")
    result = run_cli(
        "eval", "run", "--agent", "pydantic-ai", "--summary", "reports/summary.md",
        cwd=root, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)},
    )  # fmt: skip
    assert result.returncode == 1
    summary = step.read_text("utf-8")
    assert summary.startswith("earlier step\n## ❌ zeroclaw-eval[pydantic-ai]: suite")
    assert "refused (exit 1)" in summary and "nothing was run" in summary
    rows = [line for line in summary.splitlines() if line.startswith("| <code>evals/")]
    by_file = {re.search(r"<code>(.*?)</code>", row).group(1): row for row in rows}  # type: ignore[union-attr]
    assert set(by_file) == {
        "evals/regression/b_bogus.json",
        "evals/regression/c_tool.json",
        "evals/regression/d_syntax.json",
    }
    assert (
        "<code>$.expects.bogus_key</code> | unknown key" in by_file["evals/regression/b_bogus.json"]
    )
    assert "no_such_tool" in by_file["evals/regression/c_tool.json"]
    assert "| 4 | <code>$</code> | not valid JSON" in by_file["evals/regression/d_syntax.json"]
    commands = runner_commands(result.stderr)
    assert {c.properties["title"] for c in commands} == {
        "zeroclaw-eval[pydantic-ai]: fixture refused"
    }
    assert not (root / "reports" / "summary.md").exists()  # a refused suite measured nothing
