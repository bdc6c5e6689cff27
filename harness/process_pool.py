"""Replay cases in worker processes: every core busy, and a case that kills its process
(`os._exit`, a segfault, the out-of-memory killer) is that case's run error while the
suite goes on in a fresh worker.

Workers come from a fork server (spawned where there is none), never forked from the
running harness, whose threads a fork would copy half-done. What a worker is sent and does
with it is `pool_worker`; this side sends the cases, watches the workers (a worker silent
past its case's whole allowance is stopped), and hands each report on as it comes in.

Live mode never comes here: its provider limiter is shared by every case of a run, which
only one process can do; neither does a run whose cases are prepared in this process
(mutation testing's faults cannot cross processes).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import selectors
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from harness.errors import describe
from harness.pool_worker import Item, WorkerSpec, worker_main
from harness.verdict import CaseReport

# Cases sent to a worker at once: enough to keep it busy between two looks at its pipe,
# few enough that the last ones spread evenly over the workers.
MAX_BATCH = 16


class PoolUnavailable(Exception):
    """No worker could start (the message says why): the caller runs the cases itself."""


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
            target=worker_main, args=(child, spec), name="zeroclaw-eval-worker", daemon=True
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
