"""Running the cases of a suite on a worker thread, watched.

Each case is one or more runs (a repeated live case has n); up to `jobs` runs go at once,
as tasks of one event loop. The calling thread only watches: a run that blocks the loop's
thread past its timeout (which no in-loop deadline can stop) is reported and abandoned,
and the rest of the suite goes on, on a fresh thread. A case is reported as soon as its
last run is in (streaming, in the order cases finish); the suite's reports keep fixture
order. `maxfail` stops starting new cases once that many have failed.

Replay with several jobs runs its cases in worker processes instead (`process_pool`), each
worker running them through this same machinery one at a time; a case that kills its
worker is that case's run error. Live mode stays here: its cases share one provider
limiter, which is per process.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
import queue
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    # Imported where runs go on this process's event loop: one whose cases all go to workers
    # never needs it here (the fork server imports it for them as it warms up).
    import asyncio

from harness.errors import RAISED_BY_AGENT_CODE
from harness.fixtures.suite import Case, display_path, hold_parsed
from harness.run.progress import CaseProgress, errored_report, internal_error
from harness.run.results import OnCase, OnPasses, Unit
from harness.run.results import Results as _Results
from harness.run.runner import CasePlan, Jobs, forget_case, jobs_of, run_case, start_case
from harness.runtime import event_loop
from harness.runtime.collector import heap_frozen
from harness.runtime.deadline import DeadlineWatch, WatchedDeadline
from harness.verdict.reports import CaseReport
from harness.workspace import restore_cwd

# How long past its timeout a run may take to honour cancellation before its thread is
# considered blocked and abandoned.
GRACE_SECS = 1.0


@heap_frozen()
def run_watched(
    cases: Sequence[Case],
    plan: CasePlan,
    on_case: OnCase | None,
    *,
    reuse_thread: bool = False,
    on_passes: OnPasses | None = None,
    read: bool = True,
) -> Sequence[CaseReport]:
    """Every case's report, in fixture order; `on_case` hears each as it finishes, and
    `on_passes` the plain passes workers send without their reports when the plan's
    `prerender` asks for them (`verdict.kept.Prerendering.passes`).
    `reuse_thread`: run them on the thread an earlier call ran its cases on, when it is
    free (`run_batch`); `read`: whether the reports returned are read (a worker's are
    not: `Results`). The heap the run starts with is left to the collector's frozen
    generation meanwhile (`heap_frozen`)."""
    results = _Results(cases, plan, on_case, on_passes, read)
    # Workers run replay cases, one run each: no unit is made for each of them.
    workers = _pays_for_workers(plan, sum(results.runs))
    pending = _in_workers(cases, plan, results) if workers else results.units()
    # Each case puts back the working directory its agent changed; one abandoned never
    # gets to, and the cases after it would read their fixtures from wherever it went.
    cwd = os.getcwd()
    while pending:
        worker = _SuiteWorker(cases, pending, plan, results, cwd)
        try:
            # Started in here: an interruption as soon as its runs begin abandons them too.
            worker.start(reuse_thread)
            stuck = worker.watch()
        except BaseException:  # an interruption: the runs in flight leave nothing behind
            worker.abandon()
            restore_cwd(cwd)
            raise
        if stuck is None:
            break
        # The run blocked its thread past the timeout: report it, leave the thread behind
        # (a daemon), and go on with the runs not yet in, on a fresh thread.
        unit, progress = stuck
        results.add(unit, progress.abandoned_report(plan.timeout))
        restore_cwd(cwd)
        pending = [u for u in pending if not results.has(u)]
    return results.finish()


# Live runs going at once start this many seconds apart: a provider sees their requests
# spread out, not a burst (what rate limits answer with 429s), and their CPU on the one
# event loop interleaves with the others' waits. Sixteen cases take 30 ms to start.
LIVE_START_SPACING = 0.002

# Where `auto` starts workers, measured (benchmarks/workers.py: `zeroclaw eval run` whole,
# an own-loop suite, the cheapest cases there are, on 2 cores): `--jobs 2` against `--jobs 1`
# was 0.81x at 100 cases, 0.90x at 200, 0.95x at 400 and 1.30x at 1,000. Below this "auto"
# runs the cases here; a framework's cases cost more each, and pay for workers sooner, so a
# number of jobs the user gives is taken as it is.
AUTO_WORKERS_FROM = 500


def _pays_for_workers(plan: CasePlan, runs: int) -> bool:
    if runs == 0 or jobs_of(plan.jobs) < 2 or plan.mode != "replay" or plan.prepare is not None:
        return False
    return plan.jobs != "auto" or runs >= AUTO_WORKERS_FROM


def start_workers_early(jobs: Jobs, suite: Path, adapter_module: str) -> bool:
    """Start the workers' fork server now, for a replay run that will use workers, so that
    it imports (and warms) what workers run while this process admits the suite, instead of
    after it: the second a pool's start costs is then spent beside admission, on another
    core. A suite `auto` would run here, or a pool that cannot start, costs nothing more
    than the fork server's own start (an early start is never relied on: the pool starts the
    server itself should this one have failed or ended). Whether workers may have been
    started: then the run ends them (`end_workers_early`) however it ends, for none but a
    pool ends them, and a run may end before it makes one (admission refused, no case
    chosen, cases this process runs itself)."""
    if jobs_of(jobs) < 2:
        return False
    if jobs == "auto" and _fixtures_in(suite) < AUTO_WORKERS_FROM:
        return False
    # Imported here: a run of one job has no use for the pool's machinery (~5% of the
    # instructions of a one-case run).
    from harness.run.process_pool import start_fork_server

    with contextlib.suppress(OSError, ValueError):  # no process to be had: the pool says why
        start_fork_server(run_batch.__module__, adapter_module, jobs_of(jobs))
    return True


def end_workers_early() -> None:
    """The workers `start_workers_early` started that no pool took, ended: through the API
    (or the pytest plugin) the process goes on after the run, and they would idle beside it,
    each with its pipe. Those a pool stopped, joined: they end on their own once they have
    said what they used, and are waited for here, after the run's reports, not before."""
    if "harness.run.pool_workers" not in sys.modules:
        return  # no worker was ever started: nothing to end, and no pool to import for it
    from harness.run.pool_workers import end_early

    end_early()


