"""Running a list of cases on a worker thread, watched: a case that blocks its thread past
its timeout (which no in-loop deadline can stop) is reported and abandoned, and the rest
of the suite goes on on a fresh thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

from harness import event_loop
from harness.errors import RAISED_BY_AGENT_CODE
from harness.runner import (
    CasePlan,
    CaseProgress,
    display_path,
    internal_error,
    run_case,
    start_case,
)
from harness.suite import Case
from harness.verdict import CaseReport

# How long past its timeout a case may take to honour cancellation before its thread is
# considered blocked and abandoned.
GRACE_SECS = 1.0

OnCase = Callable[[CaseReport], None]


def run_watched(cases: list[Case], plan: CasePlan, on_case: OnCase | None) -> list[CaseReport]:
    """Every case's report, in order; `on_case` hears each as it finishes."""
    reports: list[CaseReport] = []
    pending = cases
    while pending:
        worker = _SuiteWorker(pending, plan, on_case)
        stuck = worker.watch()
        reports.extend(worker.reports)
        if stuck is None:
            break
        # The case blocked its thread past the timeout: report it, leave the thread behind
        # (a daemon), and go on with the next case on a fresh thread.
        report = stuck.abandoned_report(plan.timeout)
        reports.append(report)
        if on_case is not None:
            on_case(report)
        pending = pending[len(worker.reports) + 1 :]
    return reports


class _SuiteWorker:
    """Runs cases one after another on an event loop in its own thread.

    The calling thread only watches: it steps in when a case outlives its timeout without
    honouring cancellation (a loop blocking its thread).
    """

    def __init__(self, cases: list[Case], plan: CasePlan, on_case: OnCase | None) -> None:
        self._cases = cases
        self._plan = plan
        self._on_case = on_case
        self._lock = threading.Lock()
        self._abandoned = False
        self._done = threading.Event()
        self._failure: BaseException | None = None
        self.current: CaseProgress | None = None
        self.reports: list[CaseReport] = []
        threading.Thread(target=self._main, name="zeroclaw-eval-cases", daemon=True).start()

    def watch(self) -> CaseProgress | None:
        """Wait for the worker; the case it abandoned, if any."""
        timeout = self._plan.timeout
        poll = min(1.0, timeout / 4, self._plan.case_wall_clock / 4)
        while not self._done.wait(poll):
            running = self.current
            if running is None:
                continue
            if running.overdue(timeout, GRACE_SECS):
                with self._lock:
                    if self.current is running:
                        self._abandoned = True
                        return running
        if self._failure is not None:
            raise self._failure
        return None

    def _main(self) -> None:
        try:
            event_loop.run(self._run_all())
        except BaseException as exc:  # surfaced in the watching thread
            self._failure = exc
        finally:
            self._done.set()

    async def _run_all(self) -> None:
        plan = self._plan
        for case in self._cases:
            fixture = display_path(case.path, plan.root)
            try:
                progress = start_case(case, plan, fixture)
            except RAISED_BY_AGENT_CODE as exc:  # e.g. an adapter's tools() raising
                report = internal_error(case, fixture, exc)
            else:
                self.current = progress
                report = await run_case(progress, plan)
            with self._lock:
                if self._abandoned:
                    return
                self.reports.append(report)
                self.current = None
            if self._on_case is not None:
                self._on_case(report)
