"""The pool's worker processes as the harness holds them: each launched from the fork server
without waiting for it (the server forks it when it gets to it: `Worker.forked` waits for
that, watching the server), sent its messages without ever blocking (what a full pipe will
not take goes on a thread), told to stop and asked the CPU it used, or ended; and workers
launched before their pool, while the harness admits the suite, which the pool then takes
instead of starting its own.

No thread is started for a worker that the pipe keeps up with: a thread beside the one
admitting the suite, or reading the reports, waits for the interpreter's lock each time it
wakes (up to its switch interval, 5 ms), which cost a small suite more than its cases."""

from __future__ import annotations

import contextlib
import io
import multiprocessing.process
import os
import queue
import socket
import sys
import threading
import time
from collections import deque
from typing import Any

from harness.run import fork_server
from harness.run.frames import dumps, frame, framed, loaded, missing
from harness.run.pool_worker import WorkerSpec, worker_main

# What one read of a worker's pipe takes at most: many reports, under what malloc would map
# for each read (and give back after it).
_READ_SIZE = 1 << 16
# What one read takes of a large message still missing: the length its frame says is the
# worker's word, and a corrupt one would have the whole of it allocated before any came.
_READ_CAP = 1 << 24
# How long a worker launched early may take to be forked (the server warming up a
# framework included): past it the server is taken for stuck, killed, and the pool starts
# its own.
EARLY_START_SECS = 60.0


