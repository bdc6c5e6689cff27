"""Replay cases in worker processes: every core busy, and a case that kills its process
(`os._exit`, a segfault, the out-of-memory killer) is that case's run error while the
suite goes on in a fresh worker.

Workers come from a fork server (spawned where there is none: `fork_server`), which is
watched: a server an agent stopped or killed is replaced, and the cases it took down with
it run again. What a worker is sent and does with it is `pool_worker`, a worker as this
side holds it (and the workers started before their pool) `pool_workers`; this side sends
the cases, watches the workers (a worker silent past its case's whole allowance is
stopped), and hands each report on as it comes in.

Live mode never comes here: its provider limiter is shared by every case of a run, which
only one process can do; neither does a run whose cases are prepared in this process
(mutation testing's faults cannot cross processes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import selectors
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from harness.errors import describe
from harness.fixtures.suite import Case
from harness.run import fork_server
from harness.run.pool_worker import Prerender, WorkerSpec, crossing
from harness.run.pool_workers import Worker, adopt, end, end_early, left, start_early, stop
from harness.run.spools import Spools
from harness.verdict.kept import Passes
from harness.verdict.reports import CaseReport

# Cases sent to a worker at once: enough to keep it busy between two looks at its pipe,
# few enough that the last ones spread evenly over the workers.
MAX_BATCH = 16
# And at least, while there are that many for each worker and the cases are quick (under
# QUICK_SECS each): a batch costs a worker about what an own loop's case costs (its event
# loop, the hand-over to its cases' thread), and batches that shrank to one case each as
# the suite drained made 100 own-loop cases 31 batches (19 now).
MIN_BATCH = 4
QUICK_SECS = 0.005
# At most, while the cases are quick: what this process spends on a batch and its runs of
# passes is spread over this many cases (256: 6% more of its CPU at 20,000 own-loop cases).
QUICK_MAX_BATCH = 1024
# How long reports may wait in the workers' pipes while every worker is busy.
COALESCE_SECS = 0.002
# Batches a worker holds (one running) of ones done under DRY_SECS: with one waiting, one
# of 1.4 ms ended before this process, letting reports pile up, sent the next (idle 7 ms).
QUICK_DEPTH, DRY_SECS = 3, 0.01


class PoolUnavailable(Exception):
    """No worker could start (the message says why): the caller runs the cases itself."""


def exit_status(exitcode: int | None) -> str:
    """How a worker process ended: `exit code 3`, `killed by SIGSEGV`."""
    if exitcode is not None and exitcode < 0:
        return f"killed by {fork_server.signal_name(-exitcode)}"
    return f"exit code {exitcode}"


# Reports sent whole's decoder, made for the first (`_decode`): 1.5 ms passes never need.
_DECODER: list[msgspec.json.Decoder[CaseReport]] = []
# CPU seconds the workers of this process's pools used, as each said when stopped (a
# worker that died says nothing): what a benchmark adds to this process's own.
_CPU = [0.0]
_CPU_LOCK = threading.Lock()
# A worker's exit code when the fork server could not tell it: the server is gone.
_UNTOLD = 255
# How long a worker whose pipe ended may take to be told dead by the fork server.
HUNG_UP_SECS = 2.0


def _decode(payload: bytes) -> CaseReport:
    if not _DECODER:
        _DECODER.append(msgspec.json.Decoder(CaseReport))
    return _DECODER[0].decode(payload)


def workers_cpu() -> float:
    """CPU seconds used so far by the worker processes of this process's runs."""
    with _CPU_LOCK:
        return _CPU[0]


def _note(text: str) -> None:
    print(f"zeroclaw eval: {text}", file=sys.stderr)


def start_fork_server(run_module: str, adapter_module: str, workers: int = 0) -> None:
    """The fork server a `WorkerPool(spec, size, adapter_module)` running `run_module`'s
    runner would start, started now (a running one is left as it is), as a fork of this
    process where it can be; then `workers` workers launched from it (never waited for:
    the server forks them once warm), for the next pool to take instead of starting its
    own: their start is spent beside admission. One that pool has no use for is ended
    with it; should no pool come, the run ends them (`end_early`)."""
    context = fork_server.context(run_module, adapter_module)
    if context.get_start_method() != "forkserver":
        return  # spawned workers would import everything again, beside admission
    fork_server.ensure_running(forked=True)
    if workers > 0:
        start_early(context, workers)