def _fixtures_in(suite: Path) -> int:
    """The suite's fixtures, counted by name (admission has not read them yet)."""
    if not suite.is_dir():
        return 1
    with os.scandir(suite) as entries:
        return sum(1 for entry in entries if entry.name.endswith(".json"))


def run_batch(
    cases: Sequence[Case], plan: CasePlan, on_case: OnCase | None
) -> Sequence[CaseReport]:
    """`run_watched` as a worker process runs the batches of cases it gets: all on one
    thread while none blocks it (a fresh thread per batch costs an agent framework its
    warm-up again, a millisecond or two each time). Each report goes to the harness as
    it is in (`on_case`): those returned are not read."""
    return run_watched(cases, plan, on_case, reuse_thread=True, read=False)


def _in_workers(cases: Sequence[Case], plan: CasePlan, results: _Results) -> list[Unit]:
    """Run the cases (one run each: replay) in worker processes; the runs left for this
    process (none, unless no worker could run them: then it says why)."""
    from harness.run.pool_worker import worker_spec
    from harness.run.process_pool import PoolUnavailable, WorkerPool

    jobs = jobs_of(plan.jobs)
    # The judge stays in this process: workers hand back the cases with rubrics for it
    # (they read the fixtures; this process reads none again), which run here afterwards.
    spec = worker_spec(
        dataclasses.replace(plan, judge=None), run_batch, plan.judge is not None, cases
    )
    if isinstance(spec, str):
        _note(jobs, spec)
        return results.units()

    def died(index: int, why: str) -> None:
        case = cases[index]
        results.add(
            Unit(index, 0), errored_report(case, display_path(case.where, plan.root), why, None)
        )

    pool = WorkerPool(spec, jobs, type(plan.adapter).__module__)
    try:
        pool.run(
            range(len(cases)),
            cases,
            lambda index, report: results.add(Unit(index, 0), report),
            died,
            lambda: not results.stopping,
            # With --maxfail a case goes only to an idle worker: none starts after the stop.
            stepwise=plan.maxfail is not None,
            on_passes=results.passes,
        )
    except PoolUnavailable as exc:
        _note(jobs, str(exc))
    if results.stopping:
        return []  # the rest never start
    reports = results.reports
    if not reports.missing():
        return []
    return [Unit(index, 0) for index in range(len(cases)) if not reports.has(index)]


