"""What crosses to a worker process: a case as a worker gets it (`Item`), and what it sends
back of its plain passes (`_Sender`): spooled as each is done, sent a run at once."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    BUILTIN_SURFACE,
    Sent,
    failing_report,
    passing_report,
    replay_trace,
    write_fixture,
)

from harness.fixtures.suite import AdmittedCases, load_suite
from harness.run import pool_worker
from harness.run.pool_worker import FLUSH_SECS, Item, _Sender
from harness.run.spools import Spools, spooled
from harness.run.watchdog import run_batch
from harness.verdict.kept import SCORES, Passes, Prerendering
from harness.verdict.reports import CaseReport


def three_cases(tmp_path: Path) -> AdmittedCases:
    """A suite of three fixtures (ids c0, c1, c2, files f0.json..f2.json) in `tmp_path`."""
    for n in range(3):
        write_fixture(tmp_path, f"f{n}.json", replay_trace(id=f"c{n}"))
    return load_suite(tmp_path, "replay", BUILTIN_SURFACE)


def test_a_case_of_an_admitted_suite_is_sent_as_the_case_made_from_it_is(tmp_path: Path) -> None:
    # Sent without making the case (the suite's columns read as they are held): the same
    # item, down to the digests the worker checks the file against.
    suite = three_cases(tmp_path)
    for place in range(3):
        item = Item.at(place, suite)
        assert item == Item.of(place, suite[place])
        assert item.digest is not None and item.case().id == f"c{place}"
    cases = list(suite)  # any other sequence of cases: each made, as before
    assert Item.at(2, cases) == Item.of(2, cases[2])


def test_the_cases_sent_are_plain_tuples_of_what_each_item_holds(tmp_path: Path) -> None:
    suite = three_cases(tmp_path)
    for cases in (suite, list(suite)):
        sent = Item.all_at([2, 0], cases)
        assert [type(item) for item in sent] == [tuple, tuple]  # no class to pickle by name
        assert sent == [tuple(Item.at(2, cases)), tuple(Item.at(0, cases))]
        assert Item._make(sent[0]).case().id == "c2"


def test_an_admitted_suite_goes_to_the_workers_once_and_its_cases_by_their_places(
    tmp_path: Path,
) -> None:
    suite = three_cases(tmp_path)
    spec = pool_worker.WorkerSpec(run_batch, "echo", None, None, {}, "", [], {})
    with_suite = dataclasses.replace(spec, suite=pickle.dumps(suite))
    assert pool_worker.crossing(with_suite, [2, 0], suite) == [2, 0]
    held = pickle.loads(with_suite.suite or b"")
    # The worker makes each case from the suite it holds: the case an `Item` would make.
    made = dict(zip(*pool_worker._batch([2, 0], held), strict=True))
    expected = dict(zip(*pool_worker._batch(Item.all_at([2, 0], suite), None), strict=True))
    assert list(made) == list(expected) == [2, 0]
    for place in (2, 0):
        assert made[place] == expected[place] == suite[place]
        assert made[place].digest == expected[place].digest is not None
        assert made[place].canonical == expected[place].canonical
    # Any other sequence of cases is sent case by case, as before.
    assert pool_worker.crossing(spec, [2, 0], list(suite)) == Item.all_at([2, 0], list(suite))


def test_a_suite_pickled_for_the_workers_is_its_columns_alone(tmp_path: Path) -> None:
    suite = three_cases(tmp_path)
    suite[1].trace  # noqa: B018 (a case made and read: not sent along)
    # An id holding the separator the ids are pickled joined by: sent as a list.
    odd = AdmittedCases(str(tmp_path) + os.sep)
    for n, case_id in enumerate(["c0", "with\0nul", ""]):
        odd.append(str(tmp_path / f"f{n}.json"), case_id, bytes(32), None)
    # One case whose id is empty joins to the text no case does: a case all the same.
    blank = AdmittedCases(str(tmp_path) + os.sep)
    blank.append(str(tmp_path / "f0.json"), "", bytes(32), None)
    for cases in (suite, suite.picked([0, 2]), suite.picked([]), odd, blank):
        again = pickle.loads(pickle.dumps(cases))
        assert again._last is None  # before anything reads a case of it
        assert len(again) == len(cases) and again.ids() == cases.ids()
        assert [again.held_at(i) for i in range(len(again))] == [
            cases.held_at(i) for i in range(len(cases))
        ]
    assert pickle.loads(pickle.dumps(suite)) == suite


class Part:
    """A worker part (`Prerender`): the case's id, as its reporter would write it."""

    @staticmethod
    def render(report: CaseReport) -> object:
        return f"part of {report.id}"


