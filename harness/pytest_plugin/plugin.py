"""The pytest plugin (the `pytest11` entry point `zeroclaw`): every case of a suite is a
pytest item, so `-k`, `-x`, `--lf`, `--junitxml` and pytest-xdist apply to cases.

`pytest --zeroclaw evals/regression` (or the `zeroclaw_suites` ini option) collects each
suite as a directory of fixture files, each file holding its one case, named by its id
(`evals/regression/a_echo.json::echo-case`). A suite is admitted once per process, as
`zeroclaw eval run` admits it; a refused suite is one collection error listing every
problem. Each item runs its case through the configured agent (`harness.pipeline.run_cases`)
and keeps the suite kind's policy: a failed check fails the item in a gated suite and is an
expected failure (xfail) in a capability suite; a run error fails the item in every kind.

pytest loads this module in every run of an environment the package is installed in (the
harness's own test suite included), so it is inert until a suite is named, and imports
nothing but pytest and the dependency-free `harness.modes` and `harness.pytest_plugin.paths`
before then: the harness, and the agent framework, are imported by the hooks that need
them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.modes import SUITE_KINDS, Mode, SuiteKind
from harness.pytest_plugin.paths import real, route

if TYPE_CHECKING:
    from harness.agents.case_context import CaseSetup
    from harness.agents.protocol import AgentAdapter, AgentSurface
    from harness.fixtures.suite import Case
    from harness.io.problems import Problem
    from harness.verdict.reports import CaseReport

PLUGIN_NAME = "zeroclaw-suites"
_PLUGIN = pytest.StashKey["SuitePlugin"]()
REASON_WIDTH = 300  # characters of an expected failure's reason


def _seconds(text: str) -> float:
    # The harness's own parser, imported only when the option is given.
    from harness.options import seconds

    return seconds(text)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zeroclaw", "zeroclaw-eval suites as pytest items")
    group.addoption(
        "--zeroclaw",
        action="append",
        default=[],
        metavar="DIR",
        help="collect this suite directory (or single fixture) as pytest items, one per "
        "case (repeatable); without file arguments only the named suites are collected",
    )
    group.addoption(
        "--zeroclaw-agent",
        metavar="SPEC",
        default=None,
        help="the agent every case runs through (default: agent in [tool.zeroclaw.eval])",
    )
    group.addoption(
        "--zeroclaw-kind",
        choices=SUITE_KINDS,
        default=None,
        help="gate rules for every suite (default: the suite directory's name, else regression)",
    )
    group.addoption(
        "--zeroclaw-timeout",
        type=_seconds,
        metavar="SECS",
        default=None,
        help="timeout for starting the agent and for each turn (default: case_timeout_secs)",
    )
    parser.addini(
        "zeroclaw_suites",
        "zeroclaw-eval suite directories (or fixtures) collected when pytest runs without "
        "file arguments, relative to the configuration file",
        type="paths",
        default=[],
    )


@dataclass(frozen=True)
class Settings:
    """What every case of the session is run with: the options over the project's
    `[tool.zeroclaw.eval]`."""

    agent: str
    kind: SuiteKind | None
    mode: Mode
    case_timeout: float
    case_wall_clock: float
    max_model_calls_per_turn: int
    max_tool_calls_per_step: int
    # The project's `context` and `session` settings (`harness.agents.case_context`).
    context: str = ""
    session: str = ""


def _settings(config: pytest.Config) -> Settings:
    from harness.config import load_config
    from harness.errors import HarnessError

    try:
        # Found from where pytest was started, as `zeroclaw eval run` finds it.
        eval_config = load_config(cwd=config.invocation_params.dir).config
    except HarnessError as exc:
        raise pytest.UsageError(f"zeroclaw: {exc}") from None
    agent = config.getoption("zeroclaw_agent")
    if agent is not None and not agent.strip():
        raise pytest.UsageError("--zeroclaw-agent: empty agent: name one, or leave it out")
    timeout = config.getoption("zeroclaw_timeout")
    return Settings(
        agent=(agent or eval_config.agent).strip(),
        kind=config.getoption("zeroclaw_kind"),
        mode=eval_config.mode,
        case_timeout=timeout if timeout is not None else eval_config.case_timeout_secs,
        case_wall_clock=eval_config.case_wall_clock_secs,
        max_model_calls_per_turn=eval_config.max_model_calls_per_turn,
        max_tool_calls_per_step=eval_config.max_tool_calls_per_step,
        context=eval_config.context,
        session=eval_config.session,
    )


def pytest_configure(config: pytest.Config) -> None:
    invoked = config.invocation_params.dir
    named = [invoked / path for path in config.getoption("zeroclaw")]
    configured = [Path(path) for path in config.getini("zeroclaw_suites")]
    if not named and not configured:
        return  # no suite named: pytest runs exactly as without the plugin
    plugin = SuitePlugin(config, [*named, *configured], _settings(config))
    config.stash[_PLUGIN] = plugin
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    route(config, named, configured)


def _near(path: Path) -> Path:
    """`path` from the working directory when it lies below it: admission's messages name
    fixtures (a duplicate id's other file too) the way the user would type them."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


@dataclass(frozen=True)
class Suite:
    """One suite as its items run it."""

    path: Path
    name: str  # its path from the root directory, as reports name it
    kind: SuiteKind


class SuitePlugin:
    """The session's suites: which collected paths are suites, their admission (once per
    suite per process), the agent (built once per process) and running one case."""

    def __init__(self, config: pytest.Config, suites: Sequence[Path], settings: Settings):
        self.config = config
        self.settings = settings
        self.root = config.rootpath
        self._suites = {real(path): path for path in suites}
        self._admitted: dict[Path, list[Case] | str] = {}
        self._agent: tuple[AgentAdapter, AgentSurface] | str | None = None
        self._setup: CaseSetup | None = None
        self._surface: AgentSurface | None = None

    # --- collection ------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(
        self, path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        if real(path) in self._suites:
            return SuiteDirectory.from_parent(parent, path=path)
        return None

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.File | None:
        # A single fixture named as a suite of one; fixtures of a suite directory are
        # collected by the directory itself.
        if file_path.suffix == ".json" and real(file_path) in self._suites:
            return FixtureFile.from_parent(parent, path=file_path)
        return None

    def pytest_report_header(self) -> str:
        shown = ", ".join(self.display(path) for path in self._suites.values())
        return f"zeroclaw: agent {self.settings.agent}; suites: {shown}"

    def display(self, path: Path) -> str:
        from harness.fixtures.suite import display_path

        return display_path(path, self.root)

    def suite(self, path: Path) -> Suite:
        from harness.modes import resolve_kind

        name = self.display(path)
        return Suite(path, name, resolve_kind(self.settings.kind, name))

    def admit(self, path: Path) -> list[Case]:
        """The suite's cases, admitted on the first call; `Refused` with every problem."""
        key = real(path)
        if key not in self._admitted:
            self._admitted[key] = self._load(path)
        admitted = self._admitted[key]
        if isinstance(admitted, str):
            raise Refused(admitted)
        return admitted

    def _load(self, path: Path) -> list[Case] | str:
        from harness.errors import HarnessError
        from harness.fixtures.suite import load_suite
        from harness.io.problems import AdmissionError
        from harness.io.text import clean_lines, inert
        from harness.modes import mode_of_directory

        shown = self.display(path)
        if mode_of_directory(path, self.settings.mode) == "live":
            return (
                f"zeroclaw suite {shown}: live mode is not run through pytest; run it with "
                f"`zeroclaw eval run --suite {shown} --mode live`"
            )
        try:
            cases = load_suite(_near(path), "replay", self.surface())
        except AdmissionError as exc:
            return self._refusal(shown, exc.problems)
        except HarnessError as exc:  # an agent that cannot be resolved, for instance
            return inert(clean_lines(f"zeroclaw suite {shown}: {exc}"))
        # Absolute again: a test that changes the working directory cannot move a case.
        return [replace(c, path=Path(os.path.abspath(c.path))) for c in cases]

    def _refusal(self, shown: str, problems: list[Problem]) -> str:
        from harness.io.text import clean_lines, inert

        lines = [str(replace(p, file=self.display(Path(p.file)))) for p in problems]
        files = len({p.file for p in problems})
        head = (
            f"zeroclaw suite {shown} refused: {len(problems)} problem(s) in {files} file(s); "
            "none of its cases is collected"
        )
        return inert(clean_lines("\n".join([head, *lines])))

    # --- the agent and a case's run --------------------------------------------------

    def surface(self) -> AgentSurface:
        """What admission checks fixtures against; for a built-in agent without importing
        its framework, so collecting (`--collect-only`) imports none."""
        if self._surface is None:
            from harness.agents.registry import BUILTIN_AGENTS, surface_within

            spec = self.settings.agent
            if spec in BUILTIN_AGENTS:
                self._surface = surface_within(spec, self.settings.case_timeout)
            else:
                self._surface = self.agent()[1]
        return self._surface

    def agent(self) -> tuple[AgentAdapter, AgentSurface]:
        """The adapter, built on first use; an agent that cannot be built is remembered,
        so the items after the first fail at once instead of each waiting out the timeout."""
        from harness.agents.case_context import setup_for
        from harness.agents.registry import AgentError, resolve_within
        from harness.errors import HarnessError

        if self._agent is None:
            settings = self.settings
            try:
                adapter, surface = resolve_within(settings.agent, settings.case_timeout)
                self._setup = setup_for(
                    adapter, settings.context, settings.session, settings.case_timeout
                )
                self._agent = adapter, surface
            except HarnessError as exc:
                self._agent = str(exc)
        if isinstance(self._agent, str):
            raise AgentError(self._agent)
        return self._agent

    def run(self, case: Case, suite: Suite) -> CaseReport:
        from harness.agents.case_context import NO_SETUP
        from harness.pipeline import run_cases

        adapter, surface = self.agent()
        report = run_cases(
            [case],
            adapter,
            suite=suite.name,
            kind=suite.kind,
            mode="replay",
            case_timeout=self.settings.case_timeout,
            root=self.root,
            agent_tools=surface.tools,
            case_wall_clock=self.settings.case_wall_clock,
            max_model_calls_per_turn=self.settings.max_model_calls_per_turn,
            max_tool_calls_per_step=self.settings.max_tool_calls_per_step,
            setup=self._setup or NO_SETUP,
        )
        return report.cases[0]


class Refused(Exception):
    """A suite admission refused; its message lists every problem."""


def _plugin(node: pytest.Item | pytest.Collector) -> SuitePlugin:
    return node.config.stash[_PLUGIN]


class SuiteDirectory(pytest.Directory):
    """A suite directory: admitted as a whole, then one file collector per fixture."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        plugin = _plugin(self)
        try:
            cases = plugin.admit(self.path)
        except Refused as exc:
            raise self.CollectError(str(exc)) from None
        suite = plugin.suite(self.path)
        # The collector's own (absolute) path: pytest's node ids are made from it.
        files = [
            FixtureFile.from_parent(self, path=self.path / case.path.name, case=case, suite=suite)
            for case in cases
        ]
        _refuse_node_ids(self, files)
        yield from files


class FixtureFile(pytest.File):
    """One fixture file and its one case; named alone, it is a suite of one."""

    def __init__(self, *, case: Case | None = None, suite: Suite | None = None, **kw: Any):
        super().__init__(**kw)
        self._case = case
        self._suite = suite

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        plugin = _plugin(self)
        case, suite = self._case, self._suite
        if case is None or suite is None:
            try:
                (case,) = plugin.admit(self.path)
            except Refused as exc:
                raise self.CollectError(str(exc)) from None
            self._case = case
            _refuse_node_ids(self, [self])
            suite = plugin.suite(self.path)
        yield CaseItem.from_parent(self, name=case.id, case=case, suite=suite)

    @property
    def case(self) -> Case:
        assert self._case is not None  # a suite's file holds its case; one alone, once admitted
        return self._case


# What pytest reads as its own syntax in a node id: a case whose id, or whose file's path,
# holds them gets a node id that `--lf` or the node id itself no longer finds (a failure in
# `a::b.json` is left out of `--lf`; `a[1].json::case` is read as a parametrization).
_NODE_ID_SYNTAX = ("::", "[")
_RENAME = "rename it (zeroclaw eval run takes it as it is)"


def _holds_syntax(text: str) -> bool:
    return any(mark in text for mark in _NODE_ID_SYNTAX)


def _refuse_node_ids(collector: pytest.Collector, files: list[FixtureFile]) -> None:
    """A collection error naming each case whose node id pytest would misread."""
    from harness.io.text import clean_lines, inert

    lines = []
    for file in files:
        shown = _plugin(collector).display(file.path)
        if _holds_syntax(file.nodeid):  # the path pytest's node id holds, from its root
            part = "file name" if _holds_syntax(file.path.name) else "path"
            lines.append(
                f"{shown}: its {part} holds '::' or '[', which pytest reads in node ids as "
                f"its own: --lf and the case's node id would not find the case; {_RENAME}"
            )
        if _holds_syntax(file.case.id):
            lines.append(
                f"{shown}: case id {file.case.id!r} holds '::' or '[', which pytest reads in "
                f"node ids as its own: --lf and --deselect would miss the case; {_RENAME}"
            )
    if lines:
        raise collector.CollectError(inert(clean_lines("\n".join(lines))))


class CaseItem(pytest.Item):
    """One case: run through the agent, judged by its suite kind's policy."""

    def __init__(self, *, case: Case, suite: Suite, **kw: Any) -> None:
        super().__init__(**kw)
        self.case = case
        self.suite = suite

    def runtest(self) -> None:
        from harness.errors import HarnessError

        failure: str | None = None
        try:
            report = _plugin(self).run(self.case, self.suite)
        except HarnessError as exc:  # the agent cannot be built: every case's run error
            failure = f"zeroclaw: {exc}"
        if failure is not None:  # failed outside the handler: no chained exception shown
            pytest.fail(failure, pytrace=False)
        self.user_properties.extend(_properties(report, self.suite))
        _judge(report, self.suite.kind)

    def reportinfo(self) -> tuple[Path, int, str]:
        from harness.io.json_paths import line_of

        field = "$.id" if self.case.trace.id is not None else "$.model_name"
        # pytest counts lines from 0; the failure's own line is in the failure text.
        return self.path, line_of(self.case.text, field) - 1, self.name


def _properties(report: CaseReport, suite: Suite) -> list[tuple[str, object]]:
    """What `--junitxml` carries of the case beside pytest's outcome."""
    verdict = "passed" if report.passed else ("run error" if report.error else "failed")
    properties: list[tuple[str, object]] = [
        ("fixture", report.fixture),
        ("suite", suite.name),
        ("suite_kind", suite.kind),
        ("verdict", verdict),
    ]
    if not report.passed:
        properties.append(("first_failure", report.first_failure()))
    if report.line is not None:
        properties.append(("line", report.line))
    return properties


def _judge(report: CaseReport, kind: SuiteKind) -> None:
    """The item's outcome by the suite kind's policy: a failed check fails a gated suite's
    item and is an expected failure in a tracked suite; a run error always fails."""
    from harness.io.text import brief, inert
    from harness.verdict.policy import policy_for

    if report.passed:
        return
    if report.error is None and not policy_for(kind).gates_checks:
        pytest.xfail(inert(brief(report.failure_parts(), REASON_WIDTH)))
    pytest.fail(failure_text(report), pytrace=False)


def failure_text(report: CaseReport) -> str:
    """A failing case as the terminal shows it: the first failure on one line (what
    pytest's short summary and the JUnit message quote), the fixture line it points at,
    the case's lines of the table, then its checks and transcript as `zeroclaw eval run
    -v` shows them."""
    from harness.io.text import brief, inert
    from harness.reporters.case_view import render_case as case_view
    from harness.reporters.table import render_case as table_lines

    where = report.fixture if report.line is None else f"{report.fixture}:{report.line}"
    first = inert(brief(report.failure_parts(), REASON_WIDTH))
    return f"{first}\n  at {inert(where)}\n{table_lines(report)}\n{case_view(report)}"
