"""The deadline primitive: `await within(seconds, coro)`, and `WatchedDeadline`, the same
deadline with its clock kept by a watching thread instead of the event loop.

It tells its own expiry (`DeadlineExceeded`) from a `TimeoutError` the awaited code raises
itself, and it bounds the whole await, not one phase of it. On Python 3.11+ it is asyncio's
own `timeout`; on 3.10 a timer cancels the awaiting task, which is what `timeout` does.
A coroutine that ignores cancellation and blocks its thread is beyond any in-loop
deadline: that is the runner's watchdog's job.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from harness.errors import HarnessError

# asyncio is imported where a deadline starts, on a running loop: the commands that run no
# case (`eval check`) import this module through the model boundary, and asyncio (with
# ssl, sockets and selectors) would be a sizeable part of their start.
if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")


class DeadlineExceeded(HarnessError):
    """The deadline passed before the awaited work finished."""


async def within(seconds: float, work: Awaitable[T]) -> T:
    """`await work`, or `DeadlineExceeded` once `seconds` pass.

    Work that swallows the cancellation and finishes anyway is still too late: the result
    is dropped and the deadline reported."""
    import asyncio

    if sys.version_info >= (3, 11):
        return await _bounded(asyncio.timeout(seconds), work)
    return await _within_310(seconds, work)  # pragma: no cover - Python 3.10 only


class _Phase(Protocol):
    """What is used of `asyncio.Timeout` (3.11+; the stubs for 3.10 have no such name)."""

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc_info: Any) -> Any: ...

    def expired(self) -> bool: ...

    def reschedule(self, when: float | None) -> None: ...

    def when(self) -> float | None: ...


# A watched phase: its scope, its loop and its due time (`time.monotonic()`). A type for
# the checker only: asyncio is not imported here (see above).
_Current = tuple["_Phase | None", "asyncio.AbstractEventLoop", float]


async def _bounded(
    timeout: _Phase, work: Awaitable[T], entered: Callable[[], None] | None = None
) -> T:
    """`await work` under `timeout` (`entered()` once inside it), its expiry told from a
    `TimeoutError` of the work's own."""
    try:
        async with timeout:
            if entered is not None:
                entered()
            result = await work
    except TimeoutError:
        if timeout.expired():
            raise DeadlineExceeded from None
        raise
    if timeout.expired():
        raise DeadlineExceeded
    return result


