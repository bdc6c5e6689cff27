"""The one deadline primitive: `await within(seconds, coro)`.

It tells its own expiry (`DeadlineExceeded`) from a `TimeoutError` the awaited code raises
itself, and it bounds the whole await, not one phase of it. On Python 3.11+ it is asyncio's
own `timeout`; on 3.10 a timer cancels the awaiting task, which is what `timeout` does.
A coroutine that ignores cancellation and blocks its thread is beyond any in-loop
deadline: that is the runner's watchdog's job.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

from harness.errors import HarnessError

T = TypeVar("T")


class DeadlineExceeded(HarnessError):
    """The deadline passed before the awaited work finished."""


async def within(seconds: float, work: Awaitable[T]) -> T:
    """`await work`, or `DeadlineExceeded` once `seconds` pass.

    Work that swallows the cancellation and finishes anyway is still too late: the result
    is dropped and the deadline reported."""
    if sys.version_info >= (3, 11):
        timeout = asyncio.timeout(seconds)
        try:
            async with timeout:
                result = await work
        except TimeoutError:
            if timeout.expired():
                raise DeadlineExceeded from None
            raise
        if timeout.expired():
            raise DeadlineExceeded
        return result
    return await _within_310(seconds, work)  # pragma: no cover - Python 3.10 only


async def _within_310(seconds: float, work: Awaitable[T]) -> T:  # pragma: no cover
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