def _note(jobs: int, why: str) -> None:
    print(f"zeroclaw eval: --jobs {jobs} runs the cases in this process: {why}", file=sys.stderr)


class _SuiteWorker:
    """Runs the pending runs, up to `plan.jobs` at once, on an event loop in its own thread."""

    def __init__(
        self,
        cases: Sequence[Case],
        pending: list[Unit],
        plan: CasePlan,
        results: _Results,
        cwd: str,
    ) -> None:
        self._cases = cases
        self._cwd = cwd  # where each run starts, and is put back
        self._pending = pending
        self._plan = plan
        self._results = results
        self._lock = threading.Lock()
        self._abandoned = False
        self._done = threading.Event()
        self.clock = DeadlineWatch()  # the clocks of the runs' phases, kept by `watch`
        self._failure: BaseException | None = None
        self.running: dict[Unit, CaseProgress] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._units: dict[asyncio.Task[None], Unit] = {}

    def start(self, reuse_thread: bool) -> None:
        """Its runs begun, on a thread of their own (`reuse_thread`: one an earlier worker
        ran its runs on, when it is free)."""
        if reuse_thread:
            _CaseThread.run(self._main)
        else:
            threading.Thread(target=self._main, name="zeroclaw-eval-cases", daemon=True).start()

    def watch(self) -> tuple[Unit, CaseProgress] | None:
        """Wait for the worker, expiring its runs' phases as they fall due (their clocks
        are kept here: `DeadlineWatch`); the run it abandoned, if any."""
        timeout = self._plan.timeout
        poll = min(1.0, timeout / 4, self._plan.case_wall_clock / 4)
        while True:
            self.clock.look(self._watched, poll)
            if self._done.is_set():
                break
            with self._lock:
                overdue = [
                    (u, p) for u, p in self.running.items() if p.overdue(timeout, GRACE_SECS)
                ]
                if not overdue:
                    continue
                # While one run blocks the thread every other run of the loop stalls too:
                # the blocker is the task the loop is running (known even before it is
                # overdue: one started later can keep the others waiting); they run again.
                blocker = self._blocking_unit()
                if blocker is not None and blocker in self.running:
                    unit, progress = blocker, self.running[blocker]
                else:
                    unit, progress = min(overdue, key=lambda item: item[1].started)
                self._abandoned = True
                for other in self.running.values():
                    if other is not progress:
                        other.abandoned = True  # its cwd is put back here, now
                        other.context.remove_workspace()
                    # Should the loop run again, its runs end at once (they are run again
                    # elsewhere, and nothing watches this loop's clocks any more).
                    if other.watched is not None:
                        other.watched.expire_if_due(math.inf)
                return unit, progress
        if self._failure is not None:
            raise self._failure
        return None

    def _watched(self) -> list[WatchedDeadline]:
        with self._lock:
            return [p.watched for p in self.running.values() if p.watched is not None]

    def abandon(self) -> None:
        """Give up every run in flight, removing their workspaces. Each goes on on its
        thread after the caller has gone on (in another directory, maybe, in a process that
        runs suite after suite): marked abandoned, it does not put back the working
        directory it started in when it ends (the caller does, now), which would move the
        whole process there under whatever runs then."""
        with self._lock:
            self._abandoned = True
            running = list(self.running.values())
            for progress in running:
                progress.abandoned = True
        for progress in running:
            progress.context.remove_workspace()

    def _blocking_unit(self) -> Unit | None:
        """The run whose task the loop is executing right now (read from this thread: the
        loop's thread is stuck in it)."""
        if self._loop is None:
            return None
        import asyncio

        task = asyncio.current_task(self._loop)
        return None if task is None else self._units.get(task)

    def _main(self) -> None:
        try:
            event_loop.run(self._run_all())
        except BaseException as exc:  # surfaced in the watching thread
            self._failure = exc
        finally:
            self._done.set()
            self.clock.wake()

    async def _run_all(self) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        queue = list(reversed(self._pending))
        jobs = jobs_of(self._plan.jobs)
        if jobs == 1 and sys.version_info >= (3, 11):
            await self._in_sequence(queue)
            return
        hold_parsed(jobs)  # a case in flight reads its fixture again as it is sealed
        spacing = LIVE_START_SPACING if self._plan.mode == "live" else 0.0
        started = self._results.started
        tasks: set[asyncio.Task[None]] = set()
        while queue or tasks:
            # An abandoned loop starts nothing more: its runs are run again elsewhere.
            while queue and len(tasks) < jobs and not self._abandoned:
                unit = queue.pop()
                if unit.index not in started and self._results.stopping:
                    continue  # a case not yet begun is not begun once the run stops
                started.add(unit.index)
                task = self._loop.create_task(self._one(unit))
                self._units[task] = unit
                tasks.add(task)
                if spacing and queue and len(tasks) < jobs:
                    await asyncio.sleep(spacing)
            if not tasks:
                break
            if len(tasks) == 1:
                # The one run in flight (always, with one job): awaited as it is. `wait`
                # adds a future and two callbacks, a third of a percent of a replayed case.
                (task,) = tasks
                tasks = set()
                try:
                    await task  # a harness bug surfaces in the watching thread
                finally:
                    self._units.pop(task, None)
                continue
            done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                self._units.pop(task, None)
                task.result()  # a harness bug surfaces in the watching thread

    async def _in_sequence(self, queue: list[Unit]) -> None:
        """The runs of `queue` (last first) one at a time, as one task runs them one after
        another (`_one_by_one`): a task per run costs the loop two turns and the task, a
        tenth of an own loop's replayed case. A run that leaves its task other than it found
        it (see `_as_found`) has the next one start in a task of its own, as every run once
        did, in a copy of the context the first started in. The threads alive now are the
        ones a run may leave alive: a thread started since could hold a task and cancel it
        at any time, so while one is alive every run starts in a task of its own."""
        assert self._loop is not None
        if sys.version_info < (3, 11):  # pragma: no cover - a task's context is 3.11's
            raise RuntimeError("runs in sequence need Python 3.11")
        forget_case()  # the case's own variables, as each run leaves them (`_as_found`)
        base = contextvars.copy_context()
        threads = frozenset(threading.enumerate())
        while queue and not self._abandoned:
            run = self._one_by_one(queue, base, threads)
            task = self._loop.create_task(run, context=base.copy())
            try:
                await task  # a harness bug surfaces in the watching thread
            finally:
                self._units.pop(task, None)

    async def _one_by_one(
        self, queue: list[Unit], base: contextvars.Context, threads: frozenset[threading.Thread]
    ) -> None:
        import asyncio

        task = asyncio.current_task()
        assert task is not None
        started = self._results.started
        while queue and not self._abandoned:
            unit = queue.pop()
            if unit.index not in started and self._results.stopping:
                continue  # a case not yet begun is not begun once the run stops
            started.add(unit.index)
            self._units[task] = unit  # the run the loop is in, should it block
            await self._one(unit)
            if not _as_found(task, base, threads):
                if _cancel_asked(task):
                    # A cancellation the run asked of its task and never awaited lands
                    # here, in no run (else it would end the task, and with it the loop).
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.sleep(0)
                return

    async def _one(self, unit: Unit) -> None:
        plan, case = self._plan, self._cases[unit.index]
        fixture = self._results.shown(unit.index, case)
        try:
            progress = start_case(case, plan, fixture)
        except RAISED_BY_AGENT_CODE as exc:  # e.g. an adapter's tools() raising
            report = internal_error(case, fixture, exc)
        else:
            progress.watched = self.clock.deadline()
            with self._lock:
                self.running[unit] = progress
                # Begun as the loop was given up: as abandoned as the runs `abandon` saw.
                progress.abandoned = self._abandoned
            report = await run_case(progress, plan, self._cwd)
        with self._lock:
            if self._abandoned:
                return
            self.running.pop(unit, None)
        self._results.add(unit, report, case)


