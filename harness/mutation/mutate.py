"""`zeroclaw eval mutate`: run every mutant of every case through the real agent, and say
which the suite kills. A boundary mutant that survives is a broken loop the gate would
certify.

Its table and JSON report quote the fixtures (ids, file names, call ids, argument keys,
exemptions' reasons), so both go through `harness.io.text`, the JSON report through the
run's JSON report's encoding (`harness.reporters.json_report`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from harness.agents.case_context import setup_for
from harness.agents.protocol import AgentContext, FrameworkAdapter
from harness.agents.registry import resolve_within
from harness.errors import ExitCode
from harness.fixtures.suite import Case, display_path, load_suite
from harness.io.files import InputError
from harness.io.json_paths import line_of
from harness.io.text import clean, clip, encoded_json, inert
from harness.mutation.mutants import Family, Mutants, mutants_of
from harness.pipeline import RunOptions
from harness.reporters.json_report import inert_json
from harness.run.runner import CasePlan, replay_backend
from harness.run.watchdog import run_watched
from harness.snapshots.store import SnapshotPlan, read_snapshot
from harness.verdict.reports import CaseReport

SCHEMA = "zeroclaw-eval/mutation/v1"
REASON_WIDTH = 120  # characters of a reason not to generate shown in the table


class MutantResult(msgspec.Struct, frozen=True):
    family: Family
    name: str
    description: str
    killed: bool
    line: int
    # What killed it: the first failing check or the run error ("" for a survivor); for a
    # judge mutant its failing judge grade, or why it was not judged.
    by: str = ""
    # The mutant's answer got a verdict from the judge wherever one decides it (recorded,
    # or asked with --record-judge); one that did not is neither killed nor a survivor.
    judged: bool = True


class SkippedMutant(msgspec.Struct, frozen=True):
    family: Family
    name: str
    reason: str


class CaseMutation(msgspec.Struct, frozen=True):
    id: str
    fixture: str
    baseline_passed: bool
    mutants: list[MutantResult]
    not_generated: list[SkippedMutant]

    def killed(self, family: Family) -> tuple[int, int]:
        of = [m for m in self.mutants if m.family == family and m.judged]
        return sum(m.killed for m in of), len(of)


class Score(msgspec.Struct, frozen=True):
    killed: int
    generated: int

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.generated if self.generated else 100.0


class MutationReport(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = SCHEMA
    suite: str
    agent: str
    cases: list[CaseMutation]
    boundary: Score
    script: Score
    runs: int
    duration_ms: float
    min_score: float
    min_script_score: float
    exit_code: int
    # Judge mutants (bad final answers) the cases' rubrics failed, of those judged; never
    # part of the exit code. `not_judged`: mutants of any family whose answer no judge
    # verdict was had for (counted in no score).
    judge: Score = Score(0, 0)
    not_judged: int = 0


@dataclass(frozen=True)
class Thresholds:
    """Scores below these fail the run (percent of generated mutants killed)."""

    boundary: float = 100.0
    script: float = 0.0


def mutate(options: RunOptions, thresholds: Thresholds = Thresholds()) -> MutationReport:
    """Admit the suite, check each case passes unmutated, then run all its mutants."""
    adapter, surface = resolve_within(options.agent, options.case_timeout)
    setup = setup_for(adapter, options.context, options.session, options.case_timeout)
    cases = load_suite(options.suite, "replay", surface)
    root = options.project_root
    # A framework adapter runs the user's tools, every agent's of the graph, through the
    # registry's `recorded`, which a dispatch fault reaches as it reaches `dispatch`.
    faultable = bool(adapter.tools()) or isinstance(adapter, FrameworkAdapter)
    plan = CasePlan(
        adapter,
        "replay",
        replay_backend,
        None,
        options.case_timeout,
        root,
        surface.tools,
        case_wall_clock=options.case_wall_clock,
        max_model_calls_per_turn=options.max_model_calls_per_turn,
        max_tool_calls_per_step=options.max_tool_calls_per_step,
        setup=setup,
        judge=options.judge,
        # A mutant of what the agent shows its model is killed by the case's snapshot.
        snapshots=None if options.snapshots == "off" else SnapshotPlan(adapter.name),
    )
    start = time.perf_counter()
    baseline = {r.id: r.passed for r in run_watched(cases, plan, None)}
    # The adapter says where its graph hands off, when its framework has handoffs.
    graph = getattr(adapter, "agent_handoffs", None)
    handoffs: dict[str, dict[str, str]] = graph() if callable(graph) else {}
    declares = getattr(adapter, "declares_instructions", None)
    instructed = bool(declares()) if callable(declares) else False
    planned = {
        c.id: mutants_of(c, faultable, handoffs, _snapshot(plan.snapshots, c), instructed)
        for c in cases
    }
    runnable = [m for c in cases if baseline[c.id] for m in planned[c.id].generated]
    faults = {m.case.id: m.prepare for m in runnable if m.prepare is not None}

    def prepare(case: Case, context: AgentContext) -> None:
        fault = faults.get(case.id)
        if fault is not None:
            fault(context)

    mutant_plan = dataclasses.replace(plan, prepare=prepare)
    outcomes = {r.id: r for r in run_watched([m.case for m in runnable], mutant_plan, None)}
    results = [
        _case_result(case, root, baseline[case.id], planned[case.id], outcomes) for case in cases
    ]
    boundary, script = _score(results, "boundary"), _score(results, "script")
    failed = (
        not all(baseline.values())
        or boundary.percent < thresholds.boundary
        or script.percent < thresholds.script
    )
    return MutationReport(
        suite=display_path(options.suite, root),
        agent=adapter.name,
        cases=results,
        boundary=boundary,
        script=script,
        runs=len(cases) + len(runnable),
        duration_ms=(time.perf_counter() - start) * 1e3,
        min_score=thresholds.boundary,
        min_script_score=thresholds.script,
        exit_code=int(ExitCode.FAILED if failed else ExitCode.PASSED),
        judge=_score(results, "judge"),
        not_judged=sum(not m.judged for c in results for m in c.mutants),
    )


def _snapshot(plan: SnapshotPlan | None, case: Case) -> str | None:
    """The case's request snapshot for the agent; None: none (or none readable, which
    the case's unmutated run says as its failure)."""
    if plan is None:
        return None
    try:
        return read_snapshot(plan.path_of(case.path))
    except (OSError, InputError, UnicodeDecodeError):
        return None


