"""Replay cases in worker processes: every core busy, and a case that kills its process
(`os._exit`, a segfault, the out-of-memory killer) is that case's run error while the
suite goes on in a fresh worker.

Workers come from a fork server (spawned where there is none), never forked from the
running harness, whose threads a fork would copy half-done. A worker resolves the agent
itself from its `agent` setting (or unpickles the adapter object), gets cases by their
place in the suite with their fixture text (admission already happened here: the worker
parses the same text with the same parser, so it runs the same case), runs them through
the same watched runner with one job (the per-case timeout and the watchdog hold in
there), and sends each `CaseReport` back encoded with msgspec, as it finishes.

Live mode never comes here: its provider limiter is shared by every case of a run, which
only one process can do; neither does a run whose cases are prepared in this process
(mutation testing's faults cannot cross processes).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import queue
import selectors
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from harness.agent_registry import resolve_within
from harness.collector import freeze_for_good
from harness.errors import describe
from harness.fixture import parse_admitted
from harness.orphans import die_with_the_fork_server
from harness.runner import CasePlan, replay_backend
from harness.suite import Case
from harness.verdict import CaseReport

RunCases = Callable[[list[Case], CasePlan, Callable[[CaseReport], None] | None], Any]
# How long past a case's whole allowance (its wall clock, and the agent's start) a worker
# may stay silent before it is taken for stuck beyond its own watchdog and stopped.
STALL_GRACE_SECS = 5.0
# Cases sent to a worker at once: enough to keep it busy between two looks at its pipe,
# few enough that the last ones spread evenly over the workers.
MAX_BATCH = 16


class Item(NamedTuple):
    """One case as a worker gets it: its place in the suite, its file, and the digests of
    the bytes admitted (the worker reads the file itself) and of their canonical form
    (None: not made yet) or, for a case that keeps its text, the text."""

    place: int
    path: str
    case_id: str
    digest: bytes | None
    text: str | None
    canonical: bytes | None

    @classmethod
    def of(cls, place: int, case: Case) -> Item:
        digest = case.digest
        text = case.text if digest is None else None
        return cls(place, case.where, case.id, digest, text, case.canonical)

    def case(self) -> Case:
        if self.digest is not None:
            return Case.dropped(self.case_id, self.path, self.digest, self.canonical)
        assert self.text is not None
        return Case(parse_admitted(self.text), Path(self.path), self.text)


class PoolUnavailable(Exception):
    """No worker could start (the message says why): the caller runs the cases itself."""


# What a worker builds its plan from as it is; the rest it makes itself (the adapter and
# backend from their pickles, one job, nothing prepared) or has no use for.
_SENT = (
    "allowed_tools",
    "timeout",
    "root",
    "agent_tools",
    "case_wall_clock",
    "max_model_calls_per_turn",
    "max_tool_calls_per_step",
    "keep_transcripts",
)


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to run cases as this process would: the runner (by reference),
    the agent, the plan's settings, and the environment the cases run in."""

    run: RunCases
    agent_spec: str | None
    adapter: bytes | None  # the pickled adapter, when there is no `agent_spec`
    backend: bytes | None  # the pickled backend factory; None: the replay backend
    settings: dict[str, Any]  # the plan's fields named in `_SENT`
    cwd: str
    sys_path: list[str]
    environ: dict[str, str]

    @property
    def stall(self) -> float:
        settings = self.settings
        return float(settings["timeout"] + settings["case_wall_clock"]) + STALL_GRACE_SECS


