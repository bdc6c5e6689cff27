"""Loading a suite: every direct `*.json` child of a directory, admitted or all refused."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.admission import admit
from harness.agent import AgentSurface
from harness.fixture import LlmTrace, located, parse_admitted, parse_fixture
from harness.inputs import InputError, read_bounded
from harness.modes import Mode
from harness.problems import AdmissionError, Problem, escaped, unsafe_name_problem

MAX_FIXTURE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Case:
    """An admitted fixture: its trace, where it came from, and its text (for line lookups
    and its hash).

    A suite's cases live as long as its run, and a parsed trace takes three times the
    memory of its text: a case `load_suite` admitted keeps only the text and parses the
    trace again when asked (the last ones asked for stay parsed). A case built with its
    trace keeps it (a mutant's need not be its text's).
    """

    trace: LlmTrace
    path: Path
    text: str
    _id: str = dataclasses.field(init=False, repr=False, compare=False)

    @classmethod
    def admitted(cls, trace: LlmTrace, path: Path, text: str) -> Case:
        """A case of a suite: `trace`, parsed from `text`, is dropped until asked for."""
        case = cls(trace, path, text)
        _TRACE_SLOT.__set__(case, None)
        return case

    @property
    def id(self) -> str:
        return self._id


class _Trace:
    """A case's `trace` field: the trace it holds, or, for a case that dropped it, its
    text parsed again (by the parser that admitted it, so the same trace). Setting it (the
    dataclass's `__init__`, `replace`) also sets the case's id."""

    def __init__(self, slot: Any, id_slot: Any) -> None:
        self._slot = slot
        self._id_slot = id_slot

    def __get__(self, case: Case | None, owner: type | None = None) -> Any:
        if case is None:
            return self
        trace: LlmTrace | None = self._slot.__get__(case)
        return trace if trace is not None else _parsed(case.text)

    def __set__(self, case: Case, trace: LlmTrace) -> None:
        self._slot.__set__(case, trace)
        self._id_slot.__set__(case, trace.case_id)


_TRACE_SLOT = Case.__dict__["trace"]
# In place of the slot's own descriptor, which it keeps using underneath.
setattr(Case, "trace", _Trace(_TRACE_SLOT, Case.__dict__["_id"]))  # noqa: B010 (typed as a field)


# Cases run one at a time per worker (or `jobs` at once in one process): this many parsed
# traces cover every case in flight, and ask nothing of memory.
_PARSED_CASES = 256


@functools.lru_cache(maxsize=_PARSED_CASES)
def _parsed(text: str) -> LlmTrace:
    return parse_admitted(text)


def fixture_paths(directory: Path) -> list[Path]:
    """The suite's fixtures in sorted file-name order; never descends, never opens. A
    single fixture file is a suite of one."""
    where = str(directory)
    if directory.name.endswith(".json") and directory.is_file():
        return [directory]
    try:
        with os.scandir(directory) as entries:
            names = sorted(
                e.name for e in entries if e.name.endswith(".json") and e.name != ".json"
            )
    except FileNotFoundError:
        raise AdmissionError([Problem(where, "suite", "suite directory does not exist")]) from None
    except NotADirectoryError:
        raise AdmissionError([Problem(where, "suite", "not a directory")]) from None
    except OSError as exc:
        raise AdmissionError(
            [Problem(where, "suite", f"cannot read suite directory: {exc.strerror or exc}")]
        ) from None
    return [directory / name for name in names]


def read_fixture(path: Path) -> str:
    """The text of one fixture; refuses anything that is not a small regular UTF-8 file."""
    where = str(path)
    try:
        data = _read(where)
    except InputError as exc:
        raise AdmissionError([Problem(where, "$", exc.reason)]) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AdmissionError(
            [Problem(where, "$", f"not UTF-8: invalid byte at offset {exc.start}")]
        ) from None


def _read(path: str) -> bytes:
    """`read_bounded(path, MAX_FIXTURE_BYTES)`, without its cost for a small file: it
    reads one byte past the cap it is given, and a buffer the size of the cap costs more
    than the rest of admitting a fixture. Given the size the file has, it reads that; a
    file that changed in between is read again under the real cap, which says why."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = MAX_FIXTURE_BYTES
    if size < MAX_FIXTURE_BYTES:
        try:
            return read_bounded(path, size)
        except InputError:
            pass
    return read_bounded(path, MAX_FIXTURE_BYTES)


def load_case(path: Path, mode: Mode, agent: AgentSurface) -> Case:
    """Admit one fixture or raise `AdmissionError` with every problem in it."""
    trace, text = _admit(path, mode, agent)
    return Case(trace, path, text)


def _admit(path: Path, mode: Mode, agent: AgentSurface) -> tuple[LlmTrace, str]:
    # Refused before it is read: every other message would carry the name as it is.
    unsafe = unsafe_name_problem("file name", path.name)
    if unsafe is not None:
        raise AdmissionError([Problem(escaped(str(path)), "$", unsafe)])
    where = str(path)
    text = read_fixture(path)
    trace = parse_fixture(text, where)
    problems = admit(trace, where, mode, agent)
    if problems:
        raise AdmissionError(located(problems, text))
    return trace, text


def load_suite(directory: Path, mode: Mode, agent: AgentSurface) -> list[Case]:
    """Admit a whole suite, checking every fixture; refuse with all problems if any."""
    paths = fixture_paths(directory)
    if not paths:
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
        for path in paths:
            try:
                trace, text = _admit(path, mode, agent)
            except AdmissionError as exc:
                problems.extend(exc.problems)
                continue
            # The field an identity problem points at, known while the trace is at hand.
            field = "$.id" if trace.id is not None else "$.model_name"
            admitted.append((Case.admitted(trace, path, text), field))
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
