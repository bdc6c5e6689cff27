"""GitHub Actions workflow commands for failing cases and refused fixtures (`--annotations`):
clean and escaped so no text can forge one, `::error` for what the gate fails on and
`::warning` for what it only tracks, within GitHub's per-step limits shared by every run
of the harness in the step.

A repeated case's title says how its runs came out (`(flaky 17/20)`), its message how many
passed against its rule and what its first failing run failed on; a flaky case that passed
anyway gets a `::notice`. Cases the run stopped before (`--maxfail`) are not annotated one
by one: one notice says how many were not run. A request snapshot change many cases share
is one annotation, on its first case, naming the others (whose only failure it is)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, TextIO

from msgspec import Meta

from harness.io.problems import Problem
from harness.io.text import brief, clean, clean_lines, clip
from harness.reporters.base import ANNOTATIONS, CI, Output, Reporter

if TYPE_CHECKING:
    from harness.verdict.reports import CaseReport, SuiteReport

Level = Literal["error", "warning", "notice"]

# GitHub shows at most ten annotations of each level per step; more are dropped silently.
MAX_ANNOTATIONS = 10
MAX_MESSAGE = 2000
MAX_NAMED = 5  # cases an annotation names that share its snapshot change
# The variables that name one step of one job of one run attempt.
_STEP = ("GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB", "GITHUB_ACTION")
# What the step's counts file holds: annotations used, per level.
_COUNTS = dict[str, Annotated[int, Meta(ge=0)]]


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF encoded, so it stays one command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`, which delimit properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def tag(agent: str | None) -> str:
    """The harness's name in annotation titles, with the agent: the same case run by two
    agents in one step must not read as one annotation."""
    return f"zeroclaw-eval[{clean(agent)}]" if agent else "zeroclaw-eval"


class Budget:
    """How many annotations of each level GitHub will still show in this step.

    Every run of the harness in one step (the regression session runs one per agent) draws
    on the same counts, kept in a small file in `$RUNNER_TEMP` named after the run, the job
    and the step. Without those variables, or when the file cannot be used safely, each
    process counts for itself."""

    def __init__(self, limit: int = MAX_ANNOTATIONS, path: Path | None = None) -> None:
        self.limit = limit
        self.path = path
        self._used: dict[str, int] = {}

    @classmethod
    def for_step(cls, environ: Mapping[str, str], limit: int = MAX_ANNOTATIONS) -> Budget:
        temp = environ.get("RUNNER_TEMP", "")
        step = [environ.get(name, "") for name in _STEP]
        run_id, _attempt, job, action = step
        if sys.platform == "win32" or not (temp and run_id and job and action):
            return cls(limit)
        import hashlib

        # Hashed: the variables name the file without any of their text reaching the path.
        key = hashlib.sha256("\0".join(step).encode("utf-8", "replace")).hexdigest()[:32]
        return cls(limit, Path(temp) / f"zeroclaw-eval-annotations-{key}.json")

    def take(self, level: Level, wanted: int) -> int:
        """Reserve up to `wanted` annotations of `level`; how many were granted."""
        if wanted <= 0:
            return 0
        if self.path is not None:
            granted = self._take_shared(level, wanted)
            if granted is not None:
                return granted
        used = self._used.get(level, 0)
        granted = max(0, min(wanted, self.limit - used))
        self._used[level] = used + granted
        return granted

    def _take_shared(self, level: Level, wanted: int) -> int | None:
        import fcntl
        import json
        import stat

        assert self.path is not None
        # No symlink is followed and nothing but our own regular file is used: a planted
        # link or FIFO in the runner's temp directory cannot redirect or stall the write.
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                return None
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when the descriptor closes
            counts = _counts(os.read(fd, 4096))
            if counts is None:
                return None
            used = counts.get(level, 0)
            granted = max(0, min(wanted, self.limit - used))
            counts[level] = used + granted
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(counts, sort_keys=True).encode("ascii"))
            return granted
        except OSError:
            return None
        finally:
            os.close(fd)


def _counts(data: bytes) -> dict[str, int] | None:
    """The counts the file holds; None when it holds anything else (then each process
    counts for itself), a document nested past what the parser follows included."""
    import msgspec

    from harness.io.files import decode_json

    if not data.strip():
        return {}
    try:
        counts: dict[str, int] = decode_json(data, _COUNTS)
    except msgspec.DecodeError:
        return None
    return counts


def level_of(report: SuiteReport, case: CaseReport) -> Level:
    """`error` when the suite's gate fails on this case, `warning` when it only tracks it
    (a capability suite's failed checks)."""
    from harness.errors import ExitCode
    from harness.verdict.policy import policy_for

    gated = policy_for(report.kind).exit_code([case]) is not ExitCode.PASSED
    return "error" if gated else "warning"


def _runs(case: CaseReport) -> str:
    """` (flaky 17/20)` or ` (0/20 runs)` after a repeated case's id; nothing otherwise."""
    stats = case.repeat
    if stats is None:
        return ""
    if stats.flaky:
        return f" (flaky {stats.passes}/{stats.completed})"
    return f" ({stats.passes}/{stats.completed} runs)"


def _failure_parts(case: CaseReport) -> tuple[str, str]:
    """`failure_parts`, led for a repeated case by how its runs came out against its rule
    and the run that failed first (a run error already says how many runs completed)."""
    head, more = case.failure_parts()
    stats = case.repeat
    if stats is None or case.error is not None:
        return head, more
    rule = "every run" if stats.min_pass_rate is None else f"≥ {stats.min_pass_rate * 100:g}%"
    first = next((r.run for r in stats.runs if not r.passed), None)
    lead = "flaky: " if case.passed else ""
    runs = f"{lead}{stats.passes}/{stats.completed} runs passed (needs {rule})"
    return (f"{runs}; run {first}: {head}" if first is not None else runs), more


def case_command(
    report: SuiteReport, case: CaseReport, level: Level, shared: Sequence[str] = ()
) -> str:
    """The case's annotation; `shared`: the other cases whose request snapshot changed
    as this one's did, annotated with it (named in its title and message)."""
    props = [f"file={escape_property(clean(case.fixture))}"]
    if case.line is not None:
        props.append(f"line={case.line}")
    others = f" and {len(shared)} other case(s)" if shared else ""
    title = f"{tag(report.agent)}: {clean(case.id)}{_runs(case)}{others}"
    props.append(f"title={escape_property(title)}")
    head, more = _failure_parts(case)
    if shared:
        named = ", ".join(clean(case_id) for case_id in shared[:MAX_NAMED])
        named += f" and {len(shared) - MAX_NAMED} more" if len(shared) > MAX_NAMED else ""
        head = f"{head} (the same request snapshot change in {len(shared)} other case(s): {named})"
    message = brief((head, more), MAX_MESSAGE, fold=False)
    return f"::{level} {','.join(props)}::{escape_data(message)}"


def _grouped(ranked: list[CaseReport]) -> tuple[list[CaseReport], dict[str, list[str]]]:
    """The cases to annotate: one per request snapshot change many cases share (its first),
    not the others whose only failures are changes an annotated case shows; and, by the
    annotated case's id, the others it stands for."""
    from harness.snapshots.groups import Changes

    changes = Changes()
    kept: list[CaseReport] = []
    covered: dict[str, str] = {}  # a case left out -> the case annotated for it
    for case in ranked:
        folded = changes.fold(case)
        failing = [g for g in case.grades if not g.passed]
        if case.error is None and failing and all(g.detail in folded for g in failing):
            covered[case.id] = next(
                ids[0] for ids in changes.cases.values() if case.id in ids and ids[0] != case.id
            )
        else:
            kept.append(case)
    shared: dict[str, list[str]] = {}
    for case_id, first in covered.items():
        shared.setdefault(first, []).append(case_id)
    return kept, shared


def workflow_commands(report: SuiteReport, budget: Budget | None = None) -> list[str]:
    """An annotation per failing case, worst first, as many as the step's budget allows,
    and a notice saying how many were left out; a notice saying how many cases were not
    run; then a notice per flaky case that passed, as the budget allows."""
    budget = budget if budget is not None else Budget()
    # A case never started has no line or failure of its own: the notice below counts it.
    ranked = [case for case in report.worst_first() if case.not_run is None]
    ranked, shared = _grouped(ranked)
    levels = [level_of(report, case) for case in ranked]
    granted = {level: budget.take(level, levels.count(level)) for level in ("error", "warning")}
    commands: list[str] = []
    left_out = 0
    for case, level in zip(ranked, levels, strict=True):
        if granted[level] > 0:
            granted[level] -= 1
            commands.append(case_command(report, case, level, shared.get(case.id, ())))
        else:
            left_out += 1
    if left_out:
        commands += _notice(
            budget,
            report.agent,
            f"{left_out} more failing case(s) not annotated (GitHub shows {budget.limit} "
            "annotations of each level per step); see the job summary or the JUnit report",
        )
    return (
        _partial_notice(report, budget)
        + commands
        + _not_run_notice(report, budget)
        + _unused_snapshots(report, budget)
        + _flaky_notices(report, budget)
    )


def _unused_snapshots(report: SuiteReport, budget: Budget) -> list[str]:
    """One annotation for the snapshots no case uses: a warning, or an error when they
    fail the gate."""
    unused = report.unused_snapshots
    if unused is None:
        return []
    level: Level = "error" if unused.fails and not unused.removed else "warning"
    if not budget.take(level, 1):
        return []
    head, *files = unused.lines()
    named = ", ".join(clean(f.strip()) for f in files[:MAX_NAMED])
    more = f" and {len(files) - MAX_NAMED} more" if len(files) > MAX_NAMED else ""
    message = clip(f"{clean(head)} {named}{more}", MAX_MESSAGE)
    title = escape_property(tag(report.agent))
    return [f"::{level} title={title}::{escape_data(message)}"]


def _partial_notice(report: SuiteReport, budget: Budget) -> list[str]:
    if report.partial is None:
        return []
    return _notice(
        budget,
        report.agent,
        f"partial run ({clean(report.partial)}): this gate is not the suite's",
    )


def _not_run_notice(report: SuiteReport, budget: Budget) -> list[str]:
    unrun = [case.not_run for case in report.cases if case.not_run is not None]
    if not unrun:
        return []
    return _notice(
        budget,
        report.agent,
        f"{len(unrun)} case(s) not run: {clean(unrun[0])}; the gate fails on them; "
        "see the job summary or the JUnit report",
    )


def _flaky_notices(report: SuiteReport, budget: Budget) -> list[str]:
    # Last: they only inform, so they never take a place the notices above need.
    flaky = [case for case in report.cases if case.passed and case.flaky]
    granted = budget.take("notice", len(flaky))
    return [case_command(report, case, "notice") for case in flaky[:granted]]


def _notice(budget: Budget, agent: str | None, message: str) -> list[str]:
    if not budget.take("notice", 1):
        return []
    return [f"::notice title={escape_property(tag(agent))}::{escape_data(message)}"]


def problem_command(problem: Problem, agent: str | None = None) -> str:
    """An `::error` command for one admission problem, at its field's line when admission
    found it (for a JSON syntax error, the line of the error)."""
    props = [f"file={escape_property(clean(problem.file))}"]
    if problem.line is not None:
        props.append(f"line={problem.line}")
    props.append(f"title={escape_property(f'{tag(agent)}: fixture refused')}")
    message = clip(clean_lines(f"{problem.field}: {problem.message}"), MAX_MESSAGE)
    return f"::error {','.join(props)}::{escape_data(message)}"


def problem_commands(
    problems: Sequence[Problem], agent: str | None = None, budget: Budget | None = None
) -> list[str]:
    budget = budget if budget is not None else Budget()
    granted = budget.take("error", len(problems))
    commands = [problem_command(p, agent) for p in problems[:granted]]
    if len(problems) > granted:
        commands += _notice(
            budget,
            agent,
            f"{len(problems) - granted} more admission problem(s) not annotated; "
            "see the job summary or the log",
        )
    return commands


class AnnotationsReporter(Reporter):
    order = CI
    whole_cases = False  # the failing and flaky cases it annotates are kept whole

    def __init__(
        self,
        stream: TextIO,
        problems_stream: TextIO,
        budget: Budget | None = None,
        agent: str | None = None,
    ) -> None:
        self._stream = stream
        self._problems_stream = problems_stream
        self._budget = budget if budget is not None else Budget()
        self._agent = agent  # as given on the command line; the report names the resolved one

    def finish(self, report: SuiteReport) -> None:
        for command in workflow_commands(report, self._budget):
            print(command, file=self._stream)
        self._stream.flush()

    def refused(self, problems: list[Problem]) -> None:
        for command in problem_commands(problems, self._agent, self._budget):
            print(command, file=self._problems_stream)
        self._problems_stream.flush()


class _Spec:
    name = "github"
    options = (ANNOTATIONS,)
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        if not output.github:
            return []
        # Workflow commands are read from stdout and stderr alike; stderr keeps a JSON or
        # JUnit document on stdout clean.
        stream = output.out() if output.stdout_format == "table" else output.err()
        agent = output.values.get("agent")
        return [
            AnnotationsReporter(
                stream,
                output.err(),
                Budget.for_step(output.environ),
                agent if isinstance(agent, str) and agent else None,
            )
        ]


REPORTER = _Spec()
