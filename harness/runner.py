"""Running cases: isolation per case, run errors that never stop the suite, timeouts."""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.agent import AgentAdapter, AgentContext, agent_surface, resolve_agent
from harness.backend import ModelBackend, ModelBoundary, ProviderFailure
from harness.grader import grade
from harness.locate import line_of
from harness.modes import Mode, SuiteKind
from harness.record import RunRecord
from harness.replay import ReplayBackend, ReplayDivergence
from harness.report.model import CaseReport, SuiteReport, resolve_kind
from harness.suite import Case, load_suite
from harness.tools import Tool, ToolRegistry
from harness.workspace import set_current_workspace, write_setup_files

DEFAULT_CASE_TIMEOUT = 120.0
T = TypeVar("T")


BackendFactory = Callable[[Case], ModelBackend]


def replay_backend(case: Case) -> ModelBackend:
    return ReplayBackend(case.trace)


@dataclass(frozen=True)
class _Plan:
    """How every case of one run is run."""

    adapter: AgentAdapter
    mode: Mode
    backend: BackendFactory
    allowed_tools: frozenset[str] | None
    timeout: float
    root: Path
    on_case: Callable[[CaseReport], None] | None


def run_suite(
    suite_dir: str | Path,
    *,
    agent: str | AgentAdapter = "openai-agents",
    mode: Mode = "replay",
    backend: BackendFactory | None = None,
    allowed_tools: frozenset[str] | None = None,
    kind: SuiteKind | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
    root: Path | None = None,
    on_case: Callable[[CaseReport], None] | None = None,
) -> SuiteReport:
    """Admit every fixture of `suite_dir`, run each case through `agent`, grade it.

    Raises `AdmissionError` (every problem listed) when any fixture is refused: nothing runs.
    Live mode needs `backend` (e.g. `harness.live.live_backend_factory(settings)`).
    """
    adapter = resolve_agent(agent) if isinstance(agent, str) else agent
    directory = Path(suite_dir)
    cases = load_suite(directory, mode, agent_surface(adapter))
    return run_cases(
        cases,
        adapter,
        suite=str(suite_dir),
        kind=kind or resolve_kind(None, str(suite_dir)),
        mode=mode,
        backend=backend,
        allowed_tools=allowed_tools,
        case_timeout=case_timeout,
        root=root,
        on_case=on_case,
    )


def run_cases(
    cases: list[Case],
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
) -> SuiteReport:
    """Run admitted cases in order; each case's failure is confined to its own report.

    `case_timeout` bounds starting the agent and each turn. `allowed_tools` (live mode)
    further restricts the built-in tools a case may use.
    """
    if backend is None:
        if mode != "replay":
            raise ValueError("live mode needs a backend factory for the provider")
        backend = replay_backend
    plan = _Plan(
        adapter,
        mode,
        backend,
        allowed_tools,
        case_timeout,
        (root or Path.cwd()).resolve(),
        on_case,
    )
    start = time.perf_counter()
    reports: list[CaseReport] = []
    pending = cases
    while pending:
        worker = _SuiteWorker(pending, plan)
        stuck = worker.watch()
        reports.extend(worker.reports)
        if stuck is None:
            break
        # The case blocked its thread past the timeout: report it, leave the thread behind
        # (a daemon), and go on with the next case on a fresh thread.
        report = stuck.abandoned_report(case_timeout)
        reports.append(report)
        if on_case is not None:
            on_case(report)
        pending = pending[len(worker.reports) + 1 :]
    return SuiteReport(
        suite=suite,
        kind=kind,
        mode=mode,
        agent=adapter.name,
        cases=reports,
        duration_ms=(time.perf_counter() - start) * 1e3,
    )


def display_path(path: Path, root: Path) -> str:
    """The fixture path relative to the project root, as CI annotations want it."""
    # abspath, not resolve(): no file-system walk per case, and the path the user gave is
    # the one to show (a symlinked suite keeps its own name).
    absolute = os.path.abspath(path)
    prefix = os.path.join(str(root), "")
    if absolute.startswith(prefix):
        return absolute[len(prefix) :].replace(os.sep, "/")
    return str(path)


