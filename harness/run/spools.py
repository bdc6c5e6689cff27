"""Where a worker process keeps the plain passes it has done (`pool_worker._Sender`) and
how the harness reads them: each spooled as it is done, a record a case, until the run of
them is sent (a worker that dies has them read there, `spooled`); the parts of a kind with
`streams` written into files of the worker's own a run at once (`Streams`), copied from
there into the reports; the harness's side of all of it (`Spools`)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import mmap
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import msgspec

from harness.verdict.kept import Pass, Passes, Region, Spilled
from harness.verdict.reports import CaseReport

# A file system in memory, where most Linux systems have one.
_SHARED_MEMORY = "/dev/shm"


class Streams:
    """The parts of one kind (a `Prerender` with `streams`) of this worker's plain passes,
    held until their run is sent, then written into files of their own, one a stream
    (`spill`: a part as the bytes of each, or None), each pass's after the one before it
    with the stream's separator between: what the harness copies into its reports a run
    at once, none of it through its pipe. What a run wrote of each stream (`taken`): where
    it begins, how long it is, how many passes it holds, and each pass's length (-1: none).
    Until then the spool holds each pass whole (a worker that dies has written nothing
    here for it)."""

    def __init__(self, kind: Any, path: str) -> None:
        self._spill = kind.spill
        self._separators: tuple[bytes, ...] = kind.streams
        self._fds = [
            os.open(f"{path}.{n}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            for n in range(len(self._separators))
        ]
        self._ends = [0] * len(self._fds)
        self._held: list[list[bytes]] = [[] for _ in self._fds]
        self._lengths: list[list[int]] = [[] for _ in self._fds]

    def hold(self, part: object) -> None:
        for n, value in enumerate(self._spill(part)):
            if value is None:
                self._lengths[n].append(-1)
                continue
            held = self._held[n]
            data = self._separators[n] + value if held else value  # the run's first: none
            held.append(data)
            self._lengths[n].append(len(data))

    def taken(self) -> Spilled:
        """What is held, written (`OSError`: not all of it; then nothing counts)."""
        made = []
        for n, fd in enumerate(self._fds):
            data = b"".join(self._held[n])
            at = self._ends[n]
            while at < self._ends[n] + len(data):  # where it goes, whatever a failure left
                at += os.pwrite(fd, data[at - self._ends[n] :], at)
            made.append((self._ends[n], len(data), len(self._held[n]), self._lengths[n]))
        for n, (_, length, _, _) in enumerate(made):
            self._ends[n] += length
        self.drop()
        return tuple(made)

    def drop(self) -> None:
        """What is held, let go of."""
        self._held = [[] for _ in self._fds]
        self._lengths = [[] for _ in self._fds]


class Spool:
    """A worker's spool file (`pool_worker._Sender`): records added one after another, each
    as it comes (`add`), until the run they hold is sent (`clear`). In a file system in
    memory (or with `mapped`) the file is mapped, its pages shared with the page cache: a
    record is in the file as it is copied there, with no system call, and stays there
    should the worker die, as a written one would; the records end where a length of zero
    is (`_END`), the file's size then only what it has room for. On a disk each is written
    (a mapping's pages would be written back to it, and a failed read kill the process).
    `OSError`: there is no spool."""

    def __init__(self, path: str, mapped: bool | None = None) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self._map: mmap.mmap | None = None
        self._at = 0  # where the next record goes in the mapping
        if path.startswith(os.path.join(_SHARED_MEMORY, "")) if mapped is None else mapped:
            self._map = self._mapping(_MAPPED)

    def _mapping(self, size: int) -> mmap.mmap | None:
        """The file mapped whole at `size`, its pages taken first (no room: None), so that
        no copy into it can find none (which would kill the process, not fail a write)."""
        try:
            os.posix_fallocate(self._fd, 0, size)
            return mmap.mmap(self._fd, size)
        except (OSError, ValueError, AttributeError):  # no room, or no such call here
            return None

    def add(self, data: bytes) -> bool:
        """`data` (whole records) after the records held; False: not spooled whole."""
        mapped = self._map
        if mapped is None:
            try:
                return os.write(self._fd, data) == len(data)
            except OSError:
                return False
        at, end = self._at, self._at + len(data)
        if end + len(_END) > len(mapped):
            mapped = self._map = self._mapping(max(2 * len(mapped), 2 * end)) or mapped
            if end + len(_END) > len(mapped):
                return False  # no room (a full file system): sent now instead
        # Its first length last: until then the records end where they did, and one cut
        # short by the worker's death is not read as whole.
        mapped[end : end + len(_END)] = _END
        mapped[at + 4 : end] = memoryview(data)[4:]
        mapped[at : at + 4] = data[:4]
        self._at = end
        return True

    def clear(self) -> None:
        """The records held let go of (sent): the spool holds only what comes after."""
        if self._map is not None:
            self._map[: len(_END)] = _END
            self._at = 0
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            os.lseek(self._fd, 0, os.SEEK_SET)


# Where the records of a mapped spool end: a length of zero, which no record has.
_END = bytes(4)
# How large a mapped spool starts (then twice as large as it needs): a run's records, its
# passes' reports, take a few kilobytes each.
_MAPPED = 1 << 20


def record(entry: object) -> bytes:
    """`entry` as the spool holds it: its pickle, after its length."""
    data = pickle.dumps(entry, pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(4, "big") + data


def kinds_record(kinds: Sequence[Any]) -> bytes:
    """What a spool holds first when its passes are held as their encoded reports: the
    kinds of parts to render of them (`Prerender`s, by reference), should it be read."""
    return record((_KINDS, tuple(kinds)))


# The first field of a spool's record of the kinds its reports render into parts.
_KINDS = "kinds"


class Spooled(NamedTuple):
    """What a worker's spool holds: the passes read whole and rendered (`passes`), and the
    places of those whose report does not read back as its type or whose parts fail to
    render (`again`, in order): done, but nothing the harness can report, so they run
    again, as if the worker had died before them."""

    passes: list[Pass]
    again: list[int]


def spooled(path: str) -> Spooled:
    """The passes a worker's spool file at `path` holds, whole (one it was writing as it
    died is not); none when it has none. A pass held as its encoded report (a worker
    renders its parts only as it sends them) gets them rendered here, of the kinds the
    spool names first. The worker never reads a report back itself (a tenth of a plain
    case's cost): one that does not read back, an own loop's message with a role no
    `Message` has, say, is found here, where it ends nothing that comes after it."""
    found = Spooled([], [])
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return found
    renders: list[Callable[[CaseReport], object]] = []
    at = 0
    while at + 4 <= len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        if size == 0 or at + 4 + size > len(data):  # the end of a mapped spool's records
            break
        try:
            entry = pickle.loads(data[at + 4 : at + 4 + size])
            place, held = entry[0], entry[-1]  # (the kinds' mark, the kinds) or a pass
            if place == _KINDS:
                renders = [kind.render for kind in held]
            elif type(place) is not int:
                raise TypeError("a pass's place is a number")
        except Exception:  # a record written in part (a full disk), or none: nothing after
            break
        at += 4 + size
        if place == _KINDS:
            continue
        if not isinstance(held, bytes):  # held with its parts
            found.passes.append(entry)
            continue
        parts = None
        with contextlib.suppress(Exception):  # a value its type refuses
            parts = rendered(renders, [read_back(held)])[0]  # None: a reporter's bug
        if parts is None:
            found.again.append(place)
        else:
            found.passes.append((*entry[:3], parts))
    return found


def rendered(
    renders: Sequence[Callable[[CaseReport], object]], reports: Sequence[CaseReport]
) -> list[tuple[object, ...] | None]:
    """The parts of each of `reports` (None: a part failed; a part is never needed, the
    harness renders the case itself), a kind at a time: its code warm for the next."""
    columns: list[list[object]] = [[] for _ in renders]
    failed: set[int] = set()
    for render, column in zip(renders, columns, strict=True):
        for at, report in enumerate(reports):
            try:
                column.append(render(report))
            except Exception:  # whatever a reporter's bug raises
                column.append(None)
                failed.add(at)
    return [
        None if at in failed else tuple(column[at] for column in columns)
        for at in range(len(reports))
    ]


# A plain pass's report as a spool holds it (a third cheaper than its JSON): `packed` by
# the worker that held it, `read_back` by the harness should the worker die before sending it.
packed = msgspec.msgpack.Encoder().encode


def read_back(payload: bytes) -> CaseReport:
    return _decoder().decode(payload)


@functools.cache
def _decoder() -> msgspec.msgpack.Decoder[CaseReport]:
    """Made for the first report read back: making it walks the report's types."""
    return msgspec.msgpack.Decoder(CaseReport)


class Spools:
    """This process's side of its workers' spools (`_Sender`), in a folder of their own:
    each worker's file (`path`, by the worker as this process holds it), the plain passes
    one sent (`run`) or did and never sent (`unsent`), and the files it wrote parts into,
    each opened once (and closed once nothing reads it: `close` removes the folder)."""

    def __init__(self, kinds: Sequence[Any]) -> None:
        self._kinds = kinds
        self._folder = tempfile.mkdtemp(prefix="zeroclaw-passes-")
        # A pass is spooled as it is done, a write a case: in memory where there is a
        # file system there for it (no journal a write may wait on), else beside the rest.
        self._records = self._folder
        with contextlib.suppress(OSError):
            self._records = tempfile.mkdtemp(prefix="zeroclaw-passes-", dir=_SHARED_MEMORY)
        self._paths: dict[object, tuple[str, str]] = {}  # its spool, its parts' prefix
        self._named = itertools.count()  # never a name again, a forgotten worker's included
        self._files: dict[tuple[object, int, int], Any] = {}

    def paths(self, worker: object) -> tuple[str, str]:
        """Where `worker` spools its passes, and where the files of its parts begin."""
        name = str(next(self._named))
        made = self._paths[worker] = (
            os.path.join(self._records, name),
            os.path.join(self._folder, name),
        )
        return made

    def run(self, worker: object, message: tuple[Any, ...]) -> Passes:
        """The passes of a worker's "run" message."""
        _, first, codes, columns, spilled = message
        spills = {at: self._regions(worker, at, made) for at, made in spilled.items()}
        return Passes.run(self._kinds, first, codes, columns, None, spills)

    def unsent(self, worker: object, waiting: set[int]) -> tuple[Passes | None, list[int]]:
        """The passes of `waiting` (the worker's cases not in) its spool holds (None: none),
        and the places of those it holds that cannot be reported (`Spooled.again`)."""
        spool = self._paths.get(worker, ("", ""))[0]
        found = spooled(spool)
        entries = [entry for entry in found.passes if entry[0] in waiting]
        again = [place for place in found.again if place in waiting]
        return (Passes(self._kinds, entries) if entries else None), again

    def forget(self, worker: object) -> None:
        """`worker` is gone and read: its files let go of and removed (passes not yet
        written into the reports hold theirs open), so deaths add no open files."""
        paths = self._paths.pop(worker, None)
        for key in [key for key in self._files if key[0] is worker]:
            del self._files[key]
        if paths is None:
            return
        spool, parts = paths
        mine = [os.path.join(self._folder, n) for n in os.listdir(self._folder)]
        for path in [spool, *(p for p in mine if p.startswith(parts + "."))]:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _regions(self, worker: object, at: int, spilled: Spilled) -> tuple[list[Region], ...]:
        found = []
        for stream, (offset, length, count, lengths) in enumerate(spilled):
            key = (worker, at, stream)
            file = self._files.get(key)
            if file is None:
                path = f"{self._paths[worker][1]}.{at}.{stream}"
                file = self._files[key] = open(path, "rb", buffering=0)  # noqa: SIM115
            found.append([(file, offset, length, count, lengths)])
        return tuple(found)

    def close(self) -> None:
        """The folder removed: what is open is read on, until let go."""
        for folder in {self._folder, self._records}:
            shutil.rmtree(folder, ignore_errors=True)
        self._files.clear()
