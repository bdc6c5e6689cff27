"""`harness.run.process_pool`: replay cases in worker processes give the reports a serial run
gives (timings apart), in fixture order, streamed as they finish; a case that kills its
worker (`os._exit`, a segfault) is that case's run error and the suite goes on; the
per-case timeout and the watchdog hold in the workers; `--jobs auto`; what cannot go to a
worker runs in this process, saying why."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import (
    BUILTIN_SURFACE,
    FAITHFUL_LOOP,
    REPO,
    Cli,
    echo_fixture,
    failing_fixture,
    fixture,
    greeting_fixture,
    project,
    text_step,
    turn,
    under_scripted_fixture,
    write_module,
    write_suite,
)

from harness import run_suite
from harness.agents.protocol import LoopAdapter
from harness.agents.registry import resolve_agent
from harness.fixtures.suite import load_suite
from harness.io.text import encoded_json
from harness.run import watchdog
from harness.run.process_pool import exit_status, workers_cpu
from harness.run.runner import CasePlan, jobs_of, replay_backend
from harness.run.watchdog import run_watched
from harness.verdict.reports import CaseReport

# A faithful loop that does what the user input says: leave the process, crash it, sleep
# without blocking, move to another working directory, hold its thread, hold the
# interpreter for good (a backtracking regular expression keeps the GIL) after saying which
# process runs it, or stop or kill the workers' fork server (its parent in a worker; never
# any other process).
HOSTILE_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import ctypes
import os
import re
import signal
import time
from pathlib import Path

from harness import ToolCall


def pool_server():
    # Spawned, the server's command line says so; forked from the harness, its name does.
    parent = os.getppid()
    command = Path(f"/proc/{parent}/cmdline").read_bytes()
    name = Path(f"/proc/{parent}/comm").read_bytes().strip()
    if b"forkserver" not in command and name != b"zeroclaw-forks":
        raise RuntimeError("not in a worker of the fork server")
    return parent


class Hostile(Session):
    async def run_turn(self, user_input):
        if "mark the start" in user_input:
            Path(os.environ["ZC_MARKER"]).write_text("started")
        if "freeze the pool server" in user_input:
            os.kill(pool_server(), signal.SIGSTOP)
            if "then leave" in user_input:
                os._exit(0)
        if "end the pool server" in user_input:
            for _ in range(600):  # until another case has begun, when it is to wait for one
                if "once marked" not in user_input or Path(os.environ["ZC_MARKER"]).exists():
                    break
                await asyncio.sleep(0.05)
            os.kill(pool_server(), signal.SIGKILL)
            await asyncio.sleep(5)  # its worker dies with the server meanwhile
        if "exit now" in user_input:
            os._exit(3)
        if "odd role" in user_input:  # a role no `Message` may have, kept in its history
            self.messages.append(Message(role="developer\\n::error::forged", content="hm"))
        if "odd content" in user_input:  # text that is none, kept in its history
            self.messages.append(Message(role="user", content=None))
        if "odd id" in user_input:  # an id that is no text, kept in its history
            self.messages.append(Message(role="user", content="hm", tool_call_id=5))
        if "odd arguments" in user_input:  # a call's arguments no JSON can carry
            call = ToolCall("c0", "echo", {"message": object()})
            self.messages.append(Message(role="assistant", tool_calls=(call,)))
        if "change after" in user_input:  # a call's arguments changed once they were sent
            arguments = {"message": "hi"}
            self.messages.append(
                Message(role="assistant", tool_calls=(ToolCall("c9", "echo", arguments),))
            )
            self.messages.append(Message(role="tool", content="hi", tool_call_id="c9"))
            answer = await super().run_turn(user_input)
            arguments.update({"sent": object(), True: "key", "itself": arguments})
            return answer
        if "unchecked" in user_input:  # this case's requests not checked at the boundary
            self.ctx.model._check.problem = lambda request: None
        if "crash now" in user_input:
            ctypes.string_at(0)
        if "nap" in user_input:
            await asyncio.sleep(float(user_input.split()[-1]))
        if "wander" in user_input:
            os.chdir("/")
        if "block" in user_input:
            time.sleep(30)
        if "stall" in user_input:
            time.sleep(2)
        if "hold" in user_input:
            Path(os.environ["ZC_PID_FILE"]).write_text(str(os.getpid()))
            re.match(r"(a+)+$", "a" * 60 + "b")
        if "odd text" in user_input:  # an answer no UTF-8 can carry: a lone surrogate
            return (await super().run_turn(user_input)) + "\\ud800"
        return await super().run_turn(user_input)


def hostile(ctx):
    return Hostile(ctx)
"""
)


