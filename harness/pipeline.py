"""One pipeline for the command line and the API: admit a suite, run every case, grade,
build the verdict, and hand each step to the reporters.

fixture → admission → run → record → grades → verdict → reporters (→ exit code)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from harness.agents.case_context import NO_SETUP, CaseSetup, setup_for
from harness.agents.protocol import AgentAdapter
from harness.agents.registry import resolve_within
from harness.defaults import (
    DEFAULT_AGENT,
    DEFAULT_CASE_TIMEOUT,
    DEFAULT_CASE_WALL_CLOCK,
    DEFAULT_JOBS,
    DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_CALLS_PER_STEP,
)
from harness.errors import UsageError
from harness.expectations.judge import Judge
from harness.fixtures.selection import Selection, choose
from harness.fixtures.suite import AdmittedCases, Case, display_path, ids_of, where_at
from harness.modes import Mode, SuiteKind, resolve_kind
from harness.reporters.base import Reporter
from harness.reporters.delivery import Delivery, takes_passes
from harness.reporters.streamed import slimmed
from harness.run.options import RunOptions as RunOptions
from harness.run.options import admit as admit
from harness.run.options import load
from harness.run.runner import BackendFactory, CasePlan, Jobs, replay_backend
from harness.run.watchdog import end_workers_early, run_watched, start_workers_early
from harness.snapshots.store import SnapshotPlan, plan_for, remove_unused, unused
from harness.verdict.kept import Prerendering
from harness.verdict.receipts import ask_git, suite_hash, suite_receipt
from harness.verdict.reports import CaseReport, SuiteReport, UnusedSnapshots

if TYPE_CHECKING:
    # A run against a baseline imports these as it reads it (`_against`): the rest never do.
    from harness.tracking.baseline import Against


def run(options: RunOptions, reporters: Sequence[Reporter] = ()) -> SuiteReport:
    """Admit the suite, run every case through the agent, grade, and report.

    Raises `AdmissionError` (every problem listed, reporters told) when any fixture is
    refused: nothing runs. A report that cannot be written keeps no other from being
    written; all that could not are raised as one `ReportWriteError` at the end. A
    baseline is read (and refused, `BaselineError`) before anything else."""
    against = _against(options)
    adapter, surface = resolve_within(options.agent, options.case_timeout)
    early = options.mode == "replay" and (  # the cases may go to workers
        start_workers_early(options.jobs, options.suite, type(adapter).__module__)
    )
    try:
        setup = setup_for(adapter, options.context, options.session, options.case_timeout)
        root = options.project_root
        admitted = load(options, surface, reporters, early)
        chosen = options.selection
        if options.suite.is_file():  # one fixture: a selection of its suite, never its gate
            chosen = msgspec.structs.replace(chosen, fixture_file=display_path(options.suite, root))
        cases = choose(admitted, chosen)
        selection = chosen if chosen.active else None
        if selection is not None:
            # The whole suite's digest, so shards (and partial runs) say which suite they are of.
            shown = [(display_path(case.where, root), case.fixture_sha256) for case in admitted]
            selection = msgspec.structs.replace(selection, suite_sha256=suite_hash(shown))
        suite = options.name if options.name is not None else display_path(options.suite, root)
        kind = resolve_kind(options.kind, suite)
        snapshots = None
        if options.mode == "replay":
            snapshots = plan_for(options.snapshots, kind, adapter.name, options.update_snapshots)
        unused = None
        if snapshots is not None and selection is None and options.suite.is_dir():
            unused = _unused(options, snapshots, admitted, root)
        return run_cases(
            cases,
            adapter,
            suite=suite,
            kind=kind,
            mode=options.mode,
            backend=options.backend,
            allowed_tools=options.allowed_tools,
            case_timeout=options.case_timeout,
            root=root,
            reporters=reporters,
            agent_tools=surface.tools,
            case_wall_clock=options.case_wall_clock,
            max_model_calls_per_turn=options.max_model_calls_per_turn,
            max_tool_calls_per_step=options.max_tool_calls_per_step,
            jobs=options.jobs,
            repeat=options.repeat,
            maxfail=options.maxfail,
            provider=options.provider,
            against=against,
            selection=selection,
            # Worker processes build the agent from its setting rather than a pickled copy.
            agent_spec=options.agent if isinstance(options.agent, str) else None,
            judge=options.judge,
            setup=setup,
            snapshots=snapshots,
            unused_snapshots=unused,
        )
    finally:
        if early:  # a pool took those it used; the rest would outlive the run
            end_workers_early()


def _unused(
    options: RunOptions, plan: SnapshotPlan, admitted: Sequence[Case], root: Path
) -> UnusedSnapshots | None:
    """The snapshots no case of the suite uses, found (and, updating, removed) before any
    case runs; None: there are none. Only a run of the whole suite may say so: a filtered
    run did not pick the others, which are no less used."""
    if isinstance(admitted, AdmittedCases):  # a listed suite's names, read at once
        names = admitted.names()
    else:
        names = [os.path.basename(where_at(admitted, i)) for i in range(len(admitted))]
    found = unused(plan, options.suite, names)
    if not found:
        return None
    if plan.update:
        remove_unused(found, root)
    return UnusedSnapshots(
        files=[display_path(path, root) for path in found],
        removed=plan.update,
        fails=options.unused_snapshots == "fail",
    )


def _against(options: RunOptions) -> Against | None:
    if options.baseline is None:
        if options.fail_on_regression:
            raise UsageError(
                "--fail-on-regression needs --baseline FILE: without one there is nothing "
                "a case could have regressed from"
            )
        return None
    from harness.tracking.baseline import Against, load_baseline

    return Against(
        load_baseline(options.baseline),
        str(options.baseline),
        options.regression_level,
        options.fail_on_regression,
        options.budget,
    )


def run_cases(
    cases: Sequence[Case],
    adapter: AgentAdapter,
    *,
    suite: str,
    kind: SuiteKind = "regression",
    mode: Mode = "replay",
    backend: BackendFactory | None = None,
    allowed_tools: frozenset[str] | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
    root: Path | None = None,
    on_case: Callable[[CaseReport], None] | None = None,
    reporters: Sequence[Reporter] = (),
    agent_tools: frozenset[str] | None = None,
    case_wall_clock: float = DEFAULT_CASE_WALL_CLOCK,
    max_model_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    max_tool_calls_per_step: int = DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    jobs: Jobs = DEFAULT_JOBS,
    repeat: int | None = None,
    maxfail: int | None = None,
    provider: str | None = None,
    against: Against | None = None,
    selection: Selection | None = None,
    agent_spec: str | None = None,
    judge: Judge | None = None,
    setup: CaseSetup = NO_SETUP,
    snapshots: SnapshotPlan | None = None,
    unused_snapshots: UnusedSnapshots | None = None,
) -> SuiteReport:
    """Run admitted cases in order; each case's failure is confined to its own report.

    `case_timeout` bounds starting the agent and each turn, `case_wall_clock` the whole
    case (grading included). `jobs` runs that many cases (and repetitions) at once;
    `repeat` (live mode) runs every case that many times; `maxfail` stops starting cases
    once that many failed. `allowed_tools` (live mode)
    further restricts the built-in tools a case may use. `agent_tools` (what admission
    checked against) lets grades say when a check concerns a tool the agent lacks.
    `against` compares the verdict with a baseline (and may let a regression fail it).
    `judge` grades the cases' rubrics.
    """
    if backend is None:
        if mode != "replay":
            raise ValueError("live mode needs a backend factory for the provider")
        backend = replay_backend
    wanted = any(r.wants_transcripts for r in reporters)
    streamed = any(r.streams_transcripts for r in reporters)
    order = ids_of(cases)
    if len(set(order)) != len(order):  # ids told twice cannot be put in order
        order = []
    delivery = Delivery(reporters, order)
    delivery.named(suite, adapter.name)  # first: what a worker renders may name them
    # Reporters, none of which reads a case whole at the end (the reports that hold every
    # case write each out as it is kept, as the command's do): the run keeps of a plain
    # pass only what the totals need. A caller with none gets every case whole.
    slim = (
        bool(reporters)
        and on_case is None
        and against is None
        and not any(r.whole_cases for r in reporters)
        and len(order) == len(cases)
    )
    # What workers render of each case for the reporters, as this process would; and,
    # when that is all the reporters write of a plain pass, such a pass comes back as its
    # parts alone (`maxfail` tells the cases in fixture order, case by case).
    kinds = _worker_parts(reporters, dropped=streamed and not wanted)
    passes = slim and maxfail is None and takes_passes(reporters, kinds)
    if not passes:
        kinds = tuple(kind for kind in kinds if not getattr(kind, "only_for_passes", False))
    delivery.kinds = kinds
    plan = CasePlan(
        adapter,
        mode,
        backend,
        allowed_tools,
        case_timeout,
        (root or Path.cwd()).resolve(),
        agent_tools,
        case_wall_clock=case_wall_clock,
        max_model_calls_per_turn=max_model_calls_per_turn,
        max_tool_calls_per_step=max_tool_calls_per_step,
        jobs=jobs,
        repeat=repeat,
        maxfail=maxfail,
        keep_transcripts=wanted or streamed,
        agent_spec=agent_spec,
        judge=judge,
        setup=setup,
        snapshots=snapshots,
        prerender=Prerendering(kinds, passes) if kinds else None,
    )
    delivery.start(len(cases))

    def case_done(report: CaseReport) -> CaseReport | None:
        delivery.case_done(report)
        if on_case is not None:
            on_case(report)
        if streamed and not wanted and report.passed and report.record is not None:
            # Told: the reporters that take it have it (written out); the run keeps the
            # record without it, as it keeps every passing case's when none asks.
            report.record.transcript = None
        delivery.kept(report)
        return slimmed(report) if slim else None

    gate = against is not None and against.fail_on_regression
    git = ask_git(plan.root)  # asked now, answered beside the cases
    start = time.perf_counter()
    try:
        reports = run_watched(cases, plan, case_done, on_passes=delivery.passes if passes else None)
        report = SuiteReport(
            suite=suite,
            kind=kind,
            mode=mode,
            agent=adapter.name,
            cases=reports,
            duration_ms=(time.perf_counter() - start) * 1e3,
            receipt=suite_receipt(
                agent=adapter.name,
                framework=getattr(adapter, "framework", None),
                mode=mode,
                kind=kind,
                root=plan.root,
                provider=provider,
                fail_on_regression=gate,
                selection=selection,
                repeat=repeat,
                git=git,
            ),
            fail_on_regression=gate,
            unused_snapshots=unused_snapshots,
        )
        if against is not None:
            from harness.tracking.baseline import compare
            from harness.tracking.budget_gate import gated

            # Built into the verdict before any reporter sees it, never patched afterwards.
            comparison = compare(against.baseline, report, against.level, against.shown)
            if against.gates is not None:
                comparison = gated(comparison, against.baseline, report, against.gates)
            report = msgspec.structs.replace(report, baseline=comparison)
        delivery.finish(report)
    except BaseException:  # an interruption: nothing half written stays behind
        delivery.abandon()
        raise
    finally:
        if jobs != 1:  # the workers its pool stopped, joined once the reports are written
            end_workers_early()
    return report


def _worker_parts(reporters: Sequence[Reporter], dropped: bool) -> tuple[Any, ...]:
    """The parts workers render of each case for `reporters` (each kind once); `dropped`:
    whether passing cases' transcripts are dropped once told."""
    found: list[Any] = []
    for reporter in reporters:
        parts = reporter.worker_parts
        if parts is None or parts in found:
            continue
        if getattr(parts, "only_when_transcripts_dropped", False) and not dropped:
            continue
        found.append(parts)
    return tuple(found)


