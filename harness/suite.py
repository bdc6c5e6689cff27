"""Loading a suite: every direct `*.json` child of a directory, admitted or all refused."""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from harness.admission import admit
from harness.agent import AgentSurface
from harness.fixture import LlmTrace, located, parse_fixture
from harness.inputs import InputError, read_bounded
from harness.modes import Mode
from harness.problems import AdmissionError, Problem, escaped, unsafe_name_problem

MAX_FIXTURE_BYTES = 1 << 20


@dataclass(frozen=True)
class Case:
    """An admitted fixture: its trace, where it came from, and its text (for line lookups)."""

    trace: LlmTrace
    path: Path
    text: str

    @property
    def id(self) -> str:
        return self.trace.case_id


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
        data = read_bounded(path, MAX_FIXTURE_BYTES)
    except InputError as exc:
        raise AdmissionError([Problem(where, "$", exc.reason)]) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AdmissionError(
            [Problem(where, "$", f"not UTF-8: invalid byte at offset {exc.start}")]
        ) from None


def load_case(path: Path, mode: Mode, agent: AgentSurface) -> Case:
    """Admit one fixture or raise `AdmissionError` with every problem in it."""
    # Refused before it is read: every other message would carry the name as it is.
    unsafe = unsafe_name_problem("file name", path.name)
    if unsafe is not None:
        raise AdmissionError([Problem(escaped(str(path)), "$", unsafe)])
    text = read_fixture(path)
    trace = parse_fixture(text, str(path))
    problems = admit(trace, str(path), mode, agent)
    if problems:
        raise AdmissionError(located(problems, text))
    return Case(trace, path, text)


def load_suite(directory: Path, mode: Mode, agent: AgentSurface) -> list[Case]:
    """Admit a whole suite, checking every fixture; refuse with all problems if any."""
    paths = fixture_paths(directory)
    if not paths:
        raise AdmissionError(
            [Problem(str(directory), "suite", "no *.json fixtures: an empty suite tests nothing")]
        )
    cases: list[Case] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            cases.append(load_case(path, mode, agent))
        except AdmissionError as exc:
            problems.extend(exc.problems)
    problems.extend(_identity_problems(cases))
    if problems:
        raise AdmissionError(problems)
    return cases


def _identity_problems(cases: list[Case]) -> list[Problem]:
    problems = []
    # Keyed by the NFC form: ids that differ only in normalisation look the same in
    # every report, so they are as ambiguous as identical ones.
    first: dict[str, Case] = {}
    for case in cases:
        field = "$.id" if case.trace.id is not None else "$.model_name"
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