def worker_spec(plan: CasePlan, run: RunCases) -> WorkerSpec | str:
    """The spec of workers running `plan`'s cases, or why they cannot (then the cases run
    in this process)."""
    if plan.mode != "replay":
        return "live cases share one provider limiter, which only one process can hold"
    if plan.prepare is not None:
        return "cases prepared in this process (mutation testing) cannot cross processes"
    adapter = None
    if plan.agent_spec is None:
        try:
            adapter = pickle.dumps(plan.adapter)
        except Exception as exc:  # whatever the adapter's state refuses
            return f"the agent adapter cannot be sent to a worker process ({describe(exc)})"
    backend = None
    if plan.backend is not replay_backend:
        try:
            backend = pickle.dumps(plan.backend)
        except Exception as exc:
            return f"the backend factory cannot be sent to a worker process ({describe(exc)})"
    return WorkerSpec(
        run=run,
        agent_spec=plan.agent_spec,
        adapter=adapter,
        backend=backend,
        settings={name: getattr(plan, name) for name in _SENT},
        cwd=os.getcwd(),
        sys_path=list(sys.path),
        environ=dict(os.environ),
    )


def exit_status(exitcode: int | None) -> str:
    """How a worker process ended: `exit code 3`, `killed by SIGSEGV`."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _context(spec: WorkerSpec, adapter_module: str) -> Any:
    """The fork server, preloaded with the runner and a built-in agent's framework so a
    worker starts in milliseconds (it stays up for later runs of this process); spawning
    where there is no fork server. Never plain fork: the harness has threads."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # Only harness modules: the server outlives this run, and a user's module it held
    # would be the one every later run got, whatever had changed on disk since.
    preload = ["__main__", __name__, spec.run.__module__]
    if adapter_module.startswith("harness."):
        # Then one case through it, in the server: workers start with the framework warm.
        preload += [adapter_module, "harness.worker_warmup"]
    context.set_forkserver_preload(preload)  # ignored once the server runs
    return context


def _start_deaf_to_interrupts() -> None:
    """Start the fork server with interrupts blocked, which it and the workers it starts
    keep: a Ctrl-C reaches the whole process group, and one that fell while the server was
    still importing printed its traceback. The harness handles the interrupt; they end
    with it. (The resource tracker blocks them itself as it starts, and unblocks them in
    the caller afterwards: it is started first, so that it is not in the middle.)"""
    from multiprocessing import forkserver, resource_tracker

    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


class _Worker:
    """One worker process, the cases sent to it in order (the first is the one it runs),
    and a thread writing to it, so this side never blocks on a full pipe."""

    def __init__(self, context: Any, spec: WorkerSpec) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child, spec), name="zeroclaw-eval-worker", daemon=True
        )
        self.process.start()
        child.close()
        self.sent: deque[int] = deque()
        self.ready = False
        self.since = time.monotonic()  # when it last did something
        self._outbox: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        threading.Thread(target=self._send_all, name="zeroclaw-eval-feed", daemon=True).start()

    def send(self, items: list[Item]) -> None:
        if not self.sent:
            self.since = time.monotonic()  # an idle worker starts the first case now
        self.sent.extend(item.place for item in items)
        self._outbox.put(("run", items))

    def _send_all(self) -> None:
        while (message := self._outbox.get()) is not None:
            try:
                self.conn.send(message)
            except (OSError, ValueError):  # it died: its sentinel says so
                return

    def stop(self, wait: float) -> float:
        """Stop it; the CPU time it used, as it said before it went (0.0: it did not)."""
        self._outbox.put(("stop",))
        self._outbox.put(None)
        used = 0.0
        with contextlib.suppress(EOFError, OSError):
            if self.conn.poll(wait):
                message = self.conn.recv()
                used = message[1] if message[0] == "cpu" else 0.0
        self.process.join(wait)
        self.kill()
        return used

    def kill(self) -> None:
        self._outbox.put(None)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1.0)
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(ValueError):  # still there after all: left to the OS
            self.process.close()


_DECODE = msgspec.json.Decoder(CaseReport)
# CPU seconds the workers of this process's pools used, as each said when stopped (a
# worker that died says nothing): what a benchmark adds to this process's own.
_CPU = [0.0]
_CPU_LOCK = threading.Lock()