class WatchedDeadline:
    """`within`, for phases one after another, expired by a thread that watches them
    (`DeadlineWatch`) rather than by a timer of the event loop.

    A timer pending on a loop costs every turn of that loop a look at its timer heap: over
    a replayed case's seventy-odd turns of the loop that is about one percent of the case,
    for a timer that almost never fires. The runner's watchdog looks at every case in
    flight anyway, so it keeps these clocks instead. `on_start` hears each phase's due
    time (`time.monotonic()`) as it starts.

    Phases one after another in one await (a case's start and its turns) share one scope:
    `over(work)` enters it once, and each phase inside is `start(seconds)` … `stop()`,
    which only move the due time, instead of a timeout entered and left for each."""

    def __init__(self, on_start: Callable[[float], None] | None = None) -> None:
        self._on_start = on_start
        # The phase in progress, its loop and its due time, as one value: the watching
        # thread reads it while the loop's thread may be moving on to the next phase (the
        # value is new for each phase, and it is what names the phase).
        self._current: _Current | None = None
        self._expired: _Current | None = None  # the phase last expired
        # `over`'s task and loop; the phase of it whose expiry cancelled the task.
        self._scope: tuple[asyncio.Task[Any], asyncio.AbstractEventLoop] | None = None
        self._fired: _Current | None = None

    async def within(self, seconds: float, work: Awaitable[T]) -> T:
        import asyncio

        if sys.version_info < (3, 11):  # pragma: no cover - Python 3.10 only
            return await _within_310(seconds, work)
        # No expiry of its own: `expire_if_due` gives it one.
        timeout = asyncio.timeout(None)

        def entered() -> None:
            due = time.monotonic() + seconds
            self._current = (timeout, asyncio.get_running_loop(), due)
            if self._on_start is not None:
                self._on_start(due)

        try:
            return await _bounded(timeout, work, entered)
        finally:
            self._current = None

    async def over(self, work: Awaitable[T]) -> T:
        """`await work`, whose phases (`start` … `stop`) are bounded in one scope; outside
        them nothing is. `DeadlineExceeded` when a phase ran out. Python 3.11+: on 3.10
        each phase is a `within` of its own.

        The scope is no `asyncio.timeout` (entered and left once a case, with its checks,
        it cost a replayed case as much as its phases): a phase that runs out has its task
        cancelled (`_cancel`), and that cancellation is told apart here as `timeout` tells
        its own, by the count of cancellations asked of the task."""
        if sys.version_info < (3, 11):  # pragma: no cover - Python 3.10 only
            raise RuntimeError("one scope for phases needs Python 3.11")
        import asyncio

        task = asyncio.current_task()
        assert task is not None, "a scope outside a task"
        asked = task.cancelling()  # cancellations asked before: not the scope's
        self._scope = (task, task.get_loop())
        try:
            result = await work
        except BaseException as exc:
            if self._fired is None:
                raise
            # A phase ran out (the work's answer to its cancellation is over): the
            # cancellation is taken back, and what it ended is the deadline, as with
            # `timeout` (a TimeoutError of the work's own included, once it ran out).
            if task.uncancel() <= asked and isinstance(exc, asyncio.CancelledError):
                raise DeadlineExceeded from None
            if isinstance(exc, TimeoutError):
                raise DeadlineExceeded from None
            raise
        finally:
            fired, self._fired = self._fired, None
            self._scope = self._current = None
        if fired is not None:  # ran out, and the work finished anyway: too late
            task.uncancel()
            raise DeadlineExceeded
        return result

    def start(self, seconds: float, now: float | None = None) -> None:
        """A phase of `over`'s work starts now, due in `seconds` (from `now`, when the
        caller read the clock already)."""
        assert self._scope is not None, "a phase outside `over`"
        due = (time.monotonic() if now is None else now) + seconds
        self._current = (None, self._scope[1], due)
        if self._on_start is not None:
            self._on_start(due)

    def stop(self) -> None:
        """The phase in progress is over: `DeadlineExceeded` if it ran out first (its work
        finished anyway, having swallowed the cancellation); an expiry on its way to the
        loop finds it over and expires nothing (`_cancel`)."""
        current, self._current = self._current, None
        if current is not None and current is self._fired:
            self._fired = None
            if self._scope is not None and sys.version_info >= (3, 11):
                self._scope[0].uncancel()
            raise DeadlineExceeded

    @property
    def due(self) -> float:
        """When the phase in progress ends (`time.monotonic()`); inf: none in progress."""
        current = self._current
        return math.inf if current is None else current[2]

    def expire_if_due(self, now: float) -> float:
        """From the watching thread: expire the phase in progress if `now` is past its due
        time. When the watcher needs to look again: that time (inf: no phase in progress,
        or it is expired already)."""
        current = self._current
        if current is None or current is self._expired:
            return math.inf
        _, loop, due = current
        if now < due:
            return due
        self._expired = current
        # A loop closed meanwhile has nothing left to expire.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._expire, current)
        return math.inf

    def _expire(self, phase: _Current) -> None:
        # On the loop's thread, where the phase may have ended since the watcher looked.
        if self._current is phase:
            timeout, loop, _ = phase
            if timeout is not None:  # a `within` of its own
                timeout.reschedule(loop.time())
            else:  # a phase of `over`: cancelled on the loop's next turn, as `timeout` is
                loop.call_soon(self._cancel, phase)

    def _cancel(self, phase: _Current) -> None:
        if self._current is phase and self._scope is not None:
            self._fired = phase
            self._scope[0].cancel()


class DeadlineWatch:
    """The clock of `WatchedDeadline`s, kept by one watching thread: each `look` expires
    those due and sleeps until the next falls due, or at most `poll`. A phase that starts
    meanwhile and falls due sooner wakes it, as does `wake`."""

    def __init__(self) -> None:
        self._woken = threading.Event()
        self._wake_at = math.inf  # when the sleeping watcher wakes by itself

    def deadline(self) -> WatchedDeadline:
        return WatchedDeadline(self._phase_started)

    def wake(self) -> None:
        self._woken.set()

    def look(self, deadlines: Callable[[], Iterable[WatchedDeadline]], poll: float) -> None:
        """Expire the phases of `deadlines()` that are due, then sleep."""
        now = time.monotonic()
        # Published before the deadlines are listed: a phase starting from here on sees it
        # (and wakes this thread if it falls due sooner); one that started before is listed.
        self._wake_at = now + poll
        due = min((d.expire_if_due(now) for d in deadlines()), default=math.inf)
        self._woken.wait(max(min(poll, due - now), 0.0))
        # A phase that woke it after the wait is seen by the next look's scan.
        self._woken.clear()

    def _phase_started(self, due: float) -> None:
        if due < self._wake_at:
            self._woken.set()


async def _within_310(seconds: float, work: Awaitable[T]) -> T:  # pragma: no cover
    import asyncio

    task = asyncio.current_task()
    assert task is not None
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        result = await work
    except asyncio.CancelledError:
        if not expired:
            raise
        raise DeadlineExceeded from None
    finally:
        timer.cancel()
    if expired:
        raise DeadlineExceeded
    return result
