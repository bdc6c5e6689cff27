"""`harness.runtime.event_loop`: the loop cases run on never waits for threads or tasks an agent
left behind, and bounded calls give up on code that blocks."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest

from harness.runtime import event_loop
from harness.runtime.event_loop import CallFailed, CallTimedOut, call_within


def test_the_loop_ends_while_a_to_thread_call_still_blocks() -> None:
    release = threading.Event()

    async def main() -> str:
        try:
            await asyncio.wait_for(asyncio.to_thread(release.wait, 60), 0.2)
        except asyncio.TimeoutError:  # not yet the built-in TimeoutError on 3.10
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


def _on_a_thread(work: object) -> object:
    # Cases run off the main thread; `run` is called there the way the watchdog calls it.
    out: list[object] = []

    def main() -> None:
        try:
            out.append(event_loop.run(work))  # type: ignore[arg-type]
        except BaseException as exc:  # what escaped the loop, for the test to see
            out.append(exc)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    return out[0]


@pytest.mark.parametrize("raised", [SystemExit(0), KeyboardInterrupt("by agent code")])
def test_a_task_s_system_exit_reaches_its_awaiter_and_the_loop_goes_on(
    raised: BaseException,
) -> None:
    async def tool() -> None:
        raise raised

    async def linger() -> None:
        await asyncio.sleep(60)

    async def main() -> str:
        loop = asyncio.get_running_loop()
        left = loop.create_task(linger())  # left behind, and cancelled as ever
        try:
            await asyncio.gather(loop.create_task(tool()))
        except (SystemExit, KeyboardInterrupt) as exc:
            seen = f"awaiter saw {type(exc).__name__}"
        loop.call_soon(lambda: sys.exit(3))  # a callback's is dropped with the callback
        await asyncio.sleep(0.01)
        return seen + (", loop went on" if not left.done() else ", the left task ended early")

    assert _on_a_thread(main()) == f"awaiter saw {type(raised).__name__}, loop went on"


def test_a_left_task_raising_system_exit_when_cancelled_does_not_escape() -> None:
    async def stubborn_exit() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            sys.exit(0)

    async def main() -> int:
        asyncio.get_running_loop().create_task(stubborn_exit())
        await asyncio.sleep(0)
        return 5

    assert _on_a_thread(main()) == 5


def test_on_the_main_thread_a_keyboard_interrupt_still_stops_the_loop() -> None:
    # There it is the user's Ctrl-C, which must stop the run.
    async def main() -> str:
        async def pressed() -> None:
            raise KeyboardInterrupt

        asyncio.get_running_loop().create_task(pressed())
        await asyncio.sleep(1)
        return "went on"

    with pytest.raises(KeyboardInterrupt):
        event_loop.run(main())


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
