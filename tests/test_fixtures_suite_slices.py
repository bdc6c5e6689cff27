"""A suite admitted in parts (`admit_slice`, each part's `Slice` taken in by `load_suite` in
order) is the suite admitted whole: the same cases, the same problems in the same order,
the duplicate ids found across parts."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from conftest import BUILTIN_SURFACE, lines, replay_trace, write_fixture

from harness.agents.protocol import AgentSurface
from harness.fixtures.listing import Listing
from harness.fixtures.suite import Slice, Slices, admit_slice, load_suite
from harness.io.problems import AdmissionError
from harness.modes import Mode


def _suite(tmp_path: Path) -> Path:
    for n in range(12):
        write_fixture(tmp_path, f"f{n:02d}.json", replay_trace(id=f"c{n}"))
    write_fixture(tmp_path, "f03.json", "{")
    write_fixture(tmp_path, "f05.json", replay_trace(id="c1"))  # the id of another part's
    write_fixture(tmp_path, "f07.json", replay_trace(id=unicodedata.normalize("NFD", "é")))
    write_fixture(tmp_path, "f10.json", replay_trace(id="é"))
    write_fixture(tmp_path, "f11.json", b'{"id": "\xff"}')
    return tmp_path


def _in_parts(size: int) -> Slices:
    def slices(listing: Listing, mode: Mode, agent: AgentSurface) -> list[Slice]:
        parts = []
        for start in range(0, len(listing), size):
            names, irregular = listing.part(start, start + size)
            parts.append(admit_slice(listing.prefix, names, irregular, mode, agent))
        return parts

    return slices


def _problems(directory: Path, slices: Slices | None = None) -> list[str]:
    with pytest.raises(AdmissionError) as caught:
        load_suite(directory, "replay", BUILTIN_SURFACE, slices)
    return lines(caught.value.problems)


@pytest.mark.parametrize("size", [1, 2, 5, 12])
def test_a_suite_admitted_in_parts_has_the_problems_of_one_admitted_whole(
    tmp_path: Path, size: int
) -> None:
    directory = _suite(tmp_path)
    whole = _problems(directory)
    assert len(whole) == 4 and "duplicate case id 'c1'" in whole[2]
    assert _problems(directory, _in_parts(size)) == whole


@pytest.mark.parametrize("size", [1, 3, 12])
def test_a_suite_admitted_in_parts_holds_the_cases_of_one_admitted_whole(
    tmp_path: Path, size: int
) -> None:
    for n in range(12):
        write_fixture(tmp_path, f"f{n:02d}.json", replay_trace(id=f"c{n}"))
    write_fixture(tmp_path, "f04.json", replay_trace(model_name="named-by-model"))
    whole = load_suite(tmp_path, "replay", BUILTIN_SURFACE)
    parts = load_suite(tmp_path, "replay", BUILTIN_SURFACE, _in_parts(size))
    assert [(c.id, c.where, c.digest, c.canonical) for c in parts] == [
        (c.id, c.where, c.digest, c.canonical) for c in whole
    ]
    assert parts == whole


def test_parts_that_do_not_cover_the_suite_are_a_harness_error(tmp_path: Path) -> None:
    for n in range(3):
        write_fixture(tmp_path, f"f{n}.json", replay_trace(id=f"c{n}"))

    def short(listing: Listing, mode: Mode, agent: AgentSurface) -> list[Slice]:
        names, irregular = listing.part(0, 2)
        return [admit_slice(listing.prefix, names, irregular, mode, agent)]

    with pytest.raises(RuntimeError, match="2 of the suite's 3 fixtures admitted"):
        load_suite(tmp_path, "replay", BUILTIN_SURFACE, short)
