"""`harness.io.files`: the files a user names are read only when they are regular files, never
past their cap, and never by a call that can block; and the run history's reader, which
reads a bounded tail however long the history has grown."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import msgspec
import pytest
from conftest import Cli, project, run_limited, says

from harness.io import tail_lines
from harness.io.atomic import ReportWriteError
from harness.io.files import InputError, decode_json, open_regular, read_bounded, read_known
from harness.reporters.history import append_history
from harness.verdict.reports import CaseReport, SuiteReport

FIFO = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
DEV_ZERO = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
# Each test that could block or read without end runs its reader in a subprocess (or a
# daemon thread) under a deadline, so that a regression fails the test instead of hanging
# or exhausting the machine.
BOUNDED = pytest.mark.timeout(60)


def refusal(action: object) -> InputError:
    assert callable(action)
    with pytest.raises(InputError) as caught:
        action()
    return caught.value


def fifo_at(path: Path) -> Path:
    os.mkfifo(path)
    return path


# --- read_bounded --------------------------------------------------------------------------


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 10)
    assert read_bounded(path, 10) == b"x" * 10


def test_a_file_over_its_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 11)
    error = refusal(lambda: read_bounded(path, 10))
    assert error.reason == "11 bytes exceeds the 10-byte limit"
    assert not error.missing and not error.special


def test_a_missing_file_is_told_apart(tmp_path: Path) -> None:
    error = refusal(lambda: read_bounded(tmp_path / "nope", 10))
    assert error.missing
    assert error.reason == "cannot stat: No such file or directory"


def test_a_name_holding_a_nul_is_refused_as_no_file_name(tmp_path: Path) -> None:
    # The operating system takes no such name: Python's calls raise ValueError for it.
    name = tmp_path / "a\0b.json"
    for error in (refusal(lambda: read_bounded(name, 10)), refusal(lambda: open_regular(name))):
        assert error.reason == "not a file name: it holds a NUL character"
        assert not error.missing and not error.special


def test_a_baseline_or_report_named_with_a_nul_is_refused_naming_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(tmp_path, {"a.json": says("a", "hi", ["hi"])})
    baseline = run_cli("eval", "run", "--baseline", "b\0.json", cwd=root)
    assert (baseline.returncode, baseline.stdout) == (1, ""), baseline.stderr
    assert baseline.stderr == (
        "zeroclaw eval: b\\u0000.json: cannot read baseline: not a file name: it holds a NUL "
        "character\n"
    )
    report = run_cli("eval", "report", "--report", "r\0.json", "--html", "r.html", cwd=root)
    assert (report.returncode, report.stdout) == (1, ""), report.stderr
    assert "r\\u0000.json: cannot read the JSON report: not a file name" in report.stderr


def test_a_directory_is_not_a_regular_file(tmp_path: Path) -> None:
    error = refusal(lambda: read_bounded(tmp_path, 10))
    assert (error.reason, error.special) == ("not a regular file (directory)", True)


@FIFO
@BOUNDED
@pytest.mark.parametrize("regular", [False, True], ids=["stat", "listed-as-regular"])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, regular: bool) -> None:
    # `regular`: the listing said it was a regular file, and a FIFO was swapped in since.
    fifo = fifo_at(tmp_path / "f")
    code = (
        "from harness.io.files import InputError, read_bounded\n"
        "try:\n"
        f"    read_bounded({str(fifo)!r}, 10, regular={regular})\n"
        "except InputError as exc:\n"
        "    print(exc.reason, exc.special)\n"
    )
    result = run_limited("-c", code, cwd=tmp_path)
    assert result.stdout == "not a regular file (FIFO) True\n", result.stderr


@DEV_ZERO
def test_a_device_that_never_ends_is_refused_unread() -> None:
    error = refusal(lambda: read_bounded("/dev/zero", 10))
    assert (error.reason, error.special) == ("not a regular file (character device)", True)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs unix sockets")
def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            server.bind(str(path))
        except OSError as exc:  # e.g. a temporary path longer than sun_path allows
            pytest.skip(f"cannot bind a unix socket here: {exc}")
        assert refusal(lambda: read_bounded(path, 10)).reason == "not a regular file (socket)"
    finally:
        server.close()


# --- read_bounded of a name a directory listing said is a regular file -----------------------
# The listing is the check before opening; the open descriptor is checked all the same, so a
# name swapped for something else in between is refused without blocking or reading it.


def test_a_listed_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 10)
    assert read_bounded(path, 10, regular=True) == b"x" * 10
    error = refusal(lambda: read_bounded(path, 9, regular=True))
    assert error.reason == "10 bytes exceeds the 9-byte limit"


def test_a_listed_file_gone_since_is_told_apart_as_any_missing_one(tmp_path: Path) -> None:
    error = refusal(lambda: read_bounded(tmp_path / "gone", 10, regular=True))
    assert (error.reason, error.missing) == ("cannot stat: No such file or directory", True)


@DEV_ZERO
def test_a_device_swapped_in_after_the_listing_is_refused_unread(tmp_path: Path) -> None:
    link = tmp_path / "z"
    link.symlink_to("/dev/zero")
    error = refusal(lambda: read_bounded(link, 10, regular=True))
    assert (error.reason, error.special) == ("not a regular file (character device)", True)


def test_a_listed_directory_is_refused(tmp_path: Path) -> None:
    error = refusal(lambda: read_bounded(tmp_path, 10, regular=True))
    assert (error.reason, error.special) == ("not a regular file (directory)", True)


@pytest.mark.parametrize(
    ("written", "size", "limit", "read"),
    [
        (b"x" * 10, 10, 20, b"x" * 10),  # as big as it said: one read
        (b"x" * 15, 10, 20, b"x" * 15),  # grew since: read on to its end
        (b"x" * 30, 10, 20, b"x" * 21),  # grew past the cap: read to one byte past it
        (b"x" * 4, 10, 20, b"x" * 4),  # shrank since: what is there
        (b"", 0, 20, b""),
    ],
)
def test_a_file_is_read_whole_however_its_size_changed_since_it_was_checked(
    written: bytes, size: int, limit: int, read: bytes
) -> None:
    from harness.io.files import _read_whole

    # A pipe hands over what was written, as a file does that changed after `fstat`.
    reader, writer = os.pipe()
    try:
        os.write(writer, written)
        os.close(writer)
        assert _read_whole(reader, size, limit) == read
    finally:
        os.close(reader)


# --- read_known: bytes read once to be compared with bytes known beforehand -----------------


def test_read_known_gives_a_file_s_bytes_up_to_its_size_and_nothing_past_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 10)
    assert read_known(str(path), 10) == b"x" * 10
    assert read_known(str(path)) == b"x" * 10
    assert read_known(str(path), 9) is None  # holds more than asked for: not those bytes
    assert read_known(str(tmp_path / "gone")) is None
    assert read_known(str(tmp_path)) is None  # a directory cannot be read
    assert read_known("a\0b") is None


@FIFO
@BOUNDED
def test_read_known_of_a_fifo_neither_blocks_nor_gives_bytes(tmp_path: Path) -> None:
    # What it gives is compared with the bytes expected, which are never none at all.
    fifo = fifo_at(tmp_path / "f")
    code = f"from harness.io.files import read_known\nprint(read_known({str(fifo)!r}, 10))\n"
    result = run_limited("-c", code, cwd=tmp_path)
    assert result.stdout == "b''\n", result.stderr


@DEV_ZERO
def test_read_known_of_a_device_that_never_ends_reads_one_past_its_size() -> None:
    assert read_known("/dev/zero", 10) is None


# --- decode_json ---------------------------------------------------------------------------

# Far past any recursion limit, and past what msgspec and Python's json follow alike.
DEEP = b"[" * 100_000 + b"]" * 100_000


def test_json_nested_too_deeply_is_a_decode_error_never_a_recursion_error() -> None:
    with pytest.raises(msgspec.DecodeError, match=r"^JSON nested too deeply to be read$"):
        decode_json(DEEP)
    # Typed: the nesting hides where the type takes anything (a tool call's arguments).
    with pytest.raises(msgspec.DecodeError, match="nested too deeply"):
        decode_json(b'{"a": ' + DEEP + b"}", dict[str, object])
    assert decode_json(b"[[[1]]]") == [[[1]]]
    assert decode_json(b'{"a": [1]}', dict[str, list[int]]) == {"a": [1]}


def test_json_that_is_not_json_or_not_the_type_says_so_as_msgspec_does() -> None:
    with pytest.raises(msgspec.DecodeError, match="malformed"):
        decode_json(b"{not json")
    with pytest.raises(
        msgspec.ValidationError, match=r"Expected `int`, got `str` - at `\$\[...\]`"
    ):
        decode_json(b'{"a": "x"}', dict[str, int])


# --- open_regular, for the readers of a history file's tail --------------------------------


@FIFO
def test_a_tail_of_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = fifo_at(tmp_path / "h")
    error = refusal(lambda: open_regular(fifo))
    assert (error.reason, error.special) == ("not a regular file (FIFO)", True)


# --- the run history's reader --------------------------------------------------------------


def report() -> SuiteReport:
    case = CaseReport(id="a", fixture="a.json", passed=True, grades=[])
    return SuiteReport(
        suite="evals/capability",
        kind="capability",
        mode="replay",
        agent="openai-agents",
        cases=[case],
        duration_ms=1.0,
    )


@FIFO
@BOUNDED
def test_history_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": says("passes", "hi", ["hi"])}, suite="evals/capability")
    fifo_at(root / "history.jsonl")
    result = run_limited("-m", "harness", "eval", "run", "--history", "history.jsonl", cwd=root)
    assert result.returncode == 1, result.stderr
    assert (
        "zeroclaw eval: history.jsonl: cannot append history: it is not a regular file "
        "(a pipe, socket or device)" in result.stderr
    )
    assert "Traceback" not in result.stderr


@DEV_ZERO
@BOUNDED
def test_history_that_is_a_device_is_refused_unread(tmp_path: Path) -> None:
    code = (
        "from pathlib import Path\n"
        "from harness.io.atomic import ReportWriteError\n"
        "from harness.reporters.history import append_history\n"
        "from harness.verdict.reports import CaseReport, SuiteReport\n"
        "case = CaseReport(id='a', fixture='a.json', passed=True, grades=[])\n"
        "report = SuiteReport(suite='s', kind='capability', mode='replay', agent='a', "
        "cases=[case], duration_ms=1.0)\n"
        "try:\n"
        "    append_history(Path('/dev/zero'), report)\n"
        "except ReportWriteError as exc:\n"
        "    print(exc)\n"
    )
    result = run_limited("-c", code, cwd=tmp_path)
    assert result.stdout == (
        "/dev/zero: cannot append history: not a regular file (character device)\n"
    ), result.stderr[-2000:]


def test_history_longer_than_its_tail_still_finds_the_previous_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.jsonl"
    old = json.dumps({"pass_rate": 0.25, "verdicts": {f"case-{i}": "passed" for i in range(50)}})
    last = json.dumps({"pass_rate": 0.75})
    path.write_text(f"{old}\n{old}\n{last}\n", encoding="utf-8")
    monkeypatch.setattr(tail_lines, "LINE_LIMIT", len(old) // 2)
    # A line longer than the reader keeps is passed over; the last one is short and read.
    assert "(previous 75.0%)" in append_history(path, report())


def test_history_whose_last_entry_is_longer_than_the_tail_reads_as_a_first_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps({"pass_rate": 0.5, "pad": "x" * 100}) + "\n", encoding="utf-8")
    monkeypatch.setattr(tail_lines, "LINE_LIMIT", 50)
    assert "(first entry)" in append_history(path, report())
    assert path.read_text("utf-8").count("\n") == 2  # appended all the same


def test_history_in_a_missing_directory_is_no_refusal(tmp_path: Path) -> None:
    message = append_history(tmp_path / "reports" / "h.jsonl", report())
    assert "(first entry)" in message


def test_history_that_is_a_directory_is_a_report_write_error(tmp_path: Path) -> None:
    with pytest.raises(ReportWriteError) as caught:
        append_history(tmp_path, report())
    assert str(caught.value) == (
        f"{tmp_path}: cannot append history: not a regular file (directory)"
    )


def test_read_known_never_reads_through_a_link(tmp_path: Path) -> None:
    # A fixture's name swapped for a link to a terminal after admission would have the
    # shortcut read what is typed there: a link is read the checked way instead.
    target = tmp_path / "target"
    target.write_bytes(b"bytes")
    (tmp_path / "link").symlink_to(target)
    assert read_known(str(target)) == b"bytes"
    assert read_known(str(tmp_path / "link")) is None
