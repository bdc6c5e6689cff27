"""`zeroclaw eval run|check|record`: the command line and its exit-code contract.

Exit codes: 0 the gate passed; 1 it did not (failed check, run error, refused fixture,
bad configuration, unwritable report); 2 the command line itself was wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO

from harness.modes import MODES, SUITE_KINDS

if TYPE_CHECKING:
    from harness.case import Problem
    from harness.config import EvalConfig
    from harness.modes import Mode
    from harness.runner import BackendFactory

FORMATS = ("table", "json", "junit")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zeroclaw",
        description="zeroclaw-eval: replay agent trace fixtures through a real agent loop, "
        "grade them, and gate CI on the result.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    evaluation = commands.add_parser("eval", help="run or check eval suites")
    actions = evaluation.add_subparsers(dest="action", required=True, metavar="ACTION")

    run = actions.add_parser(
        "run",
        help="run a suite and exit 0 iff the gate passed",
        description="Admit every fixture of the suite, run each case through the agent's "
        "real loop, grade it, report, and exit 0 iff the suite's gate passed.",
    )
    _common(run)
    run.add_argument("--format", choices=FORMATS, default="table", help="stdout format")
    run.add_argument(
        "--suite-kind",
        choices=SUITE_KINDS,
        help="gate rules to apply (default: the suite directory's name, else regression)",
    )
    run.add_argument("--junit-xml", type=Path, metavar="PATH", help="also write JUnit XML here")
    run.add_argument(
        "--json-report", type=Path, metavar="PATH", help="also write the JSON report here"
    )
    _timeout(run)
    run.add_argument(
        "--summary", type=Path, metavar="PATH", help="also write the Markdown summary here"
    )
    run.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help="append this run's pass rate and per-case verdicts to a JSON-lines file",
    )
    run.add_argument(
        "--annotations",
        choices=("auto", "github", "none"),
        default="auto",
        help="emit GitHub workflow annotations for failing cases and append the summary to "
        "$GITHUB_STEP_SUMMARY (auto: when GITHUB_ACTIONS=true)",
    )

    record = actions.add_parser(
        "record",
        help="run one live case and write it as a replay fixture that replays green",
        description="Run a live case once against the configured provider and write a "
        "replay fixture holding every model step the run used and the case's expectations. "
        "Nothing is written unless the live run passed and the fixture passes replay "
        "admission and replays green through the same agent.",
    )
    record.add_argument("--case", type=Path, required=True, metavar="PATH", help="live fixture")
    record.add_argument(
        "--out", type=Path, required=True, metavar="PATH", help="replay fixture to write"
    )
    _agent_and_config(record)
    _timeout(record)
    record.add_argument("--force", action="store_true", help="replace --out if it exists")

    check = actions.add_parser(
        "check",
        help="admit a suite and check no case passes an empty run; runs no agent",
        description="Fixture admission plus the empty-run vacuity check, without running "
        "any agent: for pre-commit hooks and while authoring cases.",
    )
    _common(check)
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= threading.TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds: {text}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", metavar="DIR", help="suite directory (default: suite_dir)")
    parser.add_argument("--mode", choices=MODES, help="replay or live (default: mode)")
    _agent_and_config(parser)


def _agent_and_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="SPEC", help="agent name or module:factory")
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="TOML file with an [eval] table"
    )


def _timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECS",
        help="timeout for starting the agent and for each turn (default: case_timeout_secs)",
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.action == "check":
            return _check(args)
        if args.action == "record":
            return _record(args)
        return _run(args)
    except _Refused as exc:
        print(f"zeroclaw eval: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("zeroclaw eval: interrupted; no report was written", file=sys.stderr)
        return 130


class _Refused(Exception):
    """Anything that stops a run before a verdict: printed as one clear line, exit 1."""


class _Settings(NamedTuple):
    suite: Path
    root: Path
    mode: Mode
    agent: str
    timeout: float
    config: EvalConfig


def _settings(args: argparse.Namespace) -> _Settings:
    from harness.config import ConfigError, load_config

    try:
        loaded = load_config(args.config)
    except ConfigError as exc:
        raise _Refused(str(exc)) from None
    config = loaded.config
    suite_arg = getattr(args, "suite", None)
    suite = Path(suite_arg) if suite_arg else _near(loaded.root / config.suite_dir)
    timeout = getattr(args, "timeout", None) or config.case_timeout_secs
    # A suite directory named `live` holds live cases: replaying it could only be refused.
    default_mode: Mode = "live" if suite.name == "live" else config.mode
    return _Settings(
        suite,
        loaded.root,
        getattr(args, "mode", None) or default_mode,
        args.agent or config.agent,
        timeout,
        config,
    )


class _Live(NamedTuple):
    backend: BackendFactory
    allowed_tools: frozenset[str]
    secret: str


def _live(config: EvalConfig, timeout: float) -> _Live:
    """The provider of a live run, or a refusal saying exactly what is missing.

    `timeout` is the run's per-turn timeout (`--timeout`, else case_timeout_secs): no model
    call waits longer than a turn may take, nor gives up sooner than the run allows."""
    import dataclasses

    from harness.live import DEFAULT_CALL_TIMEOUT, LiveSettings, ProviderError, live_backend_factory

    try:
        settings = LiveSettings.from_config(config, os.environ)
    except ProviderError as exc:
        raise _Refused(f"live mode: {exc}") from None
    settings = dataclasses.replace(settings, call_timeout=min(DEFAULT_CALL_TIMEOUT, timeout))
    return _Live(
        live_backend_factory(settings), frozenset(config.live_allowed_tools), settings.api_key
    )


def _near(path: Path) -> Path:
    """`path` relative to the working directory when it lies below it: messages and
    annotations name fixtures the way the user would type them."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _github(args: argparse.Namespace) -> bool:
    mode = getattr(args, "annotations", "auto")
    return mode == "github" or (mode == "auto" and os.environ.get("GITHUB_ACTIONS") == "true")


