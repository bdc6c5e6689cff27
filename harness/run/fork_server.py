"""The workers' fork server, watched: no wait on it lasts for ever, and one found stopped or
ended is said, killed and replaced.

Workers come from multiprocessing's fork server, never forked from the running harness,
whose threads a fork would copy half-done. The server is one process that an agent in any
worker can reach (it is the worker's parent). Stopped (SIGSTOP), it starts no worker and
tells no worker's end, so whatever waits on it waits for ever; killed, it takes every
worker with it (`orphans`). The pool asks `lost()` as it watches its workers, and as it
waits for a worker's start (`pool_workers.Worker.forked`), which ends the wait on a server
found stopped, or that started nothing in time, by `kill`ing it: every wait on it then
ends, and the next start begins a fresh one.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

# How often a start is looked at, and how long a stop must last to count: a Ctrl-C's
# SIGTSTP and the SIGCONT after it reach the server a moment apart from the harness.
WATCH_SECS = 0.05
# How long the kernel gets to end a server sent SIGKILL.
KILL_SECS = 2.0
# The multiprocessing whose fork server's private state `_fork_server_from_here` knows:
# 3.13 added an authentication key the server is started with.
_FORKABLE = sys.platform == "linux" and sys.version_info < (3, 13)
# What a forked fork server is called (15 bytes at most: the kernel's limit).
SERVER_NAME = b"zeroclaw-forks"
# What a forked resource tracker is called.
TRACKER_NAME = b"zeroclaw-rtrack"
_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024
T = TypeVar("T")


class Loss(NamedTuple):
    """How the fork server was lost: `how` completes "the workers' fork server …"."""

    how: str
    stopped: bool  # stopped, not ended: it is still there, and ends only when killed


def context(run_module: str, adapter_module: str) -> Any:
    """The fork server, preloaded with the runner and a built-in agent's framework so a
    worker starts in milliseconds (it stays up for later runs of this process); spawning
    where there is no fork server. Never plain fork: the harness has threads."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    forking = multiprocessing.get_context("forkserver")
    # Only harness modules: the server outlives this run, and a user's module it held
    # would be the one every later run got, whatever had changed on disk since.
    preload = ["__main__", "harness.run.process_pool", run_module]
    if adapter_module.startswith("harness."):
        preload.append(adapter_module)
    # Then one case through it and through an own loop, in the server: workers start with
    # the framework and the harness's own path warm.
    preload.append("harness.run.worker_warmup")
    forking.set_forkserver_preload(preload)  # ignored once the server runs
    return forking


def ensure_running(forked: bool = False) -> None:
    """Start the fork server, if it is not running, with interrupts blocked, which it and
    the workers it starts keep: a Ctrl-C reaches the whole process group, and one that fell
    while the server was still importing printed its traceback. The harness handles the
    interrupt; they end with it. (The resource tracker blocks them itself as it starts, and
    unblocks them in the caller afterwards: it is started outside, so that it is not in the
    middle.) `forked`: the server is forked from this process where it can be, before the
    tracker, which the workers need only once they are launched: the server has its
    warm-up ahead of it, which the workers wait for, and starts it a fork earlier."""
    from multiprocessing import forkserver, resource_tracker

    server = forked and _blocking_interrupts(_fork_server_from_here)
    if not (forked and _tracker_from_here()):
        resource_tracker.ensure_running()
    if not server:  # (its own start finds the tracker running: it leaves the mask alone)
        _blocking_interrupts(forkserver.ensure_running)


def _blocking_interrupts(start: Callable[[], T]) -> T:
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _fork_server_from_here() -> bool:
    """Start the fork server as a fork of this process, which has imported already what
    the workers run (and the agent's framework): the server imports nothing again, and
    starts in a millisecond instead of the second a fresh interpreter takes. Only while
    this process has no other thread (a fork copies none of them, and whatever lock one
    held stays held), and only where multiprocessing's fork server is the one this knows
    (its private state is set as its own `ensure_running` sets it); False, and nothing
    done, otherwise: then the server is spawned as usual."""
    from multiprocessing import connection, forkserver, util

    server: Any = forkserver._forkserver
    if not _forkable(server, "_forkserver_pid", "_forkserver_address", "_forkserver_alive_fd"):
        return False
    if server._forkserver_pid is not None and not os.waitpid(server._forkserver_pid, os.WNOHANG)[0]:
        return True  # running already
    preload = [name for name in server._preload_modules if name != "__main__"]
    listener = socket.socket(socket.AF_UNIX)
    try:
        address = connection.arbitrary_address("AF_UNIX")  # type: ignore[attr-defined]
        listener.bind(address)
        if not util.is_abstract_socket_namespace(address):
            os.chmod(address, 0o600)
        listener.listen()
        alive_r, alive_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had: nothing is left open
            os.close(alive_w)
            os.close(alive_r)
            raise
        if pid == 0:  # the server: what a spawned one would have, and nothing else
            _serve(listener.fileno(), alive_r, preload)
        os.close(alive_r)
    finally:
        listener.close()
    if server._forkserver_alive_fd is not None:  # the one before, ended
        with contextlib.suppress(OSError):
            os.close(server._forkserver_alive_fd)
    server._forkserver_address = address
    server._forkserver_alive_fd = alive_w
    server._forkserver_pid = pid
    return True


