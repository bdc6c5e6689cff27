"""`harness.io.tail_lines`: a history file read from its end, newest line first, in chunks; a
line longer than the limit is passed over whole, and a line's number counted on demand."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.io import tail_lines


@contextmanager
def opened(path: Path) -> Iterator[tuple[int, int]]:
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd, os.fstat(fd).st_size
    finally:
        os.close(fd)


def lines(path: Path) -> list[tuple[int, bytes | None]]:
    with opened(path) as (fd, size):
        return [(line.offset, line.data) for line in tail_lines.newest_first(fd, size)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 16])
def test_lines_come_newest_first_with_their_offsets_whatever_the_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(tail_lines, "CHUNK", chunk)
    path = tmp_path / "h.jsonl"
    two = "two\u2028".encode()  # only a newline ends a line: JSON leaves U+2028 raw
    path.write_bytes(b"one\n\n" + two + b"\nthree")  # the last line cut short
    assert lines(path) == [(12, b"three"), (5, two), (4, b""), (0, b"one")]
    path.write_bytes(b"one\ntwo\n")
    assert lines(path) == [(8, b""), (4, b"two"), (0, b"one")]
    path.write_bytes(b"")
    assert lines(path) == [(0, b"")]


@pytest.mark.parametrize("chunk", [3, 1 << 16])
def test_a_line_longer_than_the_limit_is_passed_over_and_the_next_one_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(tail_lines, "CHUNK", chunk)
    monkeypatch.setattr(tail_lines, "LINE_LIMIT", 5)
    path = tmp_path / "h.jsonl"
    path.write_bytes(b"first\n" + b"x" * 40 + b"\nlast\n")
    assert lines(path) == [(52, b""), (47, b"last"), (6, None), (0, b"first")]


def test_nothing_past_the_scan_limit_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tail_lines, "CHUNK", 4)
    monkeypatch.setattr(tail_lines, "SCAN_LIMIT", 8)
    path = tmp_path / "h.jsonl"
    path.write_bytes(b"a\nbb\nccc\ndddd\n")
    # Two chunks back from the end: the line they cut into is not given.
    assert lines(path) == [(14, b""), (9, b"dddd")]


def test_line_numbers_counted_newest_first_agree_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    text = b"".join(b"x" * (i % 5) + b"\n" for i in range(500))
    path.write_bytes(text)
    with opened(path) as (fd, size):
        numbers = tail_lines.LineNumbers(fd)
        found = [(numbers.at(line.offset), line.data) for line in tail_lines.newest_first(fd, size)]
        assert numbers.at(0) == 1  # an offset asked out of order is counted afresh
        assert numbers.at(size) == 501
    expected = list(enumerate(text.split(b"\n"), 1))[::-1]
    assert found == expected


def test_whether_a_file_ends_with_a_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    for data, whole in ((b"", True), (b"a\n", True), (b"a", False), (b"a\nb", False)):
        path.write_bytes(data)
        with opened(path) as (fd, size):
            assert tail_lines.ends_with_newline(fd, size) is whole
