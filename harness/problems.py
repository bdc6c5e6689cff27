"""Admission problems: where a fixture or suite is wrong (file, JSON path, line) and why."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from harness.errors import HarnessError


@dataclass(frozen=True)
class Problem:
    """One admission problem: where it is (file and JSON path) and what is wrong.

    `line` is the fixture line of `field`, found while the fixture's text was at hand, so
    that nothing downstream has to reopen the file to point an annotation at it."""

    file: str
    field: str
    message: str
    line: int | None = dataclasses.field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


class AdmissionError(HarnessError):
    """A fixture or a suite was refused; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    def lines(self) -> list[str]:
        files = len({p.file for p in self.problems})
        return [
            *(str(p) for p in self.problems),
            f"zeroclaw eval: refused: {len(self.problems)} problem(s) in {files} file(s); "
            "nothing was run",
        ]
