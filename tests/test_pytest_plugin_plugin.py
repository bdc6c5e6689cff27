"""`harness/pytest_plugin/plugin.py`: the `pytest11` entry point, driven as users drive it, by
`python -m pytest` in a project of its own (a real process: pytest's collection, `--lf`
cache, JUnit file and xdist workers are the process's)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import junitparser
import pytest
from conftest import (
    CI_VARIABLE_PREFIXES,
    REPO,
    echo_fixture,
    failing_fixture,
    green_project,
    live_trace,
    project,
    red_project,
    under_scripted_fixture,
    write_fixture,
)
from test_reporters_case_view import assert_details_have_lines, dropping_project

from harness.io.json_paths import line_of

SUITE = "evals/regression"
# Every case of the red project (`conftest.red_project`), by node id.
ECHO = "evals/regression/a_echo.json::echo-case"
WRONG = "evals/regression/b_wrong.json::wrong-answer"
UNDER = "evals/regression/c_under.json::under-scripted"
UNIT_TEST = "def test_unit() -> None:\n    assert True\n"


def run_pytest(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`python -m pytest ARGS` in `cwd`, with none of this run's pytest or CI settings."""
    environment = {
        k: v
        for k, v in os.environ.items()
        # pytest quotes whole failures in its short summary on CI (CI, BUILD_NUMBER).
        if not k.startswith((*CI_VARIABLE_PREFIXES, "PYTEST_"))
        and k not in ("COLUMNS", "CI", "BUILD_NUMBER")
    }
    # Wide enough that the short summary quotes a whole first failure; no colour codes.
    environment.update({"COLUMNS": "400", "PY_COLORS": "0", "PYTHONIOENCODING": "utf-8"})
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )


def collected(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The node ids `--collect-only -q` listed."""
    return [line for line in result.stdout.splitlines() if "::" in line]


def failing_line(root: Path) -> int:
    """The fixture line the red project's wrong answer fails at: its first failing check."""
    text = (root / "evals/regression/b_wrong.json").read_text(encoding="utf-8")
    return line_of(text, "$.expects.response_contains[0]")


def properties_of(case: junitparser.TestCase) -> dict[str, str]:
    """A JUnit test case's `<properties>`, by name."""
    found = case.child(junitparser.Properties)
    if found is None:
        return {}
    return {p.name: p.value for p in found.iterchildren(junitparser.Property)}


def test_the_plugin_is_the_packages_pytest11_entry_point() -> None:
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert [p.value for p in plugins if p.name == "zeroclaw"] == ["harness.pytest_plugin.plugin"]


# --- running cases -------------------------------------------------------------------------


def test_a_green_suite_passes_one_item_per_case_named_by_its_id(tmp_path: Path) -> None:
    result = run_pytest(
        "--zeroclaw", SUITE, "-v", "-p", "no:cacheprovider", cwd=green_project(tmp_path)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{ECHO} PASSED" in result.stdout
    assert "evals/regression/b_hi.json::hi PASSED" in result.stdout
    assert "2 passed" in result.stdout
    assert "zeroclaw: agent openai-agents; suites: evals/regression" in result.stdout


def test_a_failing_case_fails_with_the_tables_detail(tmp_path: Path) -> None:
    root = red_project(tmp_path)
    result = run_pytest("--zeroclaw", SUITE, "-ra", "-p", "no:cacheprovider", cwd=root)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "1 passed" in out and "2 failed" in out
    # The case's lines of the table, under the case's own heading ...
    assert "_ wrong-answer _" in out
    assert "  ✗ wrong-answer (evals/regression/b_wrong.json)  0/2 checks" in out
    assert '      ✗ response_contains("hi"): not found in response: "I said bye"' in out
    assert '      ✗ exact_tool_calls(2): 1 tool call(s): ["echo"]' in out
    # ... the fixture line of what failed, and the transcript `run -v` shows.
    line = failing_line(root)
    assert f"  at evals/regression/b_wrong.json:{line}" in out
    assert "    ← model answers I said bye" in out
    # A run error fails too, with its message.
    assert "turn 0 requested more model responses than the trace scripts" in out
    # pytest's own summary quotes the first failure.
    assert (
        f'FAILED {WRONG} - Failed: response_contains("hi"): not found in response: '
        '"I said bye" (+1 more failing check(s))'
    ) in out
    assert f"FAILED {UNDER} - Failed: run error: " in out


def test_the_check_list_shows_the_harnesss_multi_line_details_as_lines(tmp_path: Path) -> None:
    root, agent = dropping_project(tmp_path)
    result = run_pytest(
        "--zeroclaw", SUITE, "--zeroclaw-agent", agent, "-p", "no:cacheprovider", cwd=root
    )
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert out.count("the request held:") == 2  # the table's lines, then the checks
    assert_details_have_lines(out[out.index("  at evals/regression/a.json") :])


def test_another_agent_is_chosen_with_zeroclaw_agent(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    result = run_pytest(
        "--zeroclaw", SUITE, "--zeroclaw-agent", "pydantic-ai", "-p", "no:cacheprovider", cwd=root
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "zeroclaw: agent pydantic-ai" in result.stdout
    assert "2 passed" in result.stdout


def test_a_single_fixture_is_a_suite_of_one(tmp_path: Path) -> None:
    root = red_project(tmp_path)
    result = run_pytest(
        "--zeroclaw", "evals/regression/b_wrong.json", "-p", "no:cacheprovider", cwd=root
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed" in result.stdout and "passed" not in result.stdout
    assert "  ✗ wrong-answer (evals/regression/b_wrong.json)  0/2 checks" in result.stdout


# --- pytest's own selection and reports ----------------------------------------------------


def test_k_selects_by_case_id_and_by_file_name(tmp_path: Path) -> None:
    root = red_project(tmp_path)
    by_id = run_pytest("--zeroclaw", SUITE, "--collect-only", "-q", "-k", "wrong-answer", cwd=root)
    assert collected(by_id) == [WRONG], by_id.stdout
    by_file = run_pytest("--zeroclaw", SUITE, "--collect-only", "-q", "-k", "c_under", cwd=root)
    assert collected(by_file) == [UNDER], by_file.stdout
    negated = run_pytest(
        "--zeroclaw", SUITE, "--collect-only", "-q", "-k", "not echo and not b_wrong", cwd=root
    )
    assert collected(negated) == [UNDER], negated.stdout


def test_x_stops_at_the_first_failure(tmp_path: Path) -> None:
    result = run_pytest(
        "--zeroclaw", SUITE, "-x", "-v", "-p", "no:cacheprovider", cwd=red_project(tmp_path)
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "stopping after 1 failures" in result.stdout
    assert f"{WRONG} FAILED" in result.stdout
    assert UNDER not in result.stdout.split("= FAILURES =")[0]
    assert "1 failed, 1 passed" in result.stdout


def test_lf_reruns_only_the_last_failures(tmp_path: Path) -> None:
    root = red_project(tmp_path)
    first = run_pytest("--zeroclaw", SUITE, cwd=root)
    assert first.returncode == 1, first.stdout + first.stderr
    # The wrong answer is put right; the rerun runs it and the run error, not the rest.
    write_fixture(root / SUITE, "b_wrong.json", echo_fixture("wrong-answer", "fixed"))
    again = run_pytest("--zeroclaw", SUITE, "--lf", "-v", cwd=root)
    assert again.returncode == 1, again.stdout + again.stderr
    assert f"{WRONG} PASSED" in again.stdout
    assert f"{UNDER} FAILED" in again.stdout
    assert ECHO not in again.stdout
    assert "1 failed, 1 passed" in again.stdout


def test_junitxml_holds_one_testcase_per_case_with_the_failure(tmp_path: Path) -> None:
    root = red_project(tmp_path)
    junit = tmp_path / "junit.xml"
    result = run_pytest(
        "--zeroclaw", SUITE, f"--junitxml={junit}", "-p", "no:cacheprovider", cwd=root
    )
    assert result.returncode == 1, result.stdout + result.stderr
    cases = {
        case.name: case for suite in junitparser.JUnitXml.fromfile(str(junit)) for case in suite
    }
    assert sorted(cases) == ["echo-case", "under-scripted", "wrong-answer"]
    assert cases["echo-case"].classname == "evals.regression.a_echo.json"
    assert cases["echo-case"].is_passed
    (failure,) = cases["wrong-answer"].result
    assert isinstance(failure, junitparser.Failure)
    assert (failure.message or "").startswith('Failed: response_contains("hi"): not found')
    assert "exact_tool_calls(2): 1 tool call(s)" in (failure.text or "")
    properties = properties_of(cases["wrong-answer"])
    line = failing_line(root)
    assert properties == {
        "fixture": "evals/regression/b_wrong.json",
        "suite": SUITE,
        "suite_kind": "regression",
        "verdict": "failed",
        "first_failure": 'response_contains("hi"): not found in response: "I said bye" '
        "(+1 more failing check(s))",
        "line": str(line),
    }
    (error,) = cases["under-scripted"].result
    assert "run error: " in (error.message or "")
    assert properties_of(cases["under-scripted"])["verdict"] == "run error"


def test_xdist_runs_this_repositorys_regression_suite_green() -> None:
    cases = len(list((REPO / SUITE).glob("*.json")))
    result = run_pytest("--zeroclaw", SUITE, "-n", "2", "-p", "no:cacheprovider", cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{cases} passed" in result.stdout
    assert "2 workers" in result.stdout


def test_this_checkout_warns_of_no_unknown_option_without_pytest_timeout() -> None:
    # pytest-timeout is a test dependency only: a user's pytest without it warned here of
    # `timeout`, set for this repository's own tests.
    without = run_pytest(
        "--zeroclaw",
        SUITE,
        "--collect-only",
        "-p",
        "no:timeout",
        "-p",
        "no:cacheprovider",
        cwd=REPO,
    )
    assert without.returncode == 0, without.stdout + without.stderr
    assert "Unknown config option" not in without.stdout + without.stderr
    assert "warning" not in without.stdout.lower()
    # The repository's own tests are still bounded when it is installed.
    bounded = run_pytest(
        "--collect-only", "-p", "no:cacheprovider", "tests/test_mutation_mutants.py", cwd=REPO
    )
    assert bounded.returncode == 0, bounded.stdout + bounded.stderr
    assert "timeout: 300.0s" in bounded.stdout


def test_xdist_fails_a_failing_case(tmp_path: Path) -> None:
    result = run_pytest(
        "--zeroclaw", SUITE, "-n", "2", "-p", "no:cacheprovider", cwd=red_project(tmp_path)
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 failed, 1 passed" in result.stdout
    assert '✗ response_contains("hi"): not found in response' in result.stdout


# --- suite kinds and admission -------------------------------------------------------------


def capability_project(tmp_path: Path) -> Path:
    return project(
        tmp_path,
        {
            "a_echo.json": echo_fixture("echo-case"),
            "b_wrong.json": failing_fixture(),
            "c_under.json": under_scripted_fixture(),
        },
        suite="evals/capability",
    )


def test_a_capability_suites_failed_checks_do_not_fail_the_session(tmp_path: Path) -> None:
    root = capability_project(tmp_path)
    tracked = run_pytest(
        "--zeroclaw",
        "evals/capability",
        "-k",
        "not under",
        "-ra",
        "-p",
        "no:cacheprovider",
        cwd=root,
    )
    assert tracked.returncode == 0, tracked.stdout + tracked.stderr
    assert "1 passed, 1 deselected, 1 xfailed" in tracked.stdout
    assert (
        "XFAIL evals/capability/b_wrong.json::wrong-answer - "
        'response_contains("hi"): not found in response'
    ) in tracked.stdout


def test_a_capability_suites_run_error_fails_the_session(tmp_path: Path) -> None:
    result = run_pytest(
        "--zeroclaw", "evals/capability", "-p", "no:cacheprovider", cwd=capability_project(tmp_path)
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed, 1 xfailed" in result.stdout
    assert "turn 0 requested more model responses" in result.stdout


def test_zeroclaw_kind_gates_a_capability_suite(tmp_path: Path) -> None:
    result = run_pytest(
        "--zeroclaw",
        "evals/capability",
        "--zeroclaw-kind",
        "regression",
        "-k",
        "wrong",
        "-p",
        "no:cacheprovider",
        cwd=capability_project(tmp_path),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 2 deselected" in result.stdout


def test_a_refused_suite_is_one_collection_error_naming_every_problem(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "a_echo.json": echo_fixture("echo-case"),
            "b_same.json": echo_fixture("echo-case"),
            "c_bad.json": {"model_name": 3},
        },
    )
    result = run_pytest("--zeroclaw", SUITE, "-p", "no:cacheprovider", cwd=root)
    assert result.returncode == pytest.ExitCode.INTERRUPTED, result.stdout + result.stderr
    out = result.stdout
    assert "ERROR collecting evals/regression" in out
    assert (
        "zeroclaw suite evals/regression refused: 3 problem(s) in 2 file(s); "
        "none of its cases is collected"
    ) in out
    assert "evals/regression/c_bad.json: $.model_name: Expected `str`, got `int`" in out
    assert "evals/regression/c_bad.json: $.turns: missing required key" in out
    assert (
        "evals/regression/b_same.json: $.model_name: duplicate case id 'echo-case', also used "
        "by evals/regression/a_echo.json"
    ) in out
    assert "1 error" in out and "passed" not in out


def test_an_unknown_agent_is_a_collection_error(tmp_path: Path) -> None:
    result = run_pytest(
        "--zeroclaw",
        SUITE,
        "--zeroclaw-agent",
        "nope",
        "--collect-only",
        cwd=green_project(tmp_path),
    )
    assert result.returncode == pytest.ExitCode.INTERRUPTED, result.stdout + result.stderr
    assert "zeroclaw suite evals/regression: unknown agent 'nope'" in result.stdout


def test_a_live_suite_is_refused_with_the_command_to_run_it(tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": live_trace()}, suite="evals/live")
    result = run_pytest("--zeroclaw", "evals/live", "--collect-only", cwd=root)
    assert result.returncode == pytest.ExitCode.INTERRUPTED, result.stdout + result.stderr
    assert "`zeroclaw eval run --suite evals/live --mode live`" in result.stdout


# --- which paths are collected -------------------------------------------------------------


def with_unit_tests(root: Path, pytest_table: str = "") -> Path:
    """`root` with a `tests/` directory of one ordinary test, and `pytest_table` as its
    `[tool.pytest.ini_options]`."""
    (root / "tests").mkdir()
    (root / "tests" / "test_unit.py").write_text(UNIT_TEST, encoding="utf-8")
    if pytest_table:
        with (root / "pyproject.toml").open("a", encoding="utf-8") as file:
            file.write(f"\n[tool.pytest.ini_options]\n{textwrap.dedent(pytest_table)}")
    return root


def test_zeroclaw_without_file_arguments_collects_only_the_suites(tmp_path: Path) -> None:
    root = with_unit_tests(green_project(tmp_path), 'testpaths = ["tests"]\n')
    alone = run_pytest("--zeroclaw", SUITE, "--collect-only", "-q", cwd=root)
    assert collected(alone) == [ECHO, "evals/regression/b_hi.json::hi"], alone.stdout
    beside = run_pytest("--zeroclaw", SUITE, "tests", "--collect-only", "-q", cwd=root)
    assert collected(beside) == [
        "tests/test_unit.py::test_unit",
        ECHO,
        "evals/regression/b_hi.json::hi",
    ]


def test_the_ini_option_collects_suites_without_zeroclaw(tmp_path: Path) -> None:
    table = 'testpaths = ["tests"]\nzeroclaw_suites = ["evals/regression"]\n'
    root = with_unit_tests(red_project(tmp_path), table)
    everything = run_pytest("--collect-only", "-q", cwd=root)
    assert collected(everything) == ["tests/test_unit.py::test_unit", ECHO, WRONG, UNDER]
    # Named files are collected alone, as with `testpaths`; a case's node id selects it.
    named = run_pytest("tests", "--collect-only", "-q", cwd=root)
    assert collected(named) == ["tests/test_unit.py::test_unit"], named.stdout
    one = run_pytest(WRONG, "-q", "-p", "no:cacheprovider", cwd=root)
    assert one.returncode == 1, one.stdout + one.stderr
    assert "1 failed" in one.stdout and "passed" not in one.stdout


def test_a_suite_under_a_directory_pytest_skips_never_vanishes(tmp_path: Path) -> None:
    # `norecursedirs` keeps pytest from walking into `evals` from `.`, and pytest drops a
    # path given inside another: the suite would silently not run, so it is a usage error.
    table = 'norecursedirs = ["evals", ".git"]\nzeroclaw_suites = ["evals/regression"]\n'
    root = with_unit_tests(green_project(tmp_path), table)
    refused = run_pytest("--collect-only", "-q", cwd=root)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout
    assert (
        "zeroclaw: suite evals/regression would not run: pytest collects . without walking "
        "into evals (norecursedirs"
    ) in refused.stderr
    # With `testpaths` no path given holds the suite: it is collected beside them.
    with (root / "pyproject.toml").open("a", encoding="utf-8") as file:
        file.write('testpaths = ["tests"]\n')
    result = run_pytest("--collect-only", "-q", cwd=root)
    assert collected(result) == [
        "tests/test_unit.py::test_unit",
        ECHO,
        "evals/regression/b_hi.json::hi",
    ], result.stdout + result.stderr
    # `build` is among pytest's default `norecursedirs`.
    other = green_project(tmp_path / "other")
    (other / "evals").rename(other / "build")
    named = run_pytest("--zeroclaw", "build/regression", ".", "--collect-only", "-q", cwd=other)
    assert named.returncode == pytest.ExitCode.USAGE_ERROR, named.stdout
    assert "suite build/regression would not run" in named.stderr


def test_a_misspelt_suite_is_a_usage_error_and_an_ignored_one_stays_out(tmp_path: Path) -> None:
    root = with_unit_tests(green_project(tmp_path), 'zeroclaw_suites = ["evals/regresion"]\n')
    misspelt = run_pytest("--collect-only", "-q", cwd=root)
    assert misspelt.returncode == pytest.ExitCode.USAGE_ERROR, misspelt.stdout
    assert "zeroclaw: suite evals/regresion: not found" in misspelt.stderr
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("regresion", "regression"))
    # The user's own --ignore leaves the suite out, as it does any test directory.
    for ignore in ("--ignore=evals", "--ignore=evals/regression", "--ignore-glob=ev*"):
        ignored = run_pytest(ignore, "--collect-only", "-q", cwd=root)
        assert collected(ignored) == ["tests/test_unit.py::test_unit"], (ignore, ignored.stderr)


def test_a_case_s_node_id_beside_zeroclaw_picks_that_case_alone(tmp_path: Path) -> None:
    root = red_project(tmp_path)
    result = run_pytest("--zeroclaw", SUITE, WRONG, "--collect-only", "-q", cwd=root)
    assert collected(result) == [WRONG], result.stdout
    fixture = run_pytest(
        "--zeroclaw", SUITE, WRONG.split("::")[0], "--collect-only", "-q", cwd=root
    )
    assert collected(fixture) == [WRONG], fixture.stdout


def test_the_ini_suites_are_left_out_below_the_root_directory(tmp_path: Path) -> None:
    # As pytest reads `testpaths`: only when started where the configuration is.
    table = 'testpaths = ["tests"]\nzeroclaw_suites = ["evals/regression"]\n'
    root = with_unit_tests(green_project(tmp_path), table)
    below = run_pytest("--collect-only", "-q", cwd=root / "tests")
    assert collected(below) == ["tests/test_unit.py::test_unit"], below.stdout


def test_case_ids_pytest_reads_as_node_id_syntax_are_a_collection_error(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "a.json": echo_fixture("a::b"),
            "b.json": echo_fixture("x[1]"),
            "c.json": echo_fixture("fine"),
        },
    )
    result = run_pytest("--zeroclaw", SUITE, "-q", "-p", "no:cacheprovider", cwd=root)
    assert result.returncode == 2, result.stdout
    assert "case id 'a::b' holds '::' or '['" in result.stdout
    assert "case id 'x[1]' holds '::' or '['" in result.stdout


def test_fixture_file_names_pytest_reads_as_node_id_syntax_are_a_collection_error(
    tmp_path: Path,
) -> None:
    # The failure in `b::wrong.json` was left out of the next `--lf` run, which reran
    # `c[1].json`'s alone, and its node id was "not found"; `c[1].json`'s node id was read
    # as a parametrization.
    fixtures = {"a_echo.json": echo_fixture("echo-case"), "b::wrong.json": failing_fixture()}
    root = project(tmp_path, {**fixtures, "c[1].json": failing_fixture("other")})
    for extra in ((), ("--lf",)):
        result = run_pytest("--zeroclaw", SUITE, "-q", *extra, cwd=root)
        assert result.returncode == 2, result.stdout
        assert "ERROR collecting evals/regression" in result.stdout
        assert f"{SUITE}/b::wrong.json: its file name holds '::' or '['" in result.stdout
        assert f"{SUITE}/c[1].json: its file name holds '::' or '['" in result.stdout


def test_without_a_suite_the_plugin_changes_nothing(tmp_path: Path) -> None:
    root = with_unit_tests(red_project(tmp_path))
    plain = run_pytest("--collect-only", "-p", "no:cacheprovider", cwd=root)
    without = run_pytest("--collect-only", "-p", "no:cacheprovider", "-p", "no:zeroclaw", cwd=root)
    assert plain.returncode == without.returncode == 0, plain.stdout + plain.stderr

    def shown(result: subprocess.CompletedProcess[str]) -> list[str]:
        # The last line says how long collecting took; `plugins:` lists the plugin itself.
        return [line for line in result.stdout.splitlines()[:-1] if not line.startswith("plugins:")]

    assert shown(plain) == shown(without)
    assert "<Function test_unit>" in plain.stdout
    assert "zeroclaw" not in "\n".join(shown(plain)).lower()


def test_collecting_imports_no_agent_framework(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    (root / "conftest.py").write_text(
        textwrap.dedent(
            """
            import sys
            from pathlib import Path

            def pytest_collection_finish(session):
                frameworks = [m for m in ("agents", "pydantic_ai") if m in sys.modules]
                Path("imported.txt").write_text(",".join(frameworks) or "none")
            """
        ),
        encoding="utf-8",
    )
    result = run_pytest("--zeroclaw", SUITE, "--collect-only", "-q", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(collected(result)) == 2
    assert (root / "imported.txt").read_text(encoding="utf-8") == "none"


def test_a_missing_agent_framework_fails_each_case_once_with_what_to_install(
    tmp_path: Path,
) -> None:
    root = green_project(tmp_path)
    # The framework is made unimportable in the conftest, which pytest loads before any
    # case runs (collecting imports no framework).
    (root / "conftest.py").write_text(
        textwrap.dedent(
            """
            import sys

            class _Missing:
                def find_spec(self, name, path=None, target=None):
                    if name == "agents" or name.startswith("agents."):
                        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                    return None

            sys.meta_path.insert(0, _Missing())
            """
        ),
        encoding="utf-8",
    )
    result = run_pytest("--zeroclaw", SUITE, "-q", "-p", "no:cacheprovider", cwd=root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 failed" in result.stdout
    assert "openai-agents" in result.stdout  # the extra to install is named
    assert "During handling of the above exception" not in result.stdout