def says_hi(name: str, user_input: str = "Say hi") -> dict[str, Any]:
    return fixture(name, [turn(user_input, text_step("hi there"))], {"response_contains": ["hi"]})


def hi_suite(tmp_path: Path, n: int, odd: dict[int, dict[str, Any]]) -> Path:
    """`n` `says_hi` cases (`case-0` …), the one at each place of `odd` its fixture instead."""
    cases: dict[str, dict[str, Any] | str] = {
        f"{k}.json": odd[k] if k in odd else says_hi(f"case-{k}") for k in range(n)
    }
    return write_suite(tmp_path / "suite", cases)


def inputs_suite(tmp_path: Path, **inputs: str) -> Path:
    """A suite of `says_hi` cases, one per keyword (its id) with that user input, in order."""
    cases = {f"{n}.json": says_hi(name, text) for n, (name, text) in enumerate(inputs.items())}
    return write_suite(tmp_path / "suite", cases)


def hostile_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{write_module(tmp_path, HOSTILE_LOOP)}:hostile"


def timeless(report: CaseReport) -> CaseReport:
    """A report without its timings, the one thing two runs of a case may differ in."""
    record = report.record
    if record is not None:
        calls = [msgspec.structs.replace(c, duration_ms=0.0) for c in record.calls]
        record = msgspec.structs.replace(record, duration_ms=0.0, calls=calls)
    return msgspec.structs.replace(report, duration_ms=0.0, record=record)


def mixed_suite(directory: Path) -> Path:
    """Passes, failed checks and a run error, in an order no worker finishes them in."""
    cases: dict[str, Any] = {}
    for n in range(4):
        cases[f"{n}a_echo.json"] = echo_fixture(f"echo-{n}", f"m{n}")
        cases[f"{n}b_wrong.json"] = failing_fixture(f"wrong-{n}")
        cases[f"{n}c_under.json"] = under_scripted_fixture(f"under-{n}")
        cases[f"{n}d_hello.json"] = greeting_fixture(f"hello-{n}")
    return write_suite(directory, cases)


def test_workers_give_the_serial_run_s_reports_in_fixture_order(tmp_path: Path) -> None:
    suite = mixed_suite(tmp_path / "suite")
    serial = run_suite(suite, agent="openai-agents")
    heard: list[str] = []
    pooled = run_suite(suite, agent="openai-agents", jobs=2, on_case=lambda c: heard.append(c.id))
    assert [timeless(c) for c in pooled.cases] == [timeless(c) for c in serial.cases]
    assert pooled.exit_code() == serial.exit_code() == 1
    assert pooled.totals == serial.totals
    assert [c.id for c in pooled.cases] == [c.id for c in serial.cases]  # fixture order
    assert sorted(heard) == sorted(c.id for c in serial.cases)  # every case streamed once
    by_id = {c.id: c for c in pooled.cases}
    assert by_id["wrong-0"].failing_grades and by_id["under-0"].error is not None
    assert workers_cpu() > 0.0  # the workers said what they used when they stopped


def test_a_worker_that_exits_is_that_case_s_run_error_and_the_suite_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = hostile_agent(tmp_path, monkeypatch)
    suite = hi_suite(tmp_path, 6, {2: says_hi("case-2", "exit now")})
    report = run_suite(suite, agent=spec, jobs=2)
    by_id = {c.id: c for c in report.cases}
    assert by_id["case-2"].error == "the worker running the case died (exit code 3)"
    assert by_id["case-2"].line is not None  # the annotation points at the turns
    for n in (0, 1, 3, 4, 5):
        assert by_id[f"case-{n}"].passed, by_id[f"case-{n}"].first_failure()
    assert [c.id for c in report.cases] == [f"case-{n}" for n in range(6)]


