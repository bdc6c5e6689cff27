"""`harness.fixtures.reread`: an admitted suite's fixtures read again as their cases run, a
few at a time in suite order, each checked against the digest admission took of it."""

from __future__ import annotations

import gc
import pickle
from pathlib import Path

import pytest
from conftest import BUILTIN_SURFACE, greeting_fixture, write_fixture, write_suite

from harness.fixtures import reread as reread_module
from harness.fixtures.reread import READ_AHEAD
from harness.fixtures.suite import AdmittedCases, FixtureChanged, load_case, load_suite


def _suite(directory: Path, count: int) -> AdmittedCases:
    fixtures = {f"c{k:03d}.json": greeting_fixture(f"c{k}") for k in range(count)}
    cases = load_suite(write_suite(directory, fixtures), "replay", BUILTIN_SURFACE)
    assert isinstance(cases, AdmittedCases)
    return cases


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths read again from now on, in order."""
    read: list[str] = []
    real = reread_module.read_known

    def counted(path: str) -> bytes | None:
        read.append(path)
        return real(path)

    monkeypatch.setattr(reread_module, "read_known", counted)
    return read


def test_a_suites_fixtures_are_read_again_a_few_at_a_time_in_suite_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = READ_AHEAD + 3
    cases = _suite(tmp_path, count)
    read = _reads(monkeypatch)
    where = [cases.where_of(k) for k in range(count)]
    assert cases[0].trace.case_id == "c0"
    assert read == where[:READ_AHEAD]  # the case asked for, and the next ones
    ahead = range(READ_AHEAD)
    assert [cases[k].trace.case_id for k in ahead] == [f"c{k}" for k in ahead]
    assert read == where[:READ_AHEAD]  # found read
    assert cases[READ_AHEAD].trace.case_id == f"c{READ_AHEAD}"
    assert read == where  # each once: the rest with the first of them
    alone = [load_case(Path(w), "replay", BUILTIN_SURFACE) for w in where]
    assert [c.trace for c in cases] == [c.trace for c in alone]
    assert [c.text for c in cases] == [c.text for c in alone]


def test_a_fixture_changed_before_it_is_read_again_is_refused_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = _suite(tmp_path, 4)
    write_fixture(tmp_path, "c002.json", greeting_fixture("c2", reply="Hello, changed!"))
    read = _reads(monkeypatch)
    assert [cases[k].trace.case_id for k in (0, 1)] == ["c0", "c1"]
    with pytest.raises(FixtureChanged, match=r"c002\.json: the fixture changed after it was"):
        _ = cases[2].trace
    assert cases[3].trace.case_id == "c3"
    # Its check failed as it was read ahead: read again when its case asked, and refused.
    assert read.count(cases.where_of(2)) == 2 and len(read) == 5


def test_a_picked_suite_reads_ahead_only_its_own_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a worker runs: the cases of its batch, not the suite's next ones (another's).
    cases = _suite(tmp_path, 10)
    batch = cases.picked([5, 9, 2])
    read = _reads(monkeypatch)
    assert [c.trace.case_id for c in batch] == ["c5", "c9", "c2"]
    assert read == [cases.where_of(k) for k in (5, 9, 2)]


def test_a_case_pickles_without_the_suite_it_was_read_from(tmp_path: Path) -> None:
    cases = _suite(tmp_path, 50)
    case = cases[3]
    again = pickle.loads(pickle.dumps(case))
    assert again == case and again.trace == case.trace and again.id == "c3"
    assert len(pickle.dumps(case)) < len(pickle.dumps(cases))


def test_the_traces_held_read_are_left_alone_by_the_collector(tmp_path: Path) -> None:
    # A run holds a few hundred read ahead: trees, never cycles, walked for nothing.
    trace = _suite(tmp_path, 2)[0].trace
    turn = trace.turns[0]
    assert turn.steps
    step = turn.steps[0]
    assert not any(map(gc.is_tracked, (trace, turn, step, step.response)))
