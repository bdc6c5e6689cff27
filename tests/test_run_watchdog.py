"""`harness.run.watchdog`: cases run up to `jobs` at once, reported as they finish and kept in
fixture order; a blocked run is abandoned without taking the others with it; `maxfail`
stops the run early and the cases never started are reported as not run; a run in flight
when its suite is interrupted never moves the process to its directory afterwards."""

from __future__ import annotations

import importlib
import itertools
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FAITHFUL_LOOP,
    Cli,
    echo_fixture,
    failing_fixture,
    fixture,
    own_loop_case_run,
    project,
    text_step,
    turn,
    write_module,
    write_suite,
)

from harness import run_suite
from harness.agents.registry import resolve_within
from harness.verdict.reports import CaseReport

# A faithful loop whose turns take a while without blocking the thread (a slow provider),
# or block it outright when the input says so.
SLOW_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import itertools
import time


class Slow(Session):
    async def run_turn(self, user_input):
        if "block" in user_input:
            time.sleep(30)
        await asyncio.sleep(0.5)
        return await super().run_turn(user_input)


def slow(ctx):
    return Slow(ctx)
"""
)


def says_hi(name: str, user_input: str = "Say hi") -> dict[str, Any]:
    return fixture(name, [turn(user_input, text_step("hi there"))], {"response_contains": ["hi"]})


def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{write_module(tmp_path, SLOW_LOOP)}:slow"


def test_jobs_run_cases_at_once_and_keep_fixture_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = agent(tmp_path, monkeypatch)
    names = [f"case-{n}" for n in range(8)]
    suite = write_suite(tmp_path / "suite", {f"{n}.json": says_hi(n) for n in names})
    finished: list[str] = []
    started = time.monotonic()
    report = run_suite(suite, agent=spec, jobs=8, on_case=lambda c: finished.append(c.id))
    elapsed = time.monotonic() - started
    assert [c.id for c in report.cases] == names  # fixture order, whatever finished first
    assert sorted(finished) == names
    assert all(c.passed for c in report.cases), [c.first_failure() for c in report.cases]
    assert elapsed < 8 * 0.5 / 2, elapsed  # one after another would take 4 s


def test_a_blocked_run_is_abandoned_and_the_others_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = agent(tmp_path, monkeypatch)
    cases = {f"{n}.json": says_hi(f"case-{n}") for n in range(4)}
    cases["1.json"] = says_hi("case-1", "block now")
    suite = write_suite(tmp_path / "suite", cases)
    report = run_suite(suite, agent=spec, jobs=3, case_timeout=1.5)
    by_id = {c.id: c for c in report.cases}
    error = by_id["case-1"].error
    assert error is not None and "blocked its thread and was abandoned" in error
    for name in ("case-0", "case-2", "case-3"):
        assert by_id[name].passed, by_id[name].first_failure()
    assert [c.id for c in report.cases] == [f"case-{n}" for n in range(4)]


def test_maxfail_stops_starting_cases_and_the_rest_are_not_run(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "suite",
        {
            "a.json": echo_fixture("passes"),
            "b.json": failing_fixture("fails"),
            "c.json": echo_fixture("later", "x"),
            "d.json": echo_fixture("last", "y"),
        },
    )
    seen: list[CaseReport] = []
    report = run_suite(suite, maxfail=1, on_case=seen.append)
    outcomes = [(c.id, c.passed, c.not_run is not None) for c in report.cases]
    assert outcomes == [
        ("passes", True, False),
        ("fails", False, False),
        ("later", False, True),
        ("last", False, True),
    ]
    assert report.totals.not_run == 2 and report.totals.failed == 1
    assert report.cases[2].first_failure() == (
        "not run: the run stopped after 1 failing case(s) (--maxfail)"
    )
    assert int(report.exit_code()) == 1
    assert [c.id for c in seen] == ["passes", "fails", "later", "last"]


@pytest.mark.parametrize("blocked", [0, 1])
def test_maxfail_with_a_blocked_case_on_one_loop_reports_what_a_serial_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blocked: int
) -> None:
    # The blocked case's loop is abandoned with the other case in flight on it: that one
    # is begun again on the next loop (the run is stopping by then), and a not-run case
    # is no failure of the count.
    adapter, _ = resolve_within(agent(tmp_path, monkeypatch), 1.0)
    adapter.unsendable = threading.Lock()  # type: ignore[attr-defined]  # stays on one loop
    cases = {f"{n}.json": says_hi(f"case-{n}") for n in range(3)}
    cases[f"{blocked}.json"] = says_hi(f"case-{blocked}", "block now")
    suite = write_suite(tmp_path / "suite", cases)

    def outcomes(jobs: int) -> list[tuple[str, bool, bool, bool]]:
        report = run_suite(suite, agent=adapter, jobs=jobs, maxfail=1, case_timeout=1.0)
        return [(c.id, c.passed, c.error is not None, c.not_run is not None) for c in report.cases]

    expected = [(f"case-{n}", n < blocked, n == blocked, n > blocked) for n in range(3)]
    assert outcomes(2) == outcomes(1) == expected


def test_a_capability_suite_stopped_early_fails_its_gate(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "capability",
        {"a.json": failing_fixture("fails"), "b.json": echo_fixture("never")},
    )
    report = run_suite(suite, maxfail=1, kind="capability")
    assert report.cases[1].not_run is not None
    assert int(report.exit_code()) == 1  # a case the run never reached measured nothing


def test_exitfirst_on_the_command_line(run_cli: Cli, tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"a.json": failing_fixture("fails"), "b.json": echo_fixture("never")},
    )
    result = run_cli("eval", "run", "-x", "--format", "json", cwd=root)
    assert result.returncode == 1
    import json

    document = json.loads(result.stdout)
    assert document["totals"]["not_run"] == 1
    assert document["cases"][1]["not_run"].endswith("(--maxfail)")


def test_jobs_on_the_command_line_and_in_the_configuration(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {f"{n}.json": echo_fixture(f"e{n}") for n in range(3)})
    assert run_cli("eval", "run", "--jobs", "3", cwd=root).returncode == 0
    bad = run_cli("eval", "run", "--jobs", "0", cwd=root)
    assert bad.returncode == 2 and "must be at least 1" in bad.stderr
    # The configuration's bound, on the command line too.
    huge = run_cli("eval", "run", "--jobs", "1025", cwd=root)
    assert huge.returncode == 2 and "must be at most 1024: 1025" in huge.stderr
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "jobs = 2\n", encoding="utf-8")
    assert run_cli("eval", "run", cwd=root).returncode == 0
    pyproject.write_text(pyproject.read_text().replace("jobs = 2", "jobs = 0"), encoding="utf-8")
    refused = run_cli("eval", "run", cwd=root)
    assert refused.returncode == 1 and "jobs" in refused.stderr


def test_repeat_in_replay_is_a_usage_error(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("e")})
    result = run_cli("eval", "run", "--repeat", "3", cwd=root)
    assert result.returncode == 2
    assert "--repeat applies to live mode only" in result.stderr


LATE_BLOCKER = (
    FAITHFUL_LOOP
    + """