def _print_refusal(problems: list[Problem], stream: TextIO, github: bool = False) -> None:
    for problem in problems:
        print(problem, file=stream)
    if github:
        from harness.report.github import problem_command

        for problem in problems[:50]:
            print(problem_command(problem), file=stream)
    files = len({p.file for p in problems})
    print(
        f"zeroclaw eval: refused: {len(problems)} problem(s) in {files} file(s); nothing was run",
        file=stream,
    )


def _check(args: argparse.Namespace) -> int:
    from harness.agent import AgentError, surface_of
    from harness.case import AdmissionError
    from harness.suite import load_suite

    settings = _settings(args)
    suite = settings.suite
    try:
        cases = load_suite(suite, settings.mode, surface_of(settings.agent))
    except AgentError as exc:
        raise _Refused(str(exc)) from None
    except AdmissionError as exc:
        _print_refusal(exc.problems, sys.stderr, _github(args))
        return 1
    print(f"{len(cases)} case(s) in {suite} admitted; each fails against an empty run")
    return 0


def _run(args: argparse.Namespace) -> int:
    from harness.agent import AgentError, agent_surface, resolve_agent
    from harness.case import AdmissionError
    from harness.report.files import ReportWriteError, append_history, write_atomic
    from harness.report.github import workflow_commands
    from harness.report.json import render_json
    from harness.report.junit import render_junit
    from harness.report.markdown import render_markdown
    from harness.report.model import resolve_kind
    from harness.report.table import render_case, render_summary, use_colour
    from harness.runner import display_path, run_cases
    from harness.suite import load_suite

    settings = _settings(args)
    suite, root, mode, timeout = settings.suite, settings.root, settings.mode, settings.timeout
    live = _live(settings.config, timeout) if mode == "live" else None
    try:
        adapter = resolve_agent(settings.agent)
    except AgentError as exc:
        raise _Refused(str(exc)) from None
    github = _github(args)
    try:
        cases = load_suite(suite, mode, agent_surface(adapter))
    except AdmissionError as exc:
        _print_refusal(exc.problems, sys.stderr, github)
        return 1

    suite_name = display_path(suite, root.resolve())
    kind = resolve_kind(args.suite_kind, suite_name)
    table = args.format == "table"
    colour = table and use_colour(sys.stdout)
    if table:
        sys.stdout.write("\n")
    total = len(cases)
    done = 0

    def on_case(case_report: object) -> None:
        nonlocal done
        done += 1
        if table:
            sys.stdout.write(render_case(case_report, colour))  # type: ignore[arg-type]
            sys.stdout.flush()
        elif sys.stderr.isatty():
            sys.stderr.write(f"\r  {done}/{total} cases")
            sys.stderr.flush()

    report = run_cases(
        cases,
        adapter,
        suite=suite_name,
        kind=kind,
        mode=mode,
        backend=live.backend if live else None,
        allowed_tools=live.allowed_tools if live else None,
        case_timeout=timeout,
        root=root,
        on_case=on_case,
    )
    if not table and sys.stderr.isatty():
        sys.stderr.write("\n")
    json_doc = render_json(report) if args.json_report or args.format == "json" else b""
    junit_doc = render_junit(report) if args.junit_xml or args.format == "junit" else b""
    summary = render_markdown(report) if args.summary or github else ""
    try:
        if args.junit_xml:
            write_atomic(args.junit_xml, junit_doc)
        if args.json_report:
            write_atomic(args.json_report, json_doc)
        if args.summary:
            write_atomic(args.summary, summary.encode("utf-8"))
        if args.history:
            line = append_history(args.history, report)
            print(f"zeroclaw eval: {line}", file=sys.stderr)
    except ReportWriteError as exc:
        raise _Refused(str(exc)) from None
    if github:
        # Workflow commands are read from stdout and stderr alike; stderr keeps a JSON or
        # JUnit document on stdout clean.
        stream = sys.stdout if table else sys.stderr
        for command in workflow_commands(report):
            print(command, file=stream)
        stream.flush()
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            try:
                with open(step_summary, "a", encoding="utf-8") as handle:
                    handle.write(summary + "\n")
            except OSError as exc:
                print(
                    f"zeroclaw eval: cannot append to GITHUB_STEP_SUMMARY: {exc}", file=sys.stderr
                )
    out = sys.stdout.buffer
    if table:
        sys.stdout.write(render_summary(report, colour))
        sys.stdout.flush()
    elif args.format == "json":
        out.write(json_doc)
    else:
        out.write(junit_doc)
    out.flush()
    return report.exit_code()