def _case_result(
    case: Case,
    root: Path,
    baseline: bool,
    planned: Mutants,
    outcomes: Mapping[str, CaseReport],
) -> CaseMutation:
    results = []
    for mutant in planned.generated if baseline else ():
        report = outcomes[mutant.case.id]
        killed = not report.passed
        by = report.first_failure() if killed else ""
        judged = True
        if mutant.family == "judge":
            killed, by, judged = _judge_outcome(report)
        elif killed and _killed_by_no_verdict(report):
            # Only a judge check without a verdict failed it: failing closed is right for a
            # run, but here it would claim a kill nothing showed.
            killed, by, judged = False, f"not judged: {by}", False
        line = line_of(case.text, mutant.field)
        results.append(
            MutantResult(mutant.family, mutant.name, mutant.description, killed, line, by, judged)
        )
    skipped = [SkippedMutant(s.family, s.name, s.reason) for s in planned.skipped]
    return CaseMutation(case.id, display_path(case.path, root), baseline, results, skipped)


def _judge_outcome(report: CaseReport) -> tuple[bool, str, bool]:
    """(caught, by what, judged) of a judge mutant: caught when a rubric's verdict failed
    the bad answer. Without a verdict (the reply was not recorded, the judge failed, the
    run errored) it was not judged: failing closed would count it caught, which nothing
    showed."""
    grades = [g for g in report.grades if g.judge is not None]
    if report.error is not None or not grades:
        return False, f"not judged: {report.error or 'no judge grade'}", False
    unjudged = next((g for g in grades if g.judge is not None and g.judge.score is None), None)
    if unjudged is not None and unjudged.judge is not None:
        return False, f"not judged: {unjudged.judge.reason}", False
    failing = next((g for g in grades if not g.passed), None)
    if failing is None:
        return False, "", True
    return True, f"{failing.check}: {failing.detail}", True


def _killed_by_no_verdict(report: CaseReport) -> bool:
    failing = report.failing_grades
    return (
        report.error is None
        and bool(failing)
        and all(g.judge is not None and g.judge.score is None for g in failing)
    )