# How long past its timeout a case may take to honour cancellation before its thread is
# considered blocked and abandoned.
_GRACE_SECS = 1.0


class _Running:
    """The case in progress: where it got to, so a timeout can say which turn hung."""

    def __init__(self, case: Case, fixture: str, context: AgentContext) -> None:
        self.case = case
        self.fixture = fixture
        self.context = context
        self.turn = -1
        self.responses: list[str] = []
        self.started = time.monotonic()
        self.start = time.perf_counter()

    def record(self) -> RunRecord:
        model = self.context.model
        return RunRecord(
            final_response=self.responses[-1] if self.responses else "",
            turn_responses=list(self.responses),
            calls=list(self.context.tools.calls),
            model_calls=model.calls,
            input_tokens=model.input_tokens,
            output_tokens=model.output_tokens,
            duration_ms=(time.perf_counter() - self.start) * 1e3,
            steps=[list(turn) for turn in model.steps] if model.steps is not None else None,
        )

    def timeout_message(self, timeout: float) -> str:
        where = f"in turn {self.turn}" if self.turn >= 0 else "starting the agent"
        return f"timed out after {timeout:g}s {where}"

    def abandoned_report(self, timeout: float) -> CaseReport:
        self.context.remove_workspace()
        message = f"{self.timeout_message(timeout)}; the agent blocked its thread and was abandoned"
        report = CaseReport.errored(self.case.id, self.fixture, message, self.record())
        _locate_failure(report, self.case, self.turn)
        return report


class _SuiteWorker:
    """Runs cases one after another on an event loop in its own thread.

    The calling thread only watches: it steps in when a case outlives its timeout without
    honouring cancellation (a loop blocking its thread), which no in-loop timeout can stop.
    """

    def __init__(self, cases: list[Case], plan: _Plan) -> None:
        self._cases = cases
        self._plan = plan
        self._lock = threading.Lock()
        self._abandoned = False
        self._done = threading.Event()
        self._failure: BaseException | None = None
        self.current: _Running | None = None
        self.reports: list[CaseReport] = []
        threading.Thread(target=self._main, name="zeroclaw-eval-cases", daemon=True).start()

    def watch(self) -> _Running | None:
        """Wait for the worker; the case it abandoned, if any."""
        timeout = self._plan.timeout
        poll = min(1.0, timeout / 4)
        while not self._done.wait(poll):
            running = self.current
            if running is None:
                continue
            if time.monotonic() - running.started > timeout + _GRACE_SECS:
                with self._lock:
                    if self.current is running:
                        self._abandoned = True
                        return running
        if self._failure is not None:
            raise self._failure
        return None

    def _main(self) -> None:
        try:
            asyncio.run(self._run_all())
        except BaseException as exc:  # surfaced in the watching thread
            self._failure = exc
        finally:
            self._done.set()

    async def _run_all(self) -> None:
        plan = self._plan
        for case in self._cases:
            fixture = display_path(case.path, plan.root)
            try:
                boundary = ModelBoundary(plan.backend(case), keep_steps=plan.mode == "live")
                tools = _case_tools(plan.adapter.tools(), case, plan.allowed_tools)
                context = AgentContext(case.id, boundary, ToolRegistry.of(tools))
            except Exception as exc:  # e.g. an adapter's tools() raising: this case's error
                report = _internal_error(case, fixture, exc)
                _locate_failure(report, case, -1)
            else:
                running = _Running(case, fixture, context)
                self.current = running
                report = await self._run_case(running)
                _locate_failure(report, case, running.turn)
            with self._lock:
                if self._abandoned:
                    return
                self.reports.append(report)
                self.current = None
            if plan.on_case is not None:
                plan.on_case(report)

    async def _run_case(self, running: _Running) -> CaseReport:
        case, fixture, timeout = running.case, running.fixture, self._plan.timeout
        context = running.context
        # File tools find the workspace of the case they run in through this variable.
        set_current_workspace(lambda: context.workspace)
        try:
            error: str | None = None
            trace_text: str | None = None
            try:
                await _drive(self._plan.adapter, running, timeout)
            except _CaseTimeout:
                error = running.timeout_message(timeout)
            except (ReplayDivergence, ProviderFailure) as exc:
                error = str(exc)
            except Exception as exc:  # any failure of the agent is this case's run error
                error = f"{type(exc).__name__}: {exc}"
                trace_text = traceback.format_exc()
            finally:
                await _close(context.model.backend)
            record = running.record()
            if error is not None:
                return CaseReport.errored(case.id, fixture, error, record, trace_text)
            expects = case.trace.expects
            assert expects is not None  # admission guarantees it
            # Graded while the workspace still exists: graders inspect what the agent left
            # (created here if the run never touched it, so a file check sees it empty).
            workspace = context.workspace if expects.workspace is not None else None
            grades = grade(expects, record, workspace)
            return CaseReport.graded(case.id, fixture, grades, record)
        except Exception as exc:  # a harness bug is still only this case's run error
            return _internal_error(case, fixture, exc)
        finally:
            context.remove_workspace()


