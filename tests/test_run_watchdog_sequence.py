"""`harness.run.watchdog` with one job: the cases run one after another in one task, and a
case that leaves that task other than it found it (a context variable set, a cancellation
of its own, a callback queued, a timer, task or thread that could cancel it later) has the
next one start afresh, so no case sees anything of another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FAITHFUL_LOOP, fixture, text_step, turn, write_module, write_suite

from harness import run_suite

# Each case says in its answer what it found (the task it runs in, a variable another case
# set), and its input says what it leaves behind.
LEAVING_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import contextvars
import os

SEEN = contextvars.ContextVar("seen", default="nothing")
POOL = None


class Leaving(Session):
    async def run_turn(self, user_input):
        task = asyncio.current_task()
        with open(os.environ["ZEROCLAW_TEST_TASKS"], "a") as tasks:
            tasks.write(f"{id(task)}\\n")
        found = SEEN.get()
        if "variable" in user_input:
            SEEN.set(user_input)
        elif "cancel" in user_input:
            task.cancel()  # its own task, and returns before the cancellation lands
        elif "timer" in user_input:
            asyncio.get_running_loop().call_later(0.3, task.cancel)
        elif "spawn" in user_input:
            async def later():
                await asyncio.sleep(0.3)
                task.cancel()

            self.left = asyncio.get_running_loop().create_task(later())
        elif "soon" in user_input:
            asyncio.get_running_loop().call_soon(task.cancel)  # queued to run next
        elif "thread" in user_input:
            import threading

            loop = asyncio.get_running_loop()
            threading.Timer(0.2, lambda: loop.call_soon_threadsafe(task.cancel)).start()
        elif "pool" in user_input:
            import concurrent.futures
            import time

            global POOL
            POOL = POOL or concurrent.futures.ThreadPoolExecutor(1)  # its thread stays
            loop = asyncio.get_running_loop()
            POOL.submit(lambda: (time.sleep(0.2), loop.call_soon_threadsafe(task.cancel)))
        else:
            await asyncio.sleep(0.6)  # a cancellation left for this task would land here
        await super().run_turn(user_input)
        return f"found {found}"


def leaving(ctx):
    return Leaving(ctx)
"""
)


def says(name: str, user_input: str) -> dict[str, Any]:
    return fixture(
        name, [turn(user_input, text_step("ok"))], {"response_contains": ["found nothing"]}
    )


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inputs: list[str]) -> list[str]:
    """The suite of one case per input, run with one job; the task ids the cases ran in."""
    monkeypatch.syspath_prepend(str(tmp_path))
    tasks = tmp_path / "tasks.txt"
    monkeypatch.setenv("ZEROCLAW_TEST_TASKS", str(tasks))
    spec = f"{write_module(tmp_path, LEAVING_LOOP)}:leaving"
    cases = {f"{n}.json": says(f"case-{n}", said) for n, said in enumerate(inputs)}
    report = run_suite(write_suite(tmp_path / "suite", cases), agent=spec, jobs=1)
    for case in report.cases:
        assert case.passed, (case.id, case.error, case.first_failure())
    return tasks.read_text().splitlines()


def test_cases_that_leave_nothing_run_in_one_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = run(tmp_path, monkeypatch, ["wait", "wait", "wait"])
    assert len(tasks) == 3 and len(set(tasks)) == 1


@pytest.mark.parametrize("left", ["variable", "cancel", "timer", "spawn", "soon", "thread"])
def test_what_a_case_leaves_in_its_task_no_later_case_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, left: str
) -> None:
    # The case after the one leaving something waits long enough for a timer or task left
    # behind to cancel it, and says which variable it found: it must pass all the same.
    tasks = run(tmp_path, monkeypatch, ["wait", f"{left} it", "wait", "wait"])
    assert tasks[0] == tasks[1]  # the first left nothing: the second ran in its task
    assert tasks[2] != tasks[1]  # the second left something: the third ran afresh
    assert tasks[3] == tasks[2]


def test_while_a_thread_a_case_started_is_alive_every_case_starts_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first case leaves a pool's thread alive; the second, in a task of its own, hands
    # that thread its task to cancel later: the third must not be in that task.
    tasks = run(tmp_path, monkeypatch, ["pool it", "pool it", "wait", "wait"])
    assert len(set(tasks[:3])) == 3
