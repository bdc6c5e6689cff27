"""Expectation kinds against the two workspace views: the empty run is graded in memory,
and what it sees agrees with a real directory holding the same files."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import msgspec
import pytest

from harness.admission import empty_run_passes
from harness.agent import AgentSurface
from harness.builtin_tools import BUILTIN_TOOL_NAMES
from harness.expectations.base import Evidence
from harness.expectations.registry import Expects, all_grades
from harness.fixture import parse_fixture
from harness.run_record import RunRecord
from harness.suite import load_case
from harness.workspace import DirectoryView, FilesView, Workspace

SETUP = {"notes.txt": "alpha beta", "docs/readme.md": "# hi", "a\\b.txt": "windows"}
PATHS = [
    "notes.txt",
    "./notes.txt",
    "docs",
    "docs/readme.md",
    "docs//readme.md",
    "a/b.txt",
    "missing.txt",
    "docs/missing.md",
    "../outside.txt",
    "/etc/passwd",
    "",
]


@pytest.fixture
def directory(tmp_path: Path) -> DirectoryView:
    workspace = Workspace()
    workspace.write_setup_files(SETUP)
    yield workspace.view()  # type: ignore[misc]
    workspace.remove()


@pytest.mark.parametrize("relative", PATHS)
def test_the_in_memory_workspace_sees_what_a_directory_holding_the_files_shows(
    directory: DirectoryView, relative: str
) -> None:
    memory = FilesView(SETUP)
    assert memory.kind(relative) == directory.kind(relative)
    assert memory.present(relative) == directory.present(relative)
    assert memory.read_text(relative) == directory.read_text(relative)


def test_the_empty_run_check_writes_no_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("the empty-run check must not create a directory")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", refuse)
    fixture = {
        "model_name": "writes-a-file",
        "turns": [
            {"user_input": "write", "steps": [{"response": {"type": "text", "content": ""}}]}
        ],
        "setup": {"workspace_files": {"in.txt": "seed"}},
        # Passes on the setup file alone except for the file the agent must write.
        "expects": {"workspace": {"file_exists": ["in.txt", "out.txt"]}},
    }
    trace = parse_fixture(json.dumps(fixture), "f.json")
    assert not empty_run_passes(trace)
    fixture["expects"] = {"workspace": {"file_exists": ["in.txt"]}}
    assert empty_run_passes(parse_fixture(json.dumps(fixture), "f.json"))


def test_a_fixture_passing_on_its_setup_files_alone_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vacuous.json"
    path.write_text(
        json.dumps(
            {
                "model_name": "vacuous",
                "turns": [
                    {"user_input": "go", "steps": [{"response": {"type": "text", "content": ""}}]}
                ],
                "setup": {"workspace_files": {"in.txt": "seed words"}},
                "expects": {"workspace": {"file_contains": {"in.txt": ["seed"]}}},
            }
        ),
        "utf-8",
    )
    from harness.problems import AdmissionError

    with pytest.raises(AdmissionError) as refused:
        load_case(path, "replay", AgentSurface("a", BUILTIN_TOOL_NAMES))
    [problem] = refused.value.problems
    assert problem.field == "$.expects"
    assert problem.message.startswith("every check passes against an empty run")


def test_workspace_checks_without_a_workspace_fail_saying_so() -> None:
    expects = msgspec.convert(
        {"workspace": {"file_exists": ["a"], "file_absent": ["b"], "file_contains": {"c": ["x"]}}},
        Expects,
    )
    grades = list(all_grades(expects, Evidence(RunRecord())))
    assert [(g.passed, g.detail) for g in grades] == [(False, "no workspace to inspect")] * 3
