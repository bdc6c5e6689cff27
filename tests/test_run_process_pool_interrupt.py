"""`harness.run.process_pool` interrupted: a SIGINT to `zeroclaw eval run --jobs 2` while
each worker is in the middle of a batch, its plain passes so far spooled and not yet sent
(`pool_worker._Sender`), still tells every case that finished (the table on stdout), those
passes read from the workers' spools included (`WorkerPool._take_all`, `Spools.unsent`),
with the interruption's exit code and message, and leaves the previous report files (JSON,
JUnit, the last run's) as they were, as any interrupted run does."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FAITHFUL_LOOP,
    fixture,
    project,
    start_reported_run,
    text_step,
    turn,
    write_module,
)

from harness.reporters.last_run import LAST_FOLDER, LAST_NAME

pytestmark = pytest.mark.timeout(120)

CASES = 40

# A faithful loop that writes each case's input, with its process, to ZC_LOG as its turn
# begins; with ZC_MARKERS set, a process's ZC_BLOCK_AT-th case says so there and blocks.
BLOCKING_LOOP = (
    FAITHFUL_LOOP
    + """
import os, pathlib, time

_started = 0


class Blocking(Session):
    async def run_turn(self, user_input):
        global _started
        _started += 1
        with open(os.environ["ZC_LOG"], "a") as log:
            log.write(f"{os.getpid()} {user_input}\\n")
        markers = os.environ.get("ZC_MARKERS")
        if markers and _started == int(os.environ["ZC_BLOCK_AT"]):
            pathlib.Path(markers, str(os.getpid())).write_text("blocked")
            time.sleep(600)
        return await super().run_turn(user_input)


def blocking(ctx):
    return Blocking(ctx)
"""
)


def _says_hi(n: int) -> dict[str, Any]:
    return fixture(
        f"case-{n:02}", [turn(f"Say hi {n:02}", text_step("hi"))], {"response_contains": ["hi"]}
    )


def _eval_run(
    root: Path, agent: str, log: Path, markers: Path | None = None, block_at: int = 0
) -> subprocess.Popen[str]:
    environment = {"ZC_LOG": str(log)}
    if markers is not None:
        environment.update(ZC_MARKERS=str(markers), ZC_BLOCK_AT=str(block_at))
    return start_reported_run(root, agent, "--jobs", "2", env=environment)


def _finished(log: Path, block_at: int) -> set[str]:
    """The inputs of the cases each blocked process ran before the one it blocks in."""
    by_process: dict[str, list[str]] = {}
    for line in log.read_text("utf-8").splitlines():
        pid, user_input = line.split(" ", 1)
        by_process.setdefault(pid, []).append(user_input)
    assert len(by_process) == 2, by_process  # both workers, each blocked in its batch
    return {text for inputs in by_process.values() for text in inputs[: block_at - 1]}


# The case of a worker's own that blocks it. The 3rd is in its first batch (40 cases over
# two workers go out five at a time at first), so the passes before it are done and held
# in its spool: a run of them goes once the batch is done, or with a pass a tenth of a
# second after the first, and neither comes while the worker blocks. By the 8th it has
# sent a batch's passes as a run, and holds the rest of the next one's.
@pytest.mark.parametrize("block_at", [3, 8], ids=["all-unsent", "sent-then-unsent"])
def test_an_interrupted_run_tells_every_case_a_worker_spooled_and_never_sent(
    tmp_path: Path, block_at: int
) -> None:
    root = project(tmp_path, {f"{n:02}.json": _says_hi(n) for n in range(CASES)})
    agent = f"{write_module(root, BLOCKING_LOOP)}:blocking"
    reports = root / "reports"
    reports.mkdir()
    # The previous run, whole: what the interrupted one must leave as it is.
    whole = _eval_run(root, agent, tmp_path / "whole.log")
    out, err = whole.communicate(timeout=90)
    assert whole.returncode == 0, err
    previous = {
        path: path.read_bytes()
        for path in [reports / "junit.xml", reports / "report.json", root / LAST_FOLDER / LAST_NAME]
    }

    log, markers = tmp_path / "interrupted.log", tmp_path / "markers"
    markers.mkdir()
    process = _eval_run(root, agent, log, markers, block_at)
    try:
        deadline = time.monotonic() + 60
        while len(list(markers.iterdir())) < 2:  # each worker blocked in a case
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the workers never both blocked"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert (
        "zeroclaw eval: interrupted by SIGINT; not written (any previous file left as it "
        "was): reports/junit.xml, reports/report.json"
    ) in err
    # Every case that finished, each a pass, and none other: those of each worker's batch
    # running as the signal came were in its spool, never sent.
    finished = _finished(log, block_at)
    assert len(finished) == 2 * (block_at - 1)
    told = re.findall(r"^  \[ *\d+/40\] ✓ (case-\d+) ", out, re.M)
    assert sorted(told) == sorted(f"case-{text.split()[-1]}" for text in finished), out
    assert "✗" not in out
    for path, data in previous.items():
        assert path.read_bytes() == data, path
    document = json.loads(previous[reports / "report.json"])
    assert document["totals"]["passed"] == CASES
