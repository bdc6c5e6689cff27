"""Running cases: isolation per case, run errors that never stop the suite, timeouts."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from harness.agent import AgentAdapter, AgentContext, agent_surface, resolve_agent
from harness.backend import ModelBoundary
from harness.grader import grade
from harness.locate import line_of
from harness.modes import Mode, SuiteKind
from harness.record import RunRecord
from harness.replay import ReplayBackend, ReplayDivergence
from harness.report.model import CaseReport, SuiteReport, resolve_kind
from harness.suite import Case, load_suite
from harness.tools import ToolRegistry

DEFAULT_CASE_TIMEOUT = 120.0


class LiveModeUnavailable(Exception):
    """Live mode is specified but not built yet."""


def run_suite(
    suite_dir: str | Path,
    *,
    agent: str | AgentAdapter = "openai-agents",
    mode: Mode = "replay",
    kind: SuiteKind | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
    root: Path | None = None,
    on_case: Callable[[CaseReport], None] | None = None,
) -> SuiteReport:
    """Admit every fixture of `suite_dir`, run each case through `agent`, grade it.

    Raises `AdmissionError` (every problem listed) when any fixture is refused: nothing runs.
    """
    if mode != "replay":
        raise LiveModeUnavailable(
            "live mode is not available yet: only --mode replay runs in this version"
        )
    adapter = resolve_agent(agent) if isinstance(agent, str) else agent
    directory = Path(suite_dir)
    cases = load_suite(directory, mode, agent_surface(adapter))
    return run_cases(
        cases,
        adapter,
        suite=str(suite_dir),
        kind=kind or resolve_kind(None, str(suite_dir)),
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
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
    root: Path | None = None,
    on_case: Callable[[CaseReport], None] | None = None,
) -> SuiteReport:
    """Run admitted cases in order; each case's failure is confined to its own report."""
    root = (root or Path.cwd()).resolve()
    start = time.perf_counter()
    reports: list[CaseReport] = []
    pending = cases
    while pending:
        worker = _SuiteWorker(pending, adapter, case_timeout, root, on_case)
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
        mode="replay",
        agent=adapter.name,
        cases=reports,
        duration_ms=(time.perf_counter() - start) * 1e3,
    )


def display_path(path: Path, root: Path) -> str:
    """The fixture path relative to the project root, as CI annotations want it."""
    absolute = path.resolve()
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
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

    def __init__(
        self,
        cases: list[Case],
        adapter: AgentAdapter,
        timeout: float,
        root: Path,
        on_case: Callable[[CaseReport], None] | None,
    ) -> None:
        self._cases = cases
        self._adapter = adapter
        self._timeout = timeout
        self._root = root
        self._on_case = on_case
        self._lock = threading.Lock()
        self._abandoned = False
        self._done = threading.Event()
        self._failure: BaseException | None = None
        self.current: _Running | None = None
        self.reports: list[CaseReport] = []
        threading.Thread(target=self._main, name="zeroclaw-eval-cases", daemon=True).start()

    def watch(self) -> _Running | None:
        """Wait for the worker; the case it abandoned, if any."""
        poll = min(1.0, self._timeout / 4)
        while not self._done.wait(poll):
            running = self.current
            if running is None:
                continue
            if time.monotonic() - running.started > self._timeout + _GRACE_SECS:
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
        for case in self._cases:
            fixture = display_path(case.path, self._root)
            try:
                context = AgentContext(
                    case.id,
                    ModelBoundary(ReplayBackend(case.trace)),
                    ToolRegistry.of(self._adapter.tools()),
                )
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
            if self._on_case is not None:
                self._on_case(report)

    async def _run_case(self, running: _Running) -> CaseReport:
        case, fixture = running.case, running.fixture
        try:
            error: str | None = None
            trace_text: str | None = None
            try:
                await _within(self._timeout, _drive(self._adapter, running))
            except _CaseTimeout:
                error = running.timeout_message(self._timeout)
            except ReplayDivergence as exc:
                error = str(exc)
            except Exception as exc:  # any failure of the agent is this case's run error
                error = f"{type(exc).__name__}: {exc}"
                trace_text = traceback.format_exc()
            record = running.record()
            if error is not None:
                return CaseReport.errored(case.id, fixture, error, record, trace_text)
            assert case.trace.expects is not None  # admission guarantees it
            # Graded while the workspace still exists: graders may inspect what the agent left.
            return CaseReport.graded(case.id, fixture, grade(case.trace.expects, record), record)
        except Exception as exc:  # a harness bug is still only this case's run error
            return _internal_error(case, fixture, exc)
        finally:
            running.context.remove_workspace()


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


async def _within(timeout: float, coro: Coroutine[Any, Any, None]) -> None:
    # Not asyncio.wait_for: it cannot tell its own timeout from an agent's TimeoutError.
    task = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        await asyncio.wait({task})  # let it unwind; a blocked thread is the watchdog's job
        raise _CaseTimeout
    task.result()


async def _drive(adapter: AgentAdapter, running: _Running) -> None:
    context = running.context
    session: Any = adapter.start(context)
    if inspect.isawaitable(session):
        session = await session
    for index, turn in enumerate(running.case.trace.turns):
        running.turn = index
        context.model.start_turn(index)
        response = session.run_turn(turn.user_input)
        if inspect.isawaitable(response):
            response = await response
        if not isinstance(response, str):
            raise TypeError(f"run_turn returned {type(response).__name__}, expected str")
        running.responses.append(response)
        context.model.end_turn(index)
