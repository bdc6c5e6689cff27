"""A progress count on an interactive stderr while the stdout document is not the table
(which shows progress itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from harness.reporters.base import Output, Reporter

if TYPE_CHECKING:
    from harness.verdict import CaseReport, SuiteReport


class ProgressReporter(Reporter):
    order = 0  # its line ends before anything else is written to stderr

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._total = 0
        self._done = 0

    def start(self, total: int) -> None:
        self._total = total

    def case_done(self, case: CaseReport) -> None:
        self._done += 1
        self._stream.write(f"\r  {self._done}/{self._total} cases")
        self._stream.flush()

    def finish(self, report: SuiteReport) -> None:
        self._stream.write("\n")


class _Spec:
    name = "progress"
    options = ()
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        stream = output.stderr
        if output.stdout_format in (None, "table") or stream is None or not stream.isatty():
            return []
        return [ProgressReporter(stream)]


REPORTER = _Spec()
