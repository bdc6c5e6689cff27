"""Running one case: a fresh agent, backend, registry and workspace; its turns driven
through the agent's own loop under the timeout; the record graded; the case's report built.

A case's failure is confined to its own report: whatever goes wrong becomes its run error.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from harness.agents.case_context import (
    NO_SETUP,
    CaseSetup,
    ContextError,
    close_case,
    prepare_case,
)
from harness.agents.protocol import AgentAdapter, AgentContext, close_session
from harness.approvals import ApprovalDesk, decisions_of
from harness.defaults import (
    DEFAULT_CASE_WALL_CLOCK,
    DEFAULT_JOBS,
    DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_CALLS_PER_STEP,
)
from harness.errors import RAISED_BY_AGENT_CODE, describe
from harness.expectations.base import JudgeNote
from harness.expectations.judge import Judge, Material, Rubric
from harness.expectations.registry import grade
from harness.fixtures.suite import Case, FixtureChanged, display_path
from harness.model_boundary import (
    Divergence,
    ModelBackend,
    ModelBoundary,
    ProviderFailure,
    RequestRefused,
)
from harness.modes import Mode
from harness.run.error_frames import error_frames
from harness.run.progress import CaseProgress, case_line, internal_error
from harness.run.replay import ReplayBackend, to_step
from harness.run_record import RunRecord
from harness.runtime.deadline import DeadlineExceeded, within
from harness.snapshots.store import SnapshotPlan, snapshot_grades
from harness.snapshots.surface import Unshowable
from harness.tool_registry import ToolRegistry
from harness.transcript import Conversation, Transcript, forget_in_flight
from harness.verdict.reports import CaseOrigin, CaseReport, ErrorFrame
from harness.workspace import restore_cwd, set_current_workspace

BackendFactory = Callable[[Case], ModelBackend]
T = TypeVar("T")
_AGENT_FAILURES: tuple[type[BaseException], ...] = RAISED_BY_AGENT_CODE


def replay_backend(case: Case) -> ModelBackend:
    return ReplayBackend(case.trace)


@dataclass(frozen=True)
class CasePlan:
    """How every case of one run is run."""

    adapter: AgentAdapter
    mode: Mode
    backend: BackendFactory
    allowed_tools: frozenset[str] | None
    timeout: float
    root: Path
    # The tools the agent registers, for grades that say whether a tool is the agent's.
    agent_tools: frozenset[str] | None = None
    # Called with each case's fresh context before the agent starts (mutation testing
    # injects its faults at the boundaries here).
    prepare: Callable[[Case, AgentContext], None] | None = None
    # A whole case (starting, every turn, grading) ends within this many seconds.
    case_wall_clock: float = DEFAULT_CASE_WALL_CLOCK
    # The model call over this in one turn is the case's run error, whatever the agent.
    max_model_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN
    # The answer asking for more tool calls than this is the case's run error, whatever the agent.
    max_tool_calls_per_step: int = DEFAULT_MAX_TOOL_CALLS_PER_STEP
    # Runs at once: in replay, worker processes (`harness.run.process_pool`); live, tasks of
    # one event loop. "auto": one per core.
    jobs: Jobs = DEFAULT_JOBS
    repeat: int | None = None  # live mode: runs of every case, overriding the fixtures'
    maxfail: int | None = None  # no case starts once this many cases failed
    # Passing cases' transcripts too (the HTML report shows every case's; the last run
    # kept for `show` writes each out as its case is done, and the run drops it then); by
    # default only a failing case's is built, so a run's memory does not grow with passes.
    keep_transcripts: bool = False
    # The `agent` setting the adapter was resolved from, when it was one: worker processes
    # resolve it themselves (None: the adapter is sent to them, when it can be pickled).
    agent_spec: str | None = None
    # The judge of the cases' rubrics (`expects.judge`); None: a rubric fails unjudged.
    judge: Judge | None = None
    # The `context` and `session` settings: each case's context built from its
    # `setup.context` by the user's function, and its SDK `Session`.
    setup: CaseSetup = NO_SETUP
    snapshots: SnapshotPlan | None = None  # replay: each case's request snapshot checked
    prerender: Any = None  # what workers render of each report for this process's reporters

    @functools.cached_property
    def surfaces(self) -> dict[tuple[str, ...], list[str]]:
        return {}

    @functools.cached_property
    def whole_surface(self) -> list[str]:
        """The surface of a case that narrows no tool: every one of the agent's."""
        return sorted(self.surface_tools)

    @functools.cached_property
    def surface_tools(self) -> frozenset[str]:
        """The agent's tools as reports keep them: what admission knew the agent registers,
        else what the adapter says (an adapter failing to say is each case's run error,
        as the runner asks again per case, not the run's)."""
        if self.agent_tools is not None:
            return self.agent_tools
        try:
            return frozenset(t.name for t in self.adapter.tools())
        except Exception:
            return frozenset()


