"""`harness.run.pool_workers`: workers started before their pool, while the harness admits
the suite, are the ones the pool runs its cases on; one it has no use for is ended with
it, and one that died (or came from a fork server since replaced) is never handed a case."""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FAITHFUL_LOOP,
    fixture,
    process_gone,
    text_step,
    turn,
    write_module,
    write_suite,
)

from harness import run_suite
from harness.run import fork_server, frames, pool_workers, watchdog
from harness.run.process_pool import start_fork_server

# A faithful loop that writes down which process ran each of its turns.
PID_LOOP = (
    FAITHFUL_LOOP
    + """
import os


class Telling(Session):
    async def run_turn(self, user_input):
        with open(os.environ["ZC_PIDS"], "a") as out:
            out.write(f"{os.getpid()}\\n")
        return await super().run_turn(user_input)


def telling(ctx):
    return Telling(ctx)
"""
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers start early from a fork server"
)


def _suite(tmp_path: Path, cases: int) -> Path:
    says_hi = [turn("Say hi", text_step("hi there"))]
    expects = {"response_contains": ["hi"]}
    return write_suite(
        tmp_path / "suite", {f"{n}.json": fixture(f"c{n}", says_hi, expects) for n in range(cases)}
    )


def _agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ZC_PIDS", str(tmp_path / "pids"))
    return f"{write_module(tmp_path, PID_LOOP)}:telling"


def _started_early(workers: int) -> list[int]:
    """The process ids of `workers` workers started early, as a run with that many jobs
    starts them."""
    pool_workers.end_early()  # none left over from another test
    start_fork_server(watchdog.run_batch.__module__, "harness.agents.protocol", workers)
    early = list(pool_workers._EARLY)
    assert len(early) == workers
    assert all(w.forked(60) is None and w.process.is_alive() for w in early)
    return [worker.process.pid for worker in early]


def _ran_in(tmp_path: Path) -> set[int]:
    return {int(line) for line in (tmp_path / "pids").read_text().split()}


def test_a_run_s_cases_go_to_the_workers_started_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(tmp_path, monkeypatch)
    early = set(_started_early(2))
    report = run_suite(_suite(tmp_path, 8), agent=agent, jobs=2)
    assert report.all_passed and len(report.cases) == 8
    assert _ran_in(tmp_path) == early  # no other worker was started
    assert pool_workers._EARLY == []
    # Stopped as the pool ended, and joined as the run ended: none outlives it.
    assert pool_workers._STOPPING == []
    assert all(process_gone(pid, wait=0) for pid in early)


def test_a_worker_started_early_that_the_run_has_no_use_for_is_ended_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(tmp_path, monkeypatch)
    early = _started_early(2)
    report = run_suite(_suite(tmp_path, 1), agent=agent, jobs=2)
    assert report.all_passed
    (used,) = _ran_in(tmp_path)
    (unused,) = set(early) - {used}
    assert pool_workers._EARLY == []
    assert process_gone(unused)


def test_a_worker_started_early_that_died_is_handed_no_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(tmp_path, monkeypatch)
    dead, alive = _started_early(2)
    os.kill(dead, signal.SIGKILL)
    assert process_gone(dead)
    report = run_suite(_suite(tmp_path, 6), agent=agent, jobs=2)
    # Every case passed: none was blamed on the dead worker, or lost with it.
    assert report.all_passed and len(report.cases) == 6
    ran = _ran_in(tmp_path)
    assert dead not in ran and alive in ran


def test_workers_started_from_a_fork_server_since_replaced_are_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(tmp_path, monkeypatch)
    early = _started_early(2)
    server = fork_server.pid()
    assert server is not None
    fork_server.kill(server)  # its workers die with it
    report = run_suite(_suite(tmp_path, 4), agent=agent, jobs=2)
    assert report.all_passed and len(report.cases) == 4
    assert not _ran_in(tmp_path) & set(early)
    assert fork_server.pid() != server


def _no_worker_left() -> bool:
    """Whether no worker process of this one is left (a run may end before the server has
    forked its early workers: they end as they start), waiting a few seconds for those
    ended to be gone."""
    import multiprocessing

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        workers = multiprocessing.active_children()
        if not any(p.name == "zeroclaw-eval-worker" for p in workers):
            return True
        time.sleep(0.05)
    return False


