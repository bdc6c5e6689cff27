"""`harness.event_loop`: the loop cases run on never waits for threads or tasks an agent
left behind, and bounded calls give up on code that blocks."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from harness import event_loop
from harness.event_loop import CallFailed, CallTimedOut, call_within


def test_the_loop_ends_while_a_to_thread_call_still_blocks() -> None:
    release = threading.Event()

    async def main() -> str:
        try:
            await asyncio.wait_for(asyncio.to_thread(release.wait, 60), 0.2)
        except TimeoutError:
            return "timed out"
        return "finished"

    started = time.monotonic()
    assert event_loop.run(main()) == "timed out"
    assert time.monotonic() - started < 5  # asyncio.run would wait the whole minute
    blocked = [t for t in threading.enumerate() if t.name == "zeroclaw-eval-worker"]
    assert blocked and all(t.daemon for t in blocked)  # nothing for the exit to wait on
    release.set()


def test_tasks_left_behind_are_cancelled_when_the_work_is_done() -> None:
    seen: list[str] = []

    async def linger() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> int:
        asyncio.get_running_loop().create_task(linger())
        await asyncio.sleep(0)
        return 7

    assert event_loop.run(main()) == 7
    assert seen == ["cancelled"]


def test_a_task_ignoring_cancellation_cannot_hold_the_loop_open() -> None:
    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                continue

    async def main() -> None:
        asyncio.get_running_loop().create_task(stubborn())
        await asyncio.sleep(0)

    started = time.monotonic()
    event_loop.run(main())
    assert time.monotonic() - started < event_loop.CLEANUP_SECS + 3


def test_call_within_gives_up_on_a_call_that_blocks() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(CallTimedOut):
        call_within(0.2, lambda: release.wait(60))
    assert time.monotonic() - started < 5
    release.set()


def test_call_within_returns_the_result_and_keeps_the_calls_own_errors() -> None:
    assert call_within(5, lambda: 41 + 1) == 42

    def own_timeout() -> None:
        raise TimeoutError("the user's own timeout")

    with pytest.raises(CallFailed) as caught:
        call_within(5, own_timeout)
    assert isinstance(caught.value.original, TimeoutError)  # its own, not a time-out of ours
