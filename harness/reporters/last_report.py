"""The last run's JSON report, kept where `zeroclaw eval show CASE_ID` finds it:
`.zeroclaw-eval/last-report.json` in the directory the run started from (a folder that
ignores itself in git). Never a reason for a run to fail: a failure to keep it is said."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.reporters.atomic import ReportWriteError, write_atomic
from harness.reporters.base import COMMIT, Output, Reporter
from harness.reporters.text import clean, inert

if TYPE_CHECKING:
    from harness.verdict import SuiteReport

FOLDER = ".zeroclaw-eval"
NAME = "last-report.json"


def last_report_path(directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / FOLDER / NAME


class LastReport(Reporter):
    order = COMMIT + 3

    def __init__(self, stderr: TextIO) -> None:
        self._path = Path(os.path.abspath(last_report_path()))  # fixed before the run
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        from harness.reporters.json_report import render_json

        try:
            folder = self._path.parent
            folder.mkdir(exist_ok=True)
            ignore = folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("*\n", encoding="utf-8")
            write_atomic(self._path, render_json(report))
        except (OSError, ReportWriteError) as exc:
            said = inert(clean(f"the last report was not kept for `show`: {exc}"))
            print(f"zeroclaw eval: {said}", file=self._stderr)


class _Spec:
    name = "last-report"
    options = ()
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        return [LastReport(output.err())]


REPORTER = _Spec()
