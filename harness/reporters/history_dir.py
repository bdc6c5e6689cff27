"""Run history as a directory (`--history-dir DIR`): one transcript-free entry per run,
its own file under `DIR/<suite>/` (`harness.tracking.history`), with the trend against the
previous run of the same suite and agent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.io.atomic import ReportWriteError
from harness.reporters.base import COMMIT, Output, Reporter, say, skipped_as_partial
from harness.reporters.flags import GATED
from harness.reporters.flags import HISTORY_DIR as OPTION

if TYPE_CHECKING:
    from harness.tracking.history_reader import History
    from harness.verdict.reports import SuiteReport


class HistoryDirReporter(Reporter):
    # Written once the run's report files are in place, as the history line is.
    order = COMMIT + 2

    def __init__(self, directory: Path, stderr: TextIO, history: History) -> None:
        self._shown = str(directory)
        _checked(directory)
        self._history = history  # its path fixed now: an agent may change directory
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        from harness.tracking import history as history_store

        if skipped_as_partial(report, self._stderr):
            return
        # Read before this run's entry is written (or shared with a report that did).
        previous = self._history.newest(report.suite, report.agent, 1)
        entry = history_store.entry_of(report)
        try:
            written = history_store.write(self._history.directory, entry)
        except history_store.WriteError as exc:
            where = os.path.join(self._shown, exc.where) if exc.where else self._shown
            raise ReportWriteError(
                f"{where}: cannot write the history entry: {exc.reason}"
            ) from None
        trend = f"previous {previous[-1].pass_rate * 100:.1f}%" if previous else "first entry"
        said = f"history entry {written.name} ({entry.pass_rate * 100:.1f}%, {trend})"
        say(self._stderr, said)


def _checked(directory: Path) -> None:
    """The history directory, checked before the run: a directory (or none yet), reached
    through no symbolic link of the command line's relative path (as a report's path is,
    `harness.io.atomic`). Below it, nothing is written through a link either, which
    only the writing can hold to (`history_store.write`)."""
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise ReportWriteError(f"{directory}: cannot write history: not a directory")
    prefix = Path()
    for part in () if directory.is_absolute() else directory.parts:
        prefix = prefix / part
        if part != ".." and prefix.is_symlink():
            raise ReportWriteError(
                f"{directory}: cannot write history: {prefix} is a symbolic link"
            )


class _Spec:
    name, options, stdout_format = GATED["history_dir"][:3]  # its gate's: said once

    def build(self, output: Output) -> list[Reporter]:
        directory = output.values.get(OPTION.dest)
        if directory is None:
            return []
        from harness.tracking.history_reader import History  # shared with the reports that show it

        history = History.of_run(output.shared, output.stderr, directory)
        return [HistoryDirReporter(Path(directory), output.err(), history)]


REPORTER = _Spec()
