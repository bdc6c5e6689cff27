"""Loading a suite: every direct `*.json` child of a directory, admitted or all refused."""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from harness.admission import admit
from harness.agent import AgentSurface
from harness.errors import HarnessError
from harness.fixture import (
    LlmTrace,
    fixture_hash,
    located,
    parse_admitted,
    parse_fixture_bytes,
)
from harness.inputs import InputError, read_bounded
from harness.modes import Mode
from harness.problems import AdmissionError, Problem, escaped, unsafe_name_problem

MAX_FIXTURE_BYTES = 1 << 20


class FixtureChanged(HarnessError):
    """An admitted fixture that is no longer what admission read: changed, gone or
    unreadable on disk before its case ran. The case is a run error: it never runs what
    admission did not see."""


@dataclass(frozen=True, slots=True)
class Case:
    """An admitted fixture: its trace, where it came from, and its text (for line lookups
    and its hash).

    A suite's cases live as long as its run: a case `load_suite` admitted keeps neither
    its trace nor its text, only a digest of its bytes, and reads the file again when
    asked for either (the last ones asked for stay read), refusing it if the bytes are
    no longer those admitted (`FixtureChanged`). A case built with its trace and text
    keeps them (a mutant's trace need not be its text's).
    """

    trace: LlmTrace
    path: Path
    text: str
    _id: str = dataclasses.field(init=False, repr=False, compare=False)
    # The admitted bytes' digest, for a case that dropped its trace and text; else None.
    _digest: bytes | None = dataclasses.field(init=False, repr=False, compare=False)
    # The digest of its canonical form, where admission made it as it parsed; else None.
    _canonical: bytes | None = dataclasses.field(init=False, repr=False, compare=False)

    @classmethod
    def admitted(cls, case_id: str, path: str, data: bytes, canonical: bytes | None) -> Case:
        """A case of a suite, admitted from `data` (the bytes of `path`) whose canonical
        form has the digest `canonical` (None: not known yet): its trace and text are read
        again when asked for."""
        return cls.dropped(case_id, path, digest_of(data), canonical)

    @classmethod
    def dropped(
        cls, case_id: str, path: str, digest: bytes, canonical: bytes | None = None
    ) -> Case:
        """The case admitted from the bytes of `path` with this digest (a worker process
        gets it so). Its path is kept as text, a third of a `Path`'s memory."""
        # Its slots filled directly: `__init__` would set each through the frozen
        # dataclass's guard, and the trace through its descriptor, only to drop it.
        case = object.__new__(cls)
        _TRACE_SLOT.__set__(case, None)
        _TEXT_SLOT.__set__(case, None)
        _ID_SLOT.__set__(case, case_id)
        _PATH_SLOT.__set__(case, path)
        _DIGEST_SLOT.__set__(case, digest)
        _CANONICAL_SLOT.__set__(case, canonical)
        return case

    @property
    def id(self) -> str:
        return self._id

    @property
    def where(self) -> str:
        """Its path as text, as admitted: what a report shows and a worker opens, without
        making a `Path` of it for each case."""
        return _where(self)

    @property
    def digest(self) -> bytes | None:
        """The digest of the admitted bytes, for a case that reads them again; else None."""
        return self._digest

    @property
    def canonical(self) -> bytes | None:
        """The SHA-256 digest of its canonical form as admission made it; None where
        admission did not (a float in it, a case built as `Case(trace, path, text)`)."""
        return self._canonical

    @property
    def fixture_sha256(self) -> str:
        """`fixture_hash` of its text: what receipts and baselines know it by. Made by
        admission for most cases, from the same decoding as the trace (no third parse)."""
        canonical = self._canonical
        return canonical.hex() if canonical is not None else fixture_hash(self.text)


def digest_of(data: bytes) -> bytes:
    # SHA-256: done in hardware on most CPUs, faster here than BLAKE2 in software.
    return hashlib.sha256(data).digest()


class _Dropped:
    """A field an admitted case drops (`part` of what `_reread` gives: 0 its text, 1 its
    trace): the value it holds, or, for a case that dropped it, its file read again (and
    parsed by the parser that admitted it, so the same trace)."""

    part = 0

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    def __get__(self, case: Case | None, owner: type | None = None) -> Any:
        if case is None:
            return self
        held = self._slot.__get__(case)
        return held if held is not None else _reread(_where(case), case._digest)[self.part]

    def __set__(self, case: Case, value: Any) -> None:
        self._slot.__set__(case, value)


