"""The versioned JSON report document: `--json-report PATH`, `--format json`.

It keeps the exact text of the run, escaped: only a lone surrogate (which UTF-8 cannot
encode) becomes U+FFFD, and what a terminal or a GitHub runner would act on (C1 controls,
bidirectional formatting, `##[`) is written as a JSON escape (`text.json_safe`).

Every run also keeps its report in `.zeroclaw-eval/last-report.json` for `show`."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.options import Option
from harness.reporters.atomic import ReportWriteError, own_folder, write_atomic
from harness.reporters.base import COMMIT, FILES, Output, Reporter, documents
from harness.reporters.text import clean, inert, json_safe, without_surrogates

if TYPE_CHECKING:
    from harness.verdict import SuiteReport

OPTION = Option("--json-report", "also write the JSON report here", metavar="PATH", type=Path)


@functools.cache
def document_type() -> Any:
    """The report document's struct, built on first use: `--help` never imports the verdict
    model for it."""
    import msgspec

    from harness.baseline import BaselineComparison
    from harness.modes import SuiteKind
    from harness.receipts import SuiteReceipt
    from harness.verdict import CaseReport, SuiteStatistics, Totals

    return msgspec.defstruct(
        "ReportDocument",
        [
            ("schema", str),
            ("suite", str),
            ("kind", SuiteKind),
            ("mode", str),
            ("agent", str),
            ("exit_code", int),
            ("all_passed", bool),
            ("totals", Totals),
            ("statistics", SuiteStatistics),
            ("receipt", SuiteReceipt | None),
            ("partial", str | None),
            ("duration_ms", float),
            ("cases", list[CaseReport]),
            ("baseline", BaselineComparison | None, None),
        ],
        kw_only=True,
        module=__name__,
    )


def __getattr__(name: str) -> Any:
    # `ReportDocument` stays importable for readers of the JSON report.
    if name == "ReportDocument":
        return document_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def render_json(report: SuiteReport) -> bytes:
    import msgspec

    from harness.verdict import SCHEMA

    document = document_type()(
        schema=SCHEMA,
        suite=report.suite,
        kind=report.kind,
        mode=report.mode,
        agent=report.agent,
        exit_code=int(report.exit_code()),
        all_passed=report.all_passed,
        totals=report.totals,
        statistics=report.statistics,
        receipt=report.receipt,
        partial=report.partial,
        duration_ms=report.duration_ms,
        cases=report.cases,
        baseline=report.baseline,
    )
    try:
        encoded = msgspec.json.encode(document)
    except UnicodeEncodeError:  # a lone surrogate somewhere in the run's text
        encoded = msgspec.json.encode(without_surrogates(msgspec.to_builtins(document)))
    pretty = msgspec.json.format(encoded, indent=2)
    # One-byte searches first: a report seldom holds `#` or DEL, and they are the fast kind.
    if not pretty.isascii() or b"\x7f" in pretty or (b"#" in pretty and b"##[" in pretty):
        pretty = json_safe(pretty.decode("utf-8")).encode("utf-8")
    return pretty + b"\n"


# The last run's report, kept where `zeroclaw eval show CASE_ID` finds it: in the directory
# the run started from, in a folder that ignores itself in git.
LAST_FOLDER = ".zeroclaw-eval"
LAST_NAME = "last-report.json"


def last_report_path(directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / LAST_FOLDER / LAST_NAME


class LastReport(Reporter):
    """Keeps the last run's JSON report for `show`; never a reason for a run to fail: a
    failure to keep it is said."""

    order = COMMIT + 3

    def __init__(self, stderr: TextIO) -> None:
        self._path = Path(os.path.abspath(last_report_path()))  # fixed before the run
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        try:
            own_folder(self._path.parent, ignore=b"*\n")
            write_atomic(self._path, render_json(report))
        except (OSError, ReportWriteError) as exc:
            said = inert(clean(f"the last report was not kept for `show`: {exc}"))
            print(f"zeroclaw eval: {said}", file=self._stderr)


class _Spec:
    name = "json"
    options = (OPTION,)
    stdout_format = "json"

    def build(self, output: Output) -> list[Reporter]:
        reporters = documents(output, OPTION, self.stdout_format, render_json, FILES + 1)
        return [*reporters, LastReport(output.err())]


REPORTER = _Spec()
