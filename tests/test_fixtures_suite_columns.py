"""`harness.fixtures.suite.AdmittedCases`: a suite's admitted cases held as columns, each
case made when read, equal to the case its fixture admits alone; the digest of its bytes
still guards against a fixture changed after admission."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import BUILTIN_SURFACE, echo_fixture, greeting_fixture, write_fixture, write_suite

from harness.fixtures.selection import Selection, choose
from harness.fixtures.suite import (
    AdmittedCases,
    FixtureChanged,
    display_path,
    ids_of,
    load_case,
    load_suite,
)


def _suite(directory: Path) -> Path:
    return write_suite(
        directory,
        {
            "a_echo.json": {**echo_fixture("echo"), "id": "echo-ü"},
            "b_hi.json": greeting_fixture("hi"),
            "c_fr.json": {**greeting_fixture("fr"), "id": "façade 🧪"},
            "d_float.json": _with_a_float(echo_fixture("f")),
        },
    )


def _with_a_float(fixture: dict[str, Any]) -> dict[str, Any]:
    """`fixture` with a float among its call's arguments: no canonical digest is made of it
    as it is admitted (`Case.canonical` None), one is made when asked for."""
    fixture["turns"][0]["steps"][0]["response"]["tool_calls"][0]["arguments"]["weight"] = 0.5
    return fixture


def test_a_suites_cases_read_back_equal_to_each_admitted_alone(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    cases = load_suite(suite, "replay", BUILTIN_SURFACE)
    assert isinstance(cases, AdmittedCases)
    alone = [load_case(path, "replay", BUILTIN_SURFACE) for path in sorted(suite.glob("*.json"))]
    assert [c.id for c in cases] == ["echo-ü", "hi", "façade 🧪", "f"]
    assert [c.id for c in cases] == [c.id for c in alone]
    assert [c.where for c in cases] == [str(c.path) for c in alone]
    assert [c.path for c in cases] == [c.path for c in alone]
    assert [c.text for c in cases] == [c.text for c in alone]
    assert [c.trace for c in cases] == [c.trace for c in alone]
    assert [c.fixture_sha256 for c in cases] == [c.fixture_sha256 for c in alone]
    assert [c.canonical is None for c in cases] == [False, False, False, True]
    assert cases == alone
    assert [cases.id_of(i) for i in range(4)] == [c.id for c in alone]
    assert [cases.where_of(i) for i in range(4)] == [str(c.path) for c in alone]
    # Every case read again from the file its digest was taken of.
    assert all(case.digest is not None for case in cases)
    assert cases[-1] == alone[-1] and list(cases[1:3]) == alone[1:3]
    with pytest.raises(IndexError):
        cases[4]


def test_a_case_read_after_its_fixture_changed_is_refused(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    cases = load_suite(suite, "replay", BUILTIN_SURFACE)
    write_fixture(suite, "b_hi.json", greeting_fixture("hi", reply="Hello, changed!"))
    with pytest.raises(FixtureChanged, match=r"b_hi\.json: the fixture changed after it was"):
        _ = cases[1].trace
    assert cases[0].trace.case_id == "echo-ü"  # the others are as admitted


def test_a_selection_picks_rows_held_as_the_suite_holds_them(tmp_path: Path) -> None:
    cases = load_suite(_suite(tmp_path / "suite"), "replay", BUILTIN_SURFACE)
    assert choose(cases, Selection()) is cases
    chosen = choose(cases, Selection(keyword="hi or fr"))
    assert isinstance(chosen, AdmittedCases)
    assert [c.id for c in chosen] == ["hi", "façade 🧪"]
    assert list(chosen) == [cases[1], cases[2]]
    assert [c.fixture_sha256 for c in chosen] == [cases[1].fixture_sha256, cases[2].fixture_sha256]


def test_a_single_fixture_is_a_suite_of_one_held_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_fixture(tmp_path, "one.json", echo_fixture("one"))
    [case] = load_suite(path, "replay", BUILTIN_SURFACE)
    assert case.where == str(path) and case.id == "one"
    monkeypatch.chdir(tmp_path)  # a relative name: nothing before it
    [relative] = load_suite(Path("one.json"), "replay", BUILTIN_SURFACE)
    assert relative.where == "one.json" and relative.trace == case.trace


def test_a_case_outside_the_suites_folder_is_not_held() -> None:
    cases = AdmittedCases("/suite/")
    with pytest.raises(ValueError, match="does not start with"):
        cases.append("/elsewhere/a.json", "a", bytes(32), None)
    assert len(cases) == 0


@pytest.mark.parametrize("where", ["suite", "./suite/", "project/../suite"])
def test_a_case_is_shown_as_display_path_shows_it_from_any_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    _suite(tmp_path / "suite")
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path)
    cases = load_suite(Path(where), "replay", BUILTIN_SURFACE)
    for root in (tmp_path, tmp_path / "suite", tmp_path / "project", Path("/")):
        shown = [cases.shown_at(i, root) for i in range(len(cases))]
        assert shown == [display_path(case.where, root) for case in cases]
    assert cases.shown_at(0, tmp_path) == "suite/a_echo.json"
    assert cases.shown_at(0, tmp_path / "project") == str(Path(where) / "a_echo.json")


def test_a_case_asked_for_again_at_once_is_the_one_made(tmp_path: Path) -> None:
    # A run asks for each case twice in a row (to run it, then to take in its result).
    cases = load_suite(_suite(tmp_path / "suite"), "replay", BUILTIN_SURFACE)
    first = cases[1]
    assert cases[1] is first
    other = cases[2]
    assert other is not first and other.id == "façade 🧪"
    again = cases[1]
    assert again is not first and again == first  # made again: only the last is kept


def test_a_suites_ids_and_file_names_read_at_once_are_its_cases_own(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path), "replay", BUILTIN_SURFACE)
    assert isinstance(suite, AdmittedCases)
    cases = list(suite)
    assert suite.ids() == ids_of(suite) == ids_of(cases) == [case.id for case in cases]
    assert suite.names() == [case.path.name for case in cases]
    picked = suite.picked([3, 1])
    assert picked.ids() == [cases[3].id, cases[1].id]
    assert picked.names() == [cases[3].path.name, cases[1].path.name]
