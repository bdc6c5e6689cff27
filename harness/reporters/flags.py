"""The flags of the reporters that write nothing unless one is given, declared without
their machinery: the registry offers them (`--help`, parsing) from here, and imports such
a reporter's module only for a run that gives one of its flags (or asks for its
`--format`). A default `eval run` imports no HTML, JUnit, Markdown or history reporter."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from harness.options import Option

HTML = Option(
    "--html",
    "also write a self-contained HTML report here (every case with its transcript; "
    "with --history-dir, the pass-rate trend)",
    metavar="PATH",
    type=Path,
)
JUNIT_XML = Option("--junit-xml", "also write JUnit XML here", metavar="PATH", type=Path)
JUNIT_FORMAT = "junit"  # `--format junit`: the report on stdout
HISTORY = Option(
    "--history",
    "append this run's pass rate and per-case verdicts to a JSON-lines file",
    metavar="PATH",
    type=Path,
)
HISTORY_DIR = Option(
    "--history-dir",
    "write this run's history entry (totals, receipts, per-case verdicts; no transcripts) "
    "as its own file under DIR/<suite>/",
    metavar="DIR",
    type=Path,
)
SUMMARY = Option("--summary", "also write the Markdown summary here", metavar="PATH", type=Path)
OTEL_EVENTS = Option(
    "--otel-events",
    "also write each case's grades as OpenTelemetry gen_ai.evaluation.result events "
    "(OTLP JSON) here, beside the traces imported cases came from",
    metavar="PATH",
    type=Path,
)
VERBOSE = Option(
    "--verbose",
    "after the run, show every failing case's transcript, checks and error",
    action="store_true",
    aliases=("-v",),
)


class Gate(NamedTuple):
    """What the registry knows of a gated reporter without importing its module: its
    `REPORTER`'s name, options and `--format` name, which that spec takes from here."""

    name: str
    options: tuple[Option, ...]
    stdout_format: str | None = None
    # Environment variables that, set (not empty), may make it build without a flag.
    environ: tuple[str, ...] = ()


# By module: the reporters that build nothing unless one of their flags is given (a value
# neither None nor False), their `--format` chosen or one of their environment variables
# set (the Markdown summary's GitHub step summary). A reporter module not listed here is
# imported whenever the registry is: listing one is an optimisation, never needed (a
# listed module's spec takes its name, options and format from its entry).
GATED: dict[str, Gate] = {
    "history": Gate("history", (HISTORY,)),
    "history_dir": Gate("history-dir", (HISTORY_DIR,)),
    "html": Gate("html", (HTML,)),
    "junit": Gate("junit", (JUNIT_XML,), JUNIT_FORMAT),
    "markdown": Gate("markdown", (SUMMARY,), environ=("GITHUB_STEP_SUMMARY",)),
    "otel_events": Gate("otel-events", (OTEL_EVENTS,)),
    "verbose": Gate("verbose", (VERBOSE,)),
}
