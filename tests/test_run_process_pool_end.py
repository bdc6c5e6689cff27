"""The pool's end: every worker is told to stop as the last cases go out (its word of the
CPU it used comes with its reports, and it ends beside the last cases, not after a round
trip), and cases a worker's death puts back after that still run in a worker."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import FAITHFUL_LOOP, fixture, text_step, turn, write_module, write_suite

from harness import run_suite
from harness.run import process_pool
from harness.run.pool_workers import Worker

# A faithful loop that says which process ran each case (a line in ZC_PIDS), naps as long
# as "nap N" says, and ends its process half a second into "exit later".
PID_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import os


class Telling(Session):
    async def run_turn(self, user_input):
        with open(os.environ["ZC_PIDS"], "a") as pids:
            pids.write(f"{user_input}:{os.getpid()}\\n")
        if "nap" in user_input:
            await asyncio.sleep(float(user_input.split()[-1]))
        if "exit later" in user_input:
            await asyncio.sleep(0.5)
            os._exit(3)
        return await super().run_turn(user_input)


def telling(ctx):
    return Telling(ctx)
"""
)


def _suite(tmp_path: Path, inputs: list[str]) -> Path:
    cases: dict[str, dict[str, Any] | str] = {
        f"{n}.json": fixture(
            f"case-{n}", [turn(text, text_step("hi there"))], {"response_contains": ["hi"]}
        )
        for n, text in enumerate(inputs)
    }
    return write_suite(tmp_path / "suite", cases)


def _agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    pids = tmp_path / "pids.txt"
    monkeypatch.setenv("ZC_PIDS", str(pids))
    return f"{write_module(tmp_path, PID_LOOP)}:telling", pids


def test_every_worker_is_told_to_stop_before_the_pool_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, _ = _agent(tmp_path, monkeypatch)
    told: list[list[bool]] = []
    real_stop = process_pool.stop

    def stop(workers: list[Worker], wait: float) -> float:
        told.append([worker.told for worker in workers])
        return real_stop(workers, wait)

    monkeypatch.setattr(process_pool, "stop", stop)
    before = process_pool.workers_cpu()
    report = run_suite(_suite(tmp_path, [f"Say hi {n}" for n in range(12)]), agent=agent, jobs=2)
    assert all(case.passed for case in report.cases)
    assert told and all(all(each) for each in told)
    assert process_pool.workers_cpu() > before  # what they said came in with their reports


@pytest.mark.parametrize("napping", [False, True])
def test_cases_a_death_puts_back_after_the_stop_run_in_a_fresh_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, napping: bool
) -> None:
    agent, pids = _agent(tmp_path, monkeypatch)
    # The first worker holds the case that ends it, and the next behind it, for half a
    # second; every worker is told to stop as that one goes out. Meanwhile the other runs
    # the rest, or naps through its one case: then it could take one more, and must not.
    inputs = ["exit later", "Say hi 1", "Say hi 2", "Say hi 3", "Say hi 4", "Say hi 5"]
    if napping:
        inputs = ["exit later", "nap 1.5", "Say hi 2"]
    report = run_suite(_suite(tmp_path, inputs), agent=agent, jobs=2)
    by_id = {case.id: case for case in report.cases}
    assert by_id["case-0"].error == "the worker running the case died (exit code 3)"
    for n in range(1, len(inputs)):
        assert by_id[f"case-{n}"].passed, by_id[f"case-{n}"].first_failure()
    ran = dict(line.split(":") for line in pids.read_text().splitlines())
    assert set(ran) == set(inputs)
    assert str(os.getpid()) not in ran.values()  # never in this process
    assert ran["Say hi 2"] != ran["exit later"]  # a fresh worker took it
