"""`zeroclaw eval import`: the conversations of a trace file, chosen (`--trace`,
`--filter`), redacted, and written as replay fixtures into a suite, all or nothing.

Each conversation is replayed twice through the agent before anything is written: once with
every expectation the trace suggests, to learn which hold (only those are offered), then as
the fixture to be written, with the families `--expect` chose, which must pass admission and
replay green. Only once every conversation passed is any fixture put in place; without
`--expect` none is, and the proven suggestions are printed for the user to choose from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from harness.agents.case_context import CaseSetup, setup_for
from harness.agents.protocol import AgentAdapter
from harness.agents.registry import agent_surface, resolve_agent
from harness.errors import ExitCode, UsageError
from harness.fixtures.suite import load_case
from harness.io.problems import AdmissionError
from harness.live.recorder import Proven, RecordError, prove
from harness.pipeline import RunOptions
from harness.tracing import fixture_writer, sources, suggestions
from harness.tracing.conversation import ImportedConversation, TraceImportError
from harness.tracing.redaction import Redactor

# How often reading a big file says how far it got.
PROGRESS_EVERY = 1_000
Filter = Callable[[ImportedConversation], bool]
_FILTERS = ("agent", "tool", "guardrail")


def parse_filter(text: str) -> Filter:
    """One `--filter`: `agent=NAME`, `failed`, `tool=NAME` or `guardrail=NAME`."""
    key, _, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if key == "failed" and not value:
        return lambda c: c.failed
    if key in _FILTERS and value:
        if key == "agent":
            return lambda c: value in c.agents
        if key == "tool":
            return lambda c: any(call.name == value for call in c.calls())
        return lambda c: value in c.guardrails_tripped
    raise UsageError(f"--filter {text!r}: expected agent=NAME, failed, tool=NAME or guardrail=NAME")


@dataclass
class Plan:
    """One conversation on its way to a fixture."""

    conversation: ImportedConversation
    case_id: str
    out: Path
    suggested: dict[str, dict[str, Any]]
    model_name: str | None = None
    held: list[str] = field(default_factory=list)
    proven: Proven | None = None


@dataclass(frozen=True)
class Run:
    """What every check shares: the agent, its setup and limits."""

    adapter: AgentAdapter
    setup: CaseSetup
    options: RunOptions

    def prove(self, text: str, out: Path, *, require_pass: bool) -> Proven:
        return prove(
            text,
            out,
            self.adapter,
            timeout=self.options.case_timeout,
            max_model_calls_per_turn=self.options.max_model_calls_per_turn,
            max_tool_calls_per_step=self.options.max_tool_calls_per_step,
            setup=self.setup,
            what="the imported fixture",
            require_pass=require_pass,
        )


def import_traces(
    args: argparse.Namespace,
    options: RunOptions,
    patterns: tuple[str, ...],
    out: TextIO,
    err: TextIO,
) -> int:
    """Run the command; its exit code."""
    families = suggestions.parse_families(args.expect)
    filters = [parse_filter(text) for text in args.filter or ()]
    if args.no_redact and args.redact:
        raise UsageError("--no-redact and --redact contradict each other: give one")
    redactor = None if args.no_redact else Redactor.of((*patterns, *(args.redact or ())))
    suite = Path(options.suite)
    if suite.exists() and not suite.is_dir():
        raise UsageError(f"--suite {suite}: not a directory (import writes into a suite)")
    with _warnings_to(err):
        found = _selected(args, filters, err)
    if args.id is not None and len(found) > 1:
        raise UsageError(f"--id names one case, and {len(found)} conversations were chosen")
    plans = _plans(found, suite, args, redactor)
    if redactor is not None:
        print(f"zeroclaw eval import: {redactor.report()}", file=err)
    else:
        print("zeroclaw eval import: not redacted (--no-redact)", file=err)
    existed = suite.exists()
    top = suite  # the first directory the checks may make
    while not existed and not top.parent.exists():
        top = top.parent
    code: int = ExitCode.FAILED
    try:
        code = _write(plans, families, options, redactor, args.no_check, out, err)
    finally:
        if code != ExitCode.PASSED:
            _tidy(top, existed)
    return code


def _write(
    plans: list[Plan],
    families: tuple[str, ...],
    options: RunOptions,
    redactor: Redactor | None,
    unchecked: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    if unchecked:
        return _write_unchecked(plans, families, options, out)
    adapter = resolve_agent(options.agent) if isinstance(options.agent, str) else options.agent
    setup = setup_for(adapter, options.context, options.session, options.case_timeout)
    return _checked(plans, families, Run(adapter, setup, options), redactor, out, err)


def _selected(args: argparse.Namespace, filters: list[Filter], err: TextIO) -> list[Any]:
    path: Path = args.trace_file
    source = sources.detect(path, args.format)
    wanted = set(args.trace or ())
    chosen: list[ImportedConversation] = []
    seen: list[str] = []
    known: set[str] = set()
    for count, conversation in enumerate(
        source.read(path, limit_bytes=sources.DEFAULT_LIMIT_BYTES), 1
    ):
        if count % PROGRESS_EVERY == 0:
            print(f"zeroclaw eval import: read {count} conversation(s) ...", file=err)
        seen.append(conversation.trace_id)
        known |= _ids(conversation)
        if wanted and not (wanted & _ids(conversation)):
            continue
        if all(f(conversation) for f in filters):
            chosen.append(conversation)
    missing = wanted - known
    if missing:
        raise TraceImportError(
            f"{path}: no trace or group {', '.join(sorted(missing))} (it holds "
            f"{len(seen)} conversation(s): {', '.join(seen[:5])}{' ...' if len(seen) > 5 else ''})"
        )
    if not chosen:
        raise TraceImportError(f"{path}: no conversation matches the selection; nothing written")
    return chosen


def _ids(conversation: ImportedConversation) -> set[str]:
    return {conversation.trace_id, *conversation.runs}


def _plans(
    found: list[ImportedConversation],
    suite: Path,
    args: argparse.Namespace,
    redactor: Redactor | None,
) -> list[Plan]:
    plans: list[Plan] = []
    taken: dict[str, str] = {}
    for conversation in found:
        if redactor is not None:
            conversation = redactor.conversation(conversation)
        case_id = args.id or fixture_writer.derived_id(conversation)
        if case_id in taken:
            raise TraceImportError(
                f"conversations {taken[case_id]} and {conversation.trace_id} would both be "
                f"case {case_id!r}; import them one at a time with --trace and --id"
            )
        taken[case_id] = conversation.trace_id
        out = suite / f"{fixture_writer.slug(case_id)}.json"
        if out.exists() and not args.force:
            raise TraceImportError(f"{out} exists; pass --force to replace it (nothing written)")
        suggested = suggestions.suggest(conversation)
        plans.append(Plan(conversation, case_id, out, suggested, args.model_name))
    return plans


def _text(plan: Plan, expects: dict[str, Any]) -> str:
    document = fixture_writer.fixture_of(
        plan.conversation, case_id=plan.case_id, model_name=plan.model_name, expects=expects
    )
    return fixture_writer.text_of(document)


def _checked(
    plans: list[Plan],
    families: tuple[str, ...],
    run: Run,
    redactor: Redactor | None,
    out: TextIO,
    err: TextIO,
) -> int:
    failures: list[str] = []
    try:
        for index, plan in enumerate(plans, 1):
            print(
                f"zeroclaw eval import: checking {index}/{len(plans)} {plan.case_id} ...", file=err
            )
            why = _check(plan, families, run, redactor)
            if why is not None:
                failures.append(f"{plan.case_id} (trace {plan.conversation.trace_id}): {why}")
        if failures or not families:
            for plan in plans:
                if plan.proven is not None:
                    plan.proven.discard()
    except BaseException:
        for plan in plans:
            if plan.proven is not None:
                plan.proven.discard()
        raise
    for failure in failures:
        print(f"zeroclaw eval import: {failure}", file=err)
    if failures:
        print("zeroclaw eval import: nothing written", file=err)
        return ExitCode.FAILED
    if not families:
        for plan in plans:
            _suggestions(plan, out)
        print(
            "zeroclaw eval import: nothing written: a fixture needs at least one expectation "
            "and the import never chooses one for you: pass --expect with the families to "
            "write (e.g. --expect tools,handoffs,response), or all",
            file=err,
        )
        return ExitCode.USAGE
    for plan in plans:
        assert plan.proven is not None
        plan.proven.place()
        chosen = [f for f in families if f in plan.suggested]
        print(
            f"imported {plan.case_id} into {plan.out}: {_turns(plan)}; it replays green; "
            f"expectations written: {', '.join(chosen)}",
            file=out,
        )
    return ExitCode.PASSED


def _check(
    plan: Plan, families: tuple[str, ...], run: Run, redactor: Redactor | None
) -> str | None:
    """Why the plan's conversation cannot be imported, or None (`plan.proven` set when a
    fixture is to be written)."""
    every = suggestions.expects_of(plan.suggested, suggestions.FAMILIES)
    try:
        probe = run.prove(_text(plan, every), plan.out, require_pass=False)
    except RecordError as exc:
        return str(exc)
    probe.discard()
    report = probe.replay
    if report.error is not None:
        return f"does not replay: {report.error}"
    failed = {suggestions.family_of(g.field) for g in report.grades if g.fails}
    plan.held = [f for f in plan.suggested if f not in failed]
    lost = [f for f in families if f in plan.suggested and f not in plan.held]
    if lost:
        lines = [g.check for g in report.grades if g.fails]
        return (
            f"the trace's {', '.join(lost)} do not hold on its replay: {'; '.join(lines)} "
            "(the agent now differs from the one traced?)"
        )
    if not families:
        return None
    chosen = suggestions.expects_of(plan.suggested, families)
    if not chosen:
        return f"the trace proves none of {', '.join(families)}; choose other --expect families"
    try:
        plan.proven = run.prove(_text(plan, chosen), plan.out, require_pass=True)
    except RecordError as exc:
        return str(exc)
    if redactor is not None:
        snapshot = plan.proven.snapshot.path
        text = snapshot.read_text("utf-8") if snapshot.is_file() else ""
        kinds = redactor.found_in(text)
        if kinds:
            return (
                f"its request snapshot would hold a redacted value ({', '.join(kinds)}): the "
                "agent's own tools or instructions produced it"
            )
    return None


def _suggestions(plan: Plan, out: TextIO) -> None:
    print(
        f"{plan.case_id} (trace {plan.conversation.trace_id}, {_turns(plan)}): the expectations "
        "its trace proves, each held on its replay:",
        file=out,
    )
    for family in plan.held:
        block = json.dumps(plan.suggested[family], ensure_ascii=False)
        print(f"  --expect {family}: {block}", file=out)
    dropped = [f for f in plan.suggested if f not in plan.held]
    if dropped:
        print(f"  (not offered, failed on the replay: {', '.join(dropped)})", file=out)


def _turns(plan: Plan) -> str:
    turns = plan.conversation.turns
    return f"{len(turns)} turn(s), {sum(len(t.steps) for t in turns)} model step(s)"


def _write_unchecked(
    plans: list[Plan], families: tuple[str, ...], options: RunOptions, out: TextIO
) -> int:
    """`--no-check`: each fixture admitted (no agent run), then all written."""
    if not families:
        raise UsageError("--no-check writes fixtures: name the families to write with --expect")
    adapter = resolve_agent(options.agent) if isinstance(options.agent, str) else options.agent
    staged: list[tuple[Plan, Path]] = []
    try:
        for plan in plans:
            text = _text(plan, suggestions.expects_of(plan.suggested, families))
            plan.out.parent.mkdir(parents=True, exist_ok=True)
            tmp = plan.out.with_name(f".{plan.out.stem}.import.json")
            tmp.write_text(text, encoding="utf-8")
            staged.append((plan, tmp))
            try:
                load_case(tmp, "replay", agent_surface(adapter))
            except AdmissionError as exc:
                problems = "; ".join(f"{p.field}: {p.message}" for p in exc.problems)
                raise TraceImportError(
                    f"{plan.case_id}: the imported fixture does not pass replay admission: "
                    f"{problems}; nothing written"
                ) from None
    except BaseException:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise
    for plan, tmp in staged:
        tmp.replace(plan.out)
        print(f"imported {plan.case_id} into {plan.out} (not checked: --no-check)", file=out)
    return ExitCode.PASSED


def _tidy(suite: Path, existed: bool) -> None:
    """The directories the checks made (the suite's, its snapshots') removed when nothing
    was written: only empty ones, so nothing of the user's goes."""
    if not suite.is_dir():
        return
    for directory, _, _ in sorted(os.walk(suite), key=lambda entry: -len(entry[0])):
        if directory != str(suite) or not existed:
            with contextlib.suppress(OSError):
                os.rmdir(directory)


@contextlib.contextmanager
def _warnings_to(err: TextIO) -> Iterator[None]:
    """What a source warns of while reading, said on the command's stream."""
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("zeroclaw eval import: warning: %(message)s"))
    sources.LOG.addHandler(handler)
    propagate = sources.LOG.propagate
    sources.LOG.propagate = False
    try:
        yield
    finally:
        sources.LOG.removeHandler(handler)
        sources.LOG.propagate = propagate