import asyncio
import itertools
import time


class Late(Session):
    async def run_turn(self, user_input):
        if "block" in user_input:
            await asyncio.sleep(0.2)  # starts after the healthy case, then holds the thread
            time.sleep(30)
        else:
            await asyncio.sleep(1.0)
        return await super().run_turn(user_input)


def late(ctx):
    return Late(ctx)
"""
)


def test_the_run_blocking_the_thread_is_abandoned_not_the_one_it_keeps_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{write_module(tmp_path, LATE_BLOCKER)}:late"
    suite = write_suite(
        tmp_path / "suite",
        {"0.json": says_hi("healthy"), "1.json": says_hi("blocker", "block now")},
    )
    report = run_suite(suite, agent=spec, jobs=2, case_timeout=3)
    healthy, blocker = report.cases
    assert healthy.passed, healthy.first_failure()  # waited on the blocker, then ran again
    assert blocker.error is not None and "blocked its thread" in blocker.error


def test_live_runs_going_at_once_start_spaced_not_in_one_burst(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A provider sees N cases' first requests spread over a few milliseconds, not at one
    # instant (the burst a rate limit answers with 429s).
    from conftest import BUILTIN_SURFACE

    from harness.agents.registry import resolve_agent
    from harness.fixtures.suite import Case, load_suite
    from harness.model_boundary import ModelBackend
    from harness.run import watchdog
    from harness.run.runner import CasePlan, replay_backend
    from harness.run.watchdog import run_watched

    assert watchdog.LIVE_START_SPACING >= 0.002  # two milliseconds apart at least
    # Timed here with a wider spacing: starting a case takes about as long as the real
    # one, so on a loaded machine its jitter could hide it; unspaced, the gaps are that.
    monkeypatch.setattr(watchdog, "LIVE_START_SPACING", 0.05)

    suite = write_suite(tmp_path / "suite", {f"{n}.json": says_hi(f"c{n}") for n in range(5)})
    cases = load_suite(suite, "replay", BUILTIN_SURFACE)
    started: list[float] = []

    def backend(case: Case) -> ModelBackend:
        started.append(time.monotonic())
        return replay_backend(case)

    adapter = resolve_agent("openai-agents")
    plan = CasePlan(adapter, "live", backend, None, 30.0, tmp_path, jobs=5)
    reports = run_watched(cases, plan, None)
    assert all(r.passed for r in reports), [r.first_failure() for r in reports]
    gaps = [later - earlier for earlier, later in itertools.pairwise(started)]
    assert len(gaps) == 4 and min(gaps) >= 0.04, gaps


# A loop whose turn waits, without blocking its thread, until the test lets it go.
WAITING_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import threading

STARTED = threading.Event()
RELEASE = threading.Event()


class Waiting(Session):
    async def run_turn(self, user_input):
        STARTED.set()
        while not RELEASE.is_set():
            await asyncio.sleep(0.01)
        return await super().run_turn(user_input)


def waiting(ctx):
    return Waiting(ctx)
"""
)


