"""`harness.run.worker_admission`: a large suite admitted in parts by the workers started
early for a `--jobs N` replay run gives the pipeline the cases admission here gives (ids,
paths, digests, canonical digests, in suite order) and refuses it with the same problems in
the same order and words, duplicate ids across parts included; a worker that dies or stalls
in the middle leaves its parts to be admitted elsewhere, never lost, never waited for."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FAITHFUL_LOOP,
    Cli,
    fixture,
    process_gone,
    text_step,
    turn,
    write_module,
    write_suite,
)

from harness import pipeline
from harness.agents.registry import surface_within
from harness.errors import ExitCode
from harness.fixtures.listing import MAX_FIXTURE_BYTES
from harness.fixtures.suite import AdmittedCases, load_suite
from harness.io.problems import AdmissionError
from harness.run import pool_workers, process_pool, watchdog, worker_admission
from harness.run.process_pool import start_fork_server
from harness.runtime.interrupts import Interrupted

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers start early from a fork server"
)

SUITE = "evals/regression"
CASES = worker_admission.PARALLEL_FROM + 60  # five parts of 64 under --jobs 2


def _fixture(n: int, case_id: str | None = None) -> dict[str, Any]:
    says_hi = [turn("Say hi", text_step("hi there"))]
    data = fixture(f"model-{n}", says_hi, {"response_contains": ["hi"]})
    data["id"] = case_id if case_id is not None else f"case-{n:04d}"
    return data


def _project(tmp_path: Path, odd: dict[int, Any] | None = None) -> Path:
    """A project whose suite has `CASES` fixtures, those of `odd` written as it says."""
    root = tmp_path / "project"
    fixtures: dict[str, Any] = {f"f{n:04d}.json": _fixture(n) for n in range(CASES)}
    for n, data in (odd or {}).items():
        fixtures[f"f{n:04d}.json"] = data
    write_suite(root / SUITE, {k: v for k, v in fixtures.items() if v is not None})
    return root


def _broken(root: Path) -> None:
    """Fixtures that cannot be read at all, in the parts of the suite they fall in."""
    suite = root / SUITE
    (suite / "f0100.json").unlink()
    (suite / "f0100.json").mkdir()  # not a regular file
    (suite / "f0101.json").unlink()
    (suite / "f0101.json").symlink_to(suite / "nowhere")  # gone
    (suite / "f0200.json").write_bytes(b" " * (MAX_FIXTURE_BYTES + 1))  # too large
    (suite / "f0300.json").write_bytes(b'{"id": "\xff"}')  # not UTF-8


# Problems in four of the five parts, and ids used twice across them.
ODD: dict[int, Any] = {
    3: "{",  # not JSON
    70: {**_fixture(70), "surprise": 1},  # an unknown key
    140: _fixture(140, case_id="case-0002"),  # the id of a case of the first part
    141: _fixture(141, case_id=""),  # an empty id
    210: _fixture(210, case_id=unicodedata.normalize("NFD", "café")),
    260: _fixture(260, case_id="café"),  # the same once normalised
    310: {**_fixture(310), "turns": []},  # no turns
}


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{write_module(tmp_path, FAITHFUL_LOOP)}:factory"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The parts sent to workers, as (their first fixture, the worker's process id), with
    two workers started (and waited for) before the run, as a run starts them."""
    pool_workers.end_early()  # none left over from another test
    start_fork_server(watchdog.run_batch.__module__, "harness.agents.protocol", 2)
    assert len(pool_workers._EARLY) == 2
    for worker in pool_workers._EARLY:
        assert worker.forked(60) is None
    parts: list[tuple[int, int]] = []
    post = pool_workers.Worker.post

    def posting(worker: pool_workers.Worker, message: tuple[Any, ...]) -> None:
        if message[0] == "admit":
            parts.append((message[1], worker.process.pid))
        post(worker, message)

    monkeypatch.setattr(pool_workers.Worker, "post", posting)
    return parts