class _Trace(_Dropped):
    """The `trace` field; setting it (the dataclass's `__init__`, `replace`) also sets the
    case's id, and makes it a case that holds its trace and text (its canonical digest
    made from the text when asked for)."""

    part = 1

    def __set__(self, case: Case, trace: LlmTrace) -> None:
        self._slot.__set__(case, trace)
        _ID_SLOT.__set__(case, trace.case_id)
        _DIGEST_SLOT.__set__(case, None)
        _CANONICAL_SLOT.__set__(case, None)


class _Path:
    """A case's `path` field: a `Path`, whether it holds one or its text."""

    def __get__(self, case: Case | None, owner: type | None = None) -> Any:
        if case is None:
            return self
        path: str | Path = _PATH_SLOT.__get__(case)
        return Path(path) if type(path) is str else path

    def __set__(self, case: Case, path: Path) -> None:
        _PATH_SLOT.__set__(case, path)


def _where(case: Case) -> str:
    path: str | Path = _PATH_SLOT.__get__(case)
    return path if type(path) is str else str(path)


_TRACE_SLOT = Case.__dict__["trace"]
_TEXT_SLOT = Case.__dict__["text"]
_ID_SLOT = Case.__dict__["_id"]
_PATH_SLOT = Case.__dict__["path"]
_DIGEST_SLOT = Case.__dict__["_digest"]
_CANONICAL_SLOT = Case.__dict__["_canonical"]
# In place of the slots' own descriptors, which they keep using underneath.
setattr(Case, "trace", _Trace(_TRACE_SLOT))  # noqa: B010 (typed as a field)
setattr(Case, "text", _Dropped(_TEXT_SLOT))  # noqa: B010 (typed as a field)
setattr(Case, "path", _Path())  # noqa: B010 (typed as a field)


# Cases run one at a time per worker (or `jobs` at once in one process): this many fixtures
# read again cover every case in flight, and ask nothing of memory.
_PARSED_CASES = 256


@functools.lru_cache(maxsize=_PARSED_CASES)
def _reread(where: str, digest: bytes | None) -> tuple[str, LlmTrace]:
    """The text and trace of the admitted fixture at `where`, read again; `FixtureChanged`
    unless its bytes are the ones admitted."""
    try:
        data = read_bounded(where, MAX_FIXTURE_BYTES)
    except InputError as exc:
        reason = f"{where}: the admitted fixture can no longer be read: {exc.reason}"
        raise FixtureChanged(reason) from None
    if digest_of(data) != digest:
        raise FixtureChanged(
            f"{where}: the fixture changed after it was admitted; run again to admit it as "
            "it is now"
        )
    text = data.decode("utf-8")  # admitted: it decodes
    return text, parse_admitted(text)


def fixture_paths(directory: Path) -> list[Path]:
    """The suite's fixtures in sorted file-name order; never descends, never opens. A
    single fixture file is a suite of one."""
    return [Path(listed.where) for listed in _listed(directory)]


class _Listed(NamedTuple):
    name: str
    where: str  # `str(path)`
    # The listing said it is a regular file (not a symlink), which it says without a
    # `stat` on most file systems.
    regular: bool


def _listed(directory: Path) -> list[_Listed]:
    """`fixture_paths`, each with what the listing said about it."""
    where = str(directory)
    if directory.name.endswith(".json") and directory.is_file():
        return [_Listed(directory.name, where, False)]
    try:
        with os.scandir(directory) as entries:
            found = sorted(
                (e.name, _regular(e))
                for e in entries
                if e.name.endswith(".json") and e.name != ".json"
            )
    except FileNotFoundError:
        raise AdmissionError([Problem(where, "suite", "suite directory does not exist")]) from None
    except NotADirectoryError:
        raise AdmissionError([Problem(where, "suite", "not a directory")]) from None
    except OSError as exc:
        raise AdmissionError(
            [Problem(where, "suite", f"cannot read suite directory: {exc.strerror or exc}")]
        ) from None
    # A child's text is its directory's followed by its name, as pathlib spells children:
    # worked out once, not formatted again from its parts for each of thousands.
    prefix = str(directory / "_")[:-1]
    return [_Listed(name, prefix + name, regular) for name, regular in found]


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:  # the reader stats it, and says why
        return False


