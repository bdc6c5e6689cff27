"""Running cases: isolation per case, run errors that never stop the suite, timeouts."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from harness.agent import AgentAdapter, AgentContext, agent_surface, resolve_agent
from harness.backend import ModelBoundary
from harness.case import Mode
from harness.grader import grade
from harness.record import RunRecord
from harness.replay import ReplayBackend, ReplayDivergence
from harness.report.model import CaseReport, SuiteKind, SuiteReport, resolve_kind
from harness.suite import Case, load_suite
from harness.tools import ToolRegistry

T = TypeVar("T")
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
    with _CaseLoop() as loop:
        for case in cases:
            report = _run_case(case, adapter, loop, case_timeout, display_path(case.path, root))
            reports.append(report)
            if on_case is not None:
                on_case(report)
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


class _Turns:
    """Where a case's run got to, so a timeout can say which turn hung."""

    def __init__(self) -> None:
        self.current = -1
        self.responses: list[str] = []


def _run_case(
    case: Case, adapter: AgentAdapter, loop: _CaseLoop, timeout: float, fixture: str
) -> CaseReport:
    workspace = Path(tempfile.mkdtemp(prefix="zeroclaw-eval-"))
    try:
        boundary = ModelBoundary(ReplayBackend(case.trace))
        registry = ToolRegistry.of(adapter.tools())
        context = AgentContext(case.id, boundary, registry, workspace)
        turns = _Turns()
        start = time.perf_counter()
        error: str | None = None
        trace_text: str | None = None
        try:
            loop.run(_drive(adapter, context, case, turns), timeout)
        except TimeoutError:
            where = f" in turn {turns.current}" if turns.current >= 0 else " starting the agent"
            error = f"timed out after {timeout:g}s{where}"
        except ReplayDivergence as exc:
            error = str(exc)
        except Exception as exc:  # any failure of the agent is this case's run error
            error = f"{type(exc).__name__}: {exc}"
            trace_text = traceback.format_exc()
        record = RunRecord(
            final_response=turns.responses[-1] if turns.responses else "",
            turn_responses=turns.responses,
            calls=list(registry.calls),
            model_calls=boundary.calls,
            input_tokens=boundary.input_tokens,
            output_tokens=boundary.output_tokens,
            duration_ms=(time.perf_counter() - start) * 1e3,
        )
        if error is not None:
            return CaseReport.errored(case.id, fixture, error, record, trace_text)
        assert case.trace.expects is not None  # admission guarantees it
        # Graded while the workspace still exists: graders may inspect what the agent left.
        return CaseReport.graded(case.id, fixture, grade(case.trace.expects, record), record)
    except Exception as exc:  # a harness bug is still only this case's run error
        return CaseReport.errored(
            case.id,
            fixture,
            f"internal error: {type(exc).__name__}: {exc}",
            None,
            traceback.format_exc(),
        )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


async def _drive(adapter: AgentAdapter, context: AgentContext, case: Case, turns: _Turns) -> None:
    session: Any = adapter.start(context)
    if inspect.isawaitable(session):
        session = await session
    for index, turn in enumerate(case.trace.turns):
        turns.current = index
        context.model.start_turn(index)
        response = session.run_turn(turn.user_input)
        if inspect.isawaitable(response):
            response = await response
        if not isinstance(response, str):
            raise TypeError(f"run_turn returned {type(response).__name__}, expected str")
        turns.responses.append(response)
        context.model.end_turn(index)


class _CaseLoop:
    """An event loop on a worker thread, so a case that hangs, even without yielding, can be
    abandoned at its timeout while the suite goes on."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="zeroclaw-eval-cases", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            if not self._responsive(grace=1.0):
                # The case blocks its thread; leave it behind (daemon) and carry on fresh.
                self._start()
            raise TimeoutError from None

    def _responsive(self, grace: float) -> bool:
        ready = threading.Event()
        self._loop.call_soon_threadsafe(ready.set)
        return ready.wait(grace)

    def __enter__(self) -> _CaseLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._responsive(grace=1.0):
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()
