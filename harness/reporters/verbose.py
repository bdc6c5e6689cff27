"""`run -v`: every failing case's transcript, grades and error, after the run, before the
verdict line (`harness.reporters.case_view`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from harness.reporters.base import STDOUT, Output, Reporter
from harness.reporters.flags import GATED
from harness.reporters.flags import VERBOSE as OPTION

if TYPE_CHECKING:
    from harness.verdict.reports import SuiteReport


class VerboseReporter(Reporter):
    order = STDOUT - 1  # after the streamed case lines, before the verdict line
    whole_cases = False  # the failing cases, kept whole

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def finish(self, report: SuiteReport) -> None:
        from harness.reporters.case_view import render_case

        for case in report.worst_first():
            self._stream.write("\n" + render_case(case))
        self._stream.flush()


class _Spec:
    name, options, stdout_format = GATED["verbose"][:3]  # its gate's: said once

    def build(self, output: Output) -> list[Reporter]:
        if not output.values.get(OPTION.dest):
            return []
        # With a document on stdout, the transcripts go to stderr with the other messages.
        stream = output.out() if output.stdout_format in (None, "table") else output.err()
        return [VerboseReporter(stream)]


REPORTER = _Spec()