class Worker:
    """One worker process, the cases sent to it in order (the first is the one it runs),
    and what of its messages its pipe has not taken yet (written by a thread, so this
    side never blocks on a full pipe)."""

    def __init__(self, context: Any) -> None:
        """Launched, not waited for (`forked`), then told what to run (`begin`)."""
        self.conn, child = context.Pipe()
        self.process = _process(context, worker_main, (child, None))
        try:
            self.process.start()
        except BaseException:
            self.conn.close()
            raise
        finally:
            child.close()
        self.server = fork_server.pid()  # what started it, and tells how it ended
        self.launched = time.monotonic()
        self.sent: deque[int] = deque()
        self.ready = False
        self.told = False  # told to stop: it is sent nothing more
        self.used: float | None = None  # the CPU seconds it said it used, once told to stop
        self.since = time.monotonic()  # when it last did something
        self.hung_up: float | None = None  # when its pipe ended, if it has
        self._fd = self.conn.fileno()
        self._unread = bytearray()  # what was read of its pipe past its last whole message
        # Its own descriptor of the pipe, written without waiting (`MSG_DONTWAIT`); what it
        # does not take goes to the feeding thread, started then, and so does all after it
        # until the thread has written what it was given (`_Feeding.idle`): in order.
        self._out = socket.socket(fileno=os.dup(self._fd))
        # One open file with `conn`'s descriptor: a default socket timeout some library
        # set would make it (and so `conn`'s reads) non-blocking; each send says its own.
        self._out.setblocking(True)
        self._feeding: _Feeding | None = None

    def forked(self, bound: float) -> fork_server.Loss | None:
        """Wait until the fork server has forked it, watching the server as it waits: one
        found stopped, or that forked nothing within `bound` seconds of the launch, is
        killed (which ends the wait). How the server was lost (ended, too, before it forked
        it); None: it forked it."""
        launch = getattr(self.process, "_popen", None)
        if not isinstance(launch, _Launch):
            return None  # spawned: started already
        deadline = self.launched + bound
        while not launch.known(fork_server.WATCH_SECS):
            loss = None if self.server is None else fork_server.lost(self.server)
            if loss is None and time.monotonic() > deadline:
                loss = fork_server.Loss(f"started no worker in {bound:g}s", stopped=True)
            if loss is not None:
                if self.server is not None:
                    fork_server.kill(self.server)
                return loss
        if launch.pid is None:  # the server ended before it forked it
            loss = None if self.server is None else fork_server.lost(self.server)
            return loss or fork_server.Loss("ended", stopped=False)
        return None

    def begin(self, spec: WorkerSpec) -> None:
        """A worker launched without a spec told what to run."""
        self.post(("spec", spec))

    def started(self) -> bool:
        """Whether the server has forked it (or ended without), asked without waiting."""
        launch = getattr(self.process, "_popen", None)
        return not isinstance(launch, _Launch) or launch.known(0)

    def send(self, places: list[int], items: list[Any]) -> None:
        """The cases at `places`, sent as `items` (`pool_worker.crossing`)."""
        if not self.sent:
            self.since = time.monotonic()  # an idle worker starts the first case now
        self.sent.extend(places)
        self.post(("run", items))

    def post(self, message: tuple[Any, ...]) -> None:
        """`message` framed as multiprocessing's `Connection.send` frames it, written now
        as far as the pipe takes it; the rest is the feeding thread's. Once the thread has
        written all it was given, this side writes again itself: a message handed to the
        thread wakes it, and a run's hundreds of batches after its one large spec would
        each cost a switch to it and back."""
        data = framed(dumps(message))
        feeding = self._feeding
        if feeding is None or feeding.idle():
            try:
                done = self._out.send(data, socket.MSG_DONTWAIT)
            except BlockingIOError:
                done = 0
            except OSError:  # it died (or was ended): its sentinel says so
                return
            if done == len(data):
                return
            data = data[done:]
            if feeding is None:
                feeding = self._feeding = _Feeding()
                feed = threading.Thread(
                    target=_feed, args=(self._out, feeding), name="zeroclaw-eval-feed"
                )
                feed.daemon = True
                feed.start()
        feeding.queued += 1
        feeding.put(data)

    def stop(self) -> None:
        """Told to stop once the cases sent to it are done: it says the CPU it used (`used`,
        read with its reports), and ends."""
        if not self.told:
            self.told = True
            self.post(("stop",))
        self._unfeed()

    def _unfeed(self) -> None:
        if self._feeding is not None:
            self._feeding.put(None)

    def messages(self, wait: bool = True) -> list[Any]:
        """Every whole message one read of its pipe gives: many reports in one read, where
        `recv` took two reads each. Like `recv`, it blocks until at least one message is
        whole (a large one is read on until it is); with `wait` False, it reads once (the
        caller saw the pipe readable: the read does not block) and lists what is whole,
        perhaps nothing, the rest kept for the next read. `EOFError` once the pipe has
        ended (a message it was writing is lost with it), or a frame is corrupt
        (`frames.BadFrame`). Its word of the CPU it used is kept (`used`), not listed: none may
        be, then."""
        unread = self._unread
        found: list[Any] = []
        at = 0
        while not at:
            data = os.read(self._fd, min(max(_READ_SIZE, missing(unread)), _READ_CAP))
            if not data:
                raise EOFError
            unread += data
            while (whole := frame(unread, at)) is not None:
                head, size = whole
                message = loaded(unread[at + head : at + head + size])
                at += head + size
                if message[0] == "cpu":
                    self.used = float(message[1])
                else:
                    found.append(message)
            if not wait:
                break
        del unread[:at]
        return found

    def cpu(self, deadline: float) -> float | None:
        """The CPU time it used, as it said once told to stop (None: it did not, in time,
        or it said something else first)."""
        with contextlib.suppress(EOFError, OSError):
            if self.used is None and self.hung_up is None and self.conn.poll(left(deadline)):
                self.messages()
        return self.used

    def kill(self) -> None:
        self._unfeed()
        with contextlib.suppress(ValueError):  # closed already
            if self.process.is_alive():
                self.process.kill()

    def close(self, deadline: float) -> None:
        """Once it has ended, or `deadline` has passed: what is left is the OS's. One the
        server has not forked yet is not waited for: its pipe, closed here, ends it as it
        starts."""
        launch = getattr(self.process, "_popen", None)
        if not isinstance(launch, _Launch) or launch.known(0):
            with contextlib.suppress(ValueError):
                self.process.join(left(deadline))
        else:  # nor at this process's exit, which joins its children (its server may be stopped)
            multiprocessing.process._children.discard(self.process)  # type: ignore[attr-defined]
        for each in (self._out, self.conn):
            with contextlib.suppress(OSError):
                each.close()
        with contextlib.suppress(ValueError):  # still there after all (its server is stopped)
            self.process.close()


