"""`harness.cli`: `zeroclaw eval run|check` through `main(argv)`: exit codes, output streams,
report files, suite kinds, a user's loop, help.

The same contract through a real `python -m harness` process is in test_process.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest
from conftest import (
    ESC,
    FAITHFUL_LOOP,
    REPO,
    Cli,
    echo_fixture,
    failing_fixture,
    fixture,
    green_project,
    greeting_fixture,
    project,
    red_project,
    says,
    text_step,
    turn,
    under_scripted_fixture,
    write_module,
)

# --- run: exit codes ------------------------------------------------------------------------


def test_no_color_is_honoured_by_the_command(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "run", cwd=red_project(tmp_path), env={"NO_COLOR": "1"})
    assert result.returncode == 1
    assert ESC not in result.stdout
    assert ESC not in result.stderr


def test_admission_error_exits_1_naming_file_and_field(run_cli: Cli, tmp_path: Path) -> None:
    bad = echo_fixture("typo")
    bad["expects"]["respose_contains"] = bad["expects"].pop("response_contains")
    root = project(tmp_path, {"a_ok.json": greeting_fixture("ok"), "b_bad.json": bad})
    result = run_cli("eval", "run", cwd=root)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "b_bad.json" in result.stderr
    assert "$.expects.respose_contains" in result.stderr
    assert "did you mean response_contains?" in result.stderr
    assert "nothing was run" in result.stderr


def test_admission_error_with_json_format_keeps_stdout_empty(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": "{not json"})
    result = run_cli("eval", "run", "--format", "json", cwd=root)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "a.json" in result.stderr
    assert "line 1" in result.stderr


def test_missing_suite_directory_exits_1(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "run", "--suite", "nowhere", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "nowhere" in result.stderr


def test_unknown_option_and_missing_action_are_usage_errors(run_cli: Cli, tmp_path: Path) -> None:
    assert run_cli("eval", "run", "--frobnicate", cwd=tmp_path).returncode == 2
    assert run_cli("eval", cwd=tmp_path).returncode == 2
    assert run_cli(cwd=tmp_path).returncode == 2
    bad_kind = run_cli("eval", "run", "--suite-kind", "nightly", cwd=tmp_path)
    assert bad_kind.returncode == 2


def test_live_mode_without_provider_configuration_exits_1_naming_what_is_missing(
    run_cli: Cli,
    tmp_path: Path,
) -> None:
    result = run_cli(
        "eval", "run", "--mode", "live", cwd=green_project(tmp_path), env={"OPENAI_API_KEY": ""}
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert "live_base_url" in result.stderr
    assert "live_model" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr


def test_an_empty_agent_flag_falls_back_to_the_configured_agent(
    run_cli: Cli, tmp_path: Path
) -> None:
    # `--agent "$AGENT"` with the variable unset: the configuration decides, as before.
    result = run_cli("eval", "run", "--agent", "", cwd=green_project(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "agent openai-agents" in result.stdout


def test_unknown_agent_exits_1(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "run", "--agent", "no-such-agent", cwd=green_project(tmp_path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "no-such-agent" in result.stderr


# --- run: output formats --------------------------------------------------------------------


def test_json_format_of_a_green_suite(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "run", "--format", "json", cwd=green_project(tmp_path))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["exit_code"] == 0
    assert document["all_passed"] is True


def test_junit_format_puts_only_xml_on_stdout(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "run", "--format", "junit", cwd=red_project(tmp_path))
    assert result.returncode == 1
    root = ET.fromstring(result.stdout.encode("utf-8"))
    cases = {
        (c.get("name") or "").removesuffix("[openai-agents]"): c for c in root.iter("testcase")
    }
    assert set(cases) == {"echo-case", "wrong-answer", "under-scripted"}
    assert cases["wrong-answer"].get("file") == "evals/regression/b_wrong.json"
    failure = cases["wrong-answer"].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        'response_contains("hi"): not found in response: "I said bye" (+1 more failing check(s))'
    )
    assert cases["under-scripted"].find("error") is not None
    assert cases["echo-case"].find("failure") is None


def test_report_files_are_written_in_the_same_run(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    junit = root / "reports" / "junit.xml"
    report = root / "reports" / "report.json"
    result = run_cli(
        "eval", "run", "--junit-xml", "reports/junit.xml", "--json-report", report, cwd=root
    )
    assert result.returncode == 1
    assert "1/3 cases passed" in result.stdout  # the table still goes to stdout
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["exit_code"] == 1
    assert [c["id"] for c in document["cases"]] == ["echo-case", "wrong-answer", "under-scripted"]
    xml = junitparser.JUnitXml.fromfile(str(junit))
    parsed = {case.name.removesuffix("[openai-agents]"): case for suite in xml for case in suite}
    assert set(parsed) == {"echo-case", "wrong-answer", "under-scripted"}
    assert parsed["echo-case"].is_passed
    assert isinstance(parsed["wrong-answer"].result[0], junitparser.Failure)
    assert isinstance(parsed["under-scripted"].result[0], junitparser.Error)
    tree = ET.parse(junit)
    files = sorted(c.get("file") for c in tree.iter("testcase"))
    assert files == [
        "evals/regression/a_echo.json",
        "evals/regression/b_wrong.json",
        "evals/regression/c_under.json",
    ]
    assert sorted(p.name for p in (root / "reports").iterdir()) == ["junit.xml", "report.json"]


def test_report_files_with_json_format(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    result = run_cli(
        "eval", "run", "--format", "json", "--junit-xml", "j.xml", "--json-report", "r.json",
        cwd=root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads((root / "r.json").read_text(encoding="utf-8"))
    assert len(list(ET.parse(root / "j.xml").iter("testcase"))) == 2


def test_unwritable_report_path_exits_1(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    (root / "reports").write_text("a file, not a directory")
    result = run_cli("eval", "run", "--junit-xml", "reports/junit.xml", cwd=root)
    assert result.returncode == 1
    assert "cannot write report" in result.stderr
    assert (root / "reports").read_text() == "a file, not a directory"


def test_runs_from_a_subdirectory_with_paths_relative_to_the_project(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = green_project(tmp_path)
    sub = root / "src" / "pkg"
    sub.mkdir(parents=True)
    result = run_cli("eval", "run", "--format", "junit", cwd=sub)
    assert result.returncode == 0, result.stderr
    files = [c.get("file") for c in ET.fromstring(result.stdout).iter("testcase")]
    assert files == ["evals/regression/a_echo.json", "evals/regression/b_hi.json"]


# --- suite kinds ----------------------------------------------------------------------------


def test_capability_suite_exits_0_on_failed_checks(run_cli: Cli, tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"a.json": echo_fixture("ok"), "b.json": failing_fixture()},
        suite="evals/capability",
    )
    result = run_cli("eval", "run", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["kind"] == "capability"
    assert document["totals"]["failed"] == 1
    assert run_cli("eval", "run", "--suite-kind", "regression", cwd=root).returncode == 1


def test_capability_suite_exits_1_on_a_run_error(run_cli: Cli, tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"a.json": echo_fixture("ok"), "b.json": under_scripted_fixture()},
        suite="evals/capability",
    )
    assert run_cli("eval", "run", cwd=root).returncode == 1


def test_suite_kind_flag_overrides_the_directory(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("ok"), "b.json": failing_fixture()})
    result = run_cli("eval", "run", "--suite-kind", "capability", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "capability suite" in result.stdout


def test_capability_directory_with_failing_checks_exits_0(run_cli: Cli, tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"a.json": says("passes", "hi", ["hi"]), "b.json": says("fails", "hi", ["zzz"])},
        suite="evals/capability",
    )
    result = run_cli("eval", "run", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["kind"], document["exit_code"]) == ("capability", 0)
    assert document["totals"]["failed"] == 1
    # the same suite gated as regression fails
    assert run_cli("eval", "run", "--suite-kind", "regression", cwd=root).returncode == 1


def test_suite_kind_flag_makes_any_directory_capability(run_cli: Cli, tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"a.json": says("passes", "hi", ["hi"]), "b.json": says("fails", "hi", ["zzz"])},
        suite="evals/nightly",
    )
    assert run_cli("eval", "run", cwd=root).returncode == 1  # regression by default
    result = run_cli("eval", "run", "--suite-kind", "capability", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["kind"] == "capability"


# --- a user's own loop ----------------------------------------------------------------------


def test_user_loop_agent_and_timeout_flag(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    module = write_module(root, FAITHFUL_LOOP)
    hang = write_module(
        root,
        "import asyncio\n\n\nclass S:\n    async def run_turn(self, text):\n"
        "        await asyncio.sleep(3600)\n\n\ndef factory(ctx):\n    return S()\n",
    )
    ok = run_cli("eval", "run", "--agent", f"{module}:factory", "--format", "json", cwd=root)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["agent"] == f"{module}:factory"
    hung = run_cli(
        "eval", "run", "--agent", f"{hang}:factory", "--timeout", "0.3", "--format", "json",
        cwd=root,
    )  # fmt: skip
    assert hung.returncode == 1
    errors = [c["error"] for c in json.loads(hung.stdout)["cases"]]
    assert len(errors) == 2
    assert all("timed out after 0.3s" in e for e in errors)


def test_non_positive_timeout_is_refused(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "run", "--timeout", "0", cwd=green_project(tmp_path))
    assert result.returncode in (1, 2)
    assert result.stdout == ""
    assert "--timeout" in result.stderr


# --- check ----------------------------------------------------------------------------------


def test_check_exits_0_on_an_admissible_suite(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "check", cwd=green_project(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "2 case(s)" in result.stdout
    assert "admitted" in result.stdout


def test_check_refuses_a_vacuous_case(run_cli: Cli, tmp_path: Path) -> None:
    vacuous = fixture(
        "vacuous", [turn("hi", text_step("hello"))], {"response_not_contains": ["error"]}
    )
    root = project(tmp_path, {"a.json": greeting_fixture("ok"), "v.json": vacuous})
    result = run_cli("eval", "check", cwd=root)
    assert result.returncode == 1
    assert "v.json" in result.stderr
    assert "$.expects" in result.stderr
    assert "empty run" in result.stderr
    assert "/a.json" not in result.stderr  # the good fixture is not blamed


def test_check_reports_every_bad_fixture(run_cli: Cli, tmp_path: Path) -> None:
    no_turns = fixture("no-turns", [], {"response_contains": ["x"]})
    blank = fixture("blank", [turn("  ", text_step("x"))], {"response_contains": ["x"]})
    root = project(tmp_path, {"a.json": no_turns, "b.json": blank})
    result = run_cli("eval", "check", "--suite", "evals/regression", cwd=root)
    assert result.returncode == 1
    assert "a.json: $.turns" in result.stderr
    assert "b.json: $.turns[0].user_input" in result.stderr
    assert "2 file(s)" in result.stderr


def test_check_missing_suite_exits_1(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "check", "--suite", "missing", cwd=tmp_path)
    assert result.returncode == 1
    assert "missing" in result.stderr


# --- help ----------------------------------------------------------------------------------


def test_eval_help_works(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("eval", "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "run" in result.stdout
    assert "check" in result.stdout
    run_help = run_cli("eval", "run", "--help", cwd=REPO)
    assert run_help.returncode == 0
    for option in ("--suite", "--format", "--junit-xml", "--json-report", "--suite-kind"):
        assert option in run_help.stdout


WANDERING_LOOP = FAITHFUL_LOOP.replace(
    "    async def run_turn(self, user_input):\n",
    "    async def run_turn(self, user_input):\n"
    "        import os\n"
    "        os.chdir(self.ctx.workspace)  # an agent that moves the process elsewhere\n",
)


def test_an_agent_changing_directory_moves_neither_cases_nor_reports(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = green_project(tmp_path)
    module = write_module(root, WANDERING_LOOP)
    result = run_cli(
        "eval", "run", "--agent", f"{module}:factory", "--json-report", "out/report.json",
        "--format", "json", cwd=root,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((root / "out" / "report.json").read_text("utf-8"))
    assert report["totals"]["passed"] == report["totals"]["cases"] == 2
    assert all(c["fixture"].startswith("evals/regression/") for c in report["cases"])


# --- report paths ---------------------------------------------------------------------------

# Leaves a mark when any case runs: a report path refused before the run leaves none.
MARKING_LOOP = FAITHFUL_LOOP.replace(
    "    async def run_turn(self, user_input):\n",
    "    async def run_turn(self, user_input):\n        open('case-ran', 'w').close()\n",
)


def test_one_file_named_for_two_reports_is_a_usage_error(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    module = write_module(root, MARKING_LOOP)
    result = run_cli(
        "eval", "run", "--agent", f"{module}:factory",
        "--junit-xml", "reports/out", "--json-report", "./reports/../reports/out", cwd=root,
    )  # fmt: skip
    assert result.returncode == 2
    assert "named for two reports" in result.stderr
    assert not (root / "case-ran").exists() and not (root / "reports").exists()


def test_every_report_path_is_checked_before_the_first_case_runs(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = green_project(tmp_path)
    (root / "reports").mkdir()
    (root / "reports" / "junit.xml").mkdir()  # a directory where the report would go
    module = write_module(root, MARKING_LOOP)
    result = run_cli(
        "eval", "run", "--agent", f"{module}:factory", "--json-report", "reports/report.json",
        "--junit-xml", "reports/junit.xml", cwd=root,
    )  # fmt: skip
    assert result.returncode == 1
    assert "reports/junit.xml: cannot write report: it is a directory" in result.stderr
    assert not (root / "case-ran").exists()
    assert not (root / "reports" / "report.json").exists()


def test_a_report_that_cannot_be_written_keeps_no_other_from_being_written(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.io import atomic

    mkstemp = atomic.tempfile.mkstemp

    def disk_full_for_junit(*args: object, prefix: str = "", **kwargs: object) -> object:
        if prefix.startswith(".junit.xml"):
            raise OSError(28, "No space left on device")
        return mkstemp(*args, prefix=prefix, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(atomic.tempfile, "mkstemp", disk_full_for_junit)
    root = green_project(tmp_path)
    result = run_cli(
        "eval", "run", "--junit-xml", "junit.xml", "--json-report", "report.json",
        "--summary", "summary.md", cwd=root,
    )  # fmt: skip
    assert result.returncode == 1
    assert "junit.xml: cannot write report: No space left on device" in result.stderr
    assert json.loads((root / "report.json").read_text())["totals"]["passed"] == 2
    assert (root / "summary.md").exists()
    assert not (root / "junit.xml").exists()
    assert "passed" in result.stdout  # the verdict is still shown
    assert not list(root.glob(".*.partial"))


# --- paths from the repository root ---------------------------------------------------------


@pytest.mark.parametrize("marker", ["git", "github_workspace"])
def test_paths_in_reports_start_at_the_repository_root_in_a_monorepo(
    run_cli: Cli, tmp_path: Path, marker: str
) -> None:
    repository = tmp_path / "repo"
    root = red_project(repository / "services")  # services/project holds pyproject.toml
    env = {"GITHUB_ACTIONS": "true"}
    if marker == "git":
        (repository / ".git").mkdir()
    else:
        env["GITHUB_WORKSPACE"] = str(repository)
    result = run_cli("eval", "run", "--format", "junit", cwd=root, env=env)
    assert result.returncode == 1
    files = {c.get("file") for c in ET.fromstring(result.stdout).iter("testcase")}
    assert files == {
        f"services/project/evals/regression/{name}.json"
        for name in ("a_echo", "b_wrong", "c_under")
    }
    annotated = [line for line in result.stderr.splitlines() if "file=" in line]
    assert annotated and all("file=services/project/evals/regression/" in a for a in annotated)


def test_the_commands_own_messages_cannot_forge_a_workflow_command(
    run_cli: Cli, tmp_path: Path
) -> None:
    """A refusal quotes the fixture's key: `##[error]` in it must not reach stderr, where
    the runner reads legacy commands anywhere in a line, nor an ESC reach the terminal."""
    data = echo_fixture("forger")
    data["expects"]["##[error]forged \x1b]0;title\x07"] = 1
    root = project(tmp_path, {"a.json": data})
    result = run_cli("eval", "check", cwd=root)
    assert result.returncode == 1
    assert "unknown key" in result.stderr
    assert "##[" not in result.stderr and "\x1b" not in result.stderr
    assert "#\\u0023[error]forged" in result.stderr


def test_a_refused_suites_annotations_name_files_from_the_repository_root(
    run_cli: Cli, tmp_path: Path
) -> None:
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    root = project(repository / "sub", {"bad.json": '{"model_name": "x",\n  "turns": [\n'})
    result = run_cli("eval", "check", cwd=root, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1
    annotations = [line for line in result.stderr.splitlines() if line.startswith("::error")]
    assert annotations, result.stderr
    assert all("file=sub/project/evals/regression/bad.json" in a for a in annotations)


def test_a_report_path_through_a_linked_directory_is_refused(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "r.json").write_text("precious", encoding="utf-8")
    (root / "reports").symlink_to(victim)
    result = run_cli("eval", "run", "--json-report", "reports/r.json", cwd=root)
    assert result.returncode == 1
    assert "reports is a symbolic link" in result.stderr
    assert (victim / "r.json").read_text(encoding="utf-8") == "precious"


def test_a_device_as_history_is_refused_before_any_case_runs(run_cli: Cli, tmp_path: Path) -> None:
    root = green_project(tmp_path)
    module = write_module(root, MARKING_LOOP)
    result = run_cli(
        "eval", "run", "--agent", f"{module}:factory", "--history", "/dev/null", cwd=root
    )
    assert result.returncode == 1
    assert "/dev/null: cannot append history: it is a device, not a file" in result.stderr
    assert not (root / "case-ran").exists()


def test_the_step_summary_stays_where_it_was_named_when_the_agent_moves(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = green_project(tmp_path)
    module = write_module(root, WANDERING_LOOP)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "summary.md"}
    result = run_cli("eval", "run", "--agent", f"{module}:factory", cwd=root, env=env)
    assert result.returncode == 0, result.stderr
    assert "zeroclaw-eval" in (root / "summary.md").read_text(encoding="utf-8")
