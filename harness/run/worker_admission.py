"""A large suite admitted in parallel, in the workers started early for its run (beside
admission, `pool_workers.start_early`) instead of one fixture after another in this process.

The suite is listed here and cut into contiguous parts; each worker is sent a part (its
names, and what admission needs: the mode, the agent's surface), admits every fixture of it
exactly as `load_suite` does here (`admit_slice`), and sends back compact columns (ids,
digests, the field each id is at) or the part's problems. This process takes the parts in
in suite order and makes the suite-wide checks (duplicate ids) over the whole suite, so the
cases admitted and every problem, in its order and words, are those of admission here.

This process admits a part itself while no worker is there yet (they start as the fork
server warms up), and once none is left: when there are none (one job, live mode, a pool
that cannot start), when a part would cost more to send than to admit (a small suite), and
for the parts of a worker that died, or stalled past its bound (then ended, and never taken
by a pool). Every wait is bounded; nothing is ever admitted twice or lost.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import time
from collections import deque
from typing import Any

from harness.agents.protocol import AgentSurface
from harness.fixtures.listing import Listing
from harness.fixtures.suite import Slice, admit_slice, in_one
from harness.modes import Mode
from harness.run import pool_workers
from harness.run.pool_workers import Worker

# Below this many fixtures the suite is admitted here: what it costs to send its parts and
# take them in outweighs what the workers take off this process (measured: `benchmarks/`).
PARALLEL_FROM = 256
# A part sent to a worker: big enough that sending it costs little beside admitting it,
# small enough that every worker gets several (a worker that is slower, or dies, holds
# up little), and that this process, admitting one itself, keeps none waiting long.
PART_MIN, PART_MAX = 64, 1024
# What this process admits at a time while no worker is there yet.
HERE = 64
# How long a worker may take over one part before it is taken for stalled: a fixture
# takes well under a millisecond, a loaded machine many times that.
STALL_SECS = 10.0
STALL_PER_FIXTURE = 0.01
# How often to look for workers still starting while every one there is busy.
LOOK_SECS = 0.005
# Parts a worker holds at once: one it admits, one waiting behind it.
IN_FLIGHT = 2


def in_workers(listing: Listing, mode: Mode, agent: AgentSurface, jobs: int) -> list[Slice]:
    """The listed suite admitted in parts, as `load_suite` takes them (in order, all of it),
    by the workers started early where it pays, else here."""
    if len(listing) < PARALLEL_FROM or jobs < 2 or not _picklable(agent):
        return in_one(listing, mode, agent)
    size = max(PART_MIN, min(PART_MAX, len(listing) // (4 * jobs)))
    return _Admission(listing, mode, agent, size).run()


def _picklable(agent: AgentSurface) -> bool:
    """Whether the surface can be sent (an adapter's own mappings may not be)."""
    try:
        pickle.dumps(agent)
    except Exception:
        return False
    return True


class _Admission:
    """The parts of one suite: those still to admit (ranges of the listing), those each
    worker holds (in the order sent, which is the order it answers), and those done."""

    def __init__(self, listing: Listing, mode: Mode, agent: AgentSurface, size: int) -> None:
        self._listing, self._mode, self._agent = listing, mode, agent
        self._todo = deque(
            (start, min(start + size, len(listing))) for start in range(0, len(listing), size)
        )
        self._done: dict[int, Slice] = {}
        self._held: dict[Worker, deque[tuple[int, int]]] = {}
        self._since: dict[Worker, float] = {}  # when it began the part it is on
        self._gone: set[Worker] = set()
        self._starting = True
        self._cwd = os.getcwd()
        self._selector = selectors.DefaultSelector()

    def run(self) -> list[Slice]:
        try:
            while self._todo or any(self._held.values()):
                self._take_workers()
                self._send()
                if self._todo and not self._held:
                    self._admit_here()
                else:
                    self._wait()
        finally:
            self._selector.close()
        return [self._done[start] for start in sorted(self._done)]

    def _take_workers(self) -> None:
        workers, self._starting = pool_workers.early()
        for worker in workers:
            if worker in self._held or worker in self._gone:
                continue
            if worker.hung_up is not None or not worker.process.is_alive():
                continue  # the pool ends it, as it ends any it finds dead
            self._held[worker] = deque()
            self._selector.register(worker.conn, selectors.EVENT_READ, worker)
            self._selector.register(worker.process.sentinel, selectors.EVENT_READ, worker)

    def _send(self) -> None:
        for worker, held in self._held.items():
            while self._todo and len(held) < IN_FLIGHT:
                start, stop = self._todo.popleft()
                if not held:
                    self._since[worker] = time.monotonic()
                names, irregular = self._listing.part(start, stop)
                part = (self._listing.prefix, names, irregular, self._mode, self._agent)
                worker.post(("admit", start, self._cwd, part))
                held.append((start, stop))

    def _admit_here(self) -> None:
        """A part admitted here: the last (the workers take the first), and while workers
        may still come, no more of it than `HERE`."""
        start, stop = self._todo.pop()
        if self._starting and stop - start > HERE:
            self._todo.append((start, stop - HERE))
            start = stop - HERE
        names, irregular = self._listing.part(start, stop)
        self._done[start] = admit_slice(
            self._listing.prefix, names, irregular, self._mode, self._agent
        )

    def _wait(self) -> None:
        now = time.monotonic()
        deadline = min(
            (self._since[worker] + _bound(held[0]) for worker, held in self._held.items() if held),
            default=now + LOOK_SECS,
        )
        wait = max(0.0, deadline - now)
        if self._starting and self._todo:
            wait = min(wait, LOOK_SECS)
        for key, _ in self._selector.select(wait):
            worker = key.data
            if worker in self._held:
                self._hear(worker, ended=key.fileobj is not worker.conn)
        now = time.monotonic()
        for worker, held in list(self._held.items()):
            if held and now > self._since[worker] + _bound(held[0]):
                self._lose(worker)  # stalled: ended, its parts admitted elsewhere

    def _hear(self, worker: Worker, ended: bool) -> None:
        """What `worker` sent (with `ended`, what it sent before it ended, then its end)."""
        held = self._held[worker]
        try:
            while held and (not ended or worker.conn.poll()):
                # One read of a pipe the selector saw readable: it never waits for the rest of
                # a message begun (which a worker that stalled in the middle of it would never
                # send). Such a worker is found past its part's bound as one that stalls
                # between messages is (`_wait`), with no thread started to watch each read.
                for message in worker.messages(wait=False):
                    if not held or not _answers(message, held[0]):
                        raise EOFError  # not what it was asked: taken for broken
                    held.popleft()
                    self._done[message[1]] = message[2]
                    self._since[worker] = time.monotonic()
                if not ended:
                    return
        except (EOFError, OSError):
            ended = True
        if ended:
            self._lose(worker)

    def _lose(self, worker: Worker) -> None:
        """A worker that died or stalled: ended, never to be taken by a pool, and its parts
        put back to be admitted again (by another worker, or here)."""
        self._todo.extendleft(reversed(self._held.pop(worker)))
        self._gone.add(worker)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(worker.conn)
            self._selector.unregister(worker.process.sentinel)
        pool_workers.drop_early(worker)


def _answers(message: Any, part: tuple[int, int]) -> bool:
    """Whether `message` is the admission of `part`, a column for each of its fixtures."""
    if not (
        isinstance(message, tuple) and len(message) == 3 and message[:2] == ("admitted", part[0])
    ):
        return False
    got = message[2]
    return (
        isinstance(got, Slice)
        and len(got.ids) + len(got.refused) == part[1] - part[0]
        and len(got.named) == len(got.ids)
    )


def _bound(part: tuple[int, int]) -> float:
    return STALL_SECS + STALL_PER_FIXTURE * (part[1] - part[0])