def test_no_worker_started_early_outlives_a_run_whose_suite_was_refused(tmp_path: Path) -> None:
    from harness.io.problems import AdmissionError

    pool_workers.end_early()
    assert _no_worker_left()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "bad.json").write_text("{not json")
    for _ in range(2):
        with pytest.raises(AdmissionError):
            run_suite(suite, jobs=2)
    assert pool_workers._EARLY == []
    assert _no_worker_left()


def test_no_worker_started_early_outlives_a_run_that_made_no_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from harness.agents.protocol import LoopAdapter
    from harness.agents.registry import resolve_agent

    class Unpicklable(LoopAdapter):
        """An adapter object no worker can be sent: its cases run in this process."""

        def __init__(self, inner: LoopAdapter) -> None:
            super().__init__(inner.name, inner._factory)
            self.lock = threading.Lock()

    pool_workers.end_early()
    assert _no_worker_left()
    adapter = resolve_agent(_agent(tmp_path, monkeypatch))
    assert isinstance(adapter, LoopAdapter)
    report = run_suite(_suite(tmp_path, 2), agent=Unpicklable(adapter), jobs=2)
    assert report.all_passed and _ran_in(tmp_path) == {os.getpid()}
    assert _no_worker_left()


def test_the_messages_of_a_worker_s_pipe_are_read_whole_however_they_arrive() -> None:
    import multiprocessing
    import threading
    import types

    ours, theirs = multiprocessing.Pipe()
    # Larger than one read, and small ones around it: what multiprocessing's `send` wrote.
    sent = [("ready",), ("report", 1, b"x" * 200_000, None), ("report", 2, b"{}", (b"a", b"b"))]
    writer = threading.Thread(target=lambda: [theirs.send(m) for m in sent])
    writer.start()
    reader = types.SimpleNamespace(_fd=ours.fileno(), _unread=bytearray())
    got: list[object] = []
    reads = 0
    while len(got) < len(sent):
        got += pool_workers.Worker.messages(reader)  # type: ignore[arg-type]
        reads += 1
    writer.join()
    assert got == sent and reads > 1
    assert reader._unread == b""
    theirs.close()
    with pytest.raises(EOFError):
        pool_workers.Worker.messages(reader)  # type: ignore[arg-type]
    ours.close()


def _one_big_message_read() -> None:
    """A message of a megabyte sent through a pipe is read whole by one look at it."""
    import multiprocessing
    import threading
    import types

    ours, theirs = multiprocessing.Pipe()
    big = ("report", 7, b"y" * 1_000_000, None)
    writer = threading.Thread(target=theirs.send, args=(big,))
    writer.start()
    reader = types.SimpleNamespace(_fd=ours.fileno(), _unread=bytearray())
    assert pool_workers.Worker.messages(reader) == [big]  # type: ignore[arg-type]
    writer.join()
    ours.close()
    theirs.close()


def test_a_message_larger_than_one_read_is_read_on_until_it_is_whole() -> None:
    _one_big_message_read()


@pytest.mark.parametrize(
    "header",
    [
        (-1).to_bytes(4, "big", signed=True) + (1 << 62).to_bytes(8, "big"),
        (-1).to_bytes(4, "big", signed=True) + (1 << 40).to_bytes(8, "big"),
        (-5).to_bytes(4, "big", signed=True),
    ],
    ids=["2**62", "over the bound", "negative"],
)
def test_a_corrupt_frame_is_the_pipe_s_end_and_nothing_is_allocated_for_it(header: bytes) -> None:
    import multiprocessing
    import types

    ours, theirs = multiprocessing.Pipe()
    os.write(theirs.fileno(), header + b"x" * 100)
    reader = types.SimpleNamespace(_fd=ours.fileno(), _unread=bytearray())
    # An EOFError, as a pipe that ended is: the pool stops the worker, its case's run error.
    with pytest.raises(EOFError):
        pool_workers.Worker.messages(reader)  # type: ignore[arg-type]
    ours.close()
    theirs.close()


def test_a_large_message_is_read_a_bounded_piece_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []
    real = os.read

    def read(fd: int, size: int) -> bytes:
        asked.append(size)
        return real(fd, size)

    monkeypatch.setattr(pool_workers.os, "read", read)
    monkeypatch.setattr(pool_workers, "_READ_CAP", 1 << 17, raising=False)
    _one_big_message_read()
    assert max(asked) == 1 << 17


