"""When a worker renders the parts of its plain passes (`_Sender`): a run's at once, as
the run is sent; until then each pass is spooled as its encoded report, which the harness
renders should the worker die before sending it (`spools.spooled`); and how a worker holds
the cases of a batch it runs (`pool_worker._batch`)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest
from conftest import BUILTIN_SURFACE, Sent, passing_report, replay_trace, write_fixture
from test_run_pool_worker import three_cases

from harness.fixtures.suite import AdmittedCases, display_path, load_suite
from harness.run import pool_worker
from harness.run.pool_worker import Item, _Sender
from harness.run.spools import spooled
from harness.verdict.kept import SCORES, Prerendering
from harness.verdict.reports import CaseReport


class Counted:
    """A worker part that counts the reports it rendered, and fails for the case `bad`."""

    rendered: ClassVar[list[str]] = []

    @staticmethod
    def render(report: CaseReport) -> object:
        if report.id == "bad":
            raise ValueError("a reporter's bug")
        Counted.rendered.append(report.id)
        return f"part of {report.id}"


def _sender(
    tmp_path: Path, *names: str, kinds: tuple[Any, ...] = (Counted,)
) -> tuple[Sent, _Sender, str]:
    Counted.rendered.clear()
    pipe, spool = Sent(), str(tmp_path / "spool")
    send = _Sender(pipe, Prerendering(kinds, passes=True), spool)
    send.index_of = {name: place for place, name in enumerate(names)}
    return pipe, send, spool


def test_a_run_s_passes_are_rendered_as_it_is_sent_not_as_each_is_done(tmp_path: Path) -> None:
    pipe, send, spool = _sender(tmp_path, "a", "b", "c")
    for name in "abc":
        send(passing_report(name))
    assert Counted.rendered == []  # nothing rendered between the cases
    send.flush()
    assert Counted.rendered == ["a", "b", "c"]
    assert pipe.messages == [
        ("run", 0, bytes([SCORES[1.0]] * 3), [["part of a", "part of b", "part of c"]], {})
    ]
    assert spooled(spool).passes == []


def test_a_dead_worker_s_spooled_reports_are_rendered_where_they_are_read(
    tmp_path: Path,
) -> None:
    pipe, send, spool = _sender(tmp_path, "a", "b")
    send(passing_report("a"))
    send(passing_report("b"))  # then the worker dies: nothing sent, nothing rendered there
    assert pipe.messages == [] and Counted.rendered == []
    found = spooled(spool).passes
    assert found == [(0, "a", 1.0, ("part of a",)), (1, "b", 1.0, ("part of b",))]
    assert Counted.rendered == ["a", "b"]  # rendered by the reader, from the reports spooled


def test_a_spool_that_starts_again_names_its_kinds_again(tmp_path: Path) -> None:
    pipe, send, spool = _sender(tmp_path, "a", "b")
    send(passing_report("a"))
    send.flush()
    send(passing_report("b"))
    assert [message[:2] for message in pipe.messages] == [("run", 0)]
    assert [entry[:2] for entry in spooled(spool).passes] == [(1, "b")]


def test_a_pass_whose_parts_fail_goes_with_its_report_between_the_runs(tmp_path: Path) -> None:
    pipe, send, _ = _sender(tmp_path, "a", "bad", "c")
    bad = passing_report("bad")
    for report in (passing_report("a"), bad, passing_report("c")):
        send(report)
    send.flush()
    assert [message[:2] for message in pipe.messages] == [("run", 0), ("report", 1), ("run", 2)]
    _, _, payload, parts = pipe.messages[1]
    assert parts is None and msgspec.json.decode(payload, type=CaseReport) == bad


def _odd(name: str) -> CaseReport:
    """A plain pass holding an own loop's message with a role no `Message` has: it
    encodes, but does not read back as its type."""
    from harness import Message
    from harness.transcript import TranscriptStep

    report = passing_report(name)
    assert report.record is not None
    step = TranscriptStep(turn=0, step=0, sent=[Message(role="developer", content="x")])
    record = msgspec.structs.replace(report.record, transcript=[step])
    return msgspec.structs.replace(report, record=record)


def test_a_spooled_pass_that_cannot_be_reported_is_left_to_run_again_not_ending_the_read(
    tmp_path: Path,
) -> None:
    # Once, one that did not read back ended what the harness read of a dead worker's
    # spool, and the pass after the last one read (not the case that killed the worker)
    # was blamed. A worker checking each report it holds cost a tenth of a plain case.
    pipe, send, spool = _sender(tmp_path, "a", "b", "bad", "d")
    for report in (passing_report("a"), _odd("b"), passing_report("bad"), passing_report("d")):
        send(report)  # then the worker dies
    assert pipe.messages == [] and Counted.rendered == []  # held as they are, unchecked
    found = spooled(spool)
    assert [entry[:2] for entry in found.passes] == [(0, "a"), (3, "d")]
    assert found.again == [1, 2]  # a role its type refuses; a reporter's bug
    send.flush()  # had it lived: the odd one is rendered from the report it holds
    assert [message[:2] for message in pipe.messages] == [("run", 0), ("report", 2), ("run", 3)]
    assert pipe.messages[0][3] == [["part of a", "part of b"]]


def test_a_pass_that_cannot_be_encoded_is_spooled_rendered(tmp_path: Path) -> None:
    # A lone surrogate in its text: the spool holds its parts, as rendered at once.
    pipe, send, spool = _sender(tmp_path, "a\ud800")
    send(passing_report("a\ud800"))
    assert Counted.rendered == ["a\ud800"]
    assert spooled(spool).passes == [(0, "a\ud800", 1.0, ("part of a\ud800",))]
    send.flush()
    assert pipe.messages == [("run", 0, bytes([SCORES[1.0]]), [["part of a\ud800"]], {})]


def test_kinds_that_cannot_be_named_have_each_pass_rendered_as_it_is_done(
    tmp_path: Path,
) -> None:
    class Local:  # not importable by its name: a reader could not render with it
        @staticmethod
        def render(report: CaseReport) -> object:
            return report.id

    pipe, send, spool = _sender(tmp_path, "a", kinds=(Local,))
    send(passing_report("a"))
    assert spooled(spool).passes == [(0, "a", 1.0, ("a",))]
    send.flush()
    assert pipe.messages == [("run", 0, bytes([SCORES[1.0]]), [["a"]], {})]


def test_a_worker_runs_a_batch_of_the_suite_it_holds_as_the_suite_s_own_columns(
    tmp_path: Path,
) -> None:
    # Picked from the suite, not made into a list of cases: each case made as it runs,
    # and its fixture's path shown as the suite's folder is, worked out once a batch.
    suite = three_cases(tmp_path)
    held = pickle.loads(pickle.dumps(suite))
    places, cases = pool_worker._batch([2, 0], held)
    assert places == [2, 0] and isinstance(cases, AdmittedCases)
    assert list(cases) == [suite[2], suite[0]]
    root = tmp_path.parent
    assert [cases.shown_at(i, root) for i in range(2)] == [
        display_path(suite[place].where, root) for place in places
    ]
    # Cases sent one by one (no suite held) are made from their items, in order.
    sent = Item.all_at([2, 0], list(suite))
    assert pool_worker._batch(sent, None) == ([2, 0], [suite[2], suite[0]])


def test_a_dead_worker_s_passes_are_rendered_from_its_spool_as_it_would_have(
    tmp_path: Path,
) -> None:
    # A case run whole (its record and transcript), spooled encoded and read back: the
    # parts each reporter renders of it are the bytes the worker would have sent.
    from harness.agents.registry import resolve_agent
    from harness.reporters.json_report import WorkerParts
    from harness.reporters.table import TableLines
    from harness.run.runner import CasePlan, replay_backend
    from harness.run.watchdog import run_watched

    write_fixture(tmp_path, "f0.json", replay_trace(id="c0", description="é ##[x] \u202e"))
    cases = load_suite(tmp_path, "replay", BUILTIN_SURFACE)
    agent = resolve_agent("openai-agents")
    plan = CasePlan(agent, "replay", replay_backend, None, 30.0, tmp_path, keep_transcripts=True)
    [report] = run_watched(cases, plan, None)
    assert report.plain and report.record is not None and report.record.transcript
    kinds = (WorkerParts, TableLines)
    spool = str(tmp_path / "spool")
    send = _Sender(Sent(), Prerendering(kinds, passes=True), spool)
    send.index_of = {"c0": 0}
    send(report)
    [(_, _, _, parts)] = spooled(spool).passes
    assert parts == tuple(kind.render(report) for kind in kinds)


@pytest.mark.parametrize("odd", ["not a tuple", (), ("place", "a", 1.0, ("x",))])
def test_a_spooled_record_that_is_no_pass_ends_the_read_not_the_harness(
    tmp_path: Path, odd: object
) -> None:
    # Unpickled, but no pass: reading it raised out of `spooled` and ended the whole run.
    from harness.run.spools import record

    _, send, spool = _sender(tmp_path, "a", "b")
    send(passing_report("a"))
    with open(spool, "ab") as handle:
        handle.write(record(odd) + record((1, "b", 1.0, ("part of b",))))
    assert [entry[:2] for entry in spooled(spool).passes] == [(0, "a")]
    assert spooled(spool).again == []
