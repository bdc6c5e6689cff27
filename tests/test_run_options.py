"""`harness.run.options`: a run's options and admission, apart from the pipeline that runs
them; every old spelling of the names that moved here keeps working."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, echo_fixture, write_suite

import harness
from harness import pipeline
from harness.io.problems import AdmissionError, Problem
from harness.run import options
from harness.tracking.baseline import DEFAULT_LEVEL


def test_the_names_that_moved_keep_their_old_spellings() -> None:
    assert pipeline.RunOptions is options.RunOptions
    assert harness.RunOptions is options.RunOptions
    assert pipeline.admit is options.admit


def test_the_defaults_are_the_ones_the_run_uses() -> None:
    run = options.RunOptions(Path("evals/regression"))
    assert run.regression_level == DEFAULT_LEVEL
    assert run.selection.active is False
    assert run.project_root == Path.cwd().resolve()


def test_admit_lists_the_admitted_cases() -> None:
    suite = REPO / "evals" / "regression"
    cases = options.admit(options.RunOptions(suite, root=REPO))
    assert sorted(Path(case.where).name for case in cases) == sorted(
        path.name for path in suite.glob("*.json")
    )


class _Told:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def refused(self, problems: list[Problem]) -> None:
        self.problems += problems


def test_a_refusal_is_told_with_fixtures_named_from_the_root(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "evals" / "regression", {"a.json": echo_fixture("a")})
    (suite / "b.json").write_text('{"id": "b", "nope": 1}', encoding="utf-8")
    told = _Told()
    with pytest.raises(AdmissionError):
        options.admit(options.RunOptions(suite, root=tmp_path), [told])
    assert told.problems
    assert {p.file for p in told.problems} == {"evals/regression/b.json"}
