"""The pool's worker processes as the harness holds them: each started from the fork server
with a pipe and a thread feeding it (so the harness never blocks on a full pipe), told to
stop and asked the CPU it used, or ended; and workers started before their pool, while the
harness admits the suite, which the pool then takes instead of starting its own."""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import threading
import time
from collections import deque
from typing import Any

from harness.run import fork_server
from harness.run.pool_worker import Item, WorkerSpec, worker_main

# What one read of a worker's pipe takes at most: many reports, under what malloc would map
# for each read (and give back after it).
_READ_SIZE = 1 << 16
# What one read takes of a large message still missing: the length its frame says is the
# worker's word, and a corrupt one would have the whole of it allocated before any came.
_READ_CAP = 1 << 24
# The largest message a frame may say it holds: a case's report (its transcript included)
# is far under it; a length past it (or a negative one) is a corrupt frame, the worker's
# end, as a pipe that closed is.
MAX_MESSAGE = 1 << 32
# How long a worker started early may take to start (the server warming up a framework
# included): past it the server is taken for stuck, killed, and the pool starts its own.
EARLY_START_SECS = 60.0


class Worker:
    """One worker process, the cases sent to it in order (the first is the one it runs),
    and a thread writing to it, so this side never blocks on a full pipe."""

    def __init__(self, context: Any, spec: WorkerSpec | None) -> None:
        """`spec` None: a worker started before its pool, waiting for the spec (`begin`)."""
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=worker_main, args=(child, spec), name="zeroclaw-eval-worker", daemon=True
        )
        self.process.start()
        child.close()
        self.server = fork_server.pid()  # what started it, and tells how it ended
        self.sent: deque[int] = deque()
        self.ready = False
        self.since = time.monotonic()  # when it last did something
        self.hung_up: float | None = None  # when its pipe ended, if it has
        self._fd = self.conn.fileno()
        self._unread = bytearray()  # what was read of its pipe past its last whole message
        self._outbox: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        threading.Thread(target=self._send_all, name="zeroclaw-eval-feed", daemon=True).start()

    def begin(self, spec: WorkerSpec) -> None:
        """A worker started early (without a spec) told what to run."""
        self._outbox.put(("spec", spec))

    def post(self, message: tuple[Any, ...]) -> None:
        """`message` sent as it is (a part of the suite to admit, before the spec)."""
        self._outbox.put(message)

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

    def stop(self) -> None:
        self._outbox.put(("stop",))
        self._outbox.put(None)

    def messages(self) -> list[Any]:
        """Every whole message one read of its pipe gives: many reports in one read, where
        `recv` took two reads each. Like `recv`, it blocks until at least one message is
        whole (a large one is read on until it is). `EOFError` once the pipe has ended (a
        message it was writing is lost with it), or a frame is corrupt (`BadFrame`)."""
        unread = self._unread
        found: list[Any] = []
        while not found:
            data = os.read(self._fd, min(max(_READ_SIZE, _missing(unread)), _READ_CAP))
            if not data:
                raise EOFError
            unread += data
            at = 0
            while (frame := _frame(unread, at)) is not None:
                head, size = frame
                found.append(pickle.loads(unread[at + head : at + head + size]))
                at += head + size
            del unread[:at]
        return found

    def cpu(self, deadline: float) -> float:
        """The CPU time it used, as it said once told to stop (0.0: it did not, in time)."""
        with contextlib.suppress(EOFError, OSError):
            if self.hung_up is None and self.conn.poll(left(deadline)):
                message = self.messages()[0]  # never none: it blocks until one is whole
                return float(message[1]) if message[0] == "cpu" else 0.0
        return 0.0

    def kill(self) -> None:
        self._outbox.put(None)
        with contextlib.suppress(ValueError):  # closed already
            if self.process.is_alive():
                self.process.kill()

    def close(self, deadline: float) -> None:
        """Once it has ended, or `deadline` has passed: what is left is the OS's."""
        with contextlib.suppress(ValueError):
            self.process.join(left(deadline))
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(ValueError):  # still there after all (its server is stopped)
            self.process.close()


class BadFrame(EOFError):
    """A frame saying a length no message has: what follows cannot be told apart, so the
    pipe is taken for ended (its worker is then stopped, its case's run error)."""


def _header(data: bytearray, at: int) -> tuple[int, int] | None:
    """The header's length and the message's size of the frame of multiprocessing's
    `Connection.send` at `at` (a signed 4-byte length, or -1 and an 8-byte one, then the
    pickled message), when its header is whole in `data`; else None. `BadFrame` for a
    length no message has."""
    if len(data) - at < 4:
        return None
    size, head = int.from_bytes(data[at : at + 4], "big", signed=True), 4
    if size == -1:
        if len(data) - at < 12:
            return None
        size, head = int.from_bytes(data[at + 4 : at + 12], "big"), 12
    if size < 0 or size > MAX_MESSAGE:
        raise BadFrame(f"a frame of the worker's pipe says {size} bytes")
    return head, size