def _score(cases: list[CaseMutation], family: Family) -> Score:
    pairs = [c.killed(family) for c in cases]
    return Score(sum(k for k, _ in pairs), sum(n for _, n in pairs))


def render_json(report: MutationReport) -> bytes:
    """The report as JSON, the fixtures' text kept exactly but escaped where a terminal or
    a CI runner would act on it (`text.json_safe`); a lone surrogate (a fixture may escape
    one, in a reason, say) becomes U+FFFD: as the run's JSON report is written."""
    return inert_json(msgspec.json.format(encoded_json(report), indent=2)) + b"\n"


def render_table(report: MutationReport) -> str:
    """Each case's scores, what was not generated (one block, by reason), every survivor,
    then the suite's scores. Fixture text is cleaned, and no line is a workflow command."""
    lines = ["", *(_case_line(case) for case in report.cases)]
    lines += _not_generated(report.cases)
    lines += _survivors(report.cases)
    lines += _judge_lines(report)
    b, s = report.boundary, report.script
    lines += [
        "",
        f"  mutation score: boundary {b.killed}/{b.generated} ({b.percent:.1f}%, minimum "
        f"{report.min_score:g}%), script {s.killed}/{s.generated} ({s.percent:.1f}%, minimum "
        f"{report.min_script_score:g}%)  [{report.runs} runs, agent {clean(report.agent)}: "
        f"exit {report.exit_code}]",
        "",
    ]
    return inert("\n".join(lines))


def _case_line(case: CaseMutation) -> str:
    head = f"{clean(case.id)} ({clean(case.fixture)})"
    if not case.baseline_passed:
        return f"  ✗ {head}  fails unmutated: no mutant was run"
    kb, nb = case.killed("boundary")
    ks, ns = case.killed("script")
    mark = "✓" if kb == nb else "✗"
    line = f"  {mark} {head}  boundary {kb}/{nb}, script {ks}/{ns} killed"
    kj, nj = case.killed("judge")
    unjudged = sum(not m.judged for m in case.mutants)
    if nj or unjudged:
        line += f", judge {kj}/{nj} caught" + (f" ({unjudged} not judged)" if unjudged else "")
    return line


def _not_generated(cases: list[CaseMutation]) -> list[str]:
    """One line per reason: how many mutants it kept from being generated, in how many
    cases, and which; the JSON report says which case each was."""
    by_reason: dict[str, list[tuple[str, str]]] = {}
    for case in cases:
        for skipped in case.not_generated:
            by_reason.setdefault(skipped.reason, []).append((case.id, skipped.name))
    if not by_reason:
        return []
    total = sum(len(of) for of in by_reason.values())
    lines = ["", f"  not generated: {total} mutant(s), by reason (--json-report names the cases)"]
    width, case_width = len(str(max(map(len, by_reason.values())))), len(str(len(cases)))
    for reason, of in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        names = ", ".join(dict.fromkeys(name for _, name in of))
        in_cases = len({case_id for case_id, _ in of})
        # A reason may quote the fixture (an exemption's): one clean line, clipped.
        said = clip(clean(reason), REASON_WIDTH)
        count = f"{len(of):>{width}} in {in_cases:>{case_width}} case(s)"
        lines.append(f"    {count}  {said}: {names}")
    return lines


def _judge_lines(report: MutationReport) -> list[str]:
    """The rubrics' catch: bad answers judged and failed, and those no verdict was had for
    (never counted either way)."""
    j = report.judge
    if not j.generated and not report.not_judged:
        return []
    lines = ["", f"  judge mutants: {j.killed}/{j.generated} bad answer(s) caught by the rubrics"]
    if report.not_judged:
        lines.append(
            f"    {report.not_judged} mutant(s) not judged (no judge verdict for their answer: "
            "record the judge's replies with --record-judge); neither killed nor survived"
        )
    return lines


def _survivors(cases: list[CaseMutation]) -> list[str]:
    found = [(case, m) for case in cases for m in case.mutants if not m.killed and m.judged]
    if not found:
        return []
    lines = ["", f"  survived: {len(found)} mutant(s) no check of their case noticed"]
    for case, m in found:
        lines.append(
            f"    {m.family} {m.name}  {clean(case.id)} ({clean(case.fixture)}:{m.line}): "
            f"{clean(m.description)}"
        )
    return lines