def _as_found(
    task: asyncio.Task[None], base: contextvars.Context, threads: frozenset[threading.Thread]
) -> bool:
    """Whether the run just over left `task` (and its loop) as it found it, so that the
    next run may go in the same task and see nothing of it: no cancellation asked of the
    task, no context variable set (the case's own set back: `forget_case`), no callback
    queued to run next, timer or task of its left on the loop, and no thread alive but
    `threads` (any of these could cancel the task later, in another case: a thread through
    `call_soon_threadsafe`, whenever it likes). A thread alive before the runs began that
    a run hands the task to is not seen: the one way left to reach a later run's task."""
    if _cancel_asked(task):
        return False
    # Compared by identity: a thread of the run's is no less alive for another ending.
    if not threads.issuperset(threading.enumerate()):
        return False
    forget_case()
    try:
        if contextvars.copy_context() != base:  # values compared: each, is, else ==
            return False
    except Exception:  # a value whose `==` raises: not the same, then
        return False
    loop = task.get_loop()
    # Callbacks queued to run next (a `call_soon` of the task's cancel, say): the first
    # turn of the next run would run them. A loop without the queue: never the same task.
    ready = getattr(loop, "_ready", None)
    if ready is None or (ready and any(not handle.cancelled() for handle in ready)):
        return False
    timers = getattr(loop, "_scheduled", None)
    if timers is None or (timers and any(not timer.cancelled() for timer in timers)):
        return False
    # This one and `_run_all`'s; every task made that is still held counted first (3.11's
    # weak set of them: all_tasks would list them to find the pending ones).
    import asyncio

    made = getattr(asyncio.tasks, "_all_tasks", None)
    return (made is not None and len(made) <= 2) or len(asyncio.all_tasks(loop)) <= 2


def _cancel_asked(task: asyncio.Task[None]) -> bool:
    """Whether `task` was asked to cancel and has not taken it back (Python 3.11+)."""
    if sys.version_info < (3, 11):  # pragma: no cover - no count of them before
        return True
    return task.cancelling() > 0 or bool(getattr(task, "_must_cancel", False))


class _CaseThread:
    """A thread that runs one suite worker's loop after another (`run_batch`). One whose
    work blocked it never comes back: it stays behind, and the next work gets another."""

    # The free ones, most recent last: a run may start before the thread that ran the one
    # before is back, and then there are two.
    _idle: ClassVar[list[_CaseThread]] = []
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="zeroclaw-eval-cases", daemon=True).start()

    @classmethod
    def run(cls, work: Callable[[], None]) -> None:
        with cls._lock:
            thread = cls._idle.pop() if cls._idle else None
        (thread or cls())._work.put(work)

    def _serve(self) -> None:
        while True:
            self._work.get()()
            with _CaseThread._lock:
                _CaseThread._idle.append(self)