def test_a_failed_case_s_text_no_utf_8_can_carry_comes_back_from_its_worker_as_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lone surrogate in the agent's answer: run here, its report said U+FFFD; a worker
    # sending the report back could not encode it and died with a traceback, the case
    # blamed for it ("the worker running the case died (exit code 70)").
    spec = hostile_agent(tmp_path, monkeypatch)
    odd = fixture("case-1", [turn("odd text", text_step("hi"))], {"response_contains": ["bye"]})
    suite = hi_suite(tmp_path, 4, {1: odd})
    here = run_suite(suite, agent=spec, jobs=1)
    pooled = run_suite(suite, agent=spec, jobs=2)
    failed = pooled.cases[1]
    assert failed.error is None and [g.check for g in failed.failing_grades] == [
        'response_contains("bye")'
    ]
    assert "hi\ufffd" in failed.failing_grades[0].detail
    assert [c.passed for c in pooled.cases] == [True, False, True, True]
    assert [timeless(c) for c in pooled.cases] == [
        msgspec.json.decode(encoded_json(timeless(c)), type=CaseReport) for c in here.cases
    ]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_what_an_agent_changes_in_a_request_once_it_was_checked_is_written_as_its_kind(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    # The boundary checks a request as it is sent; an object, a key that is no text or the
    # arguments themselves put in it afterwards (the record holds what the agent sent, not
    # a copy) failed the harness with a traceback as it wrote the run's transcripts (no
    # report at all), or its worker as it sent them.
    spec = hostile_agent(tmp_path, monkeypatch)
    changed = [turn("change after", text_step("hi"))]
    hi_suite(tmp_path, 3, {1: fixture("case-1", changed, {"response_contains": ["bye"]})})
    report = tmp_path / "report.json"
    run = run_cli(
        "eval", "run", "--suite", "suite", "--agent", spec, "--jobs", jobs,
        "--json-report", str(report), "--html", str(tmp_path / "report.html"),
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    document = json.loads(report.read_text("utf-8"))
    assert [c["passed"] for c in document["cases"]] == [True, False, True]
    shown = run_cli("eval", "show", "case-1", "--report", str(report), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    said = shown.stdout.replace(" ", "")
    assert '"sent":"<object>"' in said and '"true":"key"' in said, shown.stdout
    assert '"itself":"<cycle>"' in said, shown.stdout


def test_a_report_holding_what_its_type_refuses_is_that_case_s_run_error_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent's message is sent back from its worker, and read back as a `Message` (whose
    # id is text): the harness took it for its own error and ended with a traceback, no
    # report written. (The boundary refuses such a request now: the case turns its check
    # off, as a report some other part of the record made unreadable would come back.)
    spec = hostile_agent(tmp_path, monkeypatch)
    odd = [turn("unchecked odd id", text_step("no"))]
    suite = hi_suite(tmp_path, 6, {2: fixture("case-2", odd, {"response_contains": ["hi"]})})
    report = run_suite(suite, agent=spec, jobs=2)
    by_id = {c.id: c for c in report.cases}
    error = by_id["case-2"].error or ""
    assert error.startswith("the case's report does not read back: Expected `str | null`"), error
    assert "`$.record.transcript[0].sent[" in error and error.endswith("].tool_call_id`"), error
    for n in (0, 1, 3, 4, 5):
        assert by_id[f"case-{n}"].passed, by_id[f"case-{n}"].first_failure()
    assert [c.id for c in report.cases] == [f"case-{n}" for n in range(6)]


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize(
    ("asked", "said"),
    [
        ("odd role", "with the role 'developer\\n::error::forged', which no message has"),
        ("odd content", "whose content is None, not text"),
        ("odd id", "whose tool_call_id is int, not text"),
        (
            "odd arguments",
            "whose tool_calls[0] has arguments that hold object, which no JSON has",
        ),
    ],
)
def test_a_message_no_message_may_be_is_that_case_s_run_error_in_every_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int, asked: str, said: str
) -> None:
    # A `Message` is not checked as it is made. Run here, a role no message has was
    # recorded as it was (and `show` then refused the transcripts file), and text that is
    # none failed the harness itself (an internal error); in a worker, the same cases were
    # run errors for their reports alone.
    spec = hostile_agent(tmp_path, monkeypatch)
    suite = hi_suite(tmp_path, 4, {2: says_hi("case-2", asked)})
    report = run_suite(suite, agent=spec, jobs=jobs)
    by_id = {c.id: c for c in report.cases}
    error = by_id["case-2"].error or ""
    assert error.startswith(f"the agent's model request in turn 0 holds message 0 {said}"), error
    assert [c.id for c in report.cases if not c.passed] == ["case-2"]
    record = by_id["case-2"].record
    assert record is not None and record.model_calls == 0  # neither sent nor recorded


def test_a_death_amid_batches_sent_as_places_loses_no_case_nor_tells_one_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Enough quick cases for batches of many, each sent as its places alone (the workers
    # hold the suite's columns): the cases after the one that kills its worker, sent with
    # it, go back to the queue and run in a fresh worker, every one once, in suite order.
    spec = hostile_agent(tmp_path, monkeypatch)
    cases: dict[str, dict[str, Any] | str] = {
        f"{n:03d}.json": says_hi(f"case-{n:03d}") for n in range(300)
    }
    cases["150.json"] = says_hi("case-150", "exit now")
    suite = write_suite(tmp_path / "suite", cases)
    heard: list[str] = []
    report = run_suite(suite, agent=spec, jobs=2, on_case=lambda c: heard.append(c.id))
    assert [c.id for c in report.cases] == [f"case-{n:03d}" for n in range(300)]
    failed = [c.id for c in report.cases if not c.passed]
    assert failed == ["case-150"]
    assert report.cases[150].error == "the worker running the case died (exit code 3)"
    assert sorted(heard) == [c.id for c in report.cases]  # each told once


def test_a_segfault_is_that_case_s_run_error_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = hostile_agent(tmp_path, monkeypatch)
    suite = inputs_suite(tmp_path, first="crash now", second="crash now", third="Say hi")
    report = run_suite(suite, agent=spec, jobs=2)
    first, second, third = report.cases
    assert first.error == second.error == "the worker running the case died (killed by SIGSEGV)"
    assert third.passed, third.first_failure()  # after two workers died, a third ran it


def test_the_case_timeout_and_the_watchdog_hold_in_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = hostile_agent(tmp_path, monkeypatch)
    suite = inputs_suite(tmp_path, slow="nap 30", blocking="block now", fine="Say hi")
    started = time.monotonic()
    report = run_suite(suite, agent=spec, jobs=2, case_timeout=1.0)
    assert time.monotonic() - started < 20
    slow, blocking, fine = report.cases
    assert slow.error == "timed out after 1s in turn 0"
    assert blocking.error is not None and "blocked its thread and was abandoned" in blocking.error
    assert fine.passed, fine.first_failure()


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_abandoned_case_that_moved_the_working_directory_moves_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    spec = hostile_agent(tmp_path, monkeypatch)
    inputs_suite(tmp_path, moved="wander and block", second="Say hi", third="Say hi")
    monkeypatch.chdir(tmp_path)  # the suite named relatively: its fixtures read from here
    report = run_suite(Path("suite"), agent=spec, jobs=jobs, case_timeout=1.0)
    moved, second, third = report.cases
    assert moved.error is not None and "blocked its thread and was abandoned" in moved.error
    assert second.passed, second.error or second.first_failure()
    assert third.passed, third.error or third.first_failure()
    assert Path.cwd() == tmp_path


def test_an_abandoned_case_that_wakes_later_moves_no_later_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The abandoned run goes on in its thread; when its agent wakes and its run ends, the
    # directory it would put back is the one of a run long over, and the process's caller
    # (the next suite of an API user, the next test) may be elsewhere by then.
    spec = hostile_agent(tmp_path, monkeypatch)
    inputs_suite(tmp_path, moved="wander and stall", second="Say hi", third="Say hi")
    monkeypatch.chdir(tmp_path)
    report = run_suite(Path("suite"), agent=spec, jobs=1, case_timeout=0.5)
    assert report.cases[0].error is not None and "abandoned" in report.cases[0].error
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    time.sleep(3)  # not a measure: the abandoned agent wakes within it and its run ends
    assert Path.cwd() == elsewhere


def test_reports_stream_as_cases_finish_and_the_suite_keeps_fixture_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = hostile_agent(tmp_path, monkeypatch)
    suite = write_suite(
        tmp_path / "suite",
        {"0.json": says_hi("slow", "nap 1.5"), "1.json": says_hi("quick")},
    )
    heard: list[tuple[str, float]] = []
    started = time.monotonic()
    report = run_suite(
        suite,
        agent=spec,
        jobs=2,
        on_case=lambda c: heard.append((c.id, time.monotonic() - started)),
    )
    assert [c.id for c in report.cases] == ["slow", "quick"]
    assert [name for name, _ in heard] == ["quick", "slow"]  # the quick one first
    assert heard[0][1] < heard[1][1] - 0.5  # handed on when it finished, not at the end


@pytest.mark.parametrize("failure", ["Say hi", "nap 1"])
def test_maxfail_in_workers_reports_what_a_serial_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    # A quick failure, with a slow case beside it; or a slow one, with quick cases after it
    # finishing first: either way a serial run never ran the cases after the failure.
    spec = hostile_agent(tmp_path, monkeypatch)
    wrong = fixture("fails", [turn(failure, text_step("bye"))], {"response_contains": ["hi"]})
    cases: dict[str, dict[str, Any] | str] = {"0.json": says_hi("first"), "1.json": wrong}
    later = "Say hi" if failure.startswith("nap") else "nap 1"
    cases.update({f"{n}.json": says_hi(f"later-{n}", later) for n in range(2, 8)})
    suite = write_suite(tmp_path / "suite", cases)
    streamed: list[str] = []
    report = run_suite(
        suite, agent=spec, jobs=2, maxfail=1, on_case=lambda c: streamed.append(c.id)
    )
    serial = run_suite(suite, agent=spec, jobs=1, maxfail=1)

    def outcomes(suite_report: Any) -> list[tuple[str, bool, str | None]]:
        return [(c.id, c.passed, c.not_run) for c in suite_report.cases]

    assert outcomes(report) == outcomes(serial)
    assert [c.not_run is not None for c in report.cases] == [False, False] + [True] * 6
    assert all(c.not_run is None or c.not_run.endswith("(--maxfail)") for c in report.cases)
    assert streamed == [c.id for c in report.cases]  # in fixture order, as a serial run's
    assert int(report.exit_code()) == 1


def test_jobs_auto_is_one_per_core(run_cli: Cli, tmp_path: Path) -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert jobs_of("auto") == cores and jobs_of(3) == 3
    root = project(tmp_path, {f"{n}.json": echo_fixture(f"e{n}", f"m{n}") for n in range(3)})
    result = run_cli("eval", "run", "--jobs", "auto", "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    assert [c["id"] for c in json.loads(result.stdout)["cases"]] == ["e0", "e1", "e2"]
    assert "in this process" not in result.stderr  # too few to pay for workers: no note
    bad = run_cli("eval", "run", "--jobs", "many", cwd=root)
    assert bad.returncode == 2 and "not a whole number" in bad.stderr
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'jobs = "auto"\n', encoding="utf-8")
    assert run_cli("eval", "run", cwd=root).returncode == 0
    pyproject.write_text(pyproject.read_text().replace('"auto"', '"all"'), encoding="utf-8")
    refused = run_cli("eval", "run", cwd=root)
    assert refused.returncode == 1 and "jobs" in refused.stderr


@pytest.mark.skipif(jobs_of("auto") < 2, reason="auto is one job on one core")
def test_auto_starts_workers_only_for_a_suite_large_enough_to_pay_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchdog, "AUTO_WORKERS_FROM", 3)
    plan = CasePlan(resolve_agent("openai-agents"), "replay", replay_backend, None, 30.0, tmp_path)
    for n, pooled in ((2, False), (3, True), (2, False)):
        suite = write_suite(
            tmp_path / f"s{n}{pooled}", {f"{i}.json": says_hi(f"c{i}") for i in range(n)}
        )
        before = workers_cpu()  # what stopped workers said they used: grows iff some ran
        for jobs in ("auto", 1):
            reports = run_watched(
                load_suite(suite, "replay", BUILTIN_SURFACE),
                dataclasses.replace(plan, jobs=jobs),
                None,
            )
            assert all(r.passed for r in reports) and len(reports) == n
        assert (workers_cpu() > before) == pooled
    # A number the user gave is taken as it is, however few the cases.
    before = workers_cpu()
    run_watched(
        load_suite(suite, "replay", BUILTIN_SURFACE), dataclasses.replace(plan, jobs=2), None
    )
    assert workers_cpu() > before


class _Unpicklable(LoopAdapter):
    """A user's adapter object holding what no pickle can carry."""

    def __init__(self, inner: LoopAdapter) -> None:
        super().__init__(inner.name, inner._factory)
        self.lock = __import__("threading").Lock()


def test_an_adapter_that_cannot_be_sent_runs_in_this_process_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = hostile_agent(tmp_path, monkeypatch)
    adapter = resolve_agent(spec)
    assert isinstance(adapter, LoopAdapter)
    suite = write_suite(tmp_path / "suite", {f"{n}.json": says_hi(f"c{n}") for n in range(3)})
    report = run_suite(suite, agent=_Unpicklable(adapter), jobs=2)
    assert all(c.passed for c in report.cases)
    err = capfd.readouterr().err
    assert "--jobs 2 runs the cases in this process: the agent adapter cannot be sent" in err


def test_an_agent_no_worker_can_load_runs_in_this_process_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    parent = os.getpid()
    # Importable here, refused in any other process: the worker cannot unpickle the adapter.
    source = f"import os\nif os.getpid() != {parent}:\n    raise ImportError('not here')\n"
    spec = f"{write_module(tmp_path, FAITHFUL_LOOP + source)}:factory"
    suite = write_suite(tmp_path / "suite", {f"{n}.json": says_hi(f"c{n}") for n in range(3)})
    report = run_suite(suite, agent=spec, jobs=2)
    assert all(c.passed for c in report.cases)
    err = capfd.readouterr().err
    assert "runs the cases in this process: no worker process could start" in err
    assert "not here" in err


def test_a_passing_case_keeps_no_transcript_unless_asked(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "suite",
        {"a.json": echo_fixture("passes"), "b.json": failing_fixture("fails")},
    )
    for jobs in (1, 2):
        passes, fails = run_suite(suite, jobs=jobs).cases
        assert passes.passed and passes.record is not None
        assert passes.record.transcript is None  # memory stays flat over passing cases
        assert fails.record is not None and fails.record.transcript  # a failure keeps it
    cases = load_suite(suite, "replay", BUILTIN_SURFACE)
    plan = CasePlan(
        resolve_agent("openai-agents"),
        "replay",
        replay_backend,
        None,
        30.0,
        tmp_path,
        keep_transcripts=True,
    )
    kept = run_watched(cases, plan, None)
    assert all(r.record is not None and r.record.transcript for r in kept)


def test_exit_status_names_the_signal() -> None:
    assert exit_status(3) == "exit code 3"
    assert exit_status(-11) == "killed by SIGSEGV"
    assert exit_status(-9) == "killed by SIGKILL"


def test_live_cases_and_prepared_cases_stay_in_this_process(tmp_path: Path) -> None:
    from harness.run.pool_worker import worker_spec

    plan = CasePlan(resolve_agent("openai-agents"), "replay", replay_backend, None, 30.0, tmp_path)
    spec = worker_spec(plan, run_watched)
    assert not isinstance(spec, str) and spec.agent_spec is None and spec.adapter is not None
    live = dataclasses.replace(plan, mode="live")
    assert "one provider limiter" in str(worker_spec(live, run_watched))
    prepared = dataclasses.replace(plan, prepare=lambda case, context: None)
    assert "cannot cross processes" in str(worker_spec(prepared, run_watched))
    named = dataclasses.replace(plan, agent_spec="openai-agents")
    spec = worker_spec(named, run_watched)
    assert not isinstance(spec, str) and spec.adapter is None  # the worker resolves it


def test_workers_resolve_the_agent_from_its_setting_when_they_have_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = hostile_agent(tmp_path, monkeypatch)
    suite = write_suite(tmp_path / "suite", {f"{n}.json": says_hi(f"c{n}") for n in range(3)})
    cases = load_suite(suite, "replay", BUILTIN_SURFACE)
    plan = CasePlan(
        resolve_agent(spec), "replay", replay_backend, None, 30.0, tmp_path, jobs=2, agent_spec=spec
    )
    reports = run_watched(cases, plan, None)
    assert [r.id for r in reports] == ["c0", "c1", "c2"] and all(r.passed for r in reports)


def test_every_field_of_a_plan_is_sent_to_workers_or_made_there() -> None:
    # A field added to CasePlan and forgotten here would silently take its default in
    # every worker: a plan's settings would differ between serial and parallel runs.
    from harness.run.pool_worker import _SENT

    made_there = {"adapter", "mode", "backend", "jobs", "agent_spec"}
    # Replay workers never prepare (mutation stays in this process), repeat (live only),
    # stop (the pool asks before each case) or judge (a judged run stays in this process).
    not_needed = {"prepare", "repeat", "maxfail", "judge"}
    fields = {f.name for f in dataclasses.fields(CasePlan)}
    assert fields == set(_SENT) | made_there | not_needed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rpartition(")")[2].split()[0] != "Z"  # a zombie has ended


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal")
def test_a_worker_holding_the_interpreter_dies_with_a_killed_harness(tmp_path: Path) -> None:
    module = write_module(tmp_path, HOSTILE_LOOP)
    suite = inputs_suite(tmp_path, first="Say hi", held="hold on", last="Say hi")
    pid_file = tmp_path / "worker.pid"
    command = [sys.executable, "-m", "harness", "eval", "run", "--suite", str(suite)]
    command += ["--agent", f"{module}:hostile", "--jobs", "2", "--timeout", "60"]
    environ = {**os.environ, "ZC_PID_FILE": str(pid_file), "PYTHONPATH": str(tmp_path)}
    harness = subprocess.Popen(
        command, cwd=tmp_path, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the held case never started"
            assert harness.poll() is None, "the harness ended before the held case started"
            time.sleep(0.05)
        worker = int(pid_file.read_text())
        time.sleep(0.2)  # in the regular expression now
        harness.kill()  # as the OOM killer or a cancelled CI job would
        harness.wait()
        deadline = time.monotonic() + 10
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker), "the worker outlived the harness"
    finally:
        if harness.poll() is None:
            harness.kill()
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)  # never left spinning, whatever the verdict


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the fork server in /proc")
@pytest.mark.parametrize(
    ("frozen", "code"),
    [("freeze the pool server then leave", 1), ("freeze the pool server", 0)],
    ids=["and-leaves", "and-answers"],
)
def test_an_agent_that_stops_the_fork_server_neither_hangs_the_run_nor_is_left_stopped(
    tmp_path: Path, frozen: str, code: int
) -> None:
    # A worker that ended while the fork server was stopped was never said to have ended
    # (the server reports it), and the worker started in its place waited on the server
    # for ever, through every timeout. A server left stopped also held the harness's
    # stderr open after the harness ended, so whoever read it to the end waited for ever.
    module = write_module(tmp_path, HOSTILE_LOOP)
    suite = inputs_suite(
        tmp_path, first="Say hi", frozen=frozen, beside="nap 1", later="Say hi", last="Say hi"
    )
    command = [sys.executable, "-m", "harness", "eval", "run", "--suite", str(suite)]
    command += ["--agent", f"{module}:hostile", "--jobs", "2", "--json-report", "report.json"]
    command += ["--timeout", "5", "--case-wall-clock", "10"]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    harness = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # The pipes end once every process holding them has: a fork server left stopped too.
        _, err = harness.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(harness.pid, signal.SIGKILL)
        harness.communicate()
        pytest.fail("the run never ended")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(harness.pid, signal.SIGKILL)  # nothing of it is left running
    assert harness.returncode == code, err
    assert "Traceback" not in err
    assert "the workers' fork server was found stopped (SIGSTOP)" in err
    cases = {c["id"]: c for c in json.loads((tmp_path / "report.json").read_text())["cases"]}
    left = cases.pop("frozen")
    if code:
        assert "fork server" in left["error"] and "SIGSTOP" in left["error"], left["error"]
    else:  # its answer was right: stopping the server broke none of its checks
        assert left["passed"], left["error"]
    assert all(c["passed"] for c in cases.values()), [c["error"] for c in cases.values()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the fork server in /proc")
def test_killing_the_fork_server_is_the_error_of_the_case_that_did_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Every worker dies with the fork server: the case beside the one that killed it was
    # a run error too, as if its own agent had broken. Both run again, one at a time; the
    # one that kills the server again, alone, is the one to blame.
    spec = hostile_agent(tmp_path, monkeypatch)
    monkeypatch.setenv("ZC_MARKER", str(tmp_path / "marker"))
    suite = inputs_suite(
        tmp_path,
        beside="mark the start then nap 3",
        killer="end the pool server once marked",
        queued="Say hi",
        later="Say hi",
    )
    report = run_suite(suite, agent=spec, jobs=2)
    beside, killer, queued, later = report.cases
    assert killer.error == (
        "the workers' fork server was killed by SIGKILL while the case ran, twice: "
        "the second time alone in the pool"
    )
    for innocent in (beside, queued, later):
        assert innocent.passed, innocent.error or innocent.first_failure()
    err = capfd.readouterr().err
    assert "the workers' fork server was killed by SIGKILL; 2 case(s) in flight run again" in err


WORKER_WITHOUT_HARNESS = """
import multiprocessing
from pathlib import Path

from harness.agents.registry import resolve_agent
from harness.run.pool_worker import worker_main, worker_spec
from harness.run.runner import CasePlan, replay_backend
from harness.run.watchdog import run_watched

adapter = resolve_agent("openai-agents")
plan = CasePlan(
    adapter, "replay", replay_backend, None, 30.0, Path.cwd(), agent_spec="openai-agents"
)
spec = worker_spec(plan, run_watched)
assert not isinstance(spec, str), spec
ours, theirs = multiprocessing.Pipe()
ours.close()  # the harness is gone before the worker says it is ready
worker_main(theirs, spec)
"""


def test_a_worker_whose_harness_is_gone_ends_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WORKER_WITHOUT_HARNESS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 70, done.stderr
    assert done.stderr == ""


def _blocked_signals(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        line = next(x for x in status if x.startswith("SigBlk:"))
    return int(line.split()[1], 16)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_fork_server_starts_deaf_to_interrupts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Ctrl-C reaches the whole process group: one that fell while the fork server was
    # still importing printed its traceback. It starts with SIGINT blocked (its workers
    # inherit the mask, and ignore SIGINT besides); the harness handles the interrupt, and
    # they end with it. (The resource tracker ignores it itself.)
    from multiprocessing import forkserver

    spec = hostile_agent(tmp_path, monkeypatch)
    suite = inputs_suite(tmp_path, first="Say hi", second="Say hi")
    assert run_suite(suite, agent=spec, jobs=2).exit_code() == 0
    server = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    assert _blocked_signals(server) & 1 << (signal.SIGINT - 1)
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, set()) & {signal.SIGINT}  # not ours


def test_a_judged_run_stays_in_this_process(tmp_path: Path) -> None:
    from harness.judge.service import JudgeService, JudgeSetup
    from harness.judge.store import ReplyStore
    from harness.run.pool_worker import worker_spec

    judge = JudgeService(JudgeSetup("http://127.0.0.1:9/v1", "m"), ReplyStore(tmp_path))
    plan = CasePlan(
        resolve_agent("openai-agents"),
        "replay",
        replay_backend,
        None,
        30.0,
        tmp_path,
        jobs=2,
        agent_spec="openai-agents",
        judge=judge,
    )
    assert worker_spec(plan, run_watched) == (
        "the judge's replies and its provider's limiter are held by this process"
    )


@pytest.mark.parametrize("rubric", [False, True], ids=["no-rubric", "a-rubric"])
def test_a_judge_keeps_only_the_cases_with_rubrics_in_this_process(
    tmp_path: Path, rubric: bool
) -> None:
    # A judge configured for the project (its capability suite's rubrics) kept every suite
    # of it, rubrics or none, out of the workers; then every case with rubrics kept the
    # whole suite here, and this process read every fixture again to find out. Workers
    # hand back the cases with rubrics, which run here, where the judge is.
    from harness.judge.service import JudgeService, JudgeSetup
    from harness.judge.store import ReplyStore

    judge = JudgeService(JudgeSetup("http://127.0.0.1:9/v1", "m"), ReplyStore(tmp_path / "j"))
    cases = {f"{n}.json": says_hi(f"c{n}") for n in range(3)}
    if rubric:
        rubrics = [{"name": "greets", "rubric": "It greets the user.", "threshold": 1.0}]
        cases["1.json"]["expects"]["judge"] = rubrics
    suite = write_suite(tmp_path / "suite", cases)
    plan = CasePlan(
        resolve_agent("openai-agents"), "replay", replay_backend, None, 30.0, tmp_path, jobs=2
    )
    before = workers_cpu()  # grows iff some worker ran
    reports = run_watched(
        load_suite(suite, "replay", BUILTIN_SURFACE), dataclasses.replace(plan, judge=judge), None
    )
    assert [r.id for r in reports] == ["c0", "c1", "c2"]  # in fixture order, wherever run
    assert reports[0].passed and reports[2].passed
    assert workers_cpu() > before
    if rubric:  # graded by this process's judge, which has no reply recorded for it
        [note] = [g.judge for g in reports[1].grades if g.judge is not None]
        assert note.reason == "judge reply not recorded: run with --record-judge"
    else:
        assert reports[1].passed
