"""Baselines in a run's output: `--write-baseline FILE` written with the other report
files, and the comparison with `--baseline FILE` said in one line on stderr.

Both options are declared here but are settings of `zeroclaw eval run` (`harness.settings`
adds them), not of this reporter's spec: the comparison is part of the verdict (it can fail
the gate), and this reporter only writes and says it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.io.atomic import ReportFiles, ReportWriteError
from harness.io.text import clean, inert
from harness.options import Option
from harness.reporters.base import CI, FILES, Output, Reporter, say

if TYPE_CHECKING:
    from harness.verdict.reports import SuiteReport


# Settings of `zeroclaw eval run` (the baseline is read before any case runs), declared
# beside the baseline reporter, which reads the first, for the run's settings to add.
WRITE_BASELINE = Option(
    "--write-baseline",
    "write this run's per-case verdicts as a baseline (no transcripts), e.g. "
    "evals/baselines/capability.json; refused when a case left no run record",
    metavar="FILE",
    type=Path,
)
BASELINE = Option(
    "--baseline",
    "compare the run with this baseline, case by case (read before any case runs)",
    metavar="FILE",
    type=Path,
)


class BaselineFile(Reporter):
    """Stages the run's baseline, to be put in place with the other report files."""

    order = FILES + 4

    def __init__(self, path: Path, files: ReportFiles) -> None:
        self._files = files
        # Checked (and made absolute) now, before any case runs.
        self._path = files.plan(path, "write baseline")

    def finish(self, report: SuiteReport) -> None:
        from harness.tracking.baseline import render_baseline

        shown = self._files.shown(self._path)
        if report.partial is not None:
            # A baseline is the whole suite's: one of part of it would make every case the
            # run left out "new" in the next comparison, and hide what they were.
            raise ReportWriteError(
                f"{shown}: baseline not written: a partial run ({report.partial}) is not the "
                "suite's; write it from a run of the whole suite"
            )
        self._files.stage(self._path, render_baseline(report, shown))


class BaselineSummary(Reporter):
    """The comparison with the baseline, in one line on stderr (and a line per note)."""

    order = CI + 2
    whole_cases = False  # the comparison alone, made before any reporter finishes

    def __init__(self, stderr: TextIO) -> None:
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        comparison = report.baseline
        if comparison is None:
            return
        from harness.tracking.baseline import summary

        # Case ids and file names are the user's text: shown inert, as every message.
        for note in [*comparison.notes, *comparison.budget_notes]:
            print(f"zeroclaw eval: baseline: {inert(clean(note))}", file=self._stderr)
        line = summary(comparison, report.fail_on_regression)
        say(self._stderr, line)


class _Spec:
    name = "baseline"
    options = ()  # `--write-baseline` and `--baseline` are settings of the run
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        reporters: list[Reporter] = []
        path = output.values.get(WRITE_BASELINE.dest)
        if path is not None:
            reporters.append(BaselineFile(Path(path), output.files))
        if output.stderr is not None:
            reporters.append(BaselineSummary(output.stderr))
        return reporters


REPORTER = _Spec()
