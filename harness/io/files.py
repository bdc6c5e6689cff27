"""Reading the files a user names (the configuration, fixtures, the run history): regular
files only, of bounded size, never blocking; and decoding the JSON they hold, however
deeply it nests.

A FIFO blocks its reader until something writes to it, and a device such as /dev/zero
never ends, so a name is checked before it is opened (opening some devices does something
by itself: by `stat`, or by the entry type of the directory listing that just found it),
opened without blocking, checked again on the open descriptor (the name may have been
swapped in between), and read no further than one byte past its cap.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import msgspec

# O_NONBLOCK: a FIFO swapped in after the check cannot hold `open` until a writer comes.
# O_NOCTTY: a terminal device can never become the process's controlling terminal.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class InputError(Exception):
    """A named file cannot be read. `reason` says why without naming the file: each caller
    names it its own way. `missing`: nothing is there; `special`: it is not a regular file
    (a directory, FIFO, socket or device), which no caller reads."""

    def __init__(self, reason: str, *, missing: bool = False, special: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing
        self.special = special


def read_bounded(path: Path | str, limit: int, *, regular: bool = False) -> bytes:
    """All of the regular file `path`, refused when it holds more than `limit` bytes.

    `regular`: the caller has just seen that the name is a regular file (the entry type a
    directory listing gave, which costs nothing more), so it is not stat'ed again before
    it is opened; the open descriptor is checked all the same."""
    fd, size = _open_regular(path, named=regular)
    try:
        if size > limit:
            raise InputError(f"{size} bytes exceeds the {limit}-byte limit")
        data = _read_whole(fd, size, limit)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew after the check
        raise InputError(f"exceeds the {limit}-byte limit")
    return data


# What one read asks for at most once a file turned out larger than it said: no buffer the
# size of a generous cap is allocated for a file that grew by a few bytes.
_CHUNK = 1 << 16


def _read_whole(fd: int, size: int, limit: int) -> bytes:
    """The file's bytes up to one past `limit`, in one read when it holds the `size` it
    said: asked for one byte more, a file that has grown since hands it over, and is read
    on up to the cap."""
    try:
        data = os.read(fd, size + 1)
        if len(data) == size:
            return data
        chunks = [data]
        total = len(data)
        while data and total <= limit:
            data = os.read(fd, min(limit + 1 - total, _CHUNK))
            chunks.append(data)
            total += len(data)
    except OSError as exc:
        raise InputError(f"cannot read: {why(exc)}") from None
    return b"".join(chunks)


def open_regular(path: Path | str) -> tuple[int, int]:
    """A read-only descriptor of the regular file `path` (the caller closes it) and its
    size, for a reader that reads only part of it (`harness.io.tail_lines`)."""
    return _open_regular(path)


def _open_regular(path: Path | str, named: bool = False) -> tuple[int, int]:
    """A read-only descriptor of `path` and its size, once it is known to be a regular
    file both by name (unless the caller knows it is: `named`) and as opened."""
    if "\0" in os.fspath(path):  # no system call takes it: Python raises ValueError for it
        raise InputError("not a file name: it holds a NUL character")
    if not named:
        try:
            info = os.stat(path)
        except OSError as exc:
            missing = exc.errno == errno.ENOENT
            raise InputError(f"cannot stat: {why(exc)}", missing=missing) from None
        _refuse_special(info.st_mode)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if named:  # gone or changed since it was listed: say why as for any other name
            return _open_regular(path)
        raise InputError(f"cannot read: {why(exc)}") from None
    try:
        opened = os.fstat(fd)
        _refuse_special(opened.st_mode)
    except OSError as exc:
        os.close(fd)
        raise InputError(f"cannot stat: {why(exc)}") from None
    except InputError:
        os.close(fd)
        raise
    return fd, opened.st_size


def why(exc: OSError) -> str:
    """What went wrong, as the system says it (its message, without the file name)."""
    return exc.strerror or str(exc)


def _refuse_special(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise InputError(f"not a regular file ({file_kind(mode)})", special=True)


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for messages."""
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"


# What `read_known` reads at most: a fixture or snapshot is a few KB.
_KNOWN_CHUNK = 1 << 16


def read_known(path: str, size: int = _KNOWN_CHUNK - 1) -> bytes | None:
    """The bytes of `path` when they are to be compared with bytes known beforehand (a
    digest, a text), read without `read_bounded`'s checks: opened as it opens (the open
    never blocks; no link is followed), read once, up to one past `size` bytes. None: it
    cannot be opened or read, or holds more. Only ever a shortcut: what it gives is
    trusted only if it is exactly what was expected (no FIFO, directory or device gives
    the expected bytes: nothing, an error, or other bytes), else the caller reads the file
    as `read_bounded` does, which says what is wrong. Spares the `fstat` of a file read
    once a case."""
    try:
        # Not through a link: one swapped in for a terminal's or a device's name would
        # have this read take what is typed or wait on it (a link is read as before).
        fd = os.open(path, _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, ValueError):
        return None
    try:
        data = os.read(fd, size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= size else None


def decode_json(data: bytes | str, type: Any = Any) -> Any:
    """The JSON document `data` (as `type`, by msgspec's strict decoding, when given).

    A document nested deeper than the parser can follow (it recurses once a level, so the
    interpreter's recursion limit stops it) is a `msgspec.DecodeError` saying so, as any
    other unreadable JSON is: never a RecursionError, which no reader of a file expects.
    Not the type is a `msgspec.ValidationError` (a `DecodeError` too) naming the path."""
    try:
        return msgspec.json.decode(data, type=type)
    except RecursionError:
        raise msgspec.DecodeError("JSON nested too deeply to be read") from None