Jobs = int | Literal["auto"]


def jobs_of(jobs: Jobs) -> int:
    """How many runs go at once for a `jobs` setting: "auto" is one per core this process
    may use."""
    if jobs != "auto":
        return jobs
    count = getattr(os, "process_cpu_count", None)  # Python 3.13+: the affinity's count
    if count is None:
        sched = getattr(os, "sched_getaffinity", None)
        return len(sched(0)) if sched is not None else os.cpu_count() or 1
    return int(count() or 1)


def start_case(case: Case, plan: CasePlan, fixture: str) -> CaseProgress:
    """A fresh context for `case`: backend, boundary, registry, workspace."""
    # The adapter's tools the case may use: those it names in `tools` (all when it names
    # none), and in live mode only those `live_allowed_tools` allows.
    trace = case.trace  # once: an admitted case finds its dropped trace again on each read
    usable = _usable(trace.tools, plan.allowed_tools)
    tools = plan.adapter.tools()
    registry = ToolRegistry.of(tools if usable is None else [t for t in tools if usable(t.name)])
    transcript = Transcript(registry)
    # The replay backend from the trace at hand, not the case's read again.
    backend = ReplayBackend(trace) if plan.backend is replay_backend else plan.backend(case)
    script = None
    if isinstance(backend, ReplayBackend):
        backend.on_take = transcript.answered_by
        script = backend.script
    boundary = ModelBoundary(
        backend,
        keep_steps=plan.mode == "live",
        max_calls_per_turn=plan.max_model_calls_per_turn,
        max_tool_calls_per_step=plan.max_tool_calls_per_step,
        observer=transcript,
    )
    setup = trace.setup
    decisions = decisions_of(trace.turns)
    context = AgentContext(
        case.id,
        boundary,
        registry,
        next_turn_agent=trace.next_turn_agent or "first",
        # A copy: the agent's tools may change it, and a repeated case runs from the fixture's.
        setup_context=copy.deepcopy(setup.context) if setup is not None else None,
        approvals=ApprovalDesk(decisions, by_tool=plan.mode == "live"),
    )
    if plan.prepare is not None:
        plan.prepare(case, context)
    progress = CaseProgress(case, trace, fixture, context, transcript, plan.case_wall_clock)
    progress.script = script
    progress.decisions = decisions
    return progress


