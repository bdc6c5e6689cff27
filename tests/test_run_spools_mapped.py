"""A worker's spool file mapped (`spools.Spool`, in a file system in memory): each record is
in the file as it is copied there, and read back whole should the worker die."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Sent, passing_report

from harness.run import spools
from harness.run.pool_worker import _Sender
from harness.run.spools import Spool, record, spooled
from harness.verdict.kept import SCORES, Prerendering
from harness.verdict.reports import CaseReport

_BIG = "x" * 5000  # a record of a few kilobytes: 300 of them outgrow the first mapping


def _entry(n: int) -> tuple[int, str, float, tuple[str]]:
    return (n, f"c{n}", 1.0, (_BIG,))


@pytest.fixture
def in_memory() -> Iterator[Path]:
    """A folder in the file system in memory, where a worker's spool is mapped."""
    if not os.path.isdir(spools._SHARED_MEMORY):
        pytest.skip("no file system in memory here")
    folder = spools.tempfile.mkdtemp(dir=spools._SHARED_MEMORY)
    yield Path(folder)
    spools.shutil.rmtree(folder)


def test_a_mapped_spool_grown_past_its_first_size_is_read_back_whole_after_its_worker_is_killed(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "spool")
    count = 300
    pid = os.fork()
    if pid == 0:  # the worker: spools its passes, then is killed with nothing sent
        try:
            spool = Spool(path, mapped=True)
            for n in range(count):
                assert spool.add(record(_entry(n)))
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert os.path.getsize(path) > spools._MAPPED  # grown past its first size
    assert spooled(path).passes == [_entry(n) for n in range(count)]


def test_a_mapped_spool_cleared_holds_only_the_records_after(tmp_path: Path) -> None:
    path = str(tmp_path / "spool")
    spool = Spool(path, mapped=True)
    for n in range(3):
        assert spool.add(record(_entry(n)))
    assert [entry[0] for entry in spooled(path).passes] == [0, 1, 2]
    spool.clear()
    assert spooled(path).passes == []  # the records of the run sent, though still in its pages
    assert spool.add(record(_entry(7)))
    assert spooled(path).passes == [_entry(7)]


def test_a_spool_in_memory_is_mapped_and_one_elsewhere_written(
    tmp_path: Path, in_memory: Path
) -> None:
    written = tmp_path / "spool"
    Spool(str(written)).add(record(_entry(0)))
    assert written.stat().st_size == len(record(_entry(0)))  # each record written, no more
    path = str(in_memory / "spool")
    Spool(path).add(record(_entry(0)))
    assert os.path.getsize(path) == spools._MAPPED  # mapped: room for more
    assert spooled(path).passes == [_entry(0)]


def _full(fd: int, offset: int, length: int) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_spool_that_cannot_be_mapped_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spools.os, "posix_fallocate", _full)
    path = tmp_path / "spool"
    spool = Spool(str(path), mapped=True)
    assert spool.add(record(_entry(0)))
    assert path.read_bytes() == record(_entry(0))


class Part:
    """A worker part: the case's id."""

    @staticmethod
    def render(report: CaseReport) -> object:
        return report.id


def test_a_pass_a_full_mapped_spool_has_no_room_for_is_sent_at_once(
    in_memory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spools, "_MAPPED", 4096)  # room for a pass or two
    pipe, spool = Sent(), str(in_memory / "spool")
    send = _Sender(pipe, Prerendering((Part,), passes=True), spool)
    send.index_of = {"a": 0, "b": 1}
    send(passing_report("a"))
    assert pipe.messages == []  # spooled: held
    assert os.path.getsize(spool) == 4096  # mapped
    monkeypatch.setattr(spools.os, "posix_fallocate", _full)  # the file system is full
    big = passing_report("b")
    assert big.record is not None
    big.record.final_response = "y" * 8192
    send(big)  # no room for it: sent with the pass before it, at once
    assert pipe.messages == [("run", 0, bytes([SCORES[1.0]] * 2), [["a", "b"]], {})]
    assert spooled(spool).passes == []  # sent: the spool starts again
