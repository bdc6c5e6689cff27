"""Report files: checked before the run, written atomically, and put in place together.

A reader sees the old file or the whole new one, never a half. The files of one run are
staged beside their destinations and renamed into place at once, with SIGINT and SIGTERM
held off for the renames, so the JUnit and JSON reports on disk always come from the same
run, and an interruption before the renames leaves every previous file as it was and no
temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, BinaryIO, cast

import msgspec

from harness.errors import HarnessError, UsageError
from harness.io.files import why
from harness.runtime import interrupts


class ReportWriteError(HarnessError):
    """Report files could not be written (one per line); the other reports still were."""

    def lines(self) -> list[str]:
        return [f"zeroclaw eval: {line}" for line in str(self).splitlines()]


class ReportPathError(UsageError):
    """The command line names one file for two reports: a usage error."""


def _umask() -> int:
    # Read by setting it: done once, before any worker thread creates files.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# A new report gets the permissions any new file of the user's gets (mkstemp's are 0600).
FILE_MODE = 0o666 & ~_umask()


def check_destination(path: Path, shown: str | None = None, what: str = "write report") -> bool:
    """Refuse a path that cannot take a report (`ReportWriteError`, naming it as `shown`);
    True when it is a character device (`/dev/null`, a terminal), which is written
    through, not replaced.

    A symbolic link is refused (unless it leads to a character device): replacing it would
    silently drop the link, and writing through it would let a checked-out link (a fork's
    pull request) aim the report at any file the job can write."""
    cannot = f"{path if shown is None else shown}: cannot {what}"
    try:
        link = path.lstat()
    except FileNotFoundError:
        _check_parent(path, cannot)
        return False
    except OSError as exc:
        raise ReportWriteError(f"{cannot}: {why(exc)}") from None
    try:
        target = path.stat()
    except OSError:
        target = link
    if stat.S_ISCHR(target.st_mode):
        return True
    if stat.S_ISLNK(link.st_mode):
        raise ReportWriteError(
            f"{cannot}: it is a symbolic link, and a report is never written through one "
            "(remove it, or name the file it points to)"
        )
    if stat.S_ISDIR(link.st_mode):
        raise ReportWriteError(f"{cannot}: it is a directory")
    if not stat.S_ISREG(link.st_mode):
        raise ReportWriteError(f"{cannot}: it is not a regular file (a pipe, socket or device)")
    _check_parent(path, cannot)
    return False


def _check_linked_directories(given: Path, cannot: str) -> None:
    """A relative report path leads through no symbolic link: a directory link checked in
    (a fork's pull request) would aim `reports/x.json` at any directory the job can write.
    An absolute path is where the user chose to write, links and all."""
    if given.is_absolute():
        return
    prefix = Path()
    for part in given.parent.parts:
        prefix = prefix / part
        if part != ".." and prefix.is_symlink():
            raise ReportWriteError(
                f"{cannot}: {prefix} is a symbolic link, and a report is never written "
                "through one (name the directory it points to)"
            )


def _check_parent(path: Path, cannot: str) -> None:
    """The nearest existing ancestor must be a directory the run can create files in."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ReportWriteError(f"{cannot}: {parent.name or parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ReportWriteError(f"{cannot}: {parent.name or parent} is not writable")


# The records here are msgspec structs, not dataclasses: a dataclass is made by compiling
# its methods' source as the module is imported, a millisecond of every run for four.
class RunInput(msgspec.Struct, frozen=True):
    """A file (or a suite directory) a run reads, which no report may replace."""

    path: Path
    what: str  # for the message: "the --baseline file", "a fixture of the suite"
    suite: bool = False  # a suite directory: its `.json` children are its fixtures
    rewritten_by: str | None = None  # the one report that may replace it (a baseline's)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except (OSError, ValueError):
        return None
    return (found.st_dev, found.st_ino)


def _fixture_identities(suite: Path) -> set[tuple[int, int] | None]:
    """The files a suite directory's fixtures are (a linked one's target included)."""
    found: set[tuple[int, int] | None] = set()
    try:
        device = suite.stat().st_dev
        with os.scandir(suite) as entries:
            for entry in entries:
                if not entry.name.lower().endswith(".json"):
                    continue
                # The directory listing's inode costs no stat; a link is followed.
                found.add(
                    _identity(Path(entry.path)) if entry.is_symlink() else (device, entry.inode())
                )
    except (OSError, ValueError):
        pass
    found.discard(None)
    return found


def _fixture_name(report: Path, suite: Path) -> bool:
    if report.suffix.lower() != ".json":
        return False
    try:
        return os.path.samefile(report.parent, suite)
    except (OSError, ValueError):
        return False


_SPOOL_BUFFER = 1 << 16
# The other files one spool holds bytes of at most (`Spool.refer`), each held open.
REFERRED_FILES = 64


class Spool:
    """What a report holds of every case, written out as the cases finish rather than held:
    an anonymous temporary file (gone with the process, however it ends), copied into the
    report when the report's head, which needs the run's totals, is known. Bytes already
    in a file of their own (a worker's) are held there (`refer`), copied into the report
    from there, once: not into the spool first."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._handle: BinaryIO | None = None
        self.size = 0  # every byte it stands for, those held elsewhere included
        self._own = 0  # those written into its own file
        # What `refer` was given, in order: where it stands among the bytes written here,
        # the file (held open), where in it, how long.
        self._held: list[tuple[int, IO[bytes], int, int]] = []
        self._files: set[int] = set()  # the files `_held` holds open

    def write(self, data: bytes) -> None:
        self._opened().write(data)
        self.size += len(data)
        self._own += len(data)

    def _opened(self) -> BinaryIO:
        if self._handle is None:
            # Beside the report when it has a place: the same file system it is copied to.
            # A buffer of many cases: one write a case is a system call every case or two.
            handle = tempfile.TemporaryFile("w+b", _SPOOL_BUFFER, dir=self.directory)  # noqa: SIM115
            self._handle = cast(BinaryIO, handle)  # binary: the stubs lose it with a buffer
        return self._handle

    def copy_to(self, out: BinaryIO) -> None:
        """Every byte written so far, appended to `out` (the spool can be copied again)."""
        handle = self._handle
        if handle is not None:
            handle.flush()
        begun = 0
        for at, file, offset, length in self._held:
            if at > begun:
                assert handle is not None  # bytes were written before this
                copy_into(out, handle.fileno(), begun, at - begun)
            copy_into(out, file.fileno(), offset, length)
            begun = at
        if self._own > begun:
            assert handle is not None
            copy_into(out, handle.fileno(), begun, self._own - begun)

    def refer(self, file: IO[bytes], offset: int, length: int) -> None:
        """`length` bytes of `file` (a regular file, kept open, never written again where
        they are) from `offset` on, as if written now: held where they are."""
        if length <= 0:
            return
        self.size += length
        if id(file) in self._files or len(self._files) < REFERRED_FILES:
            self._files.add(id(file))  # alive while `_held` holds it: its id is its own
            self._held.append((self._own, file, offset, length))
        else:  # each worker a death brings has files: past a few, deaths add no open file
            copy_into(self._opened(), file.fileno(), offset, length)
            self._own += length

    def slices(self, ranges: Sequence[tuple[int, int]]) -> Slices:
        """The (offset, length) ranges of what was written, in this order, as one part
        (of a spool that holds nothing elsewhere)."""
        if self._held:
            raise ValueError("a spool holding bytes of other files is copied whole")
        return Slices(self, ranges)

    def copy_range(self, out: BinaryIO, offset: int, length: int) -> None:
        handle = self._handle
        if length <= 0:
            return
        assert handle is not None, "a range of a spool nothing was written to"
        handle.flush()
        handle.seek(offset)
        while length > 0:
            chunk = handle.read(min(length, 1 << 20))
            if not chunk:
                raise OSError(f"a spooled part ends {length} byte(s) short")
            out.write(chunk)
            length -= len(chunk)
        handle.seek(0, os.SEEK_END)

    def close(self) -> None:
        # Empty again, as it began: nothing held, nothing written.
        self._held, self._files, self.size, self._own = [], set(), 0, 0
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()


def copy_into(out: IO[bytes], fd: int, offset: int, length: int) -> None:
    """`length` bytes of the file `fd` from `offset` on, appended to `out` (a buffered file,
    flushed first) by the kernel where it can (`os.copy_file_range`: no byte through this
    process), else read and written."""
    out.flush()
    try:
        at, into = out.tell(), out.fileno()
    except (OSError, ValueError):  # not a file (`io.UnsupportedOperation` is both)
        at = into = -1
    copy = getattr(os, "copy_file_range", None)  # Linux's alone
    if at >= 0 and copy is not None:
        began = at
        with contextlib.suppress(OSError):  # not a regular file, another file system
            while length > 0:
                done = copy(fd, into, length, offset, at)
                if done <= 0:
                    break
                offset, at, length = offset + done, at + done, length - done
        if at != began:
            out.seek(at)  # where the kernel wrote up to
    while length > 0:
        chunk = os.pread(fd, min(length, 1 << 20), offset)
        if not chunk:
            raise OSError(f"a spooled part ends {length} byte(s) short")
        out.write(chunk)
        offset, length = offset + len(chunk), length - len(chunk)


class Slices(msgspec.Struct, frozen=True):
    """Ranges of a spool, copied in their order (a report's cases sorted once all are in)."""

    spool: Spool
    ranges: Sequence[tuple[int, int]]

    def copy_to(self, out: BinaryIO) -> None:
        for offset, length in self.ranges:
            self.spool.copy_range(out, offset, length)


# A report as the parts it is assembled from: its own bytes, and spools (or ranges of
# them) copied in.
Part = bytes | Spool | Slices


def write_parts(out: BinaryIO, parts: Iterable[Part]) -> None:
    for part in parts:
        if isinstance(part, bytes):
            out.write(part)
        else:
            part.copy_to(out)


class _Staged(msgspec.Struct):
    path: Path
    temporary: Path | None  # None: a character device, written at commit time
    data: Sequence[Part] = ()


class ReportFiles(msgspec.Struct):
    """The report files of one run: planned before it, staged, then committed together."""

    planned: dict[str, Path] = msgspec.field(default_factory=dict)  # real path → as given
    purposes: dict[str, str] = msgspec.field(default_factory=dict)  # real path → its use
    written: list[Path] = msgspec.field(default_factory=list)
    failed: list[Path] = msgspec.field(default_factory=list)
    _devices: set[Path] = msgspec.field(default_factory=set)
    _staged: list[_Staged] = msgspec.field(default_factory=list)

    def plan(self, path: Path | str, what: str = "write report", devices: bool = True) -> Path:
        """Check `path` before the run (`check_destination`; a character device only when
        `devices`), refuse the same file named for two reports, and fix it as an absolute
        path: an agent that changes the working directory cannot move it."""
        given = Path(path)
        if "\0" in str(given):  # no file has such a name; every os call would raise on it
            raise ReportPathError(f"{str(given)!r}: a file name cannot hold a NUL character")
        absolute = Path(os.path.abspath(given))
        key = os.path.realpath(absolute)
        if key in self.planned:
            raise ReportPathError(
                f"{given}: named for two reports (also as {self.planned[key]}); "
                "give each report its own file"
            )
        _check_linked_directories(given, f"{given}: cannot {what}")
        if check_destination(absolute, str(given), what):
            if not devices:
                raise ReportWriteError(f"{given}: cannot {what}: it is a device, not a file")
            self._devices.add(absolute)
        self.planned[key] = given
        self.purposes[key] = what
        return absolute

    def refuse_inputs(self, inputs: Sequence[RunInput]) -> None:
        """Refuse a planned report that is one of the run's inputs (through a symbolic or
        a hard link too), or a new `.json` file among a suite's fixtures, before the run:
        the report would overwrite what the run read, or be a case of the next run."""
        planned = {key: _identity(Path(key)) for key in self.planned}
        # A report file that does not exist yet is no input: the suite's fixtures are
        # listed (tens of thousands of them) only when one that does might be one.
        existing = any(found is not None for found in planned.values())
        for item in inputs:
            if not existing:
                identities: set[tuple[int, int] | None] = set()
            elif item.suite:
                identities = _fixture_identities(item.path)
            else:
                identities = {_identity(item.path)} - {None}
            for key, given in self.planned.items():
                if item.rewritten_by == self.purposes[key]:
                    continue
                if item.suite and _fixture_name(Path(key), item.path):
                    raise ReportPathError(
                        f"{given}: a .json file in the suite directory {item.path} is one of "
                        "its fixtures: write the report outside the suite"
                    )
                if planned[key] in identities or key == os.path.realpath(item.path):
                    raise ReportPathError(
                        f"{given}: is {item.what} ({item.path}), which the run reads; a report "
                        "never overwrites its input: give the report a file of its own"
                    )

    def shown(self, path: Path) -> str:
        """`path` as the command line gave it, for messages."""
        return str(self.planned.get(os.path.realpath(path), path))

    def stage(self, path: Path, data: bytes | Sequence[Part]) -> None:
        """Write `data` (bytes, or the parts a report is assembled from) beside `path`, to
        be put in place by `commit`."""
        parts: Sequence[Part] = (data,) if isinstance(data, bytes) else data
        if path in self._devices:
            self._staged.append(_Staged(path, None, parts))
            return
        with interrupts.held():  # a temporary file is never created without being known
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(
                    prefix=f".{path.name}.", suffix=".partial", dir=path.parent
                )
            except OSError as exc:
                self.failed.append(path)
                raise ReportWriteError(
                    f"{self.shown(path)}: cannot write report: {why(exc)}"
                ) from None
            staged = _Staged(path, Path(tmp))
            self._staged.append(staged)
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), FILE_MODE)
                write_parts(handle, parts)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            self._staged.remove(staged)
            Path(tmp).unlink(missing_ok=True)
            self.failed.append(path)
            raise ReportWriteError(f"{self.shown(path)}: cannot write report: {why(exc)}") from None

    def commit(self) -> None:
        """Put every staged file in place, uninterrupted."""
        errors: list[str] = []
        with interrupts.held():
            staged, self._staged = self._staged, []
            for item in staged:
                try:
                    _put_in_place(item)
                except OSError as exc:
                    self.failed.append(item.path)
                    errors.append(f"{self.shown(item.path)}: cannot write report: {why(exc)}")
                else:
                    self.written.append(item.path)
        if errors:
            raise ReportWriteError("\n".join(errors))

    def abort(self) -> None:
        """Remove every staged file: nothing of this run reaches the destinations."""
        staged, self._staged = self._staged, []
        for item in staged:
            if item.temporary is not None:
                with contextlib.suppress(OSError):
                    item.temporary.unlink()

    def account(self) -> list[str]:
        """What was and was not written, for the message of an interrupted run."""
        written = {os.path.realpath(p): p for p in self.written}
        done = sorted(self.shown(path) for path in written.values())
        kept = sorted(str(given) for real, given in self.planned.items() if real not in written)
        lines = []
        if done:
            lines.append("written: " + ", ".join(done))
        if kept:
            lines.append("not written (any previous file left as it was): " + ", ".join(kept))
        return lines


def _put_in_place(item: _Staged) -> None:
    if item.temporary is None:
        with open(item.path, "wb") as device:
            write_parts(device, item.data)
        return
    try:
        os.replace(item.temporary, item.path)
    except OSError:
        item.temporary.unlink(missing_ok=True)
        raise


def own_folder(folder: Path, ignore: bytes | None = None) -> None:
    """Make `folder` (a folder the harness keeps for itself, such as `.zeroclaw-eval`) or
    check the one there, with `ignore` as its `.gitignore` when it has none. Neither is ever
    followed as a symbolic link: a link checked into a repository would aim what the harness
    keeps at any directory the job can write, and a dangling `.gitignore` link would create
    its target (`ReportWriteError`, naming the link)."""
    try:
        folder.mkdir()
    except FileExistsError:
        found = folder.lstat()
        if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(found.st_mode) else "not a directory"
            raise ReportWriteError(f"{folder}: it is {what}, and never written through") from None
    except OSError as exc:
        raise ReportWriteError(f"{folder}: cannot create it: {why(exc)}") from None
    if ignore is None:
        return
    path = folder / ".gitignore"
    try:
        # O_EXCL creates nothing through a link, dangling or not; O_NOFOLLOW says so.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        if path.is_symlink():
            raise ReportWriteError(
                f"{path}: it is a symbolic link, never written through"
            ) from None
        return
    except OSError as exc:
        raise ReportWriteError(f"{path}: cannot write it: {why(exc)}") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(ignore)


def write_atomic(path: Path, data: bytes) -> None:
    """One report file, checked, written and put in place (`ReportWriteError` if not)."""
    files = ReportFiles()
    destination = files.plan(path)
    try:
        files.stage(destination, data)
        files.commit()
    except BaseException:
        files.abort()
        raise