def _admitted(monkeypatch: pytest.MonkeyPatch) -> list[AdmittedCases]:
    """The suites the pipeline is given as it picks its cases, as they come."""
    given: list[AdmittedCases] = []
    choose = pipeline.choose

    def keeping(admitted: Any, selection: Any) -> Any:
        given.append(admitted)
        return choose(admitted, selection)

    monkeypatch.setattr(pipeline, "choose", keeping)
    return given


def _columns(cases: AdmittedCases) -> list[tuple[str, str, bytes | None, bytes | None]]:
    return [(c.id, c.where, c.digest, c.canonical) for c in cases]


def _run(run_cli: Cli, root: Path, agent: str, jobs: str) -> tuple[int, str, str]:
    done = run_cli("eval", "run", "--suite", SUITE, "--agent", agent, "--jobs", jobs, cwd=root)
    return done.returncode, done.stdout, done.stderr


def _here(root: Path, agent: str, monkeypatch: pytest.MonkeyPatch) -> AdmittedCases:
    monkeypatch.chdir(root)  # the suite named relatively, as the command names it
    return load_suite(Path(SUITE), "replay", surface_within(agent, 30))


def test_a_large_suite_is_admitted_by_the_workers_as_it_is_here(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    root = _project(tmp_path)
    expected = _columns(_here(root, agent, monkeypatch))
    given = _admitted(monkeypatch)
    code, out, _ = _run(run_cli, root, agent, "2")
    assert code == 0, out
    [admitted] = given
    assert _columns(admitted) == expected
    assert sorted(start for start, _ in sent) == list(range(0, CASES, 64))  # every part
    assert len({pid for _, pid in sent}) == 2  # by both workers
    assert f"{CASES}/{CASES} cases passed" in out


def test_problems_in_several_parts_are_those_of_admission_here_in_order(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    root = _project(tmp_path, ODD)
    _broken(root)
    with pytest.raises(AdmissionError) as here:
        _here(root, agent, monkeypatch)
    assert len(here.value.problems) == 10
    assert not sent
    serial = _run(run_cli, root, agent, "1")
    assert not sent
    parallel = _run(run_cli, root, agent, "2")
    assert len(sent) == 5
    assert parallel == serial
    code, out, err = parallel
    assert code == ExitCode.FAILED and "duplicate case id 'case-0002'" in out + err
    for problem in here.value.problems:  # each said, as admission here words it
        assert problem.message.splitlines()[0] in out + err


def test_a_worker_that_dies_mid_admission_leaves_its_part_to_be_admitted_elsewhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    root = _project(tmp_path, ODD)
    serial = _run(run_cli, root, agent, "1")
    post = pool_workers.Worker.post
    killed: list[int] = []

    def dying(worker: pool_workers.Worker, message: tuple[Any, ...]) -> None:
        post(worker, message)
        if not killed:  # the first worker sent a part dies with it
            killed.append(worker.process.pid)
            os.kill(worker.process.pid, signal.SIGKILL)

    monkeypatch.setattr(pool_workers.Worker, "post", dying)
    assert _run(run_cli, root, agent, "2") == serial
    assert killed and killed[0] in {pid for _, pid in sent}


def test_a_run_goes_on_on_the_workers_left_after_one_died_admitting(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    root = _project(tmp_path)
    expected = _columns(_here(root, agent, monkeypatch))
    [first, _] = pool_workers._EARLY
    post = pool_workers.Worker.post

    def dying(worker: pool_workers.Worker, message: tuple[Any, ...]) -> None:
        post(worker, message)
        if worker is first:
            os.kill(worker.process.pid, signal.SIGKILL)

    monkeypatch.setattr(pool_workers.Worker, "post", dying)
    given = _admitted(monkeypatch)
    code, out, _ = _run(run_cli, root, agent, "2")
    assert code == 0, out
    assert _columns(given[0]) == expected
    assert f"{CASES}/{CASES} cases passed" in out


def test_a_worker_that_stalls_admitting_is_ended_and_its_part_admitted_elsewhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    root = _project(tmp_path, ODD)
    serial = _run(run_cli, root, agent, "1")
    monkeypatch.setattr(worker_admission, "STALL_SECS", 0.5)
    monkeypatch.setattr(worker_admission, "STALL_PER_FIXTURE", 0.0)
    [stalled, _] = pool_workers._EARLY
    pid = stalled.process.pid
    os.kill(pid, signal.SIGSTOP)  # it takes a part and says nothing of it
    try:
        started = time.monotonic()
        assert _run(run_cli, root, agent, "2") == serial
        assert time.monotonic() - started < 30
        assert pid in {p for _, p in sent}
        assert stalled not in pool_workers._EARLY and process_gone(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):  # ended already, as it should be
            os.kill(pid, signal.SIGCONT)


def _half_then_stall(conn: Any, _spec: Any) -> None:
    """A worker that writes half of its first answer, then stalls for good."""
    import pickle

    from harness.fixtures.suite import admit_slice

    _, start, cwd, part = conn.recv()
    os.chdir(cwd)
    data = pickle.dumps(("admitted", start, admit_slice(*part)))
    frame = len(data).to_bytes(4, "big", signed=True) + data
    os.write(conn.fileno(), frame[: len(frame) // 2])
    time.sleep(3600)


def test_a_worker_that_stalls_in_the_middle_of_an_answer_is_found_by_its_parts_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    # A read of a pipe the selector saw readable must never wait for the rest of a message:
    # a worker stalled half-way through one would hold admission for ever.
    import multiprocessing
    import threading

    from harness.fixtures.listing import listed
    from harness.fixtures.suite import in_one

    root = _project(tmp_path)
    monkeypatch.chdir(root)
    context = multiprocessing.get_context("fork")

    def stalling(_context: Any, _target: Any, args: tuple[Any, ...]) -> Any:
        return context.Process(target=_half_then_stall, args=args, daemon=True)

    pool_workers.end_early()  # none left over from another test
    monkeypatch.setattr(pool_workers, "_process", stalling)
    pool_workers._EARLY[:] = [pool_workers.Worker(context)]
    monkeypatch.setattr(worker_admission, "STALL_SECS", 0.5)
    monkeypatch.setattr(worker_admission, "STALL_PER_FIXTURE", 0.0)
    listing, surface = listed(Path(SUITE)), surface_within(agent, 30)
    got: list[Any] = []
    admitting = threading.Thread(
        target=lambda: got.append(worker_admission.in_workers(listing, "replay", surface, 2)),
        daemon=True,
    )
    try:
        admitting.start()
        admitting.join(30)
        assert got, "admission never ended"
        here = in_one(listing, "replay", surface)
        assert [i for part in got[0] for i in part.ids] == [i for part in here for i in part.ids]
    finally:
        pool_workers.end_early()


def test_the_workers_answers_are_read_without_a_thread_started_for_each(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    # A read never waits for the rest of a message (the selector said the pipe was
    # readable; a worker stalled mid-message is found by its part's bound): no thread
    # is started to watch it, whose start and end cost more than the read.
    import threading

    root = _project(tmp_path)
    admitting, during = [False], []
    run, start = worker_admission._Admission.run, threading.Thread.start

    def watched(self: Any) -> Any:
        admitting[0] = True
        try:
            return run(self)
        finally:
            admitting[0] = False

    def starting(self: threading.Thread) -> None:
        if admitting[0]:
            during.append(self.name)
        start(self)

    monkeypatch.setattr(worker_admission._Admission, "run", watched)
    monkeypatch.setattr(threading.Thread, "start", starting)
    code, out, _ = _run(run_cli, root, agent, "2")
    assert code == 0 and f"{CASES}/{CASES} cases passed" in out
    assert sent  # the workers admitted its parts
    assert during == []


def test_a_suite_under_the_size_that_pays_is_admitted_here(
    tmp_path: Path, run_cli: Cli, agent: str, sent: list[tuple[int, int]]
) -> None:
    root = tmp_path / "project"
    count = worker_admission.PARALLEL_FROM - 1
    write_suite(root / SUITE, {f"f{n:04d}.json": _fixture(n) for n in range(count)})
    code, out, _ = _run(run_cli, root, agent, "2")
    assert code == 0 and f"{count}/{count} cases passed" in out
    assert not sent


def test_a_suite_is_admitted_here_when_no_worker_was_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Cli, agent: str
) -> None:
    root = _project(tmp_path, ODD)
    serial = _run(run_cli, root, agent, "1")
    pool_workers.end_early()
    monkeypatch.setattr(process_pool, "start_early", lambda context, workers: None)
    assert _run(run_cli, root, agent, "2") == serial


def test_the_json_report_of_a_suite_admitted_by_workers_is_that_of_one_admitted_here(
    tmp_path: Path, run_cli: Cli, agent: str, sent: list[tuple[int, int]]
) -> None:
    root = _project(tmp_path)
    reports = []
    for jobs in ("1", "2"):
        done = run_cli(
            "eval", "run", "--suite", SUITE, "--agent", agent, "--jobs", jobs,
            "--format", "json", cwd=root,
        )  # fmt: skip
        assert done.returncode == 0
        reports.append(_timeless(json.loads(done.stdout)))
    assert sent and reports[0] == reports[1]


def _timeless(value: Any) -> Any:
    """A report without what differs from run to run (timings, the run's moment)."""
    if isinstance(value, dict):
        return {
            k: _timeless(v)
            for k, v in value.items()
            if not any(word in k for word in ("duration", "elapsed", "_ms", "time", "_at"))
        }
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_an_interruption_while_workers_admit_ends_them_with_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    root = _project(tmp_path)
    pids = [worker.process.pid for worker in pool_workers._EARLY]
    post = pool_workers.Worker.post

    def interrupted(worker: pool_workers.Worker, message: tuple[Any, ...]) -> None:
        post(worker, message)
        if len(sent) == 3:  # both workers hold parts, and more are to come
            raise Interrupted(signal.SIGINT)

    monkeypatch.setattr(pool_workers.Worker, "post", interrupted)
    done = run_cli("eval", "run", "--suite", SUITE, "--agent", agent, "--jobs", "2", cwd=root)
    assert done.returncode == ExitCode.INTERRUPTED
    assert "interrupted by SIGINT" in done.stderr
    assert pool_workers._EARLY == [] and all(process_gone(pid) for pid in pids)


def test_a_part_answered_with_columns_of_another_size_is_admitted_elsewhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    # A worker's word is not taken on trust: an answer whose columns do not cover its part
    # would shift every later case's file name (or end in a traceback).
    root = _project(tmp_path, ODD)
    serial = _run(run_cli, root, agent, "1")
    read = pool_workers.Worker.messages
    doctored: list[int] = []

    def short(worker: pool_workers.Worker, wait: bool = True) -> list[Any]:
        messages = read(worker, wait)
        if not doctored and messages and messages[0][0] == "admitted":
            kind, start, part = messages[0]
            doctored.append(start)
            messages[0] = (kind, start, part._replace(ids=part.ids[:-1]))
        return messages

    monkeypatch.setattr(pool_workers.Worker, "messages", short)
    assert _run(run_cli, root, agent, "2") == serial
    assert doctored


def test_a_worker_that_cannot_enter_the_harness_s_folder_ends_without_a_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Cli,
    agent: str,
    sent: list[tuple[int, int]],
) -> None:
    root = _project(tmp_path, ODD)
    serial = _run(run_cli, root, agent, "1")
    init = worker_admission._Admission.__init__

    def elsewhere(self: Any, *args: Any) -> None:
        init(self, *args)
        self._cwd = str(tmp_path / "gone")  # the folder removed under the harness

    monkeypatch.setattr(worker_admission._Admission, "__init__", elsewhere)
    code, out, err = _run(run_cli, root, agent, "2")
    assert (code, out) == serial[:2]
    assert "Traceback" not in err
    assert sent  # parts went to the workers, which could not admit them there
