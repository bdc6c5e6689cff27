"""Admission problems: where a fixture or suite is wrong (file, JSON path, line) and why."""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass

from harness.errors import HarnessError

# Characters refused in names a report shows (case ids, tool names, fixture file names):
# C0 and C1 controls and DEL, which forge terminal escapes and split lines; the Unicode
# line and paragraph separators; and the format characters (zero-width, bidirectional
# embeddings, overrides and isolates, tags ...), which hide or reorder what a reviewer
# reads. Spelled out, not taken from `unicodedata`, so that admission is the same on every
# Python: this is every character of categories Cc, Cf, Zl, Zp and Cs up to Unicode 15.1.
_UNSAFE = (
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


@functools.cache
def _unsafe() -> re.Pattern[str]:
    # Compiled on first use: half a millisecond (a class reaching past Latin-1 is mapped
    # out block by block), which a run whose names are all printable ASCII never needs.
    return re.compile(_UNSAFE)


def _escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def escaped(text: str) -> str:
    """`text` with each unsafe character written as its escape (`\\u202e`), so that a
    message about it holds none."""
    return _unsafe().sub(_escape, text)


def unsafe_name_problem(what: str, name: str) -> str | None:
    """Why `name` may not be used as a `what` (e.g. "case id"), or None when it may."""
    # Printable ASCII holds none of them, and most names are that: two scans in C that
    # cost less than the search.
    if name.isascii() and name.isprintable():
        return None
    unsafe = _unsafe()
    if unsafe.search(name) is None:  # every other admitted name: one scan, in C
        return None
    found = list(dict.fromkeys(_escape(m) for m in unsafe.finditer(name)))
    chars = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
    shown = escaped(name if len(name) <= 100 else name[:100] + "...")
    return (
        f"{what} '{shown}' holds control or format characters ({chars}): they can forge, "
        "hide or reorder what reports and terminals show"
    )


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
