"""`zeroclaw eval verify`: an untouched report verifies; a changed fixture, an edited report
or another policy does not."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Cli, echo_fixture, red_project, write_fixture

from harness.fixture import fixture_hash


def reported(run_cli: Cli, root: Path) -> Path:
    result = run_cli("eval", "run", "--json-report", "report.json", cwd=root)
    assert result.returncode == 1, result.stderr  # the red project: a failing case and an error
    return root / "report.json"


def edit(path: Path, change: object) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)  # type: ignore[operator]
    path.write_text(json.dumps(document), encoding="utf-8")


def test_an_untouched_report_verifies(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 0, result.stderr
    assert "is for exactly the 3 fixture(s) of" in result.stdout
    assert "regression policy" in result.stdout and "exit 1" in result.stdout


def test_a_changed_added_or_removed_fixture_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)
    suite = root / "evals" / "regression"
    write_fixture(suite, "a_echo.json", echo_fixture("echo-case", "another message"))
    write_fixture(suite, "d_new.json", echo_fixture("newcomer"))
    (suite / "c_under.json").unlink()
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1
    assert "evals/regression/a_echo.json: the fixture changed since the report" in result.stderr
    assert "evals/regression/d_new.json: a fixture of the suite the report has no case" in (
        result.stderr
    )
    assert "evals/regression/c_under.json: the report has a case (under-scripted) for no" in (
        result.stderr
    )


def test_an_edited_report_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)

    def flip(document: dict) -> None:  # type: ignore[type-arg]
        wrong = next(c for c in document["cases"] if c["id"] == "wrong-answer")
        wrong["passed"] = True
        document["exit_code"] = 0

    edit(report, flip)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1
    assert "(wrong-answer): says passed, but its grades say not passed" in result.stderr
    assert "$.exit_code: 0, but its cases under its policy give 1" in result.stderr


def test_another_policy_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)

    def soften(document: dict) -> None:  # type: ignore[type-arg]
        document["receipt"]["policy"]["gates_checks"] = False

    edit(report, soften)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1
    assert "$.receipt.policy:" in result.stderr and "is not the regression policy" in (
        result.stderr
    )


def test_a_report_changed_in_its_hashes_alone_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)
    forged = fixture_hash('{"forged": true}')

    def rehash(document: dict) -> None:  # type: ignore[type-arg]
        document["cases"][0]["fixture_sha256"] = forged

    edit(report, rehash)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1 and "the fixture changed since the report" in result.stderr


def test_what_is_not_a_report_is_refused_clearly(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    (root / "junk.json").write_text("{not json", encoding="utf-8")
    (root / "old.json").write_text('{"schema": "zeroclaw-eval/report/v1"}', encoding="utf-8")
    junk = run_cli("eval", "verify", "junk.json", cwd=root)
    assert junk.returncode == 1 and "junk.json: not JSON" in junk.stderr
    old = run_cli("eval", "verify", "old.json", cwd=root)
    assert old.returncode == 1
    assert "old.json: $.schema: not a zeroclaw-eval/report/v2 report" in old.stderr
    assert "Traceback" not in junk.stderr + old.stderr
