"""A case in progress: where it got to (the phase and its clock, the turn a timeout
names, a thread that blocked), what the run left as its record, and the report of a run
error, pointing at the turn it happened in."""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Awaitable
from typing import Any, TypeVar

from harness.agents.case_context import context_as_json
from harness.agents.protocol import AgentContext
from harness.approvals import Decision
from harness.defaults import DEFAULT_CASE_WALL_CLOCK
from harness.fixtures.schema import LlmTrace
from harness.fixtures.suite import Case, FixtureChanged
from harness.io.json_paths import line_of
from harness.model_boundary import ModelStep
from harness.run.error_frames import error_frames
from harness.run_record import RunRecord
from harness.runtime.deadline import WatchedDeadline, within
from harness.transcript import Transcript
from harness.verdict.reports import CaseReport, ErrorFrame

T = TypeVar("T")


class CaseProgress:
    """The case in progress: where it got to (the turn a timeout names, a blocked thread)."""

    def __init__(
        self,
        case: Case,
        trace: LlmTrace,
        fixture: str,
        context: AgentContext,
        transcript: Transcript,
        wall_clock: float = DEFAULT_CASE_WALL_CLOCK,
    ) -> None:
        self.case = case
        self.trace = trace  # start_case's: each read of an admitted case's finds it again
        self.fixture = fixture
        self.context = context
        self.transcript = transcript
        self.responses: list[str] = []
        self.began = self.started = time.monotonic()  # the case's start; the phase's start
        self.start = time.perf_counter()
        self.wall_clock = wall_clock
        self.grading = False
        self.abandoned = False  # the watchdog gave up on it (`abandoned_report`)
        self._wall_clock_binds = False  # whether the phase ends at the case's wall clock
        self._allowed: float | None = None  # what the phase in progress may take
        # Set by a watchdog that keeps the phases' clocks (else each phase has a timer).
        self.watched: WatchedDeadline | None = None
        self._phased = False  # in `driven`: phases share its deadline
        self.session: Any = None  # the agent's session, once started (closed at the end)
        # The trace's script as model steps, when the replay backend made them already.
        self.script: tuple[tuple[ModelStep, ...], ...] | None = None
        # The human decisions of each turn, as the case's approval desk has them.
        self.decisions: tuple[dict[str, Decision], ...] | None = None

    def allowance(self, timeout: float) -> float:
        """Seconds the phase starting now may take: its own timeout, or what is left of the
        case's wall clock when that is less."""
        self.started = time.monotonic()
        left = self.wall_clock - (self.started - self.began)
        self._wall_clock_binds = left < timeout
        self._allowed = max(left, 0.0) if self._wall_clock_binds else timeout
        return self._allowed

    async def within(self, timeout: float, work: Awaitable[T]) -> T:
        """`await work` as the phase starting now, bounded by its `allowance`."""
        watched = self.watched
        if watched is None or not self._phased:
            allowed = self.allowance(timeout)
            if watched is None:
                return await within(allowed, work)
            return await watched.within(allowed, work)
        # In `driven`'s scope (most phases): the phase only moves its due time, from its
        # start (the clock `allowance` read).
        watched.start(self.allowance(timeout), self.started)
        result = await work
        watched.stop()
        return result

    async def driven(self, work: Awaitable[T]) -> T:
        """`await work`, which starts the agent and drives its turns: its phases
        (`within`) share one deadline for the case, when the watchdog keeps its clock,
        rather than each entering and leaving one of its own."""
        watched = self.watched
        if watched is None or sys.version_info < (3, 11):
            return await work
        self._phased = True
        try:
            return await watched.over(work)
        finally:
            self._phased = False

    def overdue(self, timeout: float, grace: float) -> bool:
        """Whether the case has outlived its phase's timeout or its wall clock by `grace`:
        then only a blocked thread can be keeping it (the watchdog's test)."""
        now = time.monotonic()
        if now - self.began > self.wall_clock + grace:
            self._wall_clock_binds = True
            return True
        # Grading has no timeout of its own: the wall clock bounds it.
        allowed = timeout if self._allowed is None else self._allowed
        return not self.grading and now - self.started > allowed + grace

    @property
    def turn(self) -> int:
        """The turn in progress (-1 while the agent starts): the transcript keeps it."""
        return self.transcript.turn

    def record(self, transcript: bool = True) -> RunRecord:
        """What the run left; its transcript only when asked (it is for reports, and costs
        as much to build as the rest)."""
        model = self.context.model
        context, context_error = context_as_json(self.context.run_context)
        return RunRecord(
            final_response=self.responses[-1] if self.responses else "",
            turn_responses=list(self.responses),
            calls=list(self.context.tools.calls),
            model_calls=model.calls,
            input_tokens=model.input_tokens,
            output_tokens=model.output_tokens,
            duration_ms=(time.perf_counter() - self.start) * 1e3,
            steps=[list(turn) for turn in model.steps] if model.steps is not None else None,
            transcript=self.transcript.steps() if transcript else None,
            handoffs=list(model.handoffs),
            guardrails=list(model.guardrails),
            final_agent=model.final_agent
            or (model.last_request.agent if model.last_request is not None else None),
            context=context,
            context_error=context_error,
            approvals=list(self.context.approvals.requests),
        )

    def timeout_message(self, timeout: float) -> str:
        if self.grading:
            where = "while grading"
        else:
            where = f"in turn {self.turn}" if self.turn >= 0 else "starting the agent"
        if self._wall_clock_binds:
            return f"ran past the case's wall clock of {self.wall_clock:g}s {where}"
        return f"timed out after {timeout:g}s {where}"

    def errored(
        self,
        error: str,
        record: RunRecord | None,
        trace: str | None = None,
        frames: list[ErrorFrame] | None = None,
    ) -> CaseReport:
        return errored_report(self.case, self.fixture, error, record, trace, self.turn, frames)

    def abandoned_report(self, timeout: float) -> CaseReport:
        # The run goes on in its thread: when it ends, it must not move the process back to
        # a directory of a run long over (the watchdog put it back as it abandoned it).
        self.abandoned = True
        self.context.remove_workspace()
        blocker = "grading" if self.grading else "the agent"
        message = f"{self.timeout_message(timeout)}; {blocker} blocked its thread and was abandoned"
        return self.errored(message, self.record())


def errored_report(
    case: Case,
    fixture: str,
    error: str,
    record: RunRecord | None,
    trace: str | None = None,
    turn: int = -1,
    frames: list[ErrorFrame] | None = None,
) -> CaseReport:
    """A run error's report, pointing at the turn in which the run failed."""
    field = f"$.turns[{turn}]" if turn >= 0 else "$.turns"
    line = case_line(case, field)
    return CaseReport.errored(case.id, fixture, error, record, trace, line, frames)


def case_line(case: Case, field: str) -> int | None:
    """The line of the case's fixture `field` is on; None when the fixture changed."""
    try:
        return line_of(case.text, field)
    except FixtureChanged:  # the case's error says so; it has no line to point at
        return None


def internal_error(case: Case, fixture: str, exc: BaseException, turn: int = -1) -> CaseReport:
    if isinstance(exc, FixtureChanged):  # not the harness's fault: said as it is
        return errored_report(case, fixture, str(exc), None, None, turn)
    return errored_report(
        case,
        fixture,
        f"internal error: {type(exc).__name__}: {exc}",
        None,
        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        turn,
        error_frames(exc) or None,
    )
