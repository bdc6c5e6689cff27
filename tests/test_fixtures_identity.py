"""The suite-wide id check: the quick answer for a clean suite, and every fault found."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from harness.fixtures.identity import identity_problems


class Named(NamedTuple):
    id: str
    path: Path
    text: str


def check(ids: list[str]) -> list[str]:
    cases = [Named(case_id, Path(f"f{n}.json"), "{}") for n, case_id in enumerate(ids)]
    return [f"{p.file}: {p.message}" for p in identity_problems(ids, cases, b"\x01" * len(ids))]


@pytest.mark.parametrize("ids", [["a", "b"], ["caf\xe9", "caf"], ["日本", "日本語"], []])
def test_distinct_normalised_ids_have_no_problem(ids: list[str]) -> None:
    assert check(ids) == []


def test_every_fault_is_found_past_the_quick_answer() -> None:
    assert check(["a", " \t", "b"]) == ["f1.json: empty case id"]
    assert check(["a", "b", "a"]) == [
        "f2.json: duplicate case id 'a', also used by f0.json: "
        "one case's result would mask the other's"
    ]
    # Only the same once normalised: each id NFC on its own is not enough to pass.
    found = check(["caf\xe9", "cafe\u0301"])
    assert found == [
        "f1.json: duplicate case id 'cafe\\u0301' (the same as 'caf\\xe9' once normalised to "
        "NFC), also used by f0.json: one case's result would mask the other's"
    ]
    # A combining mark after the NUL the ids are joined by composes with nothing.
    assert check(["e", "\u0301"]) == []
