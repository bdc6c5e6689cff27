"""The cases of a verdict as a long run keeps them: each plain pass as one byte.

A run whose reporters have written every case out as it was kept (`Reporter.case_kept`)
needs of a plain pass (no repeat, cluster, judge grade or failed check) only what its id
and fixture already say, and its score: `KeptCases` holds such a pass as a byte and makes
its report again (`remake`) whenever it is read, every other case whole. Read, it is the
sequence of the cases' reports in fixture order, equal to the one a run keeping every
report whole would give; the verdict's own totals read the cases held whole and the count
of the others (`whole`, `passes`) instead of making them all again.

Under `--jobs N` such a pass may come from its worker without its report at all, as the
parts of it the reporters write (`Passes`): the run then holds it as a byte straight away.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, overload

import msgspec

T = TypeVar("T")

# What `KeptCases` holds of each case, a byte each.
_NOT_IN = 0  # nothing yet
_WHOLE = 1  # its report, whole, in `_whole`
_PASSED = 2  # a plain pass scoring 1.0
_PASSED_UNSCORED = 3  # a plain pass with no score (no check decided it, yet it passed)

# The scores a plain pass is held with: any other keeps its report whole.
SCORES: dict[float | None, int] = {1.0: _PASSED, None: _PASSED_UNSCORED}
_SCORE_OF = {_PASSED: 1.0, _PASSED_UNSCORED: None}


class KeptCases(Sequence[T]):
    """The reports of `count` cases, by their place in the suite. `remake(index, score)`
    gives the report of a plain pass held as a byte, `named(index)` its id; a case not in
    yet reads as an `IndexError` (a verdict is read once every case is in)."""

    __slots__ = ("_every", "_named", "_remake", "_state", "_whole", "passes")

    def __init__(
        self,
        count: int,
        remake: Callable[[int, float | None], T],
        named: Callable[[int], str] | None = None,
        every: Callable[[], list[str]] | None = None,
    ) -> None:
        self._remake = remake
        self._named = named
        self._every = every  # `named` of every case at once, in order
        self._state = bytearray(count)
        # One slot a case, filled only for those held whole: a pointer each, not a dict's
        # entry and key.
        self._whole: list[T | None] = [None] * count
        self.passes = 0  # the cases held as a byte

    def keep(self, index: int, report: T) -> None:
        """Hold `report` whole as the case at `index` (in place of what was held)."""
        if self._state[index] in _SCORE_OF:
            self.passes -= 1
        self._state[index] = _WHOLE
        self._whole[index] = report

    def drop(self, index: int, score: float | None) -> bool:
        """Hold the case at `index` as a plain pass with `score`, whose report `remake`
        makes again; False (nothing held) for a score no byte stands for."""
        state = SCORES.get(score)
        if state is None:
            return False
        if self._state[index] not in _SCORE_OF:
            self.passes += 1
        self._state[index] = state
        self._whole[index] = None
        return True

    def drop_run(self, first: int, codes: bytes) -> bool:
        """Hold the cases from `first` on as plain passes, one a byte of `codes` (each a
        plain pass's: `SCORES`' values), at once; False (nothing held) when any of them is
        in already."""
        end = first + len(codes)
        state = self._state
        if state.count(_NOT_IN, first, end) != len(codes):
            return False
        state[first:end] = codes
        self.passes += len(codes)
        return True

    def has(self, index: int) -> bool:
        return self._state[index] != _NOT_IN

    def missing(self) -> int:
        """How many cases are not in yet (counted at once)."""
        return self._state.count(_NOT_IN)

    def ids(self, id_of: Callable[[T], str]) -> Iterator[str]:
        """Each case's id, in fixture order (`id_of` a report held whole), a plain pass's
        without making its report again when `named` says it."""
        named, whole = self._named, self._whole
        for index, state in enumerate(self._state):
            if state == _WHOLE:
                yield id_of(whole[index])  # type: ignore[arg-type]  # held whole: never None
            elif state == _NOT_IN:
                raise IndexError(f"case {index} is not in yet")
            else:
                yield named(index) if named else id_of(self._remake(index, _SCORE_OF[state]))

    def all_ids(self, id_of: Callable[[T], str]) -> list[str]:
        """`ids`, as a list: with every case in and the cases' ids at hand at once
        (`every`), those of the plain passes are not read one by one."""
        state = self._state
        if self._every is None or _NOT_IN in state:
            return list(self.ids(id_of))
        found, whole = self._every(), self._whole
        at = state.find(_WHOLE)
        while at >= 0:
            found[at] = id_of(whole[at])  # type: ignore[arg-type]  # held whole: never None
            at = state.find(_WHOLE, at + 1)
        return found

    def whole(self) -> Iterator[T]:
        """The reports held whole, in fixture order (the plain passes left out)."""
        return (report for report in self._whole if report is not None)

    def __len__(self) -> int:
        return len(self._state)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("case index out of range")
        return self._at(index)

    def _at(self, index: int) -> T:
        state = self._state[index]
        if state == _WHOLE:
            report = self._whole[index]
            assert report is not None
            return report
        if state == _NOT_IN:
            raise IndexError(f"case {index} is not in yet")
        return self._remake(index, _SCORE_OF[state])

    def __iter__(self) -> Iterator[T]:
        remake, whole = self._remake, self._whole
        for index, state in enumerate(self._state):
            if state == _WHOLE:
                yield whole[index]  # type: ignore[misc]  # held whole: never None
            elif state == _NOT_IN:
                raise IndexError(f"case {index} is not in yet")
            else:
                yield remake(index, _SCORE_OF[state])

    def __eq__(self, other: object) -> bool:
        # As a list of the same reports is: a verdict compares equal to one kept whole.
        if isinstance(other, (KeptCases, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list is

    def __repr__(self) -> str:
        return f"KeptCases({list(self)!r})"


def plain_passes(cases: Sequence[T]) -> tuple[Sequence[T] | Iterator[T], int]:
    """`cases` as the cases held whole and how many plain passes (held as a byte) there are
    besides: for `KeptCases`, without making those again; any other sequence is all whole."""
    if isinstance(cases, KeptCases):
        return cases.whole(), cases.passes
    return cases, 0


# One plain pass as a worker process sends it (`Passes`): the case's place in the suite,
# its id and score, and the parts of it the worker rendered, one a kind.
Pass = tuple[int, str, "float | None", tuple[object, ...]]


class Prerendering(msgspec.Struct, frozen=True):
    """What workers render of each report for this process's reporters (`kinds`: the
    `harness.run.pool_worker.Prerender`s), and whether a plain pass goes back as those
    parts alone (`passes`: its place, id and score, no report, as `Passes` holds it), for
    reporters that write a plain pass from its parts."""

    kinds: tuple[Any, ...]
    passes: bool = False


# What a worker wrote of one kind's parts of a run into files of its own, one a stream
# (`harness.run.pool_worker._Streams`): per stream where it begins, its length, how many
# passes wrote to it, and each pass's length (-1: none).
Spilled = tuple[tuple[int, int, int, list[int]], ...]
# One such stream of one run as this process reads it: the file (open, read-only) too.
Region = tuple[Any, int, int, int, list[int]]


class Passes:
    """Plain passes as worker processes sent them, in the order they were done, without
    their reports, held as columns: each pass's place in the suite (`places`), its score
    as the byte `KeptCases` holds it by (`codes`), and per kind of part its workers
    rendered (`kinds`: the `Prerender`s) the list of those parts, one a pass; or, for a
    kind whose parts a worker wrote into files of its own (`Prerender.streams`), where
    they are there (`spilled`: a reporter copies them from there), read only when asked
    for (`parts`). A worker's passes one after another in the suite come as one run
    (`run`): a run's places are a `range` and its ids are the suite's own (`named`), so
    that nothing is made per pass to hand them on. A batch goes to the reporters at once
    (`passes_done`, `passes_kept`).

    Made from `Pass` entries (`Passes(kinds, entries)`), it holds their ids."""

    __slots__ = ("_columns", "_ids", "_spills", "codes", "kinds", "places")

    def __init__(self, kinds: Sequence[object], entries: list[Pass]) -> None:
        self.kinds = kinds
        self.places: Sequence[int] = [entry[0] for entry in entries]
        self.codes = bytes([SCORES[entry[2]] for entry in entries])
        self._columns: list[list[object] | None] = [
            [entry[3][at] for entry in entries] for at in range(len(kinds))
        ]
        self._ids: Sequence[str] | None = [entry[1] for entry in entries]
        self._spills: dict[int, tuple[list[Region], ...]] = {}

    @classmethod
    def run(
        cls,
        kinds: Sequence[object],
        first: int,
        codes: bytes,
        columns: Sequence[list[object] | None],
        ids: Sequence[str] | None = None,
        spills: dict[int, tuple[list[Region], ...]] | None = None,
    ) -> Passes:
        """The passes at `first` and the places after it, one a code of `codes`."""
        made = cls.__new__(cls)
        made.kinds, made.codes, made._columns, made._ids = kinds, codes, list(columns), ids
        made.places = range(first, first + len(codes))
        made._spills = spills or {}
        return made

    @classmethod
    def joined(cls, runs: list[Passes], ids: Sequence[str] | None = None) -> Passes:
        """Runs one after another in the suite, as one."""
        first = runs[0]
        if len(runs) == 1:
            if ids is not None:
                first._ids = ids
            return first
        columns: list[list[object] | None] = []
        spills: dict[int, tuple[list[Region], ...]] = {}
        for at in range(len(first.kinds)):
            if all(at in each._spills for each in runs):
                streams = zip(*(each._spills[at] for each in runs), strict=True)
                spills[at] = tuple(
                    [region for regions in stream for region in regions] for stream in streams
                )
                columns.append(None)
                continue
            column: list[object] = []
            for each in runs:
                column += each._column(at)
            columns.append(column)
        codes = b"".join(each.codes for each in runs)
        if ids is None and all(each._ids is not None for each in runs):
            ids = [name for each in runs for name in each.ids()]
        return cls.run(first.kinds, first.places[0], codes, columns, ids, spills)

    def named(self, ids: Sequence[str]) -> None:
        """Each pass's id, from the suite's ids in order (`ids[place]`), for a run."""
        places = self.places
        if isinstance(places, range):
            self._ids = ids[places.start : places.stop]
        else:
            self._ids = [ids[place] for place in places]

    def runs(self) -> list[Passes]:
        """These passes as runs of places one after another, in order."""
        places = self.places
        if isinstance(places, range):
            return [self]
        found, begun = [], 0
        for at in range(1, len(places) + 1):
            if at == len(places) or places[at] != places[at - 1] + 1:
                found.append(self.picked(range(begun, at)))
                begun = at
        return found

    def picked(self, positions: Sequence[int]) -> Passes:
        """The passes at `positions` (of these, in order)."""
        picked = Passes.run(
            self.kinds,
            0,
            bytes([self.codes[at] for at in positions]),
            [
                [column[at] for at in positions]
                for column in (self._column(n) for n in range(len(self.kinds)))
            ],
            None if self._ids is None else [self._ids[at] for at in positions],
        )
        places = [self.places[at] for at in positions]
        contiguous = all(b == a + 1 for a, b in itertools.pairwise(places))
        picked.places = range(places[0], places[-1] + 1) if contiguous and places else places
        return picked

    def __len__(self) -> int:
        return len(self.codes)

    def parts(self, kind: object) -> list[object]:
        """Each pass's part of `kind`, in order (`ValueError`: no worker rendered it)."""
        return self._column(list(self.kinds).index(kind))

    def spilled(self, kind: object) -> tuple[list[Region], ...] | None:
        """Where the parts of `kind` are, one list of regions a stream, in order; None:
        they are held (`parts`)."""
        return self._spills.get(list(self.kinds).index(kind))

    def _column(self, at: int) -> list[object]:
        column = self._columns[at]
        if column is None:  # read from the worker's files, once
            column = self._columns[at] = _read(self.kinds[at], self._spills.pop(at))
        return column

    def ids(self) -> Sequence[str]:
        """Each pass's id, in order."""
        if self._ids is None:
            raise ValueError("these passes were not named")
        return self._ids

    def scores(self) -> list[float | None]:
        """Each pass's score, in order."""
        return [_SCORE_OF[code] for code in self.codes]


def _read(kind: Any, streams: tuple[list[Region], ...]) -> list[object]:
    """Each pass's part of `kind`, made again from what its worker wrote of it."""
    values: list[list[bytes | None]] = []
    for separator, regions in zip(kind.streams, streams, strict=True):
        found: list[bytes | None] = []
        for file, offset, length, _, lengths in regions:
            data = os.pread(file.fileno(), length, offset) if length else b""
            at = 0
            for size in lengths:
                if size < 0:
                    found.append(None)
                    continue
                skip = len(separator) if at else 0  # the run's first has none before it
                found.append(data[at + skip : at + size])
                at += size
        values.append(found)
    return [kind.unspill(each) for each in zip(*values, strict=True)]
