"""`zeroclaw eval import`'s command line, declared beside the import (and added to the
parser by `harness.arguments`): declarations alone, so the command line's start imports no
trace source."""

from __future__ import annotations

from pathlib import Path

from harness.options import Option

TRACE_FILE = Option("trace_file", "the trace file (JSON lines, or an exported batch)", type=Path)
FORMAT = Option(
    "--format",
    "the trace format (default auto: told from the file's first bytes)",
    metavar="FORMAT",
    default="auto",
)
TRACE = Option(
    "--trace",
    "import only this trace (or conversation group) id (repeatable)",
    metavar="ID",
    action="append",
)
FILTER = Option(
    "--filter",
    "import only the conversations matching: agent=NAME, failed, tool=NAME, "
    "guardrail=NAME (repeatable: all must match)",
    metavar="EXPR",
    action="append",
)
EXPECT = Option(
    "--expect",
    "the suggested expectation families to write, comma-separated: tools, trajectory, "
    "args, results, handoffs, final_agent, response, guardrails, or all",
    metavar="FAMILIES",
)
CASE_ID = Option("--id", "the case id (one conversation only; default: from the trace)")
MODEL_NAME = Option("--model-name", "the fixture's model_name (default: the trace's model)")
NO_CHECK = Option(
    "--no-check",
    "write without replaying each fixture through --agent first (its suggestions unproven)",
    action="store_true",
)
NO_REDACT = Option(
    "--no-redact", "write the trace's text as it is: no redaction at all", action="store_true"
)
REDACT = Option(
    "--redact",
    "also replace what this RE2 pattern matches (repeatable; with redact_patterns)",
    metavar="REGEX",
    action="append",
)
FORCE = Option("--force", "replace fixtures that exist", action="store_true")


# Its own options; `harness.arguments` adds those it shares with `run` (`settings`).
OPTIONS = (
    *(TRACE_FILE, FORMAT, TRACE, FILTER, EXPECT, CASE_ID, MODEL_NAME),
    *(NO_CHECK, NO_REDACT, REDACT, FORCE),
)