def _case_tools(tools: list[Tool], case: Case, allowed: frozenset[str] | None) -> list[Tool]:
    """The adapter's tools a case may use: those it names in `tools` (all when it names
    none), and in live mode only those `live_allowed_tools` allows."""
    named = case.trace.tools
    return [
        t
        for t in tools
        if (named is None or t.name in named) and (allowed is None or t.name in allowed)
    ]


async def _close(backend: object) -> None:
    close = getattr(backend, "aclose", None)
    if close is not None:
        await close()


def _locate_failure(report: CaseReport, case: Case, turn: int) -> None:
    """Point a failing report at the fixture line to annotate: the first failing
    expectation, or the turn in which the run failed."""
    if report.passed:
        return
    if report.error is not None:
        field = f"$.turns[{turn}]" if turn >= 0 else "$.turns"
    else:
        failing = report.failing_grades
        field = failing[0].field if failing else "$.expects"
    report.line = line_of(case.text, field)


def _internal_error(case: Case, fixture: str, exc: Exception) -> CaseReport:
    return CaseReport.errored(
        case.id,
        fixture,
        f"internal error: {type(exc).__name__}: {exc}",
        None,
        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    )


class _CaseTimeout(Exception):
    """The case outlived its timeout; distinct from a TimeoutError the agent itself raises."""


async def _within(timeout: float, coro: Coroutine[Any, Any, T]) -> T:
    """`await coro`, or `_CaseTimeout` once `timeout` passes.

    A timer cancels this very task: per turn that is cheaper than a wrapper task, and unlike
    `asyncio.wait_for` it tells its own timeout from a TimeoutError the agent raises. A
    coroutine that ignores the cancellation and blocks is the watchdog's job.
    """
    task = asyncio.current_task()
    assert task is not None
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = asyncio.get_running_loop().call_later(timeout, expire)
    try:
        result = await coro
    except asyncio.CancelledError:
        if not expired:
            raise
        _uncancel(task)
        raise _CaseTimeout from None
    finally:
        timer.cancel()
    if expired:  # the agent swallowed the cancellation and finished anyway: still too late
        _uncancel(task)
        raise _CaseTimeout
    return result


def _uncancel(task: asyncio.Task[Any]) -> None:
    # Python 3.11+ counts cancellation requests; the task goes on to the next case, so the
    # one this timeout made must not linger.
    uncancel = getattr(task, "uncancel", None)
    if uncancel is not None:
        uncancel()


async def _drive(adapter: AgentAdapter, running: _Running, timeout: float) -> None:
    context = running.context
    setup = running.case.trace.setup
    if setup is not None and setup.workspace_files:
        write_setup_files(context.workspace, setup.workspace_files)

    async def start() -> Any:
        session = adapter.start(context)
        return await session if inspect.isawaitable(session) else session

    session = await _within(timeout, start())
    for index, turn in enumerate(running.case.trace.turns):
        running.turn = index
        running.started = time.monotonic()  # the watchdog times each turn, as we do
        context.model.start_turn(index)
        response = await _within(timeout, _turn(session, turn.user_input))
        running.responses.append(response)
        context.model.end_turn(index)


async def _turn(session: Any, user_input: str) -> str:
    response = session.run_turn(user_input)
    if inspect.isawaitable(response):
        response = await response
    if not isinstance(response, str):
        raise TypeError(f"run_turn returned {type(response).__name__}, expected str")
    return response