class _Feeding(queue.SimpleQueue[bytes | None]):
    """What the feeding thread is to write, in order (None: it ends), and how far it got:
    `queued` is counted by the posting side alone, `fed` by the thread alone, so neither
    count is ever written by two threads."""

    def __init__(self) -> None:
        self.queued = 0
        self.fed = 0

    def idle(self) -> bool:
        """Whether all it was given is written (then a message written now comes after it)."""
        return self.fed == self.queued


def _feed(out: socket.socket, feeding: _Feeding) -> None:
    while (data := feeding.get()) is not None:
        try:
            out.sendall(data)
        except OSError:  # it died: its sentinel says so
            return
        feeding.fed += 1


def _process(context: Any, target: Any, args: tuple[Any, ...]) -> Any:
    """The worker's process object: from the fork server, one whose start does not wait
    for the server to fork it (`_Launch`); else (spawned) `context`'s own."""
    if context.get_start_method() == "forkserver" and _Launched is not None:
        return _Launched(target=target, args=args, name="zeroclaw-eval-worker", daemon=True)
    return context.Process(target=target, args=args, name="zeroclaw-eval-worker", daemon=True)


_Launched: Any = None
_Launch: Any = type(None)  # what `isinstance` finds nothing of where there is no fork server
if sys.platform != "win32":
    from multiprocessing import popen_forkserver
    from multiprocessing.context import ForkServerProcess

    class _Launch(popen_forkserver.Popen):  # type: ignore[no-redef]
        """multiprocessing's start from the fork server, but for its last step: the
        process id the server sends once it has forked the process is read when it is
        there (`known`), not waited for as the process starts. Everything that asks the
        process (alive? its exit code, a signal, a join) reads it first when it can."""

        def _launch(self, process_obj: Any) -> None:
            from multiprocessing import forkserver, reduction, spawn, util
            from multiprocessing.context import set_spawning_popen

            prep_data = spawn.get_preparation_data(process_obj._name)
            buf = io.BytesIO()
            set_spawning_popen(self)
            try:
                reduction.dump(prep_data, buf)
                reduction.dump(process_obj, buf)
            finally:
                set_spawning_popen(None)
            self.sentinel, w = forkserver.connect_to_new_process(self._fds)  # type: ignore[attr-defined]
            # Kept, as multiprocessing keeps it: the child's sign that its parent is alive.
            parent_w = os.dup(w)
            close = util.close_fds  # type: ignore[attr-defined]
            self.finalizer = util.Finalize(self, close, (parent_w, self.sentinel))
            self.pid = None  # type: ignore[assignment]
            _write_all(w, buf.getvalue())

        def known(self, timeout: float | None) -> bool:
            """Whether the server has said the process id (read now if it has, waiting up
            to `timeout`), or ended without (then the process is taken for ended, as
            multiprocessing takes a process whose server is gone)."""
            if self.pid is not None or self.returncode is not None:
                return True
            from multiprocessing import forkserver
            from multiprocessing.connection import wait

            if not wait([self.sentinel], timeout):
                return False
            try:
                self.pid = forkserver.read_signed(self.sentinel)
            except (OSError, EOFError):
                self.returncode = 255
            return True

        def poll(self, flag: int = os.WNOHANG) -> int | None:
            if not self.known(0 if flag == os.WNOHANG else None):
                return None
            return super().poll(flag)

        def wait(self, timeout: float | None = None) -> int | None:
            start = time.monotonic()
            if not self.known(timeout):
                return None
            rest = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
            return super().wait(rest)

        def _send_signal(self, sig: int) -> None:
            if self.known(0) and self.pid is not None:  # not forked yet: nothing to signal
                super()._send_signal(sig)  # type: ignore[misc]

    class _Launched(ForkServerProcess):  # type: ignore[no-redef]
        """A process from the fork server started by `_Launch`."""

        @staticmethod
        def _Popen(process_obj: Any) -> Any:
            return _Launch(process_obj)