def read_fixture(path: Path) -> str:
    """The text of one fixture; refuses anything that is not a small regular UTF-8 file."""
    return _read_fixture(str(path))[1]


def _read_fixture(where: str, regular: bool = False) -> tuple[bytes, str]:
    """The bytes and the text of the fixture at `where`; `regular`: as `read_bounded`."""
    try:
        data = read_bounded(where, MAX_FIXTURE_BYTES, regular=regular)
    except InputError as exc:
        raise AdmissionError([Problem(where, "$", exc.reason)]) from None
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AdmissionError(
            [Problem(where, "$", f"not UTF-8: invalid byte at offset {exc.start}")]
        ) from None


def load_case(path: Path, mode: Mode, agent: AgentSurface) -> Case:
    """Admit one fixture or raise `AdmissionError` with every problem in it."""
    trace, _, text, canonical = _admit(_Listed(path.name, str(path), False), mode, agent)
    case = Case(trace, path, text)
    _CANONICAL_SLOT.__set__(case, canonical)  # made as it was admitted: not made again
    return case


def _admit(
    listed: _Listed, mode: Mode, agent: AgentSurface
) -> tuple[LlmTrace, bytes, str, bytes | None]:
    name, where, regular = listed
    # Refused before it is read: every other message would carry the name as it is.
    unsafe = unsafe_name_problem("file name", name)
    if unsafe is not None:
        raise AdmissionError([Problem(escaped(where), "$", unsafe)])
    data, text = _read_fixture(where, regular)
    trace, finite, canonical = parse_fixture_bytes(data, text, where)
    problems = admit(trace, where, mode, agent, finite=finite)
    if problems:
        raise AdmissionError(located(problems, text))
    return trace, data, text, canonical


def load_suite(directory: Path, mode: Mode, agent: AgentSurface) -> list[Case]:
    """Admit a whole suite, checking every fixture; refuse with all problems if any."""
    listed = _listed(directory)
    if not listed:
        raise AdmissionError(
            [Problem(str(directory), "suite", "no *.json fixtures: an empty suite tests nothing")]
        )
    admitted: list[tuple[Case, str]] = []
    problems: list[Problem] = []
    # Admission makes no garbage cycles, but a suite's worth of live objects makes the
    # collector walk them again and again while they are being made (a fifth of the
    # time): it runs once afterwards instead.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for entry in listed:
            try:
                trace, data, _, canonical = _admit(entry, mode, agent)
            except AdmissionError as exc:
                problems.extend(exc.problems)
                continue
            # The field an identity problem points at, known while the trace is at hand.
            field = "$.id" if trace.id is not None else "$.model_name"
            case = Case.admitted(trace.case_id, entry.where, data, canonical)
            admitted.append((case, field))
    finally:
        if collecting:
            gc.enable()
    problems.extend(_identity_problems(admitted))
    if problems:
        raise AdmissionError(problems)
    return [case for case, _ in admitted]


def _identity_problems(admitted: list[tuple[Case, str]]) -> list[Problem]:
    problems = []
    # Keyed by the NFC form: ids that differ only in normalisation look the same in
    # every report, so they are as ambiguous as identical ones.
    first: dict[str, Case] = {}
    for case, field in admitted:
        key = unicodedata.normalize("NFC", case.id)
        if not case.id.strip():
            problems += located([Problem(str(case.path), field, "empty case id")], case.text)
        elif key in first:
            other = first[key]
            same = (
                repr(case.id)
                if other.id == case.id
                else f"{case.id!a} (the same as {other.id!a} once normalised to NFC)"
            )
            problem = Problem(
                str(case.path),
                field,
                f"duplicate case id {same}, also used by {other.path}: "
                "one case's result would mask the other's",
            )
            problems += located([problem], case.text)
        else:
            first[key] = case
    return problems


def display_path(path: str | Path, root: Path) -> str:
    """The fixture path relative to the project root, as CI annotations want it."""
    # abspath, not resolve(): no file-system walk per case, and the path the user gave is
    # the one to show (a symlinked suite keeps its own name).
    absolute = os.path.abspath(path)
    prefix = os.path.join(str(root), "")
    if absolute.startswith(prefix):
        return absolute[len(prefix) :].replace(os.sep, "/")
    return str(path)
