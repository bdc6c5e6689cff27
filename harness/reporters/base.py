"""The reporter protocol: what a reporter writes, as cases finish and at the end.

A reporter module declares one `REPORTER` (a `ReporterSpec`): its options, whether it can
be the document on stdout (`--format`), and how to build its reporters from the parsed
options. The pipeline calls `start`, `case_done` as each case finishes, and `finish` with
the whole verdict, reporters in ascending `order` (files, then CI, then stdout), so a
report that cannot be written stops the run before the verdict is printed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from harness.options import Option
from harness.problems import Problem
from harness.reporters.atomic import write_atomic

if TYPE_CHECKING:
    from harness.verdict import CaseReport, SuiteReport

# Reporter orders: what writes files finishes first, the document on stdout last.
FILES, CI, STDOUT = 10, 50, 90

ANNOTATIONS = Option(
    "--annotations",
    "emit GitHub workflow annotations for failing cases and append the summary to "
    "$GITHUB_STEP_SUMMARY (auto: when GITHUB_ACTIONS=true)",
    choices=("auto", "github", "none"),
    default="auto",
)


@dataclass(frozen=True)
class Output:
    """What reporters are built from: the parsed options, the streams, the environment."""

    values: Mapping[str, Any] = field(default_factory=dict)
    stdout_format: str | None = None  # the `--format` choice; None: nothing on stdout
    stdout: TextIO | None = None
    stderr: TextIO | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def github(self) -> bool:
        """Whether the run is on GitHub Actions (or told to act as if)."""
        mode = self.values.get(ANNOTATIONS.dest) or "auto"
        return mode == "github" or (mode == "auto" and self.environ.get("GITHUB_ACTIONS") == "true")

    def out(self) -> TextIO:
        assert self.stdout is not None
        return self.stdout

    def err(self) -> TextIO:
        assert self.stderr is not None
        return self.stderr


class Reporter:
    """One output of a run. Every hook is optional; `order` decides when `finish` runs."""

    order: int = FILES

    def start(self, total: int) -> None:
        """The run is about to start `total` cases."""

    def case_done(self, case: CaseReport) -> None:
        """One case finished (in suite order)."""

    def finish(self, report: SuiteReport) -> None:
        """The run is over; write what this reporter writes. A `ReportWriteError` stops
        the reporters after it."""

    def refused(self, problems: list[Problem]) -> None:
        """Admission refused the suite; nothing will run."""


class ReporterSpec(Protocol):
    """What a reporter module declares as `REPORTER`."""

    name: str
    options: tuple[Option, ...]
    # Its name under `--format` when it can be the document on stdout.
    stdout_format: str | None

    def build(self, output: Output) -> list[Reporter]:
        """The reporters the parsed options ask for (none when not asked)."""
        ...


class Document(Reporter):
    """A whole-run document (JSON, JUnit…) written to a file atomically, or to stdout."""

    def __init__(self, render: Rendered, *, path: Path | None = None, order: int = FILES) -> None:
        self._render = render
        self._path = path
        self._stream: TextIO | None = None
        self.order = order

    @classmethod
    def to_stream(cls, render: Rendered, stream: TextIO) -> Document:
        document = cls(render, order=STDOUT)
        document._stream = stream
        return document

    def finish(self, report: SuiteReport) -> None:
        data = self._render(report)
        if self._path is not None:
            write_atomic(self._path, data)
            return
        assert self._stream is not None
        binary = getattr(self._stream, "buffer", None)
        if binary is not None:
            self._stream.flush()
            binary.write(data)
            binary.flush()
        else:
            self._stream.write(data.decode("utf-8"))
            self._stream.flush()


class Rendered:
    """A renderer that renders each report once, however many destinations it has."""

    def __init__(self, render: Callable[[SuiteReport], bytes]) -> None:
        self._render = render
        self._for: SuiteReport | None = None
        self._data = b""

    def __call__(self, report: SuiteReport) -> bytes:
        if self._for is not report:
            self._data, self._for = self._render(report), report
        return self._data


def documents(
    output: Output,
    option: Option,
    stdout_format: str,
    render: Callable[[SuiteReport], bytes],
    order: int = FILES,
) -> list[Reporter]:
    """A file at `option`'s path when given (written at `order`), and the stdout document
    when `--format` is `stdout_format`; rendered once for both."""
    once = Rendered(render)
    reporters: list[Reporter] = []
    path = output.values.get(option.dest)
    if path is not None:
        reporters.append(Document(once, path=Path(path), order=order))
    if output.stdout_format == stdout_format:
        reporters.append(Document.to_stream(once, output.out()))
    return reporters
