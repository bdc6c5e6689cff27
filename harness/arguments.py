"""The command line's parser, built for the action asked for.

Every action is listed (so `zeroclaw eval --help` and a mistyped action say them all), but
only the one the arguments name gets its options: those are what import the settings, the
configuration's schema and the reporters (`--format`'s choices, each format's flags),
which `zeroclaw --help` and `zeroclaw eval --help` have no use for, nor `eval check` for the
reporters' flags. Built with no arguments given, every action has its options.
"""

from __future__ import annotations

import argparse
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harness.options import Option

Parser = argparse.ArgumentParser

# Each action: its one-line help, its description (None: the help), and what adds its options.
ACTIONS: dict[str, tuple[str, str | None]] = {
    "run": (
        "run a suite and exit 0 iff the gate passed",
        "Admit every fixture of the suite, run each case through the agent's real loop, "
        "grade it, report, and exit 0 iff the suite's gate passed.",
    ),
    "record": (
        "run one live case and write it as a replay fixture that replays green",
        "Run a live case once against the configured provider and write a replay fixture "
        "holding every model step the run used and the case's expectations. Nothing is "
        "written unless the live run passed and the fixture passes replay admission and "
        "replays green through the same agent.",
    ),
    "import": (
        "write replay fixtures from recorded traces (OpenAI Agents SDK, OTLP, pydantic-ai)",
        "Read a recorded trace file and write one replay fixture per conversation into the "
        "suite directory, personal data redacted, each proven to pass admission and replay "
        "green through --agent before anything is written (all or nothing). The expectations "
        "the trace proves are suggested, and written only for the families --expect names: "
        "without it, nothing is written and the suggestions are printed (docs/import.md). "
        "Exit 0: written; 1: a conversation failed its check or could not be read; 2: usage.",
    ),
    "check": (
        "admit a suite and check no case passes an empty run; runs no agent",
        "Fixture admission plus the empty-run vacuity check, without running any agent: for "
        "pre-commit hooks and while authoring cases.",
    ),
    "list": (
        "list the suite's cases (ids, files, kinds of checks); runs nothing",
        "Admit the suite and list its cases, or those -k/--case/--shard pick: one line each "
        "with the case id, its fixture and the expectations it declares. Runs no agent.",
    ),
    "merge": (
        "merge the JSON reports of a suite's shards into the whole suite's reports",
        "Combine the JSON reports of every shard of a suite (--shard I/N) into one suite "
        "report, JUnit, summary and exit code; refuse a missing shard, a case twice, a report "
        "that disagrees with itself, shards judged by another gate than the suite's, or "
        "shards of other fixtures, policies or harness versions.",
    ),
    "mutate": (
        "run mutants of every case and report which the suite kills",
        "Mutation testing of a replay suite: every case's script mutants (a dropped call, a "
        "changed argument, swapped calls, another final text, a dropped turn) and boundary "
        "mutants (faults of a broken loop injected at the model and tool boundaries) run "
        "through the real agent. Exit 0 iff the scores reach their minimums.",
    ),
    "calibrate": (
        "label the LLM judge's recorded verdicts; calibrate its rubrics from the labels",
        "Calibrate the LLM judge of the suite's rubrics (docs/judge.md).",
    ),
    "verify": (
        "check a JSON report is for exactly these fixtures under this policy",
        "Recompute the fixture hashes of the suite and the policy of its kind, take from each "
        "fixture what it decides (case id, cluster, runs, pass rate), derive every derived "
        "field of the report again (verdicts, repeat statistics, totals, statistics, baseline "
        "lists, exit code), and exit 0 iff the JSON report is for exactly these fixtures "
        "under this policy and agrees with itself.",
    ),
    "show": (
        "print one case's transcript, checks and error from the last run",
        "Print a case's transcript (each model request and answer, each tool call), its "
        "checks with what was observed, and its run error with where it was raised in your "
        "code, for any case of the last run (kept in .zeroclaw-eval/ in the directory the run "
        "started from), or from a JSON report (--report), which keeps its failing cases' "
        "transcripts only.",
    ),
    "schema": (
        "print the fixture format as a JSON Schema",
        "Print the JSON Schema of a fixture, for editors and other tools.",
    ),
    "report": (
        "write the HTML report of an earlier run from its JSON report",
        "Write the self-contained HTML report (the verdict, every case with its transcript, "
        "and with --history-dir the pass-rate trend) of a run from its JSON report "
        "(--json-report), as `run --html` would have.",
    ),
}