def test_a_message_the_pipe_will_not_take_now_is_sent_later_whole_and_in_order() -> None:
    # What is sent to a worker is written at once where its pipe takes it, with no thread;
    # what a full pipe will not take (a worker busy with a long case reads nothing) goes on
    # a thread, and so does everything after it until the thread has written what it was
    # given: the harness never waits for the worker.
    import multiprocessing
    import socket
    import threading
    import types

    ours, theirs = multiprocessing.Pipe()
    sender = types.SimpleNamespace(_out=socket.socket(fileno=os.dup(ours.fileno())), _feeding=None)
    big = ("spec", b"z" * 4_000_000)  # far more than the pipe holds
    sent = [("run", [1]), big, ("stop",)]
    posting = threading.Thread(
        target=lambda: [pool_workers.Worker.post(sender, m) for m in sent]  # type: ignore[arg-type]
    )
    posting.start()
    posting.join(30)
    assert not posting.is_alive()  # all sent, though nothing of it was read yet
    assert sender._feeding is not None  # the big one went on the thread
    assert [theirs.recv() for _ in sent] == sent  # framed as multiprocessing frames them
    sender._feeding.put(None)
    for each in (sender._out, ours, theirs):
        each.close()


def test_once_the_feeding_thread_has_written_its_backlog_messages_are_written_here_again() -> None:
    # The thread is there for what a full pipe would not take: once it has written all of
    # it, the next message is written at once, as before the pipe filled, not handed to
    # the thread (which each one would wake); and it still comes after the backlog.
    import multiprocessing
    import socket
    import types

    ours, theirs = multiprocessing.Pipe()
    sender = types.SimpleNamespace(_out=socket.socket(fileno=os.dup(ours.fileno())), _feeding=None)
    big = ("spec", b"z" * 4_000_000)  # far more than the pipe holds
    pool_workers.Worker.post(sender, big)  # type: ignore[arg-type]
    feeding = sender._feeding
    assert feeding is not None  # the big one went on the thread
    assert theirs.recv() == big
    deadline = time.monotonic() + 30
    while not feeding.idle() and time.monotonic() < deadline:
        time.sleep(0.01)
    handed: list[object] = []
    feeding.put = handed.append  # what is handed to the thread from here on
    small = ("run", [1, 2, 3])
    pool_workers.Worker.post(sender, small)  # type: ignore[arg-type]
    assert handed == []
    assert theirs.recv() == small
    del feeding.put
    feeding.put(None)
    for each in (sender._out, ours, theirs):
        each.close()


