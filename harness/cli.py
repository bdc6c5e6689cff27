"""`zeroclaw eval run|check|record|calibrate|schema|…`: the parsed arguments
(`arguments`) handed over.

Exit codes (`harness.errors.ExitCode`): 0 the gate passed; 1 it did not (failed check, run
error, refused fixture, bad configuration, unwritable report); 2 the command line itself
was wrong (a report path that cannot be one included); 130 interrupted by SIGINT, 143 by
SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, overload

from harness.arguments import build_parser
from harness.errors import ExitCode, HarnessError, UsageError
from harness.runtime import interrupts

if TYPE_CHECKING:
    from harness.io.atomic import ReportFiles
    from harness.reporters.base import Output, Reporter


class Invocation:
    """One command: its arguments, its streams, and the report files it writes."""

    def __init__(
        self, args: argparse.Namespace, out: TextIO, err: TextIO, collector_paused: bool = False
    ) -> None:
        self.args, self.out, self.err = args, out, err
        self._files: ReportFiles | None = None
        self._paused = collector_paused

    def begins(self) -> None:
        """The command's own work begins (its modules imported): the garbage collector the
        start-up paused runs again, before any agent code (or worker process) does. What
        the start-up made (modules, classes, the parser: tens of thousands of objects)
        lives as long as the process: it goes to the oldest generation at once (frozen,
        then thawed there), not walked by the first young collection and the next middle
        one (~10 ms of a one-case run each) only to survive both."""
        if self._paused:
            self._paused = False
            gc.freeze()
            gc.unfreeze()
            gc.enable()

    @property
    def files(self) -> ReportFiles:
        """The report files, made on first use: a command that writes none (`check`,
        `list`) has no use for the module (nor `--help`)."""
        if self._files is None:
            from harness.io.atomic import ReportFiles

            self._files = ReportFiles()
        return self._files

    def written(self) -> ReportFiles | None:
        """The report files, if the command planned any."""
        return self._files

    def output(self, stdout_format: str | None) -> Output:
        from harness.reporters.base import Output

        return Output(vars(self.args), stdout_format, self.out, self.err, files=self.files)


def main(
    argv: list[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    collector_paused: bool = False,
) -> int:
    """Run one command; its exit code. Documents and verdicts go to `stdout` (default
    `sys.stdout`), messages to `stderr`. `collector_paused`: the caller disabled the
    garbage collector for the start-up (the `zeroclaw` process); it is enabled again as the
    command's work begins, and at the latest as it returns."""
    try:
        return _main(argv, stdout, stderr, collector_paused)
    finally:
        if collector_paused:
            gc.enable()


def _main(
    argv: list[str] | None, stdout: TextIO | None, stderr: TextIO | None, collector_paused: bool
) -> int:
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    argv = sys.argv[1:] if argv is None else argv
    try:
        with contextlib.redirect_stdout(out):  # `--help` and `--version` are output too
            args = build_parser(argv).parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse has already explained
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    except KeyboardInterrupt as exc:  # while the command's modules were still importing
        print(_interrupted(exc, None), file=err)
        return interrupts.exit_code_of(exc)
    command = Invocation(args, out, err, collector_paused)
    if args.action != "run":  # `run` imports the run's machinery first (`_run`)
        command.begins()
    try:
        return int(_ACTIONS[args.action](command))
    except HarnessError as exc:
        from harness.io.text import clean, inert

        for line in exc.lines():
            # Messages quote fixture keys, file names and provider text: shown inert.
            print(inert(clean(line)), file=err)
        return int(getattr(exc, "exit_code", ExitCode.FAILED))
    except KeyboardInterrupt as exc:
        with interrupts.ignored():  # a second signal leaves no staged file behind
            files = command.written()
            if files is not None:
                files.abort()
            print(_interrupted(exc, files), file=err)
        return interrupts.exit_code_of(exc)
    except BrokenPipeError:
        files = command.written()
        lines = ["stdout was closed before the report on it was complete"]
        lines += files.account() if files is not None else []
        print("zeroclaw eval: " + "; ".join(lines), file=err)
        return ExitCode.FAILED


def _interrupted(exc: KeyboardInterrupt, files: ReportFiles | None) -> str:
    lines = (files.account() if files is not None else None) or ["no report was written"]
    return f"zeroclaw eval: interrupted by {interrupts.signal_of(exc)}; " + "; ".join(lines)


def _run(command: Invocation) -> int:
    from harness import settings
    from harness.io.text import clean, inert
    from harness.reporters import registry

    args = command.args
    reporters = registry.build(command.output(args.format))
    resolved = settings.resolve(args)
    command.files.refuse_inputs(resolved.inputs())
    from harness import pipeline

    command.begins()  # the agent is imported next, and worker processes may start
    report = pipeline.run(resolved.options, reporters)
    for line in settings.judge_lines(resolved.options, report.partial is not None):
        print(f"zeroclaw eval: {inert(clean(line))}", file=command.err)
    return report.exit_code()


def _check(command: Invocation) -> int:
    from harness import settings
    from harness.run.options import admit

    options = settings.resolve(command.args, provider=False, judge=False).options
    cases = admit(options, _Refusals(command))
    print(
        f"{len(cases)} case(s) in {options.suite} admitted; each fails against an empty run",
        file=command.out,
    )
    return ExitCode.PASSED


class _Refusals(Sequence["Reporter"]):
    """The reporters of `check`, which only ever tell a refusal: built (the registry and
    the reporters' modules imported) when a fixture is refused, not on every check."""

    def __init__(self, command: Invocation) -> None:
        self._command = command
        self._built: list[Reporter] | None = None

    def _reporters(self) -> list[Reporter]:
        if self._built is None:
            from harness.reporters import registry

            self._built = registry.build(self._command.output(None))
        return self._built

    def __len__(self) -> int:
        return len(self._reporters())

    @overload
    def __getitem__(self, index: int) -> Reporter: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Reporter]: ...
    def __getitem__(self, index: int | slice) -> Reporter | Sequence[Reporter]:
        return self._reporters()[index]


def _list(command: Invocation) -> int:
    from harness import settings
    from harness.fixtures.selection import choose
    from harness.reporters.case_view import case_line
    from harness.run.options import admit

    options = settings.resolve(command.args, provider=False, judge=False).options
    cases = choose(admit(options), options.selection)
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


def _import(command: Invocation) -> int:
    from harness import settings
    from harness.tracing.importer import import_traces

    resolved = settings.resolve(command.args, provider=False)
    patterns = resolved.config.redact_patterns
    return import_traces(command.args, resolved.options, patterns, command.out, command.err)


def _mutate(command: Invocation) -> int:
    from harness import settings
    from harness.io.text import clean, command_token, inert, stop_commands
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
    from harness import settings
    from harness.judge import calibrate
    from harness.run.options import admit

    resolved = settings.resolve(command.args, provider=False)
    suite = calibrate.suite_of(resolved.options.judge, admit(resolved.options))
    args = {"live_model": resolved.config.live_model, **vars(command.args)}
    return calibrate.step(args, suite, sys.stdin, command.out)


def _verify(command: Invocation) -> int:
    from harness.config import load_config
    from harness.io.text import clean, inert
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
    from harness.io.text import clean, inert
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
    "import": _import,
    "mutate": _mutate,
    "schema": _schema,
    "report": _report,
    "verify": _verify,
    "list": _list,
    "merge": _merge,
    "calibrate": _calibrate,
    "show": _show,
}