def test_plain_passes_are_spooled_as_each_is_done_and_sent_a_run_at_once(tmp_path: Path) -> None:
    pipe, spool = Sent(), str(tmp_path / "spool")
    send = _Sender(pipe, Prerendering((Part,), passes=True), spool)
    send.index_of = {name: place for place, name in enumerate(["a", "b", "c", "d", "e"])}
    for name in ("a", "b", "c"):
        send(passing_report(name))
    # Nothing sent yet; should the next case kill the worker, the harness reads them here.
    assert pipe.messages == []
    assert [(place, name) for place, name, _, _ in spooled(spool).passes] == [
        (0, "a"),
        (1, "b"),
        (2, "c"),
    ]
    assert [parts for _, _, _, parts in spooled(spool).passes] == [
        ("part of a",),
        ("part of b",),
        ("part of c",),
    ]
    send(failing_report("d"))  # any other message goes after the passes before it
    assert [message[0] for message in pipe.messages] == ["run", "report"]
    assert pipe.messages[0] == (
        "run",
        0,
        bytes([SCORES[1.0]] * 3),
        [["part of a", "part of b", "part of c"]],
        {},
    )
    assert spooled(spool).passes == []  # sent: the spool starts again
    send(passing_report("e"))
    send.flush()  # the batch is done
    assert pipe.messages[-1] == ("run", 4, bytes([SCORES[1.0]]), [["part of e"]], {})


def test_a_pass_done_long_after_the_last_message_is_sent_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Held until the next case ended, a slow case's pass would leave the harness hearing
    # nothing for two cases' time, and its stall clock (one case's allowance) would blame
    # the second case for a stall it never had.
    now = [0.0]
    monkeypatch.setattr(pool_worker.time, "monotonic", lambda: now[0])
    pipe = Sent()
    send = _Sender(pipe, Prerendering((Part,), passes=True), str(tmp_path / "spool"))
    send.index_of = {"a": 0, "b": 1, "c": 2}
    now[0] = FLUSH_SECS + 5.0  # the case took its time
    send(passing_report("a"))
    assert [message[:2] for message in pipe.messages] == [("run", 0)]
    now[0] += FLUSH_SECS / 10  # a quick one right after a message: held
    send(passing_report("b"))
    assert len(pipe.messages) == 1
    now[0] += FLUSH_SECS  # then one done a while after the last message: goes with b
    send(passing_report("c"))
    assert [message[:2] for message in pipe.messages] == [("run", 0), ("run", 1)]


def test_a_pass_that_does_not_follow_on_starts_a_run_of_its_own(tmp_path: Path) -> None:
    pipe = Sent()
    send = _Sender(pipe, Prerendering((Part,), passes=True), str(tmp_path / "spool"))
    send.index_of = {"a": 0, "c": 2}
    send(passing_report("a"))
    send(passing_report("c"))
    send.flush()
    assert [message[:2] for message in pipe.messages] == [("run", 0), ("run", 2)]