def test_a_message_posted_while_the_thread_has_a_backlog_comes_after_all_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Written here while the thread still has some to write (the pipe has room again, the
    # backlog is not all written), it would land in the middle of a message: a corrupt frame.
    import multiprocessing
    import socket
    import threading
    import types

    go = threading.Event()
    feed = pool_workers._feed

    def held(out: socket.socket, feeding: Any) -> None:  # writes nothing until told to
        go.wait(30)
        feed(out, feeding)

    monkeypatch.setattr(pool_workers, "_feed", held)
    ours, theirs = multiprocessing.Pipe()
    sender = types.SimpleNamespace(_out=socket.socket(fileno=os.dup(ours.fileno())), _feeding=None)
    big = ("spec", b"z" * 4_000_000)
    pool_workers.Worker.post(sender, big)  # type: ignore[arg-type]
    feeding = sender._feeding
    assert feeding is not None and not feeding.idle()
    got = bytearray()
    while chunk := _read_now(theirs.fileno()):  # all the pipe took: it has room again
        got += chunk
    small = ("run", [1, 2, 3])
    pool_workers.Worker.post(sender, small)  # type: ignore[arg-type]
    go.set()
    expected = frames.framed(frames.dumps(big)) + frames.framed(frames.dumps(small))
    while len(got) < len(expected):
        got += os.read(theirs.fileno(), 1 << 20)
    assert bytes(got) == expected
    feeding.put(None)
    for each in (sender._out, ours, theirs):
        each.close()


def _read_now(fd: int) -> bytes:
    """What the pipe holds now (b"": nothing)."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""
    finally:
        os.set_blocking(fd, True)


@pytest.mark.parametrize(
    "payload",
    [b"not a pickle at all", pickle.dumps(42), pickle.dumps(()), pickle.dumps("report")],
    ids=["garbage", "a number", "an empty tuple", "a string"],
)
def test_a_frame_that_holds_no_message_ends_the_pipe_not_the_harness(payload: bytes) -> None:
    # Something else in the worker (its agent's code) may write to the pipe: a frame whole
    # but holding no message made `pickle` raise, or `message[0]` fail, in the harness.
    import multiprocessing
    import types

    ours, theirs = multiprocessing.Pipe()
    reader = types.SimpleNamespace(_fd=ours.fileno(), _unread=bytearray(), used=None)
    os.write(theirs.fileno(), frames.framed(payload))
    with pytest.raises(EOFError, match="holds no message"):  # the pipe taken for ended
        pool_workers.Worker.messages(reader)  # type: ignore[arg-type]
    theirs.close()
    ours.close()


def test_a_read_that_does_not_wait_lists_the_whole_messages_and_keeps_the_rest() -> None:
    import multiprocessing
    import types

    ours, theirs = multiprocessing.Pipe()
    reader = types.SimpleNamespace(_fd=ours.fileno(), _unread=bytearray(), used=None)
    first, second = ("admitted", 0, "a" * 100), ("admitted", 64, "b" * 100)
    framed = [frames.framed(frames.dumps(m)) for m in (first, second)]
    os.write(theirs.fileno(), framed[0] + framed[1][:10])  # the second one begun
    assert pool_workers.Worker.messages(reader, wait=False) == [first]  # type: ignore[arg-type]
    os.write(theirs.fileno(), framed[1][10:20])
    assert pool_workers.Worker.messages(reader, wait=False) == []  # type: ignore[arg-type]
    os.write(theirs.fileno(), framed[1][20:])
    assert pool_workers.Worker.messages(reader, wait=False) == [second]  # type: ignore[arg-type]
    assert reader._unread == bytearray()
    theirs.close()
    with pytest.raises(EOFError):
        pool_workers.Worker.messages(reader, wait=False)  # type: ignore[arg-type]
    ours.close()


def _returns(call: object, within: float = 30.0) -> bool:
    """Whether `call()` returned within `within` seconds (it is left running if not)."""
    import threading

    thread = threading.Thread(target=call, daemon=True)  # type: ignore[arg-type]
    thread.start()
    thread.join(within)
    return not thread.is_alive()


def test_workers_launched_while_the_server_is_stopped_are_never_waited_for() -> None:
    # Launching a worker waits for nothing (the server forks it when it gets to it); one
    # still waiting for the server as the run ends is ended without waiting for it: its
    # pipe closed, it ends as it starts.
    pool_workers.end_early()
    start_fork_server(watchdog.run_batch.__module__, "harness.agents.protocol", 0)
    server = fork_server.pid()
    assert server is not None
    os.kill(server, signal.SIGSTOP)
    try:
        run = watchdog.run_batch.__module__
        assert _returns(lambda: start_fork_server(run, "harness.agents.protocol", 2))
        assert len(pool_workers._EARLY) == 2
        assert _returns(pool_workers.end_early)
        assert pool_workers._EARLY == []
        # Nor are they among the children this process's exit joins: with the server
        # stopped, that join would never end.
        import multiprocessing

        workers = multiprocessing.active_children()
        assert not any(p.name == "zeroclaw-eval-worker" for p in workers)
    finally:
        os.kill(server, signal.SIGCONT)
    assert _no_worker_left()
    assert fork_server.pid() == server and fork_server.lost(server) is None


def test_a_default_socket_timeout_leaves_a_worker_s_pipe_blocking() -> None:
    # The descriptor the harness writes a worker's messages through shares its open file
    # with the one it reads them from: a library's default socket timeout made both
    # non-blocking, and a report longer than one read was taken for the worker's end.
    import socket

    socket.setdefaulttimeout(5.0)
    try:
        _started_early(1)
        (worker,) = pool_workers._EARLY
        assert os.get_blocking(worker.conn.fileno())
    finally:
        socket.setdefaulttimeout(None)
        pool_workers.end_early()


def test_a_run_through_the_api_leaves_no_stopped_worker_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `run_cases` called as it is (no `run` around it to end the run's workers): the
    # workers its pool stopped are joined as it returns, their pipes closed.
    from harness.agents.registry import resolve_within
    from harness.fixtures.suite import load_suite
    from harness.pipeline import run_cases

    pool_workers.end_early()
    adapter, surface = resolve_within(_agent(tmp_path, monkeypatch), 30.0)
    cases = load_suite(_suite(tmp_path, 4), "replay", surface)
    report = run_cases(cases, adapter, suite="s", jobs=2, root=tmp_path)
    assert report.all_passed
    assert pool_workers._STOPPING == []
    assert all(process_gone(pid, wait=0) for pid in _ran_in(tmp_path))
