"""`zeroclaw eval run|check|record|calibrate|schema|…`: argument parsing and hand-over.

Exit codes (`harness.errors.ExitCode`): 0 the gate passed; 1 it did not (failed check, run
error, refused fixture, bad configuration, unwritable report); 2 the command line itself
was wrong (a report path that cannot be one included); 130 interrupted by SIGINT, 143 by
SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.errors import ExitCode, HarnessError, UsageError
from harness.io.atomic import ReportFiles
from harness.io.text import clean, inert
from harness.options import Option
from harness.runtime import interrupts
from harness.settings import (
    AGENT_OPTIONS,
    BASELINE_OPTIONS,
    BESIDE_SUITE,
    CALIBRATE_OPTIONS,
    CALIBRATE_STEPS,
    CASE,
    CASE_IDS,
    CONFIG,
    CONTEXT,
    EXITFIRST,
    FAIL_ON_REGRESSION,
    FORCE,
    JOBS,
    KEYWORD,
    MAX_MODEL_CALLS,
    MAX_TOOL_CALLS,
    MAXFAIL,
    MIN_SCORE,
    MIN_SCRIPT_SCORE,
    MUTATION_REPORT,
    OUT,
    RECORD_JUDGE,
    REPEAT,
    SESSION,
    SHARD,
    STEP_OPTIONS,
    SUITE,
    SUITE_KIND,
    SUITE_OPTIONS,
    TIMEOUT,
    WALL_CLOCK,
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
    parser.add_argument("--version", action="version", version=f"zeroclaw-eval {_version()}")
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
        CONTEXT,
        SESSION,
        fmt,
        SUITE_KIND,
        TIMEOUT,
        MAX_MODEL_CALLS,
        MAX_TOOL_CALLS,
        WALL_CLOCK,
        REPEAT,
        JOBS,
        EXITFIRST,
        MAXFAIL,
        *BASELINE_OPTIONS,
        KEYWORD,
        CASE_IDS,
        SHARD,
        *BESIDE_SUITE,
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
        CONTEXT,
        SESSION,
        TIMEOUT,
        MAX_MODEL_CALLS,
        MAX_TOOL_CALLS,
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
        TIMEOUT,
    )
    _add(
        actions.add_parser(
            "list",
            help="list the suite's cases (ids, files, kinds of checks); runs nothing",
            description="Admit the suite and list its cases, or those -k/--case/--shard "
            "pick: one line each with the case id, its fixture and the expectations it "
            "declares. Runs no agent.",
        ),
        *SUITE_OPTIONS,
        TIMEOUT,
        KEYWORD,
        CASE_IDS,
        SHARD,
    )
    merge = actions.add_parser(
        "merge",
        help="merge the JSON reports of a suite's shards into the whole suite's reports",
        description="Combine the JSON reports of every shard of a suite (--shard I/N) into "
        "one suite report, JUnit, summary and exit code; refuse a missing shard, a case "
        "twice, a report that disagrees with itself, shards judged by another gate than "
        "the suite's, or shards of other fixtures, policies or harness versions.",
    )
    merge.add_argument("reports", metavar="REPORT", type=Path, nargs="+", help="shard reports")
    _add(merge, fmt, SUITE_KIND, FAIL_ON_REGRESSION, *registry.options())
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
        CONTEXT,
        SESSION,
        TIMEOUT,
        MAX_MODEL_CALLS,
        MAX_TOOL_CALLS,
        WALL_CLOCK,
        MIN_SCORE,
        MIN_SCRIPT_SCORE,
        MUTATION_REPORT,
        RECORD_JUDGE,
    )
    _calibrate_parser(actions)
    verify = actions.add_parser(
        "verify",
        help="check a JSON report is for exactly these fixtures under this policy",
        description="Recompute the fixture hashes of the suite and the policy of its kind, "
        "take from each fixture what it decides (case id, cluster, runs, pass rate), "
        "derive every derived field of the report again (verdicts, repeat statistics, "
        "totals, statistics, baseline lists, exit code), and exit 0 iff the JSON report is "
        "for exactly these fixtures under this policy and agrees with itself.",
    )
    verify.add_argument("report", metavar="REPORT", type=Path, help="a JSON report (--json-report)")
    _add(verify, SUITE, CONFIG, SUITE_KIND, FAIL_ON_REGRESSION)
    show = actions.add_parser(
        "show",
        help="print one case's transcript, checks and error from the last run",
        description="Print a case's transcript (each model request and answer, each tool "
        "call), its checks with what was observed, and its run error with where it was "
        "raised in your code, for any case of the last run (kept in .zeroclaw-eval/ in the "
        "directory the run started from), or from a JSON report (--report), which keeps "
        "its failing cases' transcripts only.",
    )
    show.add_argument("case", metavar="CASE_ID", help="the case's id")
    show.add_argument("--report", metavar="FILE", type=Path, help="a JSON report to read")
    actions.add_parser(
        "schema",
        help="print the fixture format as a JSON Schema",
        description="Print the JSON Schema of a fixture, for editors and other tools.",
    )
    report = actions.add_parser(
        "report",
        help="write the HTML report of an earlier run from its JSON report",
        description="Write the self-contained HTML report (the verdict, every case with its "
        "transcript, and with --history-dir the pass-rate trend) of a run from its JSON "
        "report (--json-report), as `run --html` would have.",
    )
    report.add_argument("--report", required=True, metavar="REPORT.json", help="the JSON report")
    report.add_argument("--html", required=True, metavar="PATH", help="write the HTML here")
    report.add_argument(
        "--history-dir", metavar="DIR", help="the history directory (--history-dir) of the suite"
    )
    return parser


def _calibrate_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    calibrate = actions.add_parser(
        "calibrate",
        help="label the LLM judge's recorded verdicts; calibrate its rubrics from the labels",
        description="Calibrate the LLM judge of the suite's rubrics (docs/judge.md).",
    )
    steps = calibrate.add_subparsers(dest="step", required=True, metavar="STEP")
    for name, about in CALIBRATE_STEPS.items():
        step = steps.add_parser(name, help=about, description=about[0].upper() + about[1:])
        _add(step, *CALIBRATE_OPTIONS, *STEP_OPTIONS[name])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("zeroclaw-eval")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _add(parser: argparse.ArgumentParser, *options: Option) -> None:
    for option in options:
        option.add_to(parser)


@dataclass
class Invocation:
    """One command: its arguments, its streams, and the report files it writes."""

    args: argparse.Namespace
    out: TextIO
    err: TextIO
    files: ReportFiles = field(default_factory=ReportFiles)

    def output(self, stdout_format: str | None) -> Output:
        from harness.reporters.base import Output

        return Output(vars(self.args), stdout_format, self.out, self.err, files=self.files)


def main(
    argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run one command; its exit code. Documents and verdicts go to `stdout` (default
    `sys.stdout`), messages to `stderr`."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        with contextlib.redirect_stdout(out):  # `--help` and `--version` are output too
            args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse has already explained
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    except KeyboardInterrupt as exc:  # while the command's modules were still importing
        print(_interrupted(exc, ReportFiles()), file=err)
        return interrupts.exit_code_of(exc)
    command = Invocation(args, out, err)
    try:
        return int(_ACTIONS[args.action](command))
    except HarnessError as exc:
        for line in exc.lines():
            # Messages quote fixture keys, file names and provider text: shown inert.
            print(inert(clean(line)), file=err)
        return int(getattr(exc, "exit_code", ExitCode.FAILED))
    except KeyboardInterrupt as exc:
        with interrupts.ignored():  # a second signal leaves no staged file behind
            command.files.abort()
            print(_interrupted(exc, command.files), file=err)
        return interrupts.exit_code_of(exc)
    except BrokenPipeError:
        lines = ["stdout was closed before the report on it was complete", *command.files.account()]
        print("zeroclaw eval: " + "; ".join(lines), file=err)
        return ExitCode.FAILED


def _interrupted(exc: KeyboardInterrupt, files: ReportFiles) -> str:
    lines = files.account() or ["no report was written"]
    return f"zeroclaw eval: interrupted by {interrupts.signal_of(exc)}; " + "; ".join(lines)


def _run(command: Invocation) -> int:
    from harness import pipeline, settings
    from harness.reporters import registry

    args = command.args
    reporters = registry.build(command.output(args.format))
    resolved = settings.resolve(args)
    command.files.refuse_inputs(resolved.inputs())
    report = pipeline.run(resolved.options, reporters)
    for line in settings.judge_lines(resolved.options, report.partial is not None):
        print(f"zeroclaw eval: {inert(clean(line))}", file=command.err)
    return report.exit_code()


def _check(command: Invocation) -> int:
    from harness import pipeline, settings
    from harness.reporters import registry

    reporters = registry.build(command.output(None))
    options = settings.resolve(command.args, provider=False).options
    cases = pipeline.admit(options, reporters)
    print(
        f"{len(cases)} case(s) in {options.suite} admitted; each fails against an empty run",
        file=command.out,
    )
    return ExitCode.PASSED


def _list(command: Invocation) -> int:
    from harness import pipeline, settings
    from harness.fixtures.selection import choose
    from harness.reporters.case_view import case_line

    options = settings.resolve(command.args, provider=False).options
    cases = choose(pipeline.admit(options), options.selection)
    for case in cases:
        print(case_line(case, options.project_root), file=command.out)
    return ExitCode.PASSED


def _merge(command: Invocation) -> int:
    from harness import pipeline
    from harness.reporters import registry
    from harness.tracking.merge import merge

    reporters = registry.build(command.output(command.args.format))
    merged = {os.path.realpath(path): path for path in command.args.reports}
    for key, given in command.files.planned.items():
        if key in merged:
            raise UsageError(
                f"{given}: names a shard's report being merged ({merged[key]}): "
                "write the merged report to a file of its own"
            )
    args = command.args
    report = merge(args.reports, args.suite_kind, bool(args.fail_on_regression))
    pipeline.deliver(report, reporters)
    return report.exit_code()


def _record(command: Invocation) -> int:
    from harness import settings
    from harness.live.recorder import record_live_case, refuse_existing

    args = command.args
    resolved = settings.resolve(args, provider=False)
    refuse_existing(args.out, args.force)
    resolved = settings.with_provider(resolved)
    print(
        record_live_case(
            args.case, args.out, resolved.options, secret=resolved.secret, force=args.force
        ),
        file=command.out,
    )
    return ExitCode.PASSED


def _mutate(command: Invocation) -> int:
    from harness import settings
    from harness.io.text import command_token, stop_commands
    from harness.mutation.mutate import Thresholds, mutate, render_json, render_table

    args = command.args
    path = None if args.json_report is None else command.files.plan(args.json_report)
    options = settings.resolve(args, provider=False).options
    if options.mode != "replay":
        print("zeroclaw eval: mutate replays scripts; --mode live does not apply", file=command.err)
        return ExitCode.USAGE
    report = mutate(options, Thresholds(args.min_score, args.min_script_score))
    for line in settings.judge_lines(options, partial=True):  # the replies it recorded
        print(f"zeroclaw eval: {inert(clean(line))}", file=command.err)
    if path is not None:
        command.files.stage(path, render_json(report))
        command.files.commit()
    table = render_table(report)
    if command.output(None).github:
        # As the run's table: the runner acts on no line between the fences, whatever a
        # fixture put there (each line is made inert besides).
        table = stop_commands(table, command_token())
    command.out.write(table)
    return report.exit_code


def _calibrate(command: Invocation) -> int:
    from harness import pipeline, settings
    from harness.judge import calibrate

    resolved = settings.resolve(command.args, provider=False)
    suite = calibrate.suite_of(resolved.options.judge, pipeline.admit(resolved.options))
    args = {"live_model": resolved.config.live_model, **vars(command.args)}
    return calibrate.step(args, suite, sys.stdin, command.out)


def _verify(command: Invocation) -> int:
    from harness.config import load_config
    from harness.settings import repository_root
    from harness.tracking.verify import read_report, verify

    args = command.args
    loaded = load_config(args.config)
    root = repository_root(loaded.root, os.environ)
    suite = args.suite
    if not suite:
        report, _ = read_report(args.report)
        suite = root / report.suite  # its path from the repository root, as runs name it
    verdict = verify(args.report, Path(suite), root, args.suite_kind, bool(args.fail_on_regression))
    for problem in verdict.problems:
        print(f"zeroclaw eval: verify: {inert(clean(problem))}", file=command.err)
    if not verdict.verified:
        print(f"zeroclaw eval: not verified: {len(verdict.problems)} problem(s)", file=command.err)
        return ExitCode.FAILED
    print(f"verified: {inert(clean(verdict.summary))}", file=command.out)
    return ExitCode.PASSED


def _show(command: Invocation) -> int:
    import difflib

    from harness.io.text import clean, inert
    from harness.reporters.case_view import render_case
    from harness.reporters.last_run import last_report_path, with_transcript
    from harness.tracking.verify import VerifyError, read_report

    args = command.args
    path = args.report or last_report_path()
    if args.report is None and not path.exists():
        raise VerifyError(
            f"{path}: no last report here: run `zeroclaw eval run` first, or give --report"
        )
    report, raw = read_report(path)
    found = [c for c in report.cases if c.id == args.case]
    if not found:
        ids = [c.id for c in report.cases]
        close = difflib.get_close_matches(args.case, ids, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else f" ({len(ids)} case(s))"
        said = inert(clean(f"{path}: no case {args.case!r}{hint}"))
        print(f"zeroclaw eval: {said}", file=command.err)
        return ExitCode.FAILED
    command.out.write(render_case(with_transcript(path, raw, found[0])))
    return ExitCode.PASSED


def _schema(command: Invocation) -> int:
    import json

    from harness.fixtures.schema import json_schema

    print(json.dumps(json_schema(), indent=2, ensure_ascii=False), file=command.out)
    return ExitCode.PASSED


def _report(command: Invocation) -> int:
    from harness.reporters import registry

    # The HTML reporter renders it, found through the registry as `run`'s reporters are.
    html = {spec.name: spec for spec in registry.SPECS}["html"]
    args = command.args
    written = html.write_from_json(  # type: ignore[attr-defined]
        args.report, args.html, args.history_dir, command.files, command.err
    )
    print(f"wrote {inert(clean(command.files.shown(written)))}", file=command.out)
    return ExitCode.PASSED


_ACTIONS = {
    "run": _run,
    "check": _check,
    "record": _record,
    "mutate": _mutate,
    "schema": _schema,
    "report": _report,
    "verify": _verify,
    "list": _list,
    "merge": _merge,
    "calibrate": _calibrate,
    "show": _show,
}
