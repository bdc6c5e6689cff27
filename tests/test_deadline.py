"""`within`: the one deadline, telling its own expiry from the awaited code's TimeoutError."""

from __future__ import annotations

import asyncio

import pytest

from harness.deadline import DeadlineExceeded, within


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_work_that_finishes_in_time_returns_its_result() -> None:
    async def quick() -> str:
        await asyncio.sleep(0)
        return "done"

    assert run(within(5, quick())) == "done"


def test_work_that_outlives_the_deadline_is_cancelled_and_reported() -> None:
    cancelled = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(DeadlineExceeded):
        run(within(0.05, slow()))
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