class WorkerPool:
    """Runs items on up to `size` workers; `on_report` hears each case's report as it
    comes in, `on_passes` the plain passes sent without one (`verdict.kept.Prerendering`),
    those of one read of a worker's pipe at once, in the order they were done, and
    `on_death` each case whose worker died under it. `may_start` is asked before
    any case is sent (`--maxfail`); with `stepwise` a case goes only once its worker is
    idle, so none starts after the answer turned.

    A fork server lost (`fork_server`) kills its workers: the cases they were running run
    again, one at a time with nothing beside them, and one during which the server is lost
    again is that case's run error."""

    def __init__(self, spec: WorkerSpec, size: int, adapter_module: str) -> None:
        self._spec = spec
        self._wanted = size  # less each worker that ends before it is ready
        self._context = fork_server.context(spec.run.__module__, adapter_module)
        self._workers: list[Worker] = []
        self._gone_used = 0.0  # what the workers no longer watched said they used
        self._again: deque[int] = deque()  # in flight when the fork server was lost
        self._alone: int | None = None  # the one of them running now, by itself
        self._failures: list[str] = []  # what workers that could not start said
        self._ended_as = "it ended"  # how the last worker that never started ended
        self._selector = selectors.DefaultSelector()
        self._first_sent: float | None = None  # when the first case was sent
        self._per_case = QUICK_SECS  # a worker's seconds a case, as `_quick` last found
        prerender = spec.settings.get("prerender")
        self._prerender: tuple[Prerender, ...] = prerender.kinds if prerender else ()
        # Where workers spool the plain passes they have yet to send, and write parts.
        self._spools = Spools(self._prerender) if prerender and prerender.passes else None

    def run(
        self,
        places: Iterable[int],
        cases: Sequence[Case],
        on_report: Callable[[int, CaseReport], None],
        on_death: Callable[[int, str], None],
        may_start: Callable[[], bool],
        stepwise: bool = False,
        on_passes: Callable[[Passes], None] | None = None,
    ) -> None:
        self._pending = list(places)[::-1]  # the places of the cases yet to go, the next last
        self._cases, self._total = cases, len(self._pending)
        self._on_report, self._on_death, self._may_start = on_report, on_death, may_start
        self._on_passes = on_passes
        self._stepwise = stepwise
        try:
            while self._step():
                pass
            self._watch_server()  # a server stopped meanwhile would never end
        except BaseException:  # an interruption: nothing is left running, nor stopped
            for worker in self._workers:
                worker.kill()
            self._take_all()
            end(self._workers, 1.0)
            fork_server.end_if_stopped()
            raise
        finally:
            self._selector.close()
            for each in self._prerender:
                each.release()
            end_early()
            if self._spools is not None:
                self._spools.close()
        # What workers that ended meanwhile said they used (told to stop, `_feed`), too.
        used = stop(self._workers, 1.0) + self._gone_used
        with _CPU_LOCK:
            _CPU[0] += used

    def _step(self) -> bool:
        """Feed the workers, wait for one of them; False once all is done."""
        self._replenish()
        # A batch each, then a second each (one running, one or two waiting: `_feed`): a
        # batch's passes come back once it is done; its worker goes on without waiting.
        quick = self._quick() if self._pending else False  # asked once a look, not a worker
        for _ in range(2):
            for worker in self._workers:
                self._feed(worker, quick)
        if not any(w.sent for w in self._workers):
            return False
        # Idle workers are watched too: one that dies idle is replaced, blaming no case.
        poll = min(1.0, self._spec.stall / 4, HUNG_UP_SECS / 4)
        ready = {key.fileobj for key, _ in self._selector.select(poll)}
        got = [worker for worker in self._workers if worker.conn in ready]
        while got:  # everything waiting now, one message a worker a look
            for worker in got:
                self._receive(worker)
            more = {key.fileobj for key, _ in self._selector.select(0)}
            ready |= more
            got = [w for w in self._workers if w.conn in more and w.hung_up is None]
        if self._watch_server():
            return True
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.process.sentinel in ready:
                self._ended(worker)
            elif worker.hung_up is not None and now - worker.hung_up > HUNG_UP_SECS:
                why = "the worker running the case closed its pipe to the harness and was stopped"
                self._lost(worker, why, "its pipe closed")
            elif worker.sent and now - worker.since > self._spec.stall:
                silent = f"{self._spec.stall:g}s"
                why = f"the worker running the case stopped answering for {silent} and was stopped"
                self._lost(worker, why, f"no answer for {silent}")
        if all(len(worker.sent) > 1 for worker in self._workers):
            # Every worker has its next case waiting: reports are let pile up in the pipes
            # for a moment instead of each waking this process (and, on as many cores as
            # workers, taking a core from the worker that wrote it).
            time.sleep(COALESCE_SECS)
        return True

    def _replenish(self) -> None:
        """As many workers as there is work for, up to the pool's size. One told to stop
        (`_feed`) takes no more, and counts only while it has cases to finish: the cases a
        death puts back then go to a fresh worker, never to this process."""
        busy = sum(1 for worker in self._workers if worker.sent)
        work = busy + len(self._again) + (len(self._pending) if self._may_start() else 0)
        share = min(self._wanted, work)
        while self._running() < share:
            worker = self._start()
            if self._running() < share and len(self._pending) >= 4 * share:
                # Fed before the next is waited for (the server forks one at a time).
                self._feed(worker, False, share)
        if work and not self._running():
            # None started (or the one replacing a dead worker did not): never looping on
            # a start that fails, the caller runs what is left itself.
            reason = self._failures[-1] if self._failures else self._ended_as
            raise PoolUnavailable(f"no worker process could start: {reason}")

    def _running(self) -> int:
        """The workers that count towards the pool's size: all but told-to-stop idle ones."""
        return sum(1 for worker in self._workers if worker.sent or not worker.told)

    def _start(self) -> Worker:
        """One more worker (one launched early, if there is one), watched; a fork server
        lost as it is asked for one is replaced, once."""
        early = adopt(self._spec.stall)
        if early is not None:
            return self._begin(early)
        lost = None
        for _ in range(2):
            try:
                if self._context.get_start_method() == "forkserver":
                    fork_server.ensure_running()  # a running server is left as it is
                worker = Worker(self._context)
            except (OSError, EOFError) as exc:  # no process to be had (limits, no server)
                raise PoolUnavailable(f"no worker process could start: {describe(exc)}") from exc
            lost = worker.forked(self._spec.stall)
            if lost is None:
                return self._begin(worker)
            end([worker], 1.0)  # launched as the server was killed: it died with it
            assert worker.server is not None
            self._server_lost(worker.server, lost, killed=True)
        assert lost is not None
        raise PoolUnavailable(f"no worker process could start: the fork server {lost.how}")

    def _begin(self, worker: Worker) -> Worker:
        """Told what to run (the spec, with a spool file of its own), and watched."""
        spec = self._spec
        if self._spools is not None:
            spool, streams = self._spools.paths(worker)
            spec = dataclasses.replace(spec, spool=spool, streams=streams)
        worker.begin(spec)
        self._workers.append(worker)
        # One selector for the whole run: waiting costs nothing per look at them.
        self._selector.register(worker.conn, selectors.EVENT_READ)
        self._selector.register(worker.process.sentinel, selectors.EVENT_READ)
        return worker

    def _feed(self, worker: Worker, quick: bool, share: int = 0) -> None:
        """A batch for `worker` unless it is busy enough, sized for `share` workers at least."""
        if self._alone is not None or worker.told:
            return  # a case runs by itself; or the worker is ending
        if self._again:  # once nothing else runs, the first of them goes, alone
            if not any(w.sent for w in self._workers):
                self._alone = self._again.popleft()
                worker.send([self._alone], crossing(self._spec, [self._alone], self._cases))
            return
        if not self._pending or not self._may_start():
            return
        workers = max(share, len(self._workers))
        per_worker = len(self._pending) // (4 * workers)
        even = -(-len(self._pending) // workers)  # what is left, shared out
        floor = min(MIN_BATCH, even) if quick else 1
        cap = QUICK_MAX_BATCH if quick else MAX_BATCH
        batch = 1 if self._stepwise else max(floor, min(cap, per_worker))
        depth = QUICK_DEPTH if quick and batch * self._per_case < DRY_SECS else 2
        if len(worker.sent) >= (1 if self._stepwise else depth * batch):
            return  # busy enough
        taken = self._pending[: -min(batch, len(self._pending)) - 1 : -1]  # the next ones
        del self._pending[-len(taken) :]
        worker.send(taken, crossing(self._spec, taken, self._cases))
        if not self._pending:
            # Told now, not once its last report is in: its word of the CPU it used comes
            # with its reports, and it ends beside the last cases, not after a round trip.
            # (Cases that a worker's death puts back go to a fresh worker: `_replenish`.)
            for each in self._workers:
                each.stop()

    def _quick(self) -> bool:
        """Whether the cases have gone by at under `QUICK_SECS` each so far (a worker's
        time, from the first case sent): then a batch's own cost counts, and the last
        cases are not sent one by one; slower ones are, so that none waits behind a long
        one while a worker idles."""
        now = time.monotonic()
        if self._first_sent is None:
            self._first_sent = now
            return False
        in_flight = sum(len(worker.sent) for worker in self._workers) + len(self._again)
        done = self._total - len(self._pending) - in_flight
        if done > 0:
            self._per_case = (now - self._first_sent) * len(self._workers) / done
        return done > 0 and self._per_case < QUICK_SECS

    def _receive(self, worker: Worker, drain: bool = False) -> None:
        """The messages the selector saw waiting (one read: the selector says when there
        are more, at no cost, where asking the pipe builds a selector each time); with
        `drain`, every message still in the pipe of a worker that ended, then the passes
        its spool holds (done, not sent yet)."""
        while worker.hung_up is None:
            try:
                if drain and not worker.conn.poll():
                    break
                messages = worker.messages()
            except (EOFError, OSError):
                # It ended (its sentinel says how), or closed its pipe: not looked at again.
                worker.hung_up = time.monotonic()
                self._selector.unregister(worker.conn)
                break
            self._handle_all(worker, messages)
            if not drain:
                return
        if drain and self._spools is not None:  # what it did and never sent
            passes, again = self._spools.unsent(worker, set(worker.sent))
            self._done_all(worker, sorted([*(passes.places if passes else ()), *again]))
            self._requeue(again)  # done, but nothing to report: they run again
            if passes is not None:
                self._passes(passes)

    def _handle_all(self, worker: Worker, messages: list[tuple[Any, ...]]) -> None:
        """The messages of one read, in order: each run of plain passes handed on whole."""
        worker.since = time.monotonic()
        for message in messages:
            if message[0] == "run":
                assert self._spools is not None  # only a run with them has passes sent so
                passes = self._spools.run(worker, message)
                self._done_all(worker, passes.places)
                self._passes(passes)
            else:
                self._handle(worker, message)

    def _take_all(self) -> None:
        """What ended workers did that is not read yet: an interrupted run writes it all."""
        for worker in self._workers:
            with contextlib.suppress(Exception):
                self._receive(worker, drain=True)

    def _passes(self, passes: Passes) -> None:
        assert self._on_passes is not None  # asked for by the spec, with somewhere to go
        self._on_passes(passes)

    def _done_all(self, worker: Worker, places: Sequence[int]) -> None:
        """The cases at `places` are in, in order: no longer the worker's, nor running alone."""
        sent = worker.sent
        for index in places:
            if sent and sent[0] == index:
                sent.popleft()
        if self._alone in places:
            self._alone = None

    def _handle(self, worker: Worker, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "ready":
            worker.ready = True
        elif kind == "report":
            _, index, payload, parts = message
            self._done_all(worker, (index,))
            try:
                report = _decode(payload)
            except msgspec.DecodeError as exc:  # a value the agent made that its type refuses
                return self._on_death(index, f"the case's report does not read back: {exc}")
            if parts is not None:
                for each, part in zip(self._prerender, parts, strict=True):
                    each.hold(report, part)
            self._on_report(index, report)
        elif kind == "back":  # cases it will not run: they are the caller's to run
            for place in message[1]:
                worker.sent.remove(place)
                if place == self._alone:
                    self._alone = None
        elif kind == "failed":
            self._failures.append(message[1])

    def _ended(self, worker: Worker) -> None:
        """A worker's sentinel says it ended: the fork server ended with it, or it died."""
        code = worker.process.exitcode
        if code == _UNTOLD and worker.server is not None:
            # The server may be gone, which takes a moment to be seen.
            deadline = time.monotonic() + fork_server.KILL_SECS
            while (loss := fork_server.lost(worker.server)) is None and left(deadline):
                time.sleep(0.01)
            if loss is not None:
                self._server_lost(worker.server, loss)
                return
        status = exit_status(code)
        self._lost(worker, f"the worker running the case died ({status})", status)

    def _watch_server(self) -> bool:
        """Whether the fork server the workers came from was found lost (then dealt with)."""
        server = fork_server.pid()
        if server is None or all(worker.server != server for worker in self._workers):
            return False
        loss = fork_server.lost(server)
        if loss is not None:
            self._server_lost(server, loss)
        return loss is not None

    def _server_lost(self, server: int, loss: fork_server.Loss, killed: bool = False) -> None:
        """The fork server is lost: killed for good (unless it was, `killed`), and its
        workers with it. A case that was running alone is that case's run error; so is one
        whose worker ended while the server was stopped (a stopped server kills no one).
        The others in flight run again, one at a time; what the workers had waiting goes
        back to the queue."""
        lost = [worker for worker in self._workers if worker.server == server]
        if not killed:  # who has ended, before the server is killed and takes the others
            for worker in lost:
                self._receive(worker, drain=True)
        ended = [worker.hung_up is not None for worker in lost]
        for worker in lost:
            self._drop(worker)
        fork_server.kill(server)
        end(lost, 1.0)
        again = []
        for worker, on_its_own in zip(lost, ended, strict=True):
            places = list(worker.sent)
            if not (worker.ready and places):  # nothing begun there
                self._requeue(places)
                continue
            first = places.pop(0)
            if loss.stopped and on_its_own:
                self._blame(
                    first,
                    "the worker running the case died, and the workers' fork server, which "
                    f"says how a worker ended, {loss.how}",
                )
            elif first == self._alone:
                why = f"the workers' fork server {loss.how} while the case ran, twice: "
                self._blame(first, why + "the second time alone in the pool")
            else:
                again.append(first)
            self._requeue(places)
        self._again.extend(again)
        more = f"; {len(again)} case(s) in flight run again, one at a time" if again else ""
        _note(f"the workers' fork server {loss.how}{more}")

    def _lost(self, worker: Worker, why: str, status: str) -> None:
        """A worker ended (or was stopped): the case it was running is that case's run
        error, the rest it had go back to the front of the queue, a fresh worker takes
        over; a worker that never started blames no case, and is not replaced."""
        self._drop(worker)
        end([worker], 1.0)
        places = list(worker.sent)
        if worker.ready and places:
            self._blame(places.pop(0), why)
        self._requeue(places)
        if not worker.ready:
            self._wanted -= 1
            self._ended_as = f"it ended ({status})"

    def _drop(self, worker: Worker) -> None:
        """No longer watched: what it sent before it went is taken."""
        self._receive(worker, drain=True)
        if worker.hung_up is None:
            self._selector.unregister(worker.conn)
        self._selector.unregister(worker.process.sentinel)
        self._workers.remove(worker)
        self._gone_used += worker.used or 0.0
        if self._spools is not None:  # read: its files are let go of (deaths add none)
            self._spools.forget(worker)

    def _blame(self, place: int, why: str) -> None:
        if place == self._alone:
            self._alone = None
        self._on_death(place, why)

    def _requeue(self, places: list[int]) -> None:
        if self._alone in places:  # it was not begun, so it has yet to run alone
            self._again.appendleft(places.pop(places.index(self._alone)))
            self._alone = None
        self._pending.extend(reversed(places))
