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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

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

    __slots__ = ("_named", "_remake", "_state", "_whole", "passes")

    def __init__(
        self,
        count: int,
        remake: Callable[[int, float | None], T],
        named: Callable[[int], str] | None = None,
    ) -> None:
        self._remake = remake
        self._named = named
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

    def has(self, index: int) -> bool:
        return self._state[index] != _NOT_IN

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


@dataclass(frozen=True)
class Prerendering:
    """What workers render of each report for this process's reporters (`kinds`: the
    `harness.run.pool_worker.Prerender`s), and whether a plain pass goes back as those
    parts alone (`passes`: its place, id and score, no report, as `Passes` holds it), for
    reporters that write a plain pass from its parts."""

    kinds: tuple[Any, ...]
    passes: bool = False


class Passes:
    """Plain passes as worker processes sent them, in the order they were done, without
    their reports: what the run keeps of each is its place and score, and what its
    reports write of it the worker rendered (`kinds`: the `Prerender`s, in the order each
    pass's parts are). A batch of them goes to the reporters at once (`passes_done`,
    `passes_kept`), not case by case."""

    __slots__ = ("entries", "kinds")

    def __init__(self, kinds: Sequence[object], entries: list[Pass]) -> None:
        self.kinds = kinds
        self.entries = entries

    def __len__(self) -> int:
        return len(self.entries)

    def parts(self, kind: object) -> list[object]:
        """Each pass's part of `kind`, in order (`ValueError`: no worker rendered it)."""
        at = list(self.kinds).index(kind)
        return [entry[3][at] for entry in self.entries]

    def ids(self) -> list[str]:
        """Each pass's id, in order."""
        return [entry[1] for entry in self.entries]
