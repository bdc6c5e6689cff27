"""`harness.pipeline`: one pipeline for the command line and the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import greeting_fixture, own_loop_case_run, write_suite

from harness.agents.protocol import AgentSurface
from harness.agents.registry import resolve_agent
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.fixtures.schema import fixture_hash
from harness.fixtures.suite import load_suite
from harness.pipeline import RunOptions, run, run_cases, run_suite
from harness.reporters.last_run import LAST_FOLDER
from harness.verdict.reports import CaseReport


def test_run_suite_names_the_suite_as_the_caller_did(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "evals" / "regression", {"a.json": greeting_fixture("a")})
    assert run_suite(suite).suite == str(suite)
    assert run_suite(suite, root=tmp_path).suite == str(suite)
    # The command line's options name it from the project root instead.
    assert run(RunOptions(suite, root=tmp_path)).suite == "evals/regression"
    assert run(RunOptions(suite, root=tmp_path, name="mine")).suite == "mine"


def test_reports_heard_as_each_case_ends_are_the_ones_the_suite_report_holds(
    tmp_path: Path,
) -> None:
    # Sealed (fixture hash, tool surface) as each case is in, so a streaming reporter sees
    # what the suite report keeps, and the run holds no second copy of its reports.
    fixtures = {f"{n}.json": greeting_fixture(n) for n in ("a", "b", "c")}
    suite = write_suite(tmp_path / "evals" / "regression", fixtures)
    heard: list[CaseReport] = []
    adapter = resolve_agent("openai-agents")
    cases = load_suite(suite, "replay", AgentSurface(adapter.name, BUILTIN_TOOL_NAMES))
    report = run_cases(cases, adapter, suite="s", on_case=heard.append)
    assert [c.id for c in heard] == ["a", "b", "c"]
    for streamed, kept in zip(heard, report.cases, strict=True):
        assert streamed is kept
        assert kept.fixture_sha256 == fixture_hash((suite / f"{kept.id}.json").read_text("utf-8"))
        assert kept.tool_surface == ["echo", "fail", "list_files", "read_file", "write_file"]


def test_every_reporter_hears_each_case_unless_its_stream_broke(tmp_path: Path) -> None:
    import pytest

    from harness.io.atomic import ReportWriteError
    from harness.reporters.base import Reporter

    fixtures = {f"{n}.json": greeting_fixture(n) for n in ("a", "b", "c")}
    suite = write_suite(tmp_path / "evals" / "regression", fixtures)
    heard: list[str] = []

    class Kept(Reporter):  # told only of cases as they are kept
        def case_kept(self, case: CaseReport) -> None:
            heard.append(f"kept {case.id}")

    class Breaks(Reporter):  # its stream breaks on the second case
        def case_done(self, case: CaseReport) -> None:
            heard.append(f"breaks {case.id}")
            if case.id == "b":
                raise BrokenPipeError(32, "Broken pipe")

    told = Reporter()  # a hook of its own, not of its class
    told.case_done = lambda case: heard.append(f"own {case.id}")  # type: ignore[method-assign]
    with pytest.raises(ReportWriteError, match="Broken pipe"):
        run(RunOptions(suite, root=tmp_path), [Breaks(), told, Kept()])
    assert heard == [
        *("breaks a", "own a", "kept a"),
        *("breaks b", "own b", "kept b"),
        *("own c", "kept c"),
    ]


# The dataclasses of the modules a run imports that stay dataclasses: the public API's
# (`harness.__all__`) and those whose callers take them apart with `dataclasses`
# (`replace`, `fields`); every other value class of a run's start-up is a msgspec struct,
# which costs no source compiled per method as the process starts.
KEPT_DATACLASSES = {
    "harness.agents.case_context.CaseSetup",
    "harness.agents.protocol.AgentSurface",
    "harness.expectations.base.Evidence",
    "harness.fixtures.suite.Case",
    "harness.io.problems.Problem",
    "harness.run.options.RunOptions",
    "harness.run.runner.CasePlan",
    "harness.snapshots.store.SnapshotPlan",
    "harness.tool_registry.Tool",
    "harness.tool_registry.ToolOutcome",
    "harness.tool_registry.ToolRegistry",
    "harness.transcript.Conversation",
    "harness.transcript.Exchange",
    "harness.verdict.policy.Attempt",
    "harness.verdict.policy.SuitePolicy",
}
# The dataclasses of a run's modules, and what it imported, written out by its process.
REPORT = """
import dataclasses
def classes(values, name):  # each class of a module's, and the classes within them
    for value in list(values):
        if isinstance(value, type) and value.__module__ == name:
            yield value
            yield from classes(vars(value).values(), name)
made = [
    f"{name}.{value.__qualname__}"
    for name, module in list(sys.modules.items())
    if name.startswith("harness")
    for value in classes(vars(module).values(), name)
    if dataclasses.is_dataclass(value)
]
print(" ".join(sys.modules))
print(" ".join(made))
"""


@pytest.fixture(scope="module")
def start_up(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str], set[str]]:
    """Where a one-case own-loop `eval run` ran in a fresh process, in a directory with no
    configuration, the modules it imported, and the dataclasses they define."""
    tmp_path = tmp_path_factory.mktemp("start_up")
    modules, made = own_loop_case_run(tmp_path, then=REPORT).splitlines()
    return tmp_path, set(modules.split()), set(made.split())


def test_a_run_without_configuration_imports_no_toml_parser_nor_the_install_schemes(
    start_up: tuple[Path, set[str], set[str]],
) -> None:
    # `sysconfig` works out its install schemes as it imports; only a failed case's frames
    # ask for them.
    _, modules, _ = start_up
    assert "harness.config" in modules and "harness.run.error_frames" in modules
    assert not modules & {"tomli", "sysconfig"}


def test_a_run_makes_no_dataclass_but_those_its_callers_take_apart(
    start_up: tuple[Path, set[str], set[str]],
) -> None:
    # Equal, not only within: a class of the list that is gone or no dataclass any more
    # takes its name off it, and a class nested in another is seen as well.
    _, _, made = start_up
    assert made == KEPT_DATACLASSES, (
        sorted(made - KEPT_DATACLASSES),
        sorted(KEPT_DATACLASSES - made),
    )


def test_a_run_names_its_transcripts_file_without_importing_secrets(
    start_up: tuple[Path, set[str], set[str]],
) -> None:
    # The name's random part is the system's random bytes, as `secrets` would take them;
    # `secrets` would import `hmac` for nothing else.
    tmp_path, modules, _ = start_up
    assert "harness.reporters.json_report" in modules
    assert not modules & {"secrets", "hmac"}
    [transcripts] = (tmp_path / LAST_FOLDER).rglob("transcripts-*.jsonl")
    assert len(transcripts.stem.removeprefix("transcripts-")) == 32
