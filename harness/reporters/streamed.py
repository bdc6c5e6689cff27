"""Reports that hold every case, written as the cases are kept rather than built at the end.

A document's cases go out one by one (`Reporter.case_kept`, in suite order) into spools,
temporary files of their own; at the end only its head and tail, which need the run's
totals, are rendered, and the report is assembled from them and the spools by a streaming
copy into its staged file (`harness.io.atomic`), so a run's memory does not grow with what
its reports hold. The bytes are those the whole document would render (`Cases.whole`):
should the cases kept not be the verdict's (a caller that hands reporters cases of its
own), the document is rendered whole from the verdict instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from harness.io.atomic import Part, Spool
from harness.verdict.kept import KeptCases

if TYPE_CHECKING:
    from harness.expectations.base import Grade
    from harness.verdict.kept import Passes, Region
    from harness.verdict.reports import CaseReport, SuiteReport


class Cases(Protocol):
    """A document's form: each case's part as it is kept, and the document around them."""

    def named(self, suite: str, agent: str) -> None:
        """The suite and agent the verdict will name, before any case is added."""

    def add(self, case: CaseReport) -> None:
        """Write `case`'s part to the spools."""

    def parts(self, report: SuiteReport) -> Sequence[Part]:
        """The whole document: its head, the spools, its tail."""
        ...

    def whole(self, report: SuiteReport) -> bytes:
        """The document rendered in memory from `report` (the reference the parts equal)."""
        ...

    def close(self) -> None:
        """Let go of the spools."""


class RenderedCases(Cases, Protocol):
    """A form whose cases' parts a worker process may render (`Reporter.worker_parts`)."""

    worker_parts: object

    def add_passes(self, passes: Passes) -> None:
        """Write the plain passes' parts, as their workers rendered them, in order."""


def _id(case: CaseReport) -> str:
    return case.id


def _keys(ids: Iterable[str]) -> bytes:
    """What the order digest is fed for `ids`: each id and a NUL, one after another (fed
    a case at a time or all at once, the same digest)."""
    listed = list(ids)
    return ("\0".join(listed) + "\0" if listed else "").encode("utf-8", "surrogatepass")


class Streamed:
    """One document's cases written as they are kept, shared by its destinations (a file
    and stdout): spooled once, by the first to subscribe."""

    def __init__(self, cases: Cases) -> None:
        self._cases = cases
        self._owner: object | None = None
        self._users = 0
        self._count = 0
        self._order = hashlib.blake2b(digest_size=16)  # which cases, in which order
        self._failed: OSError | None = None  # a spool could not be written (a full disk)

    def subscribe(self, user: object) -> None:
        self._owner = user if self._owner is None else self._owner
        self._users += 1

    def named(self, suite: str, agent: str) -> None:
        self._cases.named(suite, agent)

    def add(self, case: CaseReport, by: object) -> None:
        if by is not self._owner or self._failed is not None:
            return
        try:
            self._cases.add(case)
        except OSError as exc:  # said when the document is written, not before
            self._failed = exc
            return
        self._count += 1
        self._order.update(_keys((case.id,)))

    @property
    def worker_parts(self) -> object:
        """What a worker renders of each case for the form (`Prerender`); None: nothing."""
        return getattr(self._cases, "worker_parts", None)

    def add_passes(self, passes: Passes, by: object) -> None:
        """`add` of each plain pass, from the part its worker rendered."""
        if by is not self._owner or self._failed is not None:
            return
        try:
            cast(RenderedCases, self._cases).add_passes(passes)  # it has `worker_parts`
        except OSError as exc:
            self._failed = exc
            return
        self._count += len(passes)
        self._order.update(_keys(passes.ids()))

    def parts(self, report: SuiteReport) -> Sequence[Part]:
        """The document of `report`: assembled from the spools when they hold its cases,
        in its order, else rendered whole. `OSError` when a spool could not be written:
        the verdict may no longer hold its cases whole."""
        if self._failed is not None:
            raise self._failed
        cases = report.cases
        if self._count == len(cases):
            # The verdict's cases by their ids (unique in a suite), a plain pass's said
            # without making its report again.
            ids = cases.all_ids(_id) if isinstance(cases, KeptCases) else map(_id, cases)
            order = hashlib.blake2b(_keys(ids), digest_size=16)
            if order.digest() == self._order.digest():
                return self._cases.parts(report)
        return (self._cases.whole(report),)

    def release(self) -> None:
        """One user is done; the last lets go of the spools."""
        self._users -= 1
        if self._users <= 0:
            self._cases.close()


class SpooledList:
    """Parts joined by a separator in one spool: the cases of a list in a document."""

    def __init__(self, separator: bytes, directory: Path | None = None) -> None:
        self.spool = Spool(directory)
        self._separator = separator
        self.count = 0

    def append(self, part: bytes) -> None:
        self.spool.write(part if not self.count else self._separator + part)
        self.count += 1

    def extend_from(self, regions: list[Region]) -> None:
        """`extend` of the parts a worker wrote into a file, joined by this separator
        (`Passes.spilled`), held there: copied into the document from there, once."""
        for file, offset, length, count, _ in regions:
            if count:
                if self.count:
                    self.spool.write(self._separator)
                self.spool.refer(file, offset, length)
                self.count += count

    def extend(self, parts: list[bytes]) -> None:
        """`append` of each, in one write."""
        if parts:
            joined = self._separator.join(parts)
            self.spool.write(joined if not self.count else self._separator + joined)
            self.count += len(parts)


Render = Callable[["SuiteReport"], bytes]

_WHOLE_SCORE = 1.0
_NO_GRADES: list[Grade] = []  # shared by every slimmed case: read-only, as reports are


def slimmed(case: CaseReport) -> CaseReport | None:
    """What a run keeps of a plain pass (no repeat, cluster, judge grade or failed check)
    once its reports have it written out: its id and fixture (and score); None: keep it
    whole."""
    from harness.verdict.reports import CaseReport

    if not case.plain:
        return None
    # One empty list and one score for them all: a run keeps thousands.
    score = _WHOLE_SCORE if case.score == _WHOLE_SCORE else case.score
    return CaseReport(id=case.id, fixture=case.fixture, passed=True, score=score, grades=_NO_GRADES)