def _write_all(fd: int, data: bytes) -> None:
    """`data` into the server's pipe for the process, which it reads once it forks it: what
    the pipe does not take now (a process's start is far under a pipe's 64 KiB) is written
    by a thread, never waited for here (the server may be busy warming up, or stopped)."""
    os.set_blocking(fd, False)
    try:
        done = os.write(fd, data)
    except BlockingIOError:
        done = 0
    except OSError:  # the server is gone: the sentinel says so
        done = len(data)
    if done == len(data):
        os.close(fd)
        return
    os.set_blocking(fd, True)
    rest = data[done:]

    def write() -> None:
        with contextlib.suppress(OSError), open(fd, "wb", closefd=True) as pipe:
            pipe.write(rest)

    threading.Thread(target=write, name="zeroclaw-eval-launch", daemon=True).start()


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
    """Tell every worker to stop and give them `wait` seconds in all to say what they used;
    the CPU seconds they said. One that said it is ending on its own, and is joined once
    the run is over (`end_early`), so that its exit (the kernel's, then the fork server's
    word of it) is spent beside the run's reports, not before them; the others are ended."""
    for worker in workers:
        worker.stop()
    deadline = time.monotonic() + wait
    used, silent = 0.0, []
    for worker in workers:
        said = worker.cpu(deadline)
        if said is None:
            silent.append(worker)
        else:
            used += said
            _STOPPING.append(worker)
    end(silent, wait)
    return used


def _reap(workers: list[Worker], wait: float) -> None:
    """Workers ending on their own, given `wait` seconds in all to have ended (then their
    pipes are closed); one still there after it (its server is stopped) is killed."""
    deadline = time.monotonic() + wait
    for worker in workers:
        worker.close(deadline)
    for worker in workers:
        worker.kill()  # nothing, once it has ended


# Workers launched before their pool (`start_early`), waiting for its spec; and workers
# told to stop that said what they used, ending on their own (`stop`).
_EARLY: list[Worker] = []
_STOPPING: list[Worker] = []


def start_early(context: Any, workers: int) -> None:
    """Launch `workers` workers from the fork server, for the next pool to take (`adopt`):
    nothing here waits for the server (it forks them once it has warmed up)."""
    if _EARLY:
        return  # the ones launched before are still to be taken
    with contextlib.suppress(OSError, EOFError, ValueError):  # no process to be had: the
        for _ in range(workers):  # pool starts its own
            _EARLY.append(Worker(context))


def adopt(wait: float) -> Worker | None:
    """A worker launched early from the fork server running now, forked and alive; None:
    none is left (a dead one, or one from a server since replaced, is ended). Waits up to
    `wait` for the server to fork it, watching the server (`Worker.forked`)."""
    while _EARLY:
        worker = _EARLY.pop(0)
        if worker.server == fork_server.pid():
            until = min(time.monotonic() + wait, worker.launched + EARLY_START_SECS)
            bound = until - worker.launched
            if worker.forked(bound) is None and worker.process.is_alive():
                return worker
        end([worker], 1.0)
    return None


def early() -> tuple[list[Worker], bool]:
    """The workers launched early that the server has forked, not yet taken, and whether
    more are still to be forked."""
    forked = [worker for worker in _EARLY if worker.started()]
    return forked, len(forked) < len(_EARLY)


def drop_early(worker: Worker) -> None:
    """A worker started early that no pool is to take (it died, or stalled, admitting a
    part of the suite): ended."""
    if worker in _EARLY:
        _EARLY.remove(worker)
    end([worker], 1.0)


def end_early() -> None:
    """The workers launched early that no pool took, ended (one the server has not forked
    yet ends as it starts, its pipe closed: never waited for); those a pool stopped,
    joined."""
    unused, stopping = list(_EARLY), list(_STOPPING)
    _EARLY.clear()
    _STOPPING.clear()
    end(unused, 1.0)
    _reap(stopping, 1.0)
