"""`within` and `WatchedDeadline`: deadlines telling their own expiry from the awaited code's
TimeoutError; a watched one expired by its watching thread, with no timer on the loop."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from typing import Any

import pytest
from conftest import WATCHED_ONLY

from harness.runtime.deadline import DeadlineExceeded, DeadlineWatch, WatchedDeadline, within


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_work_that_finishes_in_time_returns_its_result() -> None:
    async def quick() -> str:
        await asyncio.sleep(0)
        return "done"

    assert run(within(5, quick())) == "done"


async def _slow(cancelled: list[bool]) -> None:
    """Work that would take 30 s, noting in `cancelled` that it was cancelled."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        cancelled.append(True)
        raise


def test_work_that_outlives_the_deadline_is_cancelled_and_reported() -> None:
    cancelled: list[bool] = []
    with pytest.raises(DeadlineExceeded):
        run(within(0.05, _slow(cancelled)))
    assert cancelled == [True]


def test_a_timeout_error_the_work_raises_itself_is_not_the_deadline() -> None:
    async def raises() -> None:
        raise TimeoutError("the agent's own")

    with pytest.raises(TimeoutError, match="the agent's own") as caught:
        run(within(5, raises()))
    assert not isinstance(caught.value, DeadlineExceeded)


def test_work_that_swallows_the_cancellation_is_still_too_late() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "finished anyway"
        return "never"

    with pytest.raises(DeadlineExceeded):
        run(within(0.05, stubborn()))


def test_nested_deadlines_each_know_their_own() -> None:
    async def inner_expires() -> str:
        try:
            await within(0.05, asyncio.sleep(30))
        except DeadlineExceeded:
            return "inner"
        return "no"

    assert run(within(5, inner_expires())) == "inner"

    async def outer_expires() -> None:
        await within(30, asyncio.sleep(30))

    with pytest.raises(DeadlineExceeded):
        run(within(0.05, outer_expires()))


def test_after_a_deadline_the_task_can_await_again() -> None:
    async def twice() -> str:
        with pytest.raises(DeadlineExceeded):
            await within(0.02, asyncio.sleep(30))
        await asyncio.sleep(0.01)  # no cancellation left pending on this task
        return await within(5, asyncio.sleep(0, result="again"))

    assert run(twice()) == "again"


def _watched(seconds: float, work: Any, watch: DeadlineWatch, poll: float = 5.0) -> Any:
    """`work` under a `WatchedDeadline` of `watch`, with a thread looking every `poll`."""
    stop = threading.Event()

    def watcher(deadline: WatchedDeadline) -> None:
        while not stop.is_set():
            watch.look(lambda: [deadline], poll)

    async def main() -> Any:
        deadline = watch.deadline()
        thread = threading.Thread(target=watcher, args=(deadline,), daemon=True)
        thread.start()
        try:
            return await deadline.within(seconds, work)
        finally:
            stop.set()
            watch.wake()

    return run(main())


@WATCHED_ONLY
def test_a_watched_deadline_expires_when_the_watcher_finds_it_due() -> None:
    cancelled: list[bool] = []
    with pytest.raises(DeadlineExceeded):
        _watched(0.05, _slow(cancelled), DeadlineWatch(), poll=0.01)
    assert cancelled == [True]


@WATCHED_ONLY
def test_a_phase_due_before_the_watcher_would_wake_wakes_it() -> None:
    # The watcher sleeps up to 30 s between looks; a phase due in 50 ms must not wait
    # for that.
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        _watched(0.05, asyncio.sleep(60), DeadlineWatch(), poll=30.0)
    assert time.monotonic() - started < 10


@WATCHED_ONLY
def test_a_watched_deadline_puts_no_timer_on_the_loop() -> None:
    # A pending timer makes every turn of the loop look at the timer heap: the point of
    # keeping the clock on the watching thread.
    timers: list[object] = []

    async def main() -> str:
        loop = asyncio.get_running_loop()
        real = loop.call_at

        def call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
            timers.append(callback)
            return real(when, callback, *args, **kwargs)

        loop.call_at = call_at  # type: ignore[method-assign]
        return await watch.deadline().within(5, asyncio.sleep(0, result="done"))

    watch = DeadlineWatch()
    assert run(main()) == "done"
    assert timers == []


def test_a_watched_deadline_tells_the_works_own_timeout_error() -> None:
    async def raises() -> None:
        raise TimeoutError("the agent's own")

    with pytest.raises(TimeoutError, match="the agent's own") as caught:
        _watched(5, raises(), DeadlineWatch(), poll=0.01)
    assert not isinstance(caught.value, DeadlineExceeded)


@WATCHED_ONLY
def test_expire_if_due_answers_when_to_look_again() -> None:
    async def main() -> None:
        deadline = DeadlineWatch().deadline()
        seen: list[float] = []

        async def work() -> None:
            due = deadline.due
            seen.append(deadline.expire_if_due(due - 1))  # not due yet: when it will be
            seen.append(due)
            assert deadline.expire_if_due(due) == math.inf  # expired now
            assert deadline.expire_if_due(due + 1) == math.inf  # and only once
            await asyncio.sleep(30)

        with pytest.raises(DeadlineExceeded):
            await deadline.within(10, work())
        assert seen[0] == seen[1]
        assert deadline.due == math.inf and deadline.expire_if_due(math.inf) == math.inf

    run(main())


@WATCHED_ONLY
def test_an_expiry_that_arrives_after_its_phase_ended_expires_nothing() -> None:
    async def main() -> str:
        deadline = DeadlineWatch().deadline()

        async def quick() -> str:
            # The watcher finds the phase due; its expiry lands on the loop only after the
            # phase has ended and the next one begun.
            assert deadline.expire_if_due(deadline.due) == math.inf
            return "first"

        assert await deadline.within(10, quick()) == "first"
        return await deadline.within(10, asyncio.sleep(0.05, result="second"))

    assert run(main()) == "second"