def _record(args: argparse.Namespace) -> int:
    from harness.agent import AgentError, agent_surface, resolve_agent
    from harness.case import AdmissionError
    from harness.recorder import RecordError, write_recording
    from harness.runner import run_cases
    from harness.suite import load_case

    settings = _settings(args)
    if args.out.exists() and not args.force:
        # Refused before the live run: it would cost a provider run for nothing.
        raise _Refused(f"{args.out} exists; pass --force to replace it")
    live = _live(settings.config, settings.timeout)
    try:
        adapter = resolve_agent(settings.agent)
    except AgentError as exc:
        raise _Refused(str(exc)) from None
    try:
        case = load_case(args.case, "live", agent_surface(adapter))
    except AdmissionError as exc:
        _print_refusal(exc.problems, sys.stderr)
        return 1
    print(f"zeroclaw eval: running {case.id} live ...", file=sys.stderr)
    report = run_cases(
        [case],
        adapter,
        suite=str(args.case.parent),
        mode="live",
        backend=live.backend,
        allowed_tools=live.allowed_tools,
        case_timeout=settings.timeout,
        root=settings.root,
    )
    try:
        replay = write_recording(
            case,
            report.cases[0],
            adapter,
            args.out,
            secrets=(live.secret,),
            force=args.force,
            timeout=settings.timeout,
        )
    except RecordError as exc:
        raise _Refused(f"{args.out}: not written: {exc}") from None
    record = replay.record
    steps = record.model_calls if record else 0
    passed = sum(g.passed for g in replay.grades)
    print(
        f"recorded {case.id}: {steps} model step(s) over {len(case.trace.turns)} turn(s) "
        f"into {args.out}; it replays green ({passed}/{len(replay.grades)} checks)"
    )
    return 0