def run_suite(
    suite_dir: str | Path,
    *,
    agent: str | AgentAdapter = DEFAULT_AGENT,
    mode: Mode = "replay",
    backend: BackendFactory | None = None,
    allowed_tools: frozenset[str] | None = None,
    kind: SuiteKind | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
    root: Path | None = None,
    on_case: Callable[[CaseReport], None] | None = None,
    case_wall_clock: float = DEFAULT_CASE_WALL_CLOCK,
    jobs: Jobs = DEFAULT_JOBS,
    repeat: int | None = None,
    maxfail: int | None = None,
    context: str | None = None,
    session: str | None = None,
) -> SuiteReport:
    """Admit every fixture of `suite_dir`, run each case through `agent`, grade it.

    Raises `AdmissionError` (every problem listed) when any fixture is refused: nothing runs.
    Live mode needs `backend` (e.g. `harness.live.backend.live_backend_factory(settings)`).
    `context` and `session` are the settings of those names (`module:function`; "sqlite").
    """
    options = RunOptions(
        Path(suite_dir),
        agent,
        mode,
        kind,
        case_timeout,
        root,
        backend,
        allowed_tools,
        name=str(suite_dir),  # the suite as the caller named it
        case_wall_clock=case_wall_clock,
        jobs=jobs,
        repeat=repeat,
        maxfail=maxfail,
        context=context,
        session=session,
    )
    listeners: list[Reporter] = [] if on_case is None else [_Callback(on_case)]
    return run(options, listeners)


class _Callback(Reporter):
    def __init__(self, on_case: Callable[[CaseReport], None]) -> None:
        self._on_case = on_case

    def case_done(self, case: CaseReport) -> None:
        self._on_case(case)


def deliver(report: SuiteReport, reporters: Sequence[Reporter]) -> None:
    """Hand a report built elsewhere (a merge of shards) to the reporters, as a run would:
    each case as done, in order, then the whole."""
    delivery = Delivery(reporters)
    delivery.named(report.suite, report.agent)
    delivery.start(len(report.cases))
    for case in report.cases:
        delivery.case_done(case)
        delivery.kept(case)
    try:
        delivery.finish(report)
    except BaseException:
        delivery.abandon()
        raise