# --- phases one after another in one scope (`over`, `start`, `stop`) --------------------


async def _phase(deadline: WatchedDeadline, seconds: float, work: Any) -> Any:
    deadline.start(seconds)
    result = await work
    deadline.stop()
    return result


@WATCHED_ONLY
def test_phases_in_one_scope_each_end_in_time_and_only_they_are_bounded() -> None:
    async def main() -> list[Any]:
        deadline = DeadlineWatch().deadline()
        seen: list[Any] = []

        async def phases() -> str:
            seen.append(await _phase(deadline, 10, asyncio.sleep(0, result="first")))
            seen.append(deadline.due)  # between phases nothing is due
            seen.append(await _phase(deadline, 10, asyncio.sleep(0, result="second")))
            return "done"

        seen.append(await deadline.over(phases()))
        return seen

    assert run(main()) == ["first", math.inf, "second", "done"]


@WATCHED_ONLY
def test_a_phase_of_a_scope_that_runs_out_is_the_deadline() -> None:
    cancelled: list[bool] = []

    async def main() -> None:
        deadline = DeadlineWatch().deadline()

        async def phases() -> None:
            await _phase(deadline, 10, asyncio.sleep(0))

            async def expired() -> None:
                deadline.expire_if_due(math.inf)
                await _slow(cancelled)

            await _phase(deadline, 10, expired())

        await deadline.over(phases())

    with pytest.raises(DeadlineExceeded):
        run(main())
    assert cancelled == [True]


@WATCHED_ONLY
def test_a_phase_that_swallows_its_expiry_and_finishes_is_still_too_late() -> None:
    async def main() -> None:
        deadline = DeadlineWatch().deadline()

        async def stubborn() -> str:
            deadline.expire_if_due(math.inf)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(30)
            return "late"

        async def phases() -> None:
            await _phase(deadline, 10, stubborn())
            raise AssertionError("the next phase never starts")

        await deadline.over(phases())

    with pytest.raises(DeadlineExceeded):
        run(main())


@WATCHED_ONLY
def test_an_expiry_of_a_scoped_phase_landing_after_it_ended_expires_nothing() -> None:
    async def main() -> str:
        deadline = DeadlineWatch().deadline()

        async def quick() -> str:
            # Found due by the watcher; its expiry reaches the loop once the phase is over.
            assert deadline.expire_if_due(deadline.due) == math.inf
            return "first"

        async def expired_then_finished() -> str:
            # Expired on the loop (its cancellation not yet made) as the phase ends.
            deadline.expire_if_due(math.inf)
            deadline._expire(deadline._current)  # type: ignore[arg-type]
            return "second"

        async def phases() -> str:
            assert await _phase(deadline, 10, quick()) == "first"
            assert await _phase(deadline, 10, expired_then_finished()) == "second"
            return await _phase(deadline, 10, asyncio.sleep(0.05, result="third"))

        return await deadline.over(phases())

    assert run(main()) == "third"


def test_a_scope_tells_a_phases_own_timeout_error() -> None:
    async def main() -> None:
        deadline = DeadlineWatch().deadline()

        async def raises() -> None:
            raise TimeoutError("the agent's own")

        async def phases() -> None:
            await _phase(deadline, 10, raises())

        await deadline.over(phases())

    with pytest.raises(TimeoutError, match="the agent's own") as caught:
        run(main())
    assert not isinstance(caught.value, DeadlineExceeded)


@WATCHED_ONLY
def test_a_scope_whose_phase_ran_out_leaves_its_task_with_no_cancellation_asked() -> None:
    # The task goes on (the next case of a run may run in it): the cancellation that ended
    # the phase is taken back, whichever way the phase ended.
    async def main() -> list[int]:
        deadline = DeadlineWatch().deadline()
        task = asyncio.current_task()
        assert task is not None
        left = []

        async def stubborn() -> str:
            deadline.expire_if_due(math.inf)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(30)
            return "late"

        async def cancelled() -> None:
            deadline.expire_if_due(math.inf)
            await asyncio.sleep(30)

        for work in (stubborn, cancelled):
            with pytest.raises(DeadlineExceeded):
                await deadline.over(_phase(deadline, 10, work()))
            left.append(task.cancelling())
        await asyncio.sleep(0)  # no cancellation left to land here
        return left

    assert run(main()) == [0, 0]


@WATCHED_ONLY
def test_a_cancellation_from_outside_a_scope_is_not_the_deadline() -> None:
    # The task is cancelled by someone else as its phase runs out: the cancellation goes
    # on as it is, as `asyncio.timeout` lets another's cancellation through.
    async def main() -> None:
        deadline = DeadlineWatch().deadline()
        task = asyncio.current_task()
        assert task is not None

        async def both() -> None:
            deadline.expire_if_due(math.inf)
            task.cancel()
            await asyncio.sleep(30)

        await deadline.over(_phase(deadline, 10, both()))

    with pytest.raises(asyncio.CancelledError):
        run(main())


@WATCHED_ONLY
def test_a_timeout_error_a_phase_raises_once_it_ran_out_is_the_deadline() -> None:
    # As `asyncio.timeout` has it: the work answered the cancellation with its own error.
    async def main() -> None:
        deadline = DeadlineWatch().deadline()

        async def converts() -> None:
            deadline.expire_if_due(math.inf)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                raise TimeoutError("the agent's own") from None

        await deadline.over(_phase(deadline, 10, converts()))

    with pytest.raises(DeadlineExceeded):
        run(main())