def workers_cpu() -> float:
    """CPU seconds used so far by the worker processes of this process's runs."""
    with _CPU_LOCK:
        return _CPU[0]


class WorkerPool:
    """Runs items on up to `size` workers; `on_report` hears each case's report as it
    comes in, `on_death` each case whose worker died under it. `may_start` is asked before
    any case is sent (`--maxfail`); with `stepwise` a case goes only once its worker is
    idle, so none starts after the answer turned."""

    def __init__(self, spec: WorkerSpec, size: int, adapter_module: str) -> None:
        self._spec = spec
        self._size = size
        self._context = _context(spec, adapter_module)
        self._workers: list[_Worker] = []
        self._pending: deque[Item] = deque()
        self._failures: list[str] = []
        self._selector = selectors.DefaultSelector()

    def run(
        self,
        items: Iterable[Item],
        on_report: Callable[[int, CaseReport], None],
        on_death: Callable[[int, str], None],
        may_start: Callable[[], bool],
        stepwise: bool = False,
    ) -> None:
        self._pending.extend(items)
        self._items = {item.place: item for item in self._pending}
        self._on_report, self._on_death, self._may_start = on_report, on_death, may_start
        self._stepwise = stepwise
        try:
            for _ in range(min(self._size, len(self._pending))):
                self._start()
            while self._step():
                pass
        except BaseException:  # an interruption: nothing is left running
            for worker in self._workers:
                worker.kill()
            raise
        finally:
            self._selector.close()
        used = sum(worker.stop(1.0) for worker in self._workers)
        with _CPU_LOCK:
            _CPU[0] += used

    def _step(self) -> bool:
        """Feed the workers, wait for one of them; False once all is done."""
        for worker in self._workers:
            self._feed(worker)
        if not any(w.sent for w in self._workers):
            return False
        # Idle workers are watched too: one that dies idle is replaced, blaming no case.
        poll = min(1.0, self._spec.stall / 4)
        ready = {key.fileobj for key, _ in self._selector.select(poll)}
        for worker in list(self._workers):
            if worker.conn in ready:
                self._receive(worker)
            if worker.process.sentinel in ready:
                status = exit_status(worker.process.exitcode)
                self._lost(worker, f"the worker running the case died ({status})", status)
            elif worker.sent and time.monotonic() - worker.since > self._spec.stall:
                silent = f"{self._spec.stall:g}s"
                why = f"the worker running the case stopped answering for {silent} and was stopped"
                self._lost(worker, why, f"no answer for {silent}")
        return True

    def _start(self) -> None:
        try:
            if self._context.get_start_method() == "forkserver":
                _start_deaf_to_interrupts()  # once: a running server is left as it is
            worker = _Worker(self._context, self._spec)
        except OSError as exc:  # no process to be had (limits, no fork server)
            raise PoolUnavailable(f"no worker process could start: {describe(exc)}") from exc
        self._workers.append(worker)
        # One selector for the whole run: waiting costs nothing per look at the workers.
        self._selector.register(worker.conn, selectors.EVENT_READ)
        self._selector.register(worker.process.sentinel, selectors.EVENT_READ)

    def _feed(self, worker: _Worker) -> None:
        if not self._pending or not self._may_start():
            return
        per_worker = len(self._pending) // (4 * len(self._workers))
        batch = 1 if self._stepwise else max(1, min(MAX_BATCH, per_worker))
        if len(worker.sent) >= (1 if self._stepwise else 2 * batch):
            return  # busy enough: one batch running, one waiting
        worker.send([self._pending.popleft() for _ in range(min(batch, len(self._pending)))])

    def _receive(self, worker: _Worker, drain: bool = False) -> None:
        """The message the selector saw waiting (one: the selector says when there is
        another, at no cost, where asking the pipe builds a selector each time); with
        `drain`, every message still in the pipe of a worker that ended."""
        while True:
            try:
                if drain and not worker.conn.poll():
                    return
                message = worker.conn.recv()
            except (EOFError, OSError):
                return  # it ended: its sentinel says how
            self._handle(worker, message)
            if not drain:
                return

    def _handle(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        worker.since = time.monotonic()
        kind = message[0]
        if kind == "ready":
            worker.ready = True
        elif kind == "report":
            _, index, payload = message
            if worker.sent and worker.sent[0] == index:
                worker.sent.popleft()
            self._on_report(index, _DECODE.decode(payload))
        elif kind == "failed":
            self._failures.append(message[1])

    def _lost(self, worker: _Worker, why: str, status: str) -> None:
        """A worker ended (or was stopped): the case it was running is that case's run
        error, the rest it had go back to the front of the queue, a fresh worker takes
        over; a worker that never started blames no case."""
        self._receive(worker, drain=True)  # what it sent before it ended
        for watched in (worker.conn, worker.process.sentinel):
            self._selector.unregister(watched)
        worker.kill()
        self._workers.remove(worker)
        left = list(worker.sent)
        if worker.ready and left:
            self._on_death(left.pop(0), why)
        self._pending.extendleft(reversed([self._items[i] for i in left]))
        more = bool(self._pending) and self._may_start()
        if worker.ready and more:
            self._start()
        elif not self._workers and more:
            # None started (or the one replacing a dead worker did not): never looping on
            # a start that fails, the caller runs what is left itself.
            reason = self._failures[-1] if self._failures else f"it ended ({status})"
            raise PoolUnavailable(f"no worker process could start: {reason}")
        # A worker that never started is not replaced: the others carry on without it.


def _worker_main(conn: Any, spec: WorkerSpec) -> None:
    """A worker: the harness's cases, one at a time, until told to stop. It never waits
    for a thread an agent left running, and leaves interruptions to the harness."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_the_fork_server()  # killed, should the harness be, whatever its case does
    # What the fork server had loaded is never garbage: the collector leaves it alone, so
    # it neither spends time on it nor copies the pages it would touch.
    freeze_for_good()
    code = 0
    try:
        _serve(conn, spec)
    except (BrokenPipeError, ConnectionResetError):  # the harness is gone: no one to tell
        code = 70
    except BaseException:  # the harness sees it die: the case running gets the blame
        code = 70
        with contextlib.suppress(Exception):
            traceback.print_exc()  # a harness bug: said where the harness's errors go
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _serve(conn: Any, spec: WorkerSpec) -> None:
    os.chdir(spec.cwd)
    sys.path[:] = spec.sys_path
    os.environ.clear()
    os.environ.update(spec.environ)
    try:
        plan = _plan(spec)
    except Exception as exc:  # the agent failed to resolve here: said, then this worker ends
        conn.send(("failed", describe(exc)))
        return
    conn.send(("ready",))
    send = _Sender(conn)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] != "run":
            conn.send(("cpu", time.process_time()))
            return
        items: list[Item] = message[1]
        cases = [item.case() for item in items]
        send.index_of = {case.id: item.place for case, item in zip(cases, items, strict=True)}
        spec.run(cases, plan, send)


class _Sender:
    """Sends each report back as it is in, with the case's place in the suite (ids are
    unique within a suite), one message at a time whichever thread reports it."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._encode = msgspec.json.Encoder().encode
        self.index_of: dict[str, int] = {}

    def __call__(self, report: CaseReport) -> None:
        payload = self._encode(report)
        with self._lock:
            self._conn.send(("report", self.index_of[report.id], payload))


def _plan(spec: WorkerSpec) -> CasePlan:
    if spec.agent_spec is not None:
        adapter, _ = resolve_within(spec.agent_spec, spec.settings["timeout"])
    else:
        assert spec.adapter is not None
        adapter = pickle.loads(spec.adapter)
    backend = replay_backend if spec.backend is None else pickle.loads(spec.backend)
    return CasePlan(adapter, "replay", backend, jobs=1, **spec.settings)