async def run_case(progress: CaseProgress, plan: CasePlan, cwd: str | None = None) -> CaseReport:
    """Drive every turn, then grade while the workspace still exists; always removes it.
    `cwd`: the working directory the case starts in, when the caller knows it already."""
    case, context, timeout = progress.case, progress.context, plan.timeout
    # File tools find the workspace of the case they run in through this variable.
    set_current_workspace(context.case_workspace)
    # An agent may change the working directory; the next case and the reports must not
    # notice, so it is put back whatever the case did.
    if cwd is None:
        cwd = os.getcwd()
    try:
        error: str | None = None
        trace_text: str | None = None
        frames: list[ErrorFrame] | None = None
        try:
            await progress.driven(_drive(plan.adapter, progress, timeout, plan.setup))
        except DeadlineExceeded:
            error = progress.timeout_message(timeout)
        except (Divergence, ProviderFailure, RequestRefused) as exc:  # said as is
            error = str(exc)
        except ContextError as exc:  # the user's builder: said as is, where it was raised
            error = str(exc)
            cause = exc.__cause__ or exc
            frames = error_frames(cause, functools.partial(display_path, root=plan.root)) or None
        except _AGENT_FAILURES as exc:
            # Any failure of the agent is its run error; a CancelledError here is the
            # agent's own (the deadline's cancellation arrives as DeadlineExceeded).
            error = describe(exc)
            trace_text = traceback.format_exc()
            frames = error_frames(exc, functools.partial(display_path, root=plan.root)) or None
        finally:
            bounded = within if progress.watched is None else progress.watched.within
            await close_session(progress.session, bounded)
            await context.model.aclose()
            await close_case(context)
        if error is not None:
            return progress.errored(error, progress.record(), trace_text, frames)
        # Graded without its transcript: no grade reads it (they read the conversation).
        record = progress.record(transcript=False)
        expects = progress.trace.expects
        assert expects is not None  # admission guarantees it
        progress.grading = True  # bounded by the wall clock, through the watchdog
        # Graded while the workspace still exists: graders inspect what the agent left
        # (created here if the run never touched it, so a file check sees it empty).
        view = context.case_workspace.view() if expects.workspace is not None else None
        judged = None
        if expects.judge and plan.judge is not None:  # else there is nothing to await
            try:
                judged = await _judged(progress, plan, expects.judge, record)
            except DeadlineExceeded:
                return progress.errored(progress.timeout_message(timeout), record)
        conversation = conversation_of(progress, plan)
        grades = grade(expects, record, view, plan.agent_tools, conversation, judged)
        grades += snapshot_grades(plan.snapshots, case.where, conversation.exchanges, plan.root)
        failing = next((g.field for g in grades if g.fails), None)
        line = case_line(case, failing) if failing is not None else None
        if failing is not None or plan.keep_transcripts:
            record.transcript = progress.transcript.steps()
        return CaseReport.graded(case.id, progress.fixture, grades, record, line)
    except Unshowable as exc:  # the agent's request, not the harness: said as is
        return progress.errored(str(exc), progress.record())
    except RAISED_BY_AGENT_CODE as exc:  # a harness bug is still only this case's run error
        return internal_error(case, progress.fixture, exc, progress.turn)
    finally:
        if not progress.abandoned:
            restore_cwd(cwd)
        context.remove_workspace()


async def _judged(
    progress: CaseProgress, plan: CasePlan, rubrics: list[Rubric], record: RunRecord
) -> Mapping[str, JudgeNote] | None:
    """The run's judge's verdict on each rubric of the case, within the case's wall clock;
    None when the case has none or the run has no judge (then each rubric fails)."""
    if not rubrics or plan.judge is None:
        return None
    material = Material(
        user_inputs=tuple(t.user_input for t in progress.trace.turns),
        responses=tuple(record.turn_responses),
        calls=tuple(record.calls),
    )
    return await progress.within(math.inf, plan.judge.judge(progress.case.id, rubrics, material))


def forget_case() -> None:
    """What a case set in the context it ran in (its workspace, its request in flight) set
    back to nothing, so that the context is as the case found it (`run_case` sets them)."""
    set_current_workspace(None)
    forget_in_flight()