def _frame(data: bytearray, at: int) -> tuple[int, int] | None:
    """`_header` of the frame at `at`, when the whole frame is in `data`; else None."""
    header = _header(data, at)
    if header is None:
        return None
    head, size = header
    return header if len(data) - at - head >= size else None


def _missing(data: bytearray) -> int:
    """How many bytes the frame begun in `data` still lacks (0: none is begun, or its
    header is not whole yet)."""
    header = _header(data, 0)
    if header is None:
        return 0
    head, size = header
    return max(0, head + size - len(data))


def left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def end(workers: list[Worker], wait: float) -> None:
    """Kill every worker, then give them `wait` seconds in all (not each) to have ended."""
    for worker in workers:
        worker.kill()
    deadline = time.monotonic() + wait
    for worker in workers:
        worker.close(deadline)


def stop(workers: list[Worker], wait: float) -> float:
    """Tell every worker to stop, give them `wait` seconds in all to say what they used and
    end, then end what is left; the CPU seconds they said."""
    for worker in workers:
        worker.stop()
    deadline = time.monotonic() + wait
    used = sum(worker.cpu(deadline) for worker in workers)
    for worker in workers:
        with contextlib.suppress(ValueError):
            worker.process.join(left(deadline))
    end(workers, wait)
    return used


# Workers started before their pool (`start_early`), waiting for its spec, and the start
# under way: its thread, and what tells it its workers are wanted no more (`end_early`).
_EARLY: list[Worker] = []
_EARLY_LOCK = threading.Lock()
_STARTING: list[tuple[threading.Thread, threading.Event]] = []


def start_early(context: Any, workers: int) -> None:
    """Start `workers` workers from the fork server on a thread of their own (a start
    waits for the server to have warmed up), for the next pool to take (`adopt`)."""
    with _EARLY_LOCK:
        if _EARLY or any(thread.is_alive() for thread, _ in _STARTING):
            return  # the ones started before are still to be taken
        ended = threading.Event()
        thread = threading.Thread(
            target=_start_early,
            args=(context, workers, ended),
            name="zeroclaw-eval-early",
            daemon=True,
        )
        _STARTING[:] = [(thread, ended)]
    thread.start()


def _start_early(context: Any, workers: int, ended: threading.Event) -> None:
    try:
        for _ in range(workers):
            if ended.is_set():
                return
            with fork_server.Watch(EARLY_START_SECS) as watch:
                worker = Worker(context, None)
            if watch.lost is not None:  # started as the server was killed: gone with it
                end([worker], 1.0)
                return
            with _EARLY_LOCK:
                unwanted = ended.is_set()
                if not unwanted:
                    _EARLY.append(worker)
            if unwanted:  # the run ended as it started: no pool will take it
                end([worker], 1.0)
                return
    except (OSError, EOFError, ValueError):  # no process to be had: the pool starts its own
        return


def adopt(wait: float) -> Worker | None:
    """A worker started early from the fork server running now, alive; None: none is
    left (a dead one, or one from a server since replaced, is ended). Waits up to `wait`
    for the early starts under way (they are watched: a stuck server is killed)."""
    for thread, _ in list(_STARTING):
        thread.join(wait)
    with _EARLY_LOCK:
        while _EARLY:
            worker = _EARLY.pop(0)
            if worker.server == fork_server.pid() and worker.process.is_alive():
                return worker
            end([worker], 1.0)
    return None


def early() -> tuple[list[Worker], bool]:
    """The workers started early so far, not yet taken, and whether more are starting."""
    with _EARLY_LOCK:
        return list(_EARLY), any(thread.is_alive() for thread, _ in _STARTING)


def drop_early(worker: Worker) -> None:
    """A worker started early that no pool is to take (it died, or stalled, admitting a
    part of the suite): ended."""
    with _EARLY_LOCK:
        if worker in _EARLY:
            _EARLY.remove(worker)
    end([worker], 1.0)


def end_early() -> None:
    """The workers started early that no pool took: ended, and those still starting
    ended as soon as they have (the run is over: never waited for)."""
    with _EARLY_LOCK:
        unused = list(_EARLY)
        _EARLY.clear()
        for _, ended in _STARTING:
            ended.set()
        _STARTING.clear()
    end(unused, 1.0)
