"""A JSON-lines history file read from its end: the newest lines first, as far as a reader
needs and never further than `SCAN_LIMIT` bytes back.

A history file (`--history`, or an earlier one moved into a history directory) only
grows, and every run wants its last entries: reading it whole would make each run cost
more than the one before. Lines are read backwards a chunk at a time; a line longer than
`LINE_LIMIT` is passed over without being kept (its bytes are read, never held), and a
line's number, which a warning names, is counted only when a warning is said.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

CHUNK = 1 << 16
# A line holds one verdict per case: this holds the line of a suite of some 50,000 cases.
LINE_LIMIT = 4 << 20
# How far back a reader looks at most: a file of damaged or foreign lines costs no more.
SCAN_LIMIT = 32 << 20
# Damaged lines (or entries) a reader says and passes over before it looks no further back:
# a history of nothing else is said in a few lines, not one per line.
MAX_DAMAGED = 20


class Line(NamedTuple):
    offset: int  # where it starts in the file
    data: bytes | None  # without its newline; None: longer than LINE_LIMIT


def _piece(offset: int, pieces: list[bytes], long: bool) -> Line:
    if long or sum(map(len, pieces)) > LINE_LIMIT:
        return Line(offset, None)
    return Line(offset, b"".join(reversed(pieces)))


def newest_first(fd: int, size: int) -> Iterator[Line]:
    """The lines of the open file of `size` bytes, the last first (the text after the last
    newline is a line too: empty when the file ends with one). Raises OSError when the
    file cannot be read."""
    pieces: list[bytes] = []  # the line being read, its end first
    long = False  # it is longer than LINE_LIMIT: the rest of it is not kept
    held = 0
    position = size
    while position > 0 and size - position < SCAN_LIMIT:
        step = min(CHUNK, position)
        position -= step
        chunk = os.pread(fd, step, position)
        if len(chunk) != step:  # cut short while being read: what is left is not known
            return
        stop = len(chunk)
        cut = chunk.rfind(b"\n", 0, stop)
        while cut >= 0:
            pieces.append(chunk[cut + 1 : stop])
            yield _piece(position + cut + 1, pieces, long)
            pieces, long, held, stop = [], False, 0, cut
            cut = chunk.rfind(b"\n", 0, stop)
        if not long:
            pieces.append(chunk[:stop])
            held += stop
            if held > LINE_LIMIT:
                pieces, long, held = [], True, 0
    if position == 0:
        yield _piece(0, pieces, long)


def ends_with_newline(fd: int, size: int) -> bool:
    """Whether the open file is empty or its last line is whole."""
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


class LineNumbers:
    """The line number of each offset a reader asks about, counted over the file once when
    the offsets come last first (as `newest_first` gives them)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._known: tuple[int, int] | None = None  # an offset and its line's number

    def at(self, offset: int) -> int:
        if self._known is not None and offset <= self._known[0]:
            known, number = self._known
            number -= self._newlines(offset, known)
        else:
            number = 1 + self._newlines(0, offset)
        self._known = (offset, number)
        return number

    def _newlines(self, start: int, end: int) -> int:
        count = 0
        while start < end:
            chunk = os.pread(self._fd, min(CHUNK * 16, end - start), start)
            if not chunk:
                break
            count += chunk.count(b"\n")
            start += len(chunk)
        return count
