"""`zeroclaw eval mutate`'s own flags, declared beside mutate (and re-exported by
`harness.settings`, where the command line is built): a module of declarations alone, so
the command line's start imports nothing of mutation testing itself."""

from __future__ import annotations

from pathlib import Path

from harness.options import Option, percent

MIN_SCORE = Option(
    "--min-score",
    "fail unless at least this percentage of boundary mutants is killed (default 100)",
    metavar="PCT",
    type=percent,
    default=100.0,
)
MIN_SCRIPT_SCORE = Option(
    "--min-script-score",
    "fail unless at least this percentage of script mutants is killed (default 0)",
    metavar="PCT",
    type=percent,
    default=0.0,
)
MUTATION_REPORT = Option(
    "--json-report", "also write the mutation report (JSON) here", metavar="PATH", type=Path
)