def _forkable(state: object, *names: str) -> bool:
    """Whether a multiprocessing helper may be forked from here: its private state is the
    one this knows (`names`), on a platform whose helpers this knows, while this process
    has no other thread (a fork copies none, and a lock one held stays held)."""
    known = all(hasattr(state, name) for name in names)
    return known and _FORKABLE and threading.active_count() == 1


def _tracker_from_here() -> bool:
    """Start multiprocessing's resource tracker (which the fork server is handed) as a fork
    of this process, not a fresh interpreter: that costs every run with workers 30 ms of
    CPU beside its start. The same conditions as `_fork_server_from_here`, and its private
    state set as its own `ensure_running` sets it; False, and nothing done, otherwise
    (or when one runs already)."""
    from multiprocessing import resource_tracker

    tracker: Any = resource_tracker._resource_tracker
    if not _forkable(tracker, "_fd", "_pid", "_lock"):
        return False
    if tracker._fd is not None:
        return True  # running already (or found dead, and started again, by its own code)
    alive_r, alive_w = os.pipe()
    # Started with interrupts blocked, as multiprocessing starts it: one before it ignores
    # them would end it (it unblocks them once it does).
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(alive_w)
        os.close(alive_r)
        raise
    if pid == 0:  # the tracker: standard streams and its pipe, as a spawned one has
        _track(alive_r, resource_tracker.main)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    os.close(alive_r)
    tracker._fd, tracker._pid = alive_w, pid
    return True


def _track(alive_r: int, main: Any) -> None:
    code = 1
    try:
        os.closerange(3, alive_r)
        os.closerange(alive_r + 1, _MAX_FD)
        _name(TRACKER_NAME)
        main(alive_r)  # ignores SIGINT and SIGTERM itself, and ends when the pipe does
        code = 0
    finally:
        os._exit(code)


def _name(name: bytes) -> None:
    """This process's name (`/proc/PID/comm`, what `ps -o comm` and `top` show): a forked
    server's command line is the harness's. Written there, which sets it as
    `prctl(PR_SET_NAME)` does, without importing ctypes (3 ms of the tracker's start)."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "wb", buffering=0) as comm:
        comm.write(name)


def _serve(listener: int, alive_r: int, preload: list[str]) -> None:
    """The forked fork server: only the descriptors a spawned server gets (standard
    streams, its socket, the harness's liveness pipe), the signal dispositions a fresh
    interpreter has, then multiprocessing's own server loop; it never returns."""
    code = 1
    try:
        keep = sorted((listener, alive_r))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, _MAX_FD)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        _name(SERVER_NAME)
        # Imported once here rather than in each worker, which asks the kernel through it
        # to end with the server (`orphans`).
        with contextlib.suppress(ImportError):
            import ctypes  # noqa: F401
        from multiprocessing import forkserver

        forkserver._forkserver._lock = threading.Lock()  # type: ignore[attr-defined]
        forkserver.main(listener, alive_r, preload)
    except SystemExit:  # the harness is gone: how the server loop ends
        code = 0
    finally:
        os._exit(code)


def pid() -> int | None:
    """The fork server's process id; None when there is none (or workers are spawned)."""
    try:
        from multiprocessing import forkserver
    except ImportError:  # a platform without one
        return None
    server: int | None = getattr(forkserver._forkserver, "_forkserver_pid", None)
    return server


def lost(server: int) -> Loss | None:
    """How `server` (a child of this process) was lost, None while it runs. A stop counts
    once it has lasted `WATCH_SECS`."""
    loss = _state(server)
    if loss is not None and loss.stopped:
        time.sleep(WATCH_SECS)
        loss = _state(server)
    return loss


def _state(server: int) -> Loss | None:
    if not hasattr(os, "waitid"):  # nothing to ask: only a start that takes too long tells
        return None
    flags = os.WEXITED | os.WSTOPPED | os.WNOHANG | os.WNOWAIT  # looked at, never reaped
    try:
        seen = os.waitid(os.P_PID, server, flags)
    except ChildProcessError:  # reaped: multiprocessing saw it had ended, and started another
        return Loss("ended", stopped=False)
    if seen is None:
        return None
    if seen.si_code == os.CLD_STOPPED:
        return Loss(f"was found stopped ({signal_name(seen.si_status)})", stopped=True)
    if seen.si_code == os.CLD_EXITED:
        return Loss(f"ended (exit code {seen.si_status})", stopped=False)
    if seen.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
        return Loss(f"was killed by {signal_name(seen.si_status)}", stopped=False)
    return None  # continued, or traced: running as far as anyone can tell


def signal_name(signum: int) -> str:
    """`SIGKILL`; `signal 99` for a number no signal has."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def kill(server: int) -> None:
    """End `server` for good (a stopped process too), and wait until it has, for at most
    `KILL_SECS`: then its workers have died with it, and every wait on it has ended. It is
    left for multiprocessing to reap, which then starts a fresh one."""
    state = _state(server)
    if state is not None and not state.stopped:
        return  # ended already: its number may be another process's once it is reaped
    with contextlib.suppress(ProcessLookupError):
        os.kill(server, signal.SIGKILL)
    deadline = time.monotonic() + KILL_SECS
    while time.monotonic() < deadline:
        state = _state(server)
        if state is not None and not state.stopped:
            return
        time.sleep(0.01)


def end_if_stopped() -> Loss | None:
    """Kill the fork server if it is stopped: it would never end, and would hold this
    process's stderr open after it ended. How it was found, or None."""
    server = pid()
    loss = None if server is None else lost(server)
    if server is None or loss is None or not loss.stopped:
        return None
    kill(server)
    return loss
