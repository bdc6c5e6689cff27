"""`harness.workspace`: the workspace file tools through real agent loops (both frameworks;
replay and live against the loopback server): inside the case workspace they work; absolute
paths, `..` and symlinks leading out are failed tool calls that touch nothing outside; setup
files are there before the run; each case's workspace is fresh and removed after it."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _openai_server import OpenAIServer
from conftest import (
    AGENTS,
    LIVE_KEY,
    LIVE_MODEL,
    call,
    text_step,
    tiny_model,
    tool_step,
    turn,
    write_suite,
)

from harness import run_suite
from harness.agents.protocol import AgentSurface
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.expectations.base import Evidence
from harness.expectations.registry import Expects, all_grades
from harness.fixtures.admission import empty_run_passes
from harness.fixtures.schema import parse_fixture
from harness.fixtures.suite import load_case
from harness.io.problems import AdmissionError
from harness.live.backend import LiveSettings, live_backend_factory
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.verdict.reports import CaseReport, SuiteReport
from harness.workspace import DirectoryView, FilesView, Workspace

FILE_TOOLS = ["read_file", "write_file", "list_files"]
SENTINEL_TEXT = "sentinel: must never change"
WORKSPACE_PREFIX = "zeroclaw-eval-"


@dataclass
class Machine:
    """Where workspaces are created (instead of the system temp directory), a directory
    outside every workspace with a sentinel file, and every workspace created so far.

    Each new workspace gets two symlinks planted by the test: `link_dir` to the outside
    directory and `link_file.txt` to the sentinel."""

    workspaces_root: Path
    outside: Path
    created: list[Path] = field(default_factory=list)

    @property
    def sentinel(self) -> Path:
        return self.outside / "sentinel.txt"

    def snapshot(self) -> dict[str, Any]:
        """Everything outside the workspaces: the outside tree, and what sits next to the
        workspaces (where `..` would land)."""
        state: dict[str, Any] = {}
        for path in sorted(self.outside.rglob("*")):
            stat = path.lstat()
            data = path.read_bytes() if path.is_file() else None
            state[str(path)] = (stat.st_mtime_ns, stat.st_size, data)
        state["next to the workspaces"] = sorted(
            p.name for p in self.workspaces_root.iterdir() if p not in self.created
        )
        return state


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    workspaces_root = tmp_path / "workspaces"
    workspaces_root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sentinel.txt").write_text(SENTINEL_TEXT, encoding="utf-8")
    m = Machine(workspaces_root, outside)
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp(suffix: str | None = None, prefix: str | None = None, dir: Any = None) -> str:
        if prefix != WORKSPACE_PREFIX:
            return real_mkdtemp(suffix, prefix, dir)
        path = Path(real_mkdtemp(suffix, prefix, workspaces_root))
        (path / "link_dir").symlink_to(outside, target_is_directory=True)
        (path / "link_file.txt").symlink_to(outside / "sentinel.txt")
        m.created.append(path)
        return str(path)

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    yield m


def run(suite: Path, agent: str, **options: Any) -> SuiteReport:
    return run_suite(suite, agent=agent, root=suite.parent, **options)


def by_id(report: SuiteReport) -> dict[str, CaseReport]:
    return {c.id: c for c in report.cases}


def calls_of(case: CaseReport) -> list[RecordedCall]:
    assert case.record is not None, case.error
    return case.record.calls


def replay_case(
    name: str,
    calls: list[tuple[str, dict[str, Any]]],
    expects: dict[str, Any],
    final: str = "Finished.",
    **extra: Any,
) -> dict[str, Any]:
    """A replay fixture: one turn making `calls` one step each, then `final`."""
    steps = [
        tool_step(call(f"c{i}", tool, **arguments)) for i, (tool, arguments) in enumerate(calls)
    ]
    return {
        "model_name": name,
        "tools": FILE_TOOLS,
        "turns": [turn(f"Work in the workspace ({name})", *steps, text_step(final))],
        "expects": expects,
        **extra,
    }


def assert_workspaces_removed(machine: Machine, expected: int) -> None:
    assert len(machine.created) == expected, machine.created
    assert len(set(machine.created)) == expected
    for path in machine.created:
        assert not os.path.lexists(path), f"workspace {path} was left behind"


# --- inside the workspace -------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_file_tools_work_inside_the_workspace_and_see_the_setup_files(
    tmp_path: Path, machine: Machine, agent: str
) -> None:
    data = replay_case(
        "inside",
        [
            ("read_file", {"path": "data/input.txt"}),
            ("write_file", {"path": "out/new.txt", "content": "written-in-run"}),
            ("read_file", {"path": "./out//new.txt"}),
            ("list_files", {}),
            ("list_files", {"path": "out"}),
        ],
        {
            "all_tools_succeeded": True,
            "tool_results_contain": [
                {"tool": "read_file", "needle": "setup-payload-31", "call_index": 0},
                {"tool": "read_file", "needle": "written-in-run", "call_index": 1},
            ],
            "workspace": {
                "file_contains": {"out/new.txt": ["written-in-run"]},
                "file_exists": ["data/input.txt"],
            },
        },
        setup={"workspace_files": {"data/input.txt": "setup-payload-31"}},
    )
    suite = write_suite(tmp_path / "suite", {"inside.json": data})
    before = machine.snapshot()
    (case,) = run(suite, agent).cases
    assert case.passed, (case.error, case.failing_grades)
    results = [(c.name, c.result, c.success) for c in calls_of(case)]
    assert results == [
        ("read_file", "setup-payload-31", True),
        ("write_file", "wrote 14 bytes to out/new.txt", True),
        ("read_file", "written-in-run", True),
        # Symlinks are not listed, and nothing outside is reached through them.
        ("list_files", "data/input.txt\nout/new.txt", True),
        ("list_files", "out/new.txt", True),
    ]
    assert machine.snapshot() == before
    assert_workspaces_removed(machine, 1)


# --- escapes --------------------------------------------------------------------------------

# (tool, arguments, what the refusal says); `{outside}` is the absolute outside directory.
ESCAPES: dict[str, tuple[str, dict[str, str], str]] = {
    "write-absolute": (
        "write_file",
        {"path": "{outside}/created.txt", "content": "pwned"},
        "absolute path escapes the workspace",
    ),
    "write-absolute-over-sentinel": (
        "write_file",
        {"path": "{outside}/sentinel.txt", "content": "pwned"},
        "absolute path escapes the workspace",
    ),
    "write-dotdot": (
        "write_file",
        {"path": "../escaped.txt", "content": "pwned"},
        "'..' escapes the workspace",
    ),
    "write-dotdot-over-sentinel": (
        "write_file",
        {"path": "../../outside/sentinel.txt", "content": "pwned"},
        "'..' escapes the workspace",
    ),
    "write-dotdot-in-the-middle": (
        "write_file",
        {"path": "sub/../../escaped.txt", "content": "pwned"},
        "'..' escapes the workspace",
    ),
    "write-through-symlinked-dir": (
        "write_file",
        {"path": "link_dir/created.txt", "content": "pwned"},
        "a symlink leads outside the workspace",
    ),
    "write-through-symlinked-file": (
        "write_file",
        {"path": "link_file.txt", "content": "pwned"},
        "a symlink leads outside the workspace",
    ),
    "read-absolute": ("read_file", {"path": "{outside}/sentinel.txt"}, "absolute path"),
    "read-dotdot": ("read_file", {"path": "../../outside/sentinel.txt"}, "'..' escapes"),
    "read-through-symlinked-file": (
        "read_file",
        {"path": "link_file.txt"},
        "a symlink leads outside the workspace",
    ),
    "read-through-symlinked-dir": (
        "read_file",
        {"path": "link_dir/sentinel.txt"},
        "a symlink leads outside the workspace",
    ),
    "list-absolute": ("list_files", {"path": "{outside}"}, "absolute path"),
    "list-dotdot": ("list_files", {"path": ".."}, "'..' escapes the workspace"),
    "list-through-symlinked-dir": (
        "list_files",
        {"path": "link_dir"},
        "a symlink leads outside the workspace",
    ),
}


def escape_suite(directory: Path, outside: Path) -> Path:
    fixtures = {}
    for name, (tool, arguments, _) in ESCAPES.items():
        concrete = {k: v.replace("{outside}", outside.as_posix()) for k, v in arguments.items()}
        fixtures[f"{name}.json"] = replay_case(
            name,
            [(tool, concrete)],
            {
                "all_tools_succeeded": False,
                "tool_results_contain": [{"tool": tool, "needle": "refused"}],
            },
        )
    return write_suite(directory, fixtures)


@pytest.mark.parametrize("agent", AGENTS)
def test_escapes_are_failed_tool_calls_that_touch_nothing_outside(
    tmp_path: Path, machine: Machine, agent: str
) -> None:
    suite = escape_suite(tmp_path / "suite", machine.outside)
    before = machine.snapshot()
    report = run(suite, agent)
    cases = by_id(report)
    assert set(cases) == set(ESCAPES)
    for name, (tool, _, reason) in ESCAPES.items():
        case = cases[name]
        assert case.passed, (name, case.error, case.failing_grades)
        (recorded,) = calls_of(case)
        assert recorded.name == tool
        assert recorded.success is False, (name, recorded)
        assert recorded.result.startswith("refused "), (name, recorded.result)
        assert reason in recorded.result, (name, recorded.result)
        assert SENTINEL_TEXT not in recorded.result
        # The agent loop went on: the model was told, and answered.
        assert case.record is not None and case.record.final_response == "Finished."
    assert machine.sentinel.read_text(encoding="utf-8") == SENTINEL_TEXT
    assert not (machine.outside / "created.txt").exists()
    assert not (machine.workspaces_root / "escaped.txt").exists()
    assert machine.snapshot() == before
    assert_workspaces_removed(machine, len(ESCAPES))
    # Removing a workspace removed the symlinks in it, never what they pointed to.
    assert machine.sentinel.read_text(encoding="utf-8") == SENTINEL_TEXT


@pytest.mark.parametrize("agent", AGENTS)
def test_escapes_through_a_live_model_are_refused(
    tmp_path: Path, machine: Machine, agent: str
) -> None:
    """The same refusals when a model over HTTP asks for them (the live code path)."""
    attempts = [
        f"write: {machine.outside.as_posix()}/created.txt = pwned",
        "write: ../escaped.txt = pwned",
        "write: link_file.txt = pwned",
        "write: link_dir/created.txt = pwned",
        "read: link_file.txt",
        f"read: {machine.sentinel.as_posix()}",
        "list: link_dir",
        "list: ..",
    ]
    case = {
        "model_name": "live-escapes",
        "turns": [{"user_input": text} for text in attempts],
        "expects": {
            "all_tools_succeeded": False,
            "exact_tool_calls": len(attempts),
            "response_contains": ["Done. refused"],
        },
    }
    suite = write_suite(tmp_path / "live", {"escapes.json": case})
    before = machine.snapshot()
    with OpenAIServer(responder=tiny_model, api_key=LIVE_KEY) as server:
        settings = LiveSettings(base_url=server.base_url, model=LIVE_MODEL, api_key=LIVE_KEY)
        (report,) = run(
            suite,
            agent,
            mode="live",
            backend=live_backend_factory(settings),
            allowed_tools=frozenset({"echo", *FILE_TOOLS}),
            case_timeout=30,
        ).cases
    assert report.passed, (report.error, report.failing_grades)
    calls = calls_of(report)
    assert len(calls) == len(attempts)
    for attempt, recorded in zip(attempts, calls, strict=True):
        assert recorded.success is False, (attempt, recorded)
        assert recorded.result.startswith("refused "), (attempt, recorded.result)
        assert SENTINEL_TEXT not in recorded.result
    assert report.record is not None
    assert all(r.startswith("Done. refused") for r in report.record.turn_responses)
    assert machine.sentinel.read_text(encoding="utf-8") == SENTINEL_TEXT
    assert machine.snapshot() == before
    assert_workspaces_removed(machine, 1)


# --- one workspace per case -----------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_each_case_gets_a_fresh_workspace_removed_after_its_run(
    tmp_path: Path, machine: Machine, agent: str
) -> None:
    first = replay_case(
        "a-writes",
        [("write_file", {"path": "leftover.txt", "content": "from case a"})],
        {"workspace": {"file_contains": {"leftover.txt": ["from case a"]}}},
    )
    second = replay_case(
        "b-looks",
        [("list_files", {}), ("read_file", {"path": "leftover.txt"})],
        {
            "tool_results_contain": [
                {"tool": "list_files", "needle": "b-only.txt"},
                {"tool": "read_file", "needle": "no such file"},
            ],
            "workspace": {"file_absent": ["leftover.txt"]},
        },
        setup={"workspace_files": {"b-only.txt": "b"}},
    )
    third = replay_case(
        "c-sees-only-its-setup",
        [("read_file", {"path": "b-only.txt"})],
        {"tool_results_contain": [{"tool": "read_file", "needle": "no such file"}]},
        setup={"workspace_files": {"c-only.txt": "c"}},
    )
    suite = write_suite(tmp_path / "suite", {"a.json": first, "b.json": second, "c.json": third})
    report = run(suite, agent)
    cases = by_id(report)
    for case in cases.values():
        assert case.passed, (case.id, case.error, case.failing_grades)
    listed = calls_of(cases["b-looks"])[0]
    assert (listed.name, listed.result, listed.success) == ("list_files", "b-only.txt", True)
    read = calls_of(cases["b-looks"])[1]
    assert read.success is False and read.result == "no such file: leftover.txt"
    assert_workspaces_removed(machine, 3)
    assert list(machine.workspaces_root.iterdir()) == []


def test_a_workspace_is_removed_after_a_run_error_too(tmp_path: Path, machine: Machine) -> None:
    # Scripts more steps than the agent asks for: replay diverges after the write.
    data = replay_case(
        "diverges",
        [("write_file", {"path": "partial.txt", "content": "x"})],
        {"response_contains": ["Finished."]},
    )
    data["turns"][0]["steps"].append(text_step("never requested"))
    suite = write_suite(tmp_path / "suite", {"diverges.json": data})
    (case,) = run(suite, "openai-agents").cases
    assert case.error is not None and "never requested" in case.error
    assert calls_of(case)[0].success
    assert_workspaces_removed(machine, 1)


# --- the views graders see: on disk, and in memory for the empty run ------------------------

SETUP = {"notes.txt": "alpha beta", "docs/readme.md": "# hi", "a\\b.txt": "windows"}
PATHS = [
    ".",
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


def test_an_empty_workspace_is_still_a_directory() -> None:
    empty = Workspace()
    try:
        for relative in (".", "x.txt"):
            assert FilesView({}).kind(relative) == empty.view().kind(relative)
    finally:
        empty.remove()
