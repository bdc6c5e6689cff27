"""`harness.pipeline`: one pipeline for the command line and the API."""

from __future__ import annotations

from pathlib import Path

from conftest import greeting_fixture, write_suite

from harness.pipeline import RunOptions, run, run_suite


def test_run_suite_names_the_suite_as_the_caller_did(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "evals" / "regression", {"a.json": greeting_fixture("a")})
    assert run_suite(suite).suite == str(suite)
    assert run_suite(suite, root=tmp_path).suite == str(suite)
    # The command line's options name it from the project root instead.
    assert run(RunOptions(suite, root=tmp_path)).suite == "evals/regression"
    assert run(RunOptions(suite, root=tmp_path, name="mine")).suite == "mine"