def test_a_spool_cut_short_as_its_worker_died_gives_the_whole_passes_before(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    send = _Sender(Sent(), Prerendering((Part,), passes=True), str(spool))
    send.index_of = {"a": 0, "b": 1}
    send(passing_report("a"))
    send(passing_report("b"))
    spool.write_bytes(spool.read_bytes()[:-3])  # the second, written in part
    assert [name for _, name, _, _ in spooled(str(spool)).passes] == ["a"]
    assert spooled(str(tmp_path / "none")).passes == []


class Streamed:
    """A worker part written into files of its worker's own (`streams`): the case's id,
    and its name where it has one (a second stream, joined by a separator)."""

    streams = (b"", b"|")

    @staticmethod
    def render(report: CaseReport) -> object:
        return (b"id " + report.id.encode(), b"named" if report.id != "b" else None)

    @staticmethod
    def spill(parts: Any) -> tuple[bytes | None, ...]:
        return parts[1], parts[0]

    @staticmethod
    def unspill(streams: tuple[bytes | None, ...]) -> object:
        return (streams[1], streams[0])


def test_parts_a_worker_writes_into_files_of_its_own_are_read_back_as_rendered(
    tmp_path: Path,
) -> None:
    pipe, spool = Sent(), str(tmp_path / "spool")
    send = _Sender(pipe, Prerendering((Part, Streamed), passes=True), spool)
    send.index_of = {name: place for place, name in enumerate("abcde")}
    for name in "abc":
        send(passing_report(name))
    send.flush()
    send(passing_report("e"))  # a run of its own, after the first
    send.flush()
    runs = []
    files = [Path(f"{spool}.1.{n}").open("rb") for n in range(2)]  # noqa: SIM115 (read below)
    for _, first, codes, columns, spilled in pipe.messages:
        assert columns[1] is None and list(spilled) == [1]  # none of it in the message
        streams = tuple([(files[n], *where)] for n, where in enumerate(spilled[1]))
        runs.append(Passes.run((Part, Streamed), first, codes, columns, None, {1: streams}))
    rendered = [Streamed.render(passing_report(name)) for name in "abce"]
    assert runs[0].spilled(Streamed) is not None
    joined = Passes.joined(runs[:1]).parts(Streamed) + runs[1].parts(Streamed)
    assert joined == rendered
    second = runs[1].spilled(Streamed)
    assert second is None  # read: held from now on
    assert Path(f"{spool}.1.1").read_bytes() == b"id a|id b|id cid e"  # runs, each joined
    for file in files:
        file.close()


def test_a_worker_that_cannot_spool_sends_each_pass_with_its_report(tmp_path: Path) -> None:
    pipe = Sent()
    send = _Sender(pipe, Prerendering((Part,), passes=True), str(tmp_path / "gone" / "spool"))
    send.index_of = {"a": 0}
    send(passing_report("a"))  # never held: nothing would find it should the worker die
    assert [message[:2] for message in pipe.messages] == [("report", 0)]


def test_a_record_written_in_part_before_a_whole_one_ends_the_spool_read(tmp_path: Path) -> None:
    # A full disk cuts a record short and the next lands after it: read on, the reader
    # would take its bytes for a record and fail the run with an unpickling error.
    spool = tmp_path / "spool"
    send = _Sender(Sent(), Prerendering((Part,), passes=True), str(spool))
    send.index_of = {"a": 0, "b": 1}
    send(passing_report("a"))
    whole = spool.read_bytes()
    send(passing_report("b"))
    second = spool.read_bytes()[len(whole) :]
    spool.write_bytes(whole + second[:-3] + second)
    assert [name for _, name, _, _ in spooled(str(spool)).passes] == ["a"]


def test_a_pass_spooled_in_part_is_sent_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe, spool = Sent(), tmp_path / "spool"
    send = _Sender(pipe, Prerendering((Part,), passes=True), str(spool))
    send.index_of = {"a": 0}
    write = os.write
    monkeypatch.setattr(pool_worker.os, "write", lambda fd, data: write(fd, data[:5]))
    send(passing_report("a"))
    assert [message[:2] for message in pipe.messages] == [("run", 0)]
    assert spool.read_bytes() == b""  # sent: nothing left half written for a reader


def test_a_gone_workers_files_are_let_go_of_and_a_new_one_named_afresh(tmp_path: Path) -> None:
    spools = Spools((Part, Streamed))
    try:
        first, second = object(), object()
        spool, streams = spools.paths(first)
        send = _Sender(Sent(), Prerendering((Part, Streamed), passes=True), spool, streams)
        send.index_of = {"a": 0}
        send(passing_report("a"))
        send.flush()
        [message] = send._conn.messages
        held = spools.run(first, message)
        spools.forget(first)
        assert not [n for n in os.listdir(os.path.dirname(streams)) if n.startswith("0.")]
        assert not os.path.exists(spool)
        assert held.parts(Streamed) == [Streamed.render(passing_report("a"))]  # still read
        named = {spools.paths(object())[0] for _ in range(3)} | {spools.paths(second)[0]}
        assert spool not in named and len(named) == 4
    finally:
        spools.close()
