"""The event loop cases run on, and bounded calls into code that may block.

`asyncio.run` waits for its default executor's threads when it ends, and those threads are
not daemons, so interpreter exit waits for them too: a timed-out turn whose work sits in
`asyncio.to_thread` (or a framework's synchronous tool) would hang the process after the
timeout was reported. Here the executor's threads are daemons and nothing waits for them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

# asyncio is imported by the loop's own functions: `call_within` (building an agent, for
# `eval check` too) needs none, and asyncio would be a sizeable part of that command's start.
if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

# How long, once the work is done, tasks the agent left behind get to honour cancellation.
CLEANUP_SECS = 1.0


class DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """One daemon thread per call: a call that never returns holds nothing but its thread.

    A `ThreadPoolExecutor` only because asyncio accepts no other as a loop's default; none
    of the pool's own (non-daemon) threads is ever started."""

    def __init__(self, name: str = "zeroclaw-eval-worker") -> None:
        super().__init__(max_workers=1, thread_name_prefix=name)
        self._name = name
        self._closed = False

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        if self._closed:
            raise RuntimeError("cannot schedule new calls after shutdown")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever awaits the future
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=work, name=self._name, daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        # Never waits: a blocked call is abandoned with its daemon thread.
        self._closed = True


def _until_done(loop: asyncio.AbstractEventLoop, task: asyncio.Future[T]) -> T:
    """`loop.run_until_complete(task)`, through any SystemExit or KeyboardInterrupt that
    agent code raises in a task or callback of its own.

    asyncio lets those two out of the loop itself, which would end every case of the run at
    once (and a SystemExit(0) would end it green). The task that raised keeps the exception
    as its result, so whoever awaits it (the case) sees it raised there, and the loop goes
    on. Catching the escape here instead of wrapping every task's coroutine costs nothing
    per task: an agent loop creates dozens of tasks per case."""
    # Only where cases run: on the main thread, a KeyboardInterrupt is the user's Ctrl-C.
    resume = threading.current_thread() is not threading.main_thread()
    while True:
        try:
            return loop.run_until_complete(task)
        except (SystemExit, KeyboardInterrupt):
            if task.done() or not resume:
                raise


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, except that nothing left running can hold the caller (worker
    threads are daemons, and tasks the agent left get `CLEANUP_SECS` to end), and no task
    can stop the loop by raising SystemExit or KeyboardInterrupt (`_until_done`)."""
    import asyncio

    loop = asyncio.new_event_loop()
    executor = DaemonExecutor()
    loop.set_default_executor(executor)
    try:
        return _until_done(loop, loop.create_task(main))
    finally:
        try:
            _cancel_leftovers(loop)
            with contextlib.suppress(Exception):
                cleanup = asyncio.wait_for(loop.shutdown_asyncgens(), CLEANUP_SECS)
                _until_done(loop, loop.create_task(cleanup))
        finally:
            executor.shutdown(wait=False)
            loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    import asyncio

    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    # A task that ignores cancellation is left pending; the loop is closed regardless.
    _until_done(loop, loop.create_task(asyncio.wait(tasks, timeout=CLEANUP_SECS)))
    for task in tasks:
        if not task.done():
            # Its "destroyed but pending" warning would print the agent's coroutine.
            task._log_destroy_pending = False  # type: ignore[attr-defined]
        elif not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" noise


class CallTimedOut(Exception):
    """`call_within` gave up waiting."""


class CallFailed(Exception):
    """The call of `call_within` raised `original` (whatever it was: the caller's own
    interruption, raised while waiting, is never mistaken for it)."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


def call_within(seconds: float, fn: Callable[[], T], name: str = "zeroclaw-eval-call") -> T:
    """`fn()` on a daemon thread, waited for at most `seconds`; `CallTimedOut` after that
    (the thread is abandoned), `CallFailed` carrying whatever `fn` raised. For user code
    that may block where no event loop can interrupt it: importing and building an agent."""
    future: concurrent.futures.Future[T] = DaemonExecutor(name).submit(fn)
    # Waited for separately: a TimeoutError that `fn` raises itself is its own error.
    done, _ = concurrent.futures.wait([future], timeout=seconds)
    if not done:
        raise CallTimedOut
    failure = future.exception()
    if failure is not None:
        raise CallFailed(failure) from failure
    return future.result()