def conversation_of(progress: CaseProgress, plan: CasePlan) -> Conversation:
    """The conversation of the run: what the agent sent and, in replay, what the script
    implies it should have."""
    turns = progress.trace.turns
    script = progress.script
    if script is None:
        script = tuple(tuple(to_step(s.response) for s in (t.steps or ())) for t in turns)
    return Conversation(
        user_inputs=tuple(t.user_input for t in turns),
        script=script,
        exchanges=tuple(progress.transcript.exchanges),
        calls=tuple(progress.context.tools.calls),
        scripted=plan.mode == "replay",
        handoffs=tuple(progress.context.model.handoffs),
        guardrails=tuple(progress.context.model.guardrails),
        approvals=tuple(progress.context.approvals.requests),
        decisions=decisions_of(turns) if progress.decisions is None else progress.decisions,
        answers=tuple(progress.transcript.answers),
    )


def sealed(report: CaseReport, case: Case, plan: CasePlan) -> CaseReport:
    """`report` with what receipts and baselines keep of its case: the hash of the fixture
    it ran and the tools it could use. Done as each case is in, so a run never holds a
    second copy of its reports; a report sealed already (by a worker process) is kept."""
    if report.fixture_sha256 is not None:
        return report
    try:
        return _sealed(report, case, plan)
    except FixtureChanged as exc:  # what ran can no longer be vouched for: no hash
        return internal_error(case, report.fixture, exc)


def _sealed(report: CaseReport, case: Case, plan: CasePlan) -> CaseReport:
    # The sorted names of the tools the case could use: a baseline keeps them, so a case
    # whose tools changed is not compared with a verdict reached with other tools.
    trace = case.trace  # once: an admitted case finds its dropped trace again on each read
    usable = _usable(trace.tools, plan.allowed_tools)
    if usable is None:
        surface = plan.whole_surface
    else:
        surface = sorted(filter(usable, plan.surface_tools))
        # Most cases of a suite share one: they share the list too (reports are read-only).
        surface = plan.surfaces.setdefault(tuple(surface), surface)
    origin = trace.origin
    return msgspec.structs.replace(
        report,
        fixture_sha256=case.fixture_sha256,
        tool_surface=surface,
        origin=None
        if origin is None
        else CaseOrigin(source=origin.source, trace_id=origin.trace_id, span_id=origin.span_id),
    )


def _usable(
    named: list[str] | None, allowed: frozenset[str] | None
) -> Callable[[str], bool] | None:
    """Whether a tool of the agent is one a case may use: named in its `tools` (`named`;
    any, when it names none) and, in live mode, allowed. None: every tool is."""
    if named is None and allowed is None:
        return None
    return lambda name: (named is None or name in named) and (allowed is None or name in allowed)


async def _drive(
    adapter: AgentAdapter, progress: CaseProgress, timeout: float, plan_setup: CaseSetup
) -> None:
    context = progress.context
    setup = progress.trace.setup
    if setup is not None and setup.workspace_files:
        context.case_workspace.write_setup_files(setup.workspace_files)

    async def start() -> Any:
        if plan_setup is not NO_SETUP:  # no context to build, no session to open: nothing
            await prepare_case(plan_setup, context)  # bounded as starting the agent is
        session = adapter.start(context)
        return await session if inspect.isawaitable(session) else session

    session = progress.session = await progress.within(timeout, start())
    paces = context.model.paces
    for index, turn in enumerate(progress.trace.turns):
        # A pause the provider asked for delays the turn instead of using up its time: it
        # is waited out before the turn's clock starts, within the case's wall clock.
        if paces:
            await context.model.ready(progress.allowance(math.inf))
        progress.transcript.start_turn(index)
        context.model.start_turn(index)
        context.approvals.start_turn(index)
        # The watchdog times each turn from here, as the deadline does.
        response = await progress.within(timeout, _turn(session, turn.user_input))
        progress.responses.append(response)
        context.model.end_turn(index)


async def _turn(session: Any, user_input: str) -> str:
    response = session.run_turn(user_input)
    if inspect.isawaitable(response):
        response = await response
    if not isinstance(response, str):
        raise TypeError(f"run_turn returned {type(response).__name__}, expected str")
    return response