class _Interrupted(Exception):
    """What a signal handler raises in the main thread (as pytest-timeout's does)."""


def test_a_run_in_flight_when_its_suite_is_interrupted_never_moves_the_process_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run the interruption abandoned goes on, on its own thread, after its suite has
    # returned; had it put back the working directory it started in, it would move a later
    # suite of the same process (run from elsewhere) into that one, to admit its fixtures.
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    name = write_module(tmp_path, WAITING_LOOP)
    loop = importlib.import_module(name)
    write_suite(first / "suite", {"a.json": says_hi("case-a")})

    def interrupt() -> None:
        if loop.STARTED.wait(30):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)

    def raised(signum: int, frame: object) -> None:
        raise _Interrupted

    previous = signal.signal(signal.SIGUSR1, raised)
    before = set(threading.enumerate())
    monkeypatch.chdir(first)
    try:
        interrupter = threading.Thread(target=interrupt, daemon=True)
        interrupter.start()
        with pytest.raises(_Interrupted):
            run_suite("suite", agent=f"{name}:waiting")
    finally:
        signal.signal(signal.SIGUSR1, previous)
    monkeypatch.chdir(later)
    loop.RELEASE.set()
    for thread in set(threading.enumerate()) - before:
        thread.join(10)
        assert not thread.is_alive(), thread
    assert Path.cwd() == later


def test_a_run_whose_cases_all_go_to_workers_imports_no_event_loop_here(tmp_path: Path) -> None:
    # Its cases run in the workers, whose fork server imports asyncio as it warms up: here
    # it was a tenth of such a run's own CPU at a few cases, and all of it serial.
    modules = set(own_loop_case_run(tmp_path, "--jobs", "2", then=REPORT_MODULES).split())
    assert "harness.run.process_pool" in modules  # the case went to a worker
    assert "asyncio" not in modules
    alone = set(own_loop_case_run(tmp_path, "--jobs", "1", then=REPORT_MODULES).split())
    assert "asyncio" in alone  # run here, on this process's event loop


REPORT_MODULES = "print(' '.join(sys.modules))"


# A faithful loop that edits the first fixture of its suite when told to, and one that
# waits for that edit before it answers.
EDITING_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import os
from pathlib import Path


class Editing(Session):
    async def run_turn(self, user_input):
        mark = Path(os.environ["ZC_MARK"])
        if "edit the first" in user_input:
            first = Path(os.environ["ZC_FIRST"])
            first.write_text(first.read_text().replace("wait for", "waits for"))
            mark.write_text("edited")
        if "wait for the edit" in user_input:
            for _ in range(1000):
                if mark.exists():
                    break
                await asyncio.sleep(0.01)
        return await super().run_turn(user_input)


def editing(ctx):
    return Editing(ctx)
"""
)


def test_a_case_beside_more_than_sixteen_others_is_sealed_with_the_fixture_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A case reads its fixture again as it is sealed. Run beside 19 others on this
    # process's event loop (`auto` on 32 cores), its fixture read was no longer held: read
    # from disk after a later case edited it, the case was failed as changed, though it
    # ran as admitted.
    import functools

    from harness.fixtures import suite as suite_module

    fresh = functools.lru_cache(maxsize=16)(suite_module._reread.__wrapped__)
    monkeypatch.setattr(suite_module, "_reread", fresh)  # as a process starts with it
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{write_module(tmp_path, EDITING_LOOP)}:editing"
    cases = {f"{n:02}.json": says_hi(f"case-{n}") for n in range(20)}
    cases["00.json"] = says_hi("case-0", "Say hi once you wait for the edit")
    cases["19.json"] = says_hi("case-19", "Say hi and edit the first")
    suite = write_suite(tmp_path / "suite", cases)
    monkeypatch.setenv("ZC_MARK", str(tmp_path / "mark"))
    monkeypatch.setenv("ZC_FIRST", str(suite / "00.json"))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(32)), raising=False)
    monkeypatch.setattr(os, "process_cpu_count", lambda: 32, raising=False)
    report = run_suite(suite, agent=spec, jobs="auto")
    assert "waits for" in (suite / "00.json").read_text()  # edited as case-0 ran
    assert all(c.passed for c in report.cases), [c.first_failure() for c in report.cases]
