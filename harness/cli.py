"""`zeroclaw eval run|check|record|schema`: argument parsing and hand-over.

Exit codes (`harness.errors.ExitCode`): 0 the gate passed; 1 it did not (failed check, run
error, refused fixture, bad configuration, unwritable report); 2 the command line itself
was wrong; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from harness.errors import ExitCode, HarnessError
from harness.options import Option
from harness.settings import (
    AGENT_OPTIONS,
    CASE,
    FORCE,
    MIN_SCORE,
    MIN_SCRIPT_SCORE,
    MUTATION_REPORT,
    OUT,
    SUITE_KIND,
    SUITE_OPTIONS,
    TIMEOUT,
)

if TYPE_CHECKING:
    from harness.reporters.base import Output


def build_parser() -> argparse.ArgumentParser:
    from harness.reporters import registry

    parser = argparse.ArgumentParser(
        prog="zeroclaw",
        description="zeroclaw-eval: replay agent trace fixtures through a real agent loop, "
        "grade them, and gate CI on the result.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    evaluation = commands.add_parser("eval", help="run or check eval suites")
    actions = evaluation.add_subparsers(dest="action", required=True, metavar="ACTION")
    formats = registry.stdout_formats()
    fmt = Option("--format", "stdout format", choices=formats, default=formats[0])
    _add(
        actions.add_parser(
            "run",
            help="run a suite and exit 0 iff the gate passed",
            description="Admit every fixture of the suite, run each case through the agent's "
            "real loop, grade it, report, and exit 0 iff the suite's gate passed.",
        ),
        *SUITE_OPTIONS,
        fmt,
        SUITE_KIND,
        TIMEOUT,
        *registry.options(),
    )
    _add(
        actions.add_parser(
            "record",
            help="run one live case and write it as a replay fixture that replays green",
            description="Run a live case once against the configured provider and write a "
            "replay fixture holding every model step the run used and the case's "
            "expectations. Nothing is written unless the live run passed and the fixture "
            "passes replay admission and replays green through the same agent.",
        ),
        CASE,
        OUT,
        *AGENT_OPTIONS,
        TIMEOUT,
        FORCE,
    )
    _add(
        actions.add_parser(
            "check",
            help="admit a suite and check no case passes an empty run; runs no agent",
            description="Fixture admission plus the empty-run vacuity check, without running "
            "any agent: for pre-commit hooks and while authoring cases.",
        ),
        *SUITE_OPTIONS,
    )
    _add(
        actions.add_parser(
            "mutate",
            help="run mutants of every case and report which the suite kills",
            description="Mutation testing of a replay suite: every case's script mutants "
            "(a dropped call, a changed argument, swapped calls, another final text, a "
            "dropped turn) and boundary mutants (faults of a broken loop injected at the "
            "model and tool boundaries) run through the real agent. Exit 0 iff the "
            "scores reach their minimums.",
        ),
        *SUITE_OPTIONS,
        TIMEOUT,
        MIN_SCORE,
        MIN_SCRIPT_SCORE,
        MUTATION_REPORT,
    )
    actions.add_parser(
        "schema",
        help="print the fixture format as a JSON Schema",
        description="Print the JSON Schema of a fixture, for editors and other tools.",
    )
    return parser


def _add(parser: argparse.ArgumentParser, *options: Option) -> None:
    for option in options:
        option.add_to(parser)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse has already explained
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    try:
        return int(_ACTIONS[args.action](args))
    except HarnessError as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        print("zeroclaw eval: interrupted; no report was written", file=sys.stderr)
        return ExitCode.INTERRUPTED


def _output(args: argparse.Namespace, stdout_format: str | None) -> Output:
    from harness.reporters.base import Output

    return Output(vars(args), stdout_format, sys.stdout, sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from harness import pipeline, settings
    from harness.reporters import registry

    resolved = settings.resolve(args)
    report = pipeline.run(resolved.options, registry.build(_output(args, args.format)))
    return report.exit_code()


def _check(args: argparse.Namespace) -> int:
    from harness import pipeline, settings
    from harness.reporters import registry

    options = settings.resolve(args, provider=False).options
    cases = pipeline.admit(options, registry.build(_output(args, None)))
    print(f"{len(cases)} case(s) in {options.suite} admitted; each fails against an empty run")
    return ExitCode.PASSED


def _record(args: argparse.Namespace) -> int:
    from harness import settings
    from harness.live_recorder import record_live_case, refuse_existing

    resolved = settings.resolve(args, provider=False)
    refuse_existing(args.out, args.force)
    resolved = settings.with_provider(resolved)
    print(
        record_live_case(
            args.case, args.out, resolved.options, secret=resolved.secret, force=args.force
        )
    )
    return ExitCode.PASSED


def _mutate(args: argparse.Namespace) -> int:
    from harness import settings
    from harness.mutation import Thresholds, mutate, render_json, render_table
    from harness.reporters.atomic import write_atomic

    options = settings.resolve(args, provider=False).options
    if options.mode != "replay":
        print("zeroclaw eval: mutate replays scripts; --mode live does not apply", file=sys.stderr)
        return ExitCode.USAGE
    report = mutate(options, Thresholds(args.min_score, args.min_script_score))
    if args.json_report is not None:
        write_atomic(args.json_report, render_json(report))
    sys.stdout.write(render_table(report))
    return report.exit_code


def _schema(args: argparse.Namespace) -> int:
    import json

    from harness.fixture import json_schema

    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
    return ExitCode.PASSED


_ACTIONS = {
    "run": _run,
    "check": _check,
    "record": _record,
    "mutate": _mutate,
    "schema": _schema,
}