def build_parser(argv: Sequence[str] | None = None) -> Parser:
    """The parser of `zeroclaw`; given `argv`, only the action it names has its options (and
    is the only action made, when nothing asks for a help that lists the others)."""
    from harness import __version__

    parser = Parser(
        prog="zeroclaw",
        description="zeroclaw-eval: replay agent trace fixtures through a real agent loop, "
        "grade them, and gate CI on the result.",
    )
    parser.add_argument("--version", action="version", version=f"zeroclaw-eval {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    evaluation = commands.add_parser("eval", help="run or check eval suites")
    actions = evaluation.add_subparsers(dest="action", required=True, metavar="ACTION")
    wanted = None if argv is None else action_named(argv)
    # `eval ACTION …` shows no other action: they are listed by a help asked before the
    # action (`eval -h run`) and by an unknown action's error, and only made for those.
    alone = argv is not None and wanted in ACTIONS and list(argv[:2]) == ["eval", wanted]
    for name, (about, description) in ACTIONS.items():
        if alone and name != wanted:
            continue
        action = actions.add_parser(name, help=about, description=description)
        if argv is None or name == wanted:
            _FILL[name](action)
    return parser


def action_named(argv: Sequence[str]) -> str | None:
    """The action `argv` names: `zeroclaw` and `zeroclaw eval` take no option with a value,
    so it is the second argument that is not an option (None: there is none)."""
    words: list[str] = []
    for word in argv:
        if not word.startswith("-"):
            words.append(word)
            if len(words) == 2:
                return word if words[0] == "eval" else None
    return None


def _add(parser: Parser, *options: Option) -> None:
    for option in options:
        option.add_to(parser)


def _format() -> Option:
    from harness.options import Option
    from harness.reporters import registry

    formats = registry.stdout_formats()
    return Option("--format", "stdout format", choices=formats, default=formats[0])


def _reporter_options() -> tuple[Option, ...]:
    from harness.reporters import registry

    return registry.options()


def _run(parser: Parser) -> None:
    from harness import settings as s

    _add(
        parser,
        *s.SUITE_OPTIONS,
        s.CONTEXT,
        s.SESSION,
        _format(),
        s.SUITE_KIND,
        s.TIMEOUT,
        s.MAX_MODEL_CALLS,
        s.MAX_TOOL_CALLS,
        s.WALL_CLOCK,
        s.REPEAT,
        s.JOBS,
        s.EXITFIRST,
        s.MAXFAIL,
        *s.BASELINE_OPTIONS,
        s.KEYWORD,
        s.CASE_IDS,
        s.SHARD,
        *s.BESIDE_SUITE,
        *_reporter_options(),
    )


def _record(parser: Parser) -> None:
    from harness import settings as s

    _add(parser, *s.RECORD_OPTIONS)


def _import(parser: Parser) -> None:
    from harness import settings as s
    from harness.tracing import options

    _add(parser, *options.OPTIONS, *s.IMPORT_SHARED)


def _check(parser: Parser) -> None:
    from harness import settings as s

    _add(parser, *s.SUITE_OPTIONS, s.TIMEOUT)


def _list(parser: Parser) -> None:
    from harness import settings as s

    _add(parser, *s.SUITE_OPTIONS, s.TIMEOUT, s.KEYWORD, s.CASE_IDS, s.SHARD)


def _merge(parser: Parser) -> None:
    from harness import settings as s

    parser.add_argument("reports", metavar="REPORT", type=Path, nargs="+", help="shard reports")
    _add(parser, _format(), s.SUITE_KIND, s.FAIL_ON_REGRESSION, *_reporter_options())


def _mutate(parser: Parser) -> None:
    from harness import settings as s

    _add(
        parser,
        *s.SUITE_OPTIONS,
        s.CONTEXT,
        s.SESSION,
        s.TIMEOUT,
        s.MAX_MODEL_CALLS,
        s.MAX_TOOL_CALLS,
        s.WALL_CLOCK,
        s.MIN_SCORE,
        s.MIN_SCRIPT_SCORE,
        s.MUTATION_REPORT,
        s.RECORD_JUDGE,
        # Off: the mutants of what the agent shows its model meet the conformance rules alone.
        s.SNAPSHOTS,
    )


def _calibrate(parser: Parser) -> None:
    from harness import settings as s

    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")
    for name, about in s.CALIBRATE_STEPS.items():
        step = steps.add_parser(name, help=about, description=about[0].upper() + about[1:])
        _add(step, *s.CALIBRATE_OPTIONS, *s.STEP_OPTIONS[name])


def _verify(parser: Parser) -> None:
    from harness import settings as s

    parser.add_argument("report", metavar="REPORT", type=Path, help="a JSON report (--json-report)")
    _add(parser, s.SUITE, s.CONFIG, s.SUITE_KIND, s.FAIL_ON_REGRESSION)


def _show(parser: Parser) -> None:
    parser.add_argument("case", metavar="CASE_ID", help="the case's id")
    parser.add_argument("--report", metavar="FILE", type=Path, help="a JSON report to read")


def _schema(parser: Parser) -> None:
    pass  # it takes no options


def _report(parser: Parser) -> None:
    parser.add_argument("--report", required=True, metavar="REPORT.json", help="the JSON report")
    parser.add_argument("--html", required=True, metavar="PATH", help="write the HTML here")
    parser.add_argument(
        "--history-dir", metavar="DIR", help="the history directory (--history-dir) of the suite"
    )


_FILL: dict[str, Callable[[Parser], None]] = {
    "run": _run,
    "record": _record,
    "import": _import,
    "check": _check,
    "list": _list,
    "merge": _merge,
    "mutate": _mutate,
    "calibrate": _calibrate,
    "verify": _verify,
    "show": _show,
    "schema": _schema,
    "report": _report,
}
