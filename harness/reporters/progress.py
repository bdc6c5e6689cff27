"""A progress count on an interactive stderr while the stdout document is not the table
(which shows progress itself): cases done of the total, in the order they finish (with
several jobs, not the fixtures' order), with how many failed, were flaky or were not run so
far. The counts only grow, so each rewrite of the line covers the last."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from harness.reporters.base import Output, Reporter

if TYPE_CHECKING:
    from harness.verdict.kept import Passes
    from harness.verdict.reports import CaseReport, SuiteReport


class ProgressReporter(Reporter):
    order = 0  # its line ends before anything else is written to stderr
    whole_cases = False
    takes_passes = True  # a plain pass is counted as done, and nothing else

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._total = 0
        self._done = 0
        self._failing = 0
        self._flaky = 0
        self._not_run = 0

    def start(self, total: int) -> None:
        self._total = total

    def case_done(self, case: CaseReport) -> None:
        self._done += 1
        self._not_run += case.not_run is not None
        self._failing += not case.passed and case.not_run is None
        self._flaky += case.flaky
        self._stream.write(f"\r  {self._line()}")
        self._stream.flush()

    def passes_done(self, passes: Passes) -> None:
        write = self._stream.write
        for _ in range(len(passes)):
            self._done += 1
            write(f"\r  {self._line()}")
        self._stream.flush()

    def _line(self) -> str:
        line = f"{self._done}/{self._total} cases"
        counts = [(self._failing, "failed"), (self._flaky, "flaky"), (self._not_run, "not run")]
        return line + "".join(f", {count} {what}" for count, what in counts if count)

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
