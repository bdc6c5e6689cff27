"""What crosses to a worker process: a case as a worker gets it (`Item`)."""

from __future__ import annotations

from pathlib import Path

from conftest import BUILTIN_SURFACE, replay_trace, write_fixture

from harness.fixtures.suite import load_suite
from harness.run.pool_worker import Item


def test_a_case_of_an_admitted_suite_is_sent_as_the_case_made_from_it_is(tmp_path: Path) -> None:
    # Sent without making the case (the suite's columns read as they are held): the same
    # item, down to the digests the worker checks the file against.
    for n in range(3):
        write_fixture(tmp_path, f"f{n}.json", replay_trace(id=f"c{n}"))
    suite = load_suite(tmp_path, "replay", BUILTIN_SURFACE)
    for place in range(3):
        item = Item.at(place, suite)
        assert item == Item.of(place, suite[place])
        assert item.digest is not None and item.case().id == f"c{place}"
    cases = list(suite)  # any other sequence of cases: each made, as before
    assert Item.at(2, cases) == Item.of(2, cases[2])
