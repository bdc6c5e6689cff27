"""One change said once: the cases whose request snapshot changed the same way (a prompt
shared by 200 cases edited once) grouped, so the terminal and the Markdown summary show
the diff with the first case and name it for the others."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import msgspec

from harness.expectations.base import Grade
from harness.snapshots.store import CHECK
from harness.verdict.reports import CaseReport

_HUNK_LINES = re.compile(r"^@@ [^@]* @@", re.M)


def change_key(grade: Grade) -> str | None:
    """What a changed snapshot's grade says changed, without where (the first line and
    the diff's file names name the case's snapshot; hunk line numbers shift with what
    else the case's file holds); None for any other grade."""
    if grade.check != CHECK or grade.passed:
        return None
    lines = grade.detail.split("\n")
    if len(lines) < 4:  # a missing or unreadable snapshot: nothing shared to fold
        return None
    return _HUNK_LINES.sub("@@", "\n".join(lines[3:]))


class Changes(msgspec.Struct, dict=True):
    """The snapshot changes of a run as its cases are done: each change with the cases
    that show it, the first of them the one its diff is shown with."""

    # With a dict (`dict=True`): an instance takes attributes besides its field, as a plain
    # object does (one of its methods stood in for).

    cases: dict[str, list[str]] = msgspec.field(default_factory=dict)

    def fold(self, case: CaseReport) -> dict[str, str]:
        """`case`'s snapshot grades whose change an earlier case showed: each grade's
        detail and what to say in its place."""
        folded = {}
        for grade in case.grades:
            if grade.passed:  # no change to fold (`change_key`), asked of every case's
                continue
            key = change_key(grade)
            if key is None:
                continue
            seen = self.cases.setdefault(key, [])
            if seen:
                head = grade.detail.split("\n", 1)[0]
                folded[grade.detail] = f"{head} (the same change as case {seen[0]}, shown there)"
            seen.append(case.id)
        return folded

    def summary(self) -> str | None:
        """One line for the changes shared by several cases; None: there are none."""
        shared = [ids for ids in self.cases.values() if len(ids) > 1]
        if not shared:
            return None
        total = sum(len(ids) for ids in self.cases.values())
        return (
            f"request snapshots: {len(self.cases)} distinct change(s) across {total} case(s), "
            "each diff shown once, with the first case that has it"
        )


def fold_all(cases: Iterable[CaseReport]) -> tuple[str | None, dict[str, dict[str, str]]]:
    """`Changes.fold` over a finished run's cases, by case id, and the summary line."""
    changes = Changes()
    folded = {case.id: changes.fold(case) for case in cases}
    return changes.summary(), folded


def unfolded(text: str, folded: Mapping[str, str]) -> str:
    """`text` with each detail an earlier case showed said by its one line instead."""
    for detail, said in folded.items():
        text = text.replace(detail, said)
    return text
