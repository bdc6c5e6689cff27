"""JUnit XML: `--junit-xml PATH`, `--format junit`.

Each agent's results are their own: the agent is part of the suite name, the classname and
the testcase's name (`<case id>[<agent>]`), so the files two agents write for one suite
never merge into one set of results, nor share an annotation title. A
`<failure>`'s message is the first failing check with what was observed, an `<error>`'s the
first line of the run error, both clipped: annotations built from JUnit show the message
alone. A case the run stopped before (`--maxfail`) is `<skipped>`, counted in `skipped`.

A repeated case is one `<testcase>`, its runs in the Surefire elements JUnit consumers read
(Jenkins, GitLab, junitparser, the GitHub JUnit actions): a case that passed although some
runs failed has no `<failure>`, and one `<flakyFailure>` per failing run, so it counts as
passed and shows as flaky; a case that failed has its `<failure>` (its first failing run)
and a `<rerunFailure>` per other failing run (`<rerunError>` / `<flakyError>` for runs that
errored). Its numbers (runs, pass rate, interval, pass^k, …) are `name=value` lines in its
`<system-out>`: neither the Jenkins xunit schema nor Surefire's allows `<properties>` in a
`<testcase>`, and the xunit plugin skips a whole file that does not validate. With repeated
or clustered cases the suite's pass rate and interval are `<properties>` of the
`<testsuite>`, where both schemas allow them.

A request snapshot change keeps its diff in every failing testcase it touches (consumers
show a testcase on its own), and is said once, with its cases, in the `<testsuite>`'s
`<system-out>`. The token and cost gates' overruns fail: a case over its gate is a
`<failure type="budget">` with the figures (added to the failure of a case failing anyway),
the suite's own a failing testcase `suite-budget[<agent>]` (consumers read testcases, not
properties) and a `zeroclaw.overrun.<figure>` property.

The document is built with the standard library's ElementTree (which escapes markup) and
indented. Text is cleaned first (`text.clean`, which also makes it legal XML 1.0), and no
line of the document is a workflow command (`text.inert_markup`), as it may be printed on
stdout.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from harness.io.text import brief, clean, clean_lines, clip, headline, inert_markup, one_line
from harness.reporters.base import FILES, Output, Reporter, documents
from harness.reporters.flags import GATED, JUNIT_FORMAT
from harness.reporters.flags import JUNIT_XML as OPTION

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from harness.io.atomic import Part
    from harness.verdict.comparison import Overrun
    from harness.verdict.kept import Passes
    from harness.verdict.reports import CaseReport, RepeatStats, RunReceipt, SuiteReport


MESSAGE_LIMIT = 500  # characters of a `message` attribute; the body has everything
MAX_NAMED = 50  # cases the suite's output names per snapshot change

# Surefire's order of a testcase's children (its schema is a sequence; Jenkins' a choice,
# which any order satisfies): written in this order, the document is valid under both.
_ORDER = (
    *("failure", "rerunFailure", "flakyFailure", "skipped"),
    *("error", "rerunError", "flakyError", "system-out"),
)


def suite_label(report: SuiteReport) -> str:
    """The suite and the agent that ran it, as consumers keep them apart:
    `evals/regression[openai-agents]`."""
    return f"{clean(report.suite)}[{clean(report.agent)}]"


def case_name(report: SuiteReport, case: CaseReport) -> str:
    """A testcase's name: the case and the agent that ran it, `greet[openai-agents]`.
    mikepenz/action-junit-report titles an annotation, and the check's summary row, with
    the file and the name alone (`evals/regression/greet.json.greet[openai-agents]`): with
    the case id only, the two agents' results read as one."""
    return f"{clean(case.id)}[{clean(report.agent)}]"


def _seconds(milliseconds: float) -> str:
    # Three decimals: Surefire's time pattern allows no more.
    return f"{max(milliseconds, 0.0) / 1000.0:.3f}"


def _new(
    like: Element, tag: str, attrs: dict[str, str] | None = None, text: str | None = None
) -> Element:
    """An element not yet placed; `makeelement` rather than `SubElement`, so that
    ElementTree is imported only when a report is rendered (`--help` imports this module)."""
    element = like.makeelement(tag, attrs or {})
    element.text = text
    return element


def _child(
    parent: Element, tag: str, attrs: dict[str, str] | None = None, text: str | None = None
) -> Element:
    element = _new(parent, tag, attrs, text)
    parent.append(element)
    return element


def render_junit(report: SuiteReport) -> bytes:
    # Cases' times summed, as consumers that recount a suite (junitparser) do.
    time = sum(case.duration_ms for case in report.cases)
    facts = any(case.repeat is not None or case.cluster is not None for case in report.cases)
    return _document(report, time, facts, report.cases)


def _document(
    report: SuiteReport, time: float, facts: bool, cases: Sequence[CaseReport] | None
) -> bytes:
    """The document with `cases`, or (None) with `SPOOLED` standing where they go."""
    from xml.etree.ElementTree import Element, indent, tostring

    label = suite_label(report)
    totals = report.totals
    over = _overruns(report)
    suite_over = over.pop(None, [])
    # A case over its token or cost gate fails it: a passing one gets a `<failure>`, and
    # the suite's own overrun is a testcase of its own (consumers read testcases only).
    grown = sum(1 for c in report.cases if c.id in over and c.passed and c.not_run is None)
    counts = {
        "tests": str(totals.cases + bool(suite_over)),
        "failures": str(totals.failed + grown + bool(suite_over)),
        "errors": str(totals.errors),
    }
    seconds = _seconds(time)
    root = Element("testsuites", {**counts, "time": seconds})
    suite = _child(
        root,
        "testsuite",
        {
            "name": f"zeroclaw-eval:{label}",
            **counts,
            "skipped": str(totals.not_run),
            "time": seconds,
        },
    )
    if report.partial is not None or suite_over or facts:
        _suite_properties(suite, report, suite_over)  # first: Surefire wants them first
    if cases is None:
        _child(suite, SPOOLED)
    for case in cases or ():
        _test_case(suite, label, case_name(report, case), case, over.get(case.id, []))
    if suite_over:
        _suite_budget(suite, label, report, suite_over)
    grouped = snapshot_summary(report.cases)
    if grouped is not None:  # after the testcases, where Surefire's schema has it
        _child(suite, "system-out", text=grouped)
    indent(root, space="\t")
    xml = '<?xml version="1.0" encoding="utf-8"?>\n' + tostring(root, encoding="unicode") + "\n"
    return inert_markup(xml).encode("utf-8")


# The element standing for the spooled testcases in the document rendered without them: a
# name no escaped text can hold (its `<` would be `&lt;`).
SPOOLED = "zeroclaw-spooled-testcases"
_BETWEEN = "\n\t\t"  # the indentation between two testcases


def _testcase(suite: str, agent: str, case: CaseReport) -> bytes:
    """`case`'s testcase, serialised and indented as the whole document has it."""
    label, name = f"{clean(suite)}[{clean(agent)}]", f"{clean(case.id)}[{clean(agent)}]"
    bare = _bare_testcase(label, name, case)
    if bare is not None:
        return bare
    from xml.etree.ElementTree import Element, indent, tostring

    root = Element("testsuites")
    _test_case(_child(root, "testsuite"), label, name, case, [])
    indent(root, space="\t")  # the testcase at the depth it has in the document
    testcase = root[0][0]
    testcase.tail = None  # the separator between testcases stands for it
    return inert_markup(tostring(testcase, encoding="unicode")).encode("utf-8")


def _bare_testcase(label: str, name: str, case: CaseReport) -> bytes | None:
    """The testcase of a pass of one run, every check deciding it (nothing under it), as
    ElementTree writes it, by its own escape, without a tree for each; else None."""
    escape, bare = _escape(), case.passed and case.error is None and case.not_run is None
    if escape is None or not bare or case.repeat or case.cluster is not None:
        return None
    if not all(g.gates for g in case.grades):
        return None
    said = "".join(f' {k}="{escape(v)}"' for k, v in _attributes(label, name, case).items())
    return inert_markup(f"<testcase{said} />").encode("utf-8")


@functools.cache  # looked up once, not at every case (`--help` imports this module)
def _escape() -> Callable[[str], str] | None:
    return getattr(importlib.import_module("xml.etree.ElementTree"), "_escape_attrib", None)


@dataclass(frozen=True)
class JunitPart:
    """A plain pass's testcase and time, rendered by its worker process for the run's
    suite and agent (`harness.run.pool_worker.Prerender`): used only for a pass that comes
    without its report (`Passes`); a case that comes with its report is rendered here."""

    suite: str
    agent: str
    # Of no use to a case that comes with its report: rendered only when passes come alone.
    only_for_passes = True

    def render(self, case: CaseReport) -> tuple[bytes, float] | None:
        return (_testcase(self.suite, self.agent, case), case.duration_ms) if case.plain else None

    @staticmethod
    def hold(case: CaseReport, parts: object) -> None:
        pass  # a case with its report is rendered here

    @staticmethod
    def drop(case: CaseReport) -> None:
        pass

    @staticmethod
    def release() -> None:
        pass


class JunitCases:
    """The JUnit document written as its cases are kept (`harness.reporters.streamed`):
    each testcase serialised and indented as the whole document has it."""

    def __init__(self, directory: Path | None = None) -> None:
        from harness.reporters.streamed import SpooledList

        self._cases = SpooledList(_BETWEEN.encode(), directory)
        self._named: tuple[str, str] | None = None
        self._time = 0.0
        self._facts = False
        self.worker_parts: JunitPart | None = None  # once the suite and agent are named

    def named(self, suite: str, agent: str) -> None:
        self._named = (suite, agent)
        self.worker_parts = JunitPart(suite, agent)

    def add(self, case: CaseReport) -> None:
        assert self._named is not None, "a run names its suite and agent before any case"
        self._cases.append(_testcase(*self._named, case))
        self._time += case.duration_ms
        self._facts = self._facts or case.repeat is not None or case.cluster is not None

    def add_passes(self, passes: Passes) -> None:
        made = cast("list[tuple[bytes, float]]", passes.parts(self.worker_parts))
        self._cases.extend([part for part, _ in made])
        for _, duration_ms in made:  # summed in suite order, as `render_junit` sums them
            self._time += duration_ms

    def parts(self, report: SuiteReport) -> Sequence[Part]:
        # A case's testcase says its token and cost gates' overruns, known only once the
        # run is compared with its baseline (which keeps every case whole): rendered whole.
        named = self._named == (report.suite, report.agent)
        if not named or not self._cases.count or _overruns(report):
            return (self.whole(report),)
        head, tail = _document(report, self._time, self._facts, None).split(
            f"<{SPOOLED} />".encode(), 1
        )
        return (head, self._cases.spool, tail)

    def whole(self, report: SuiteReport) -> bytes:
        return render_junit(report)

    def close(self) -> None:
        self._cases.spool.close()


def _overruns(report: SuiteReport) -> dict[str | None, list[Overrun]]:
    """The token and cost gates' overruns by case id (None: the suite's own)."""
    found: dict[str | None, list[Overrun]] = {}
    for overrun in [] if report.baseline is None else report.baseline.overruns:
        found.setdefault(overrun.case, []).append(overrun)
    return found


def _suite_budget(suite: Element, label: str, report: SuiteReport, over: list[Overrun]) -> None:
    """The suite's overrun (its sum over the cases compared) as a failing testcase."""
    said = [f"over its gate, failing it: {clean(o.describe())}" for o in over]
    testcase = _child(
        suite, "testcase", {"name": f"suite-budget[{clean(report.agent)}]", "classname": label}
    )
    _child(
        testcase,
        "failure",
        {"type": "budget", "message": clip("; ".join(said), MESSAGE_LIMIT)},
        "\n".join(said),
    )


def snapshot_summary(cases: Iterable[CaseReport]) -> str | None:
    """The run's request snapshot changes, each said once with the cases it touches (each
    failing testcase keeps its own diff: consumers show a testcase on its own); None when
    no snapshot changed."""
    from harness.snapshots.groups import change_key

    changes: dict[str, tuple[str, list[str]]] = {}
    for case in cases:
        for grade in case.grades:
            key = change_key(grade)
            if key is not None:
                changes.setdefault(key, (grade.detail.partition("\n")[2], []))[1].append(case.id)
    if not changes:
        return None
    total = sum(len(ids) for _, ids in changes.values())
    lines = [
        f"request snapshots: {len(changes)} distinct change(s) across {total} case(s), "
        "each said once here (every failing testcase carries its own diff)"
    ]
    for number, (diff, ids) in enumerate(changes.values(), 1):
        named = ", ".join(clean(i) for i in ids[:MAX_NAMED])
        named += f" and {len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else ""
        lines += ["", f"change {number}, {len(ids)} case(s): {named}", clean_lines(diff)]
    return "\n".join(lines)


def _suite_properties(suite: Element, report: SuiteReport, over: list[Overrun]) -> None:
    stats = report.statistics
    interval = "unavailable"
    if stats.low is not None and stats.high is not None:
        interval = f"{stats.low:.3f}-{stats.high:.3f}"
    values = {
        "zeroclaw.pass_rate": f"{stats.pass_rate:.3f}",
        "zeroclaw.interval": interval,
        "zeroclaw.interval_note": clean(stats.note),
        "zeroclaw.cases": str(stats.cases),
        "zeroclaw.units": str(stats.units),
        "zeroclaw.repeated": str(stats.repeated),
        "zeroclaw.flaky": str(stats.flaky),
        "zeroclaw.not_run": str(report.totals.not_run),
    }
    if report.partial is not None:  # a partial run's gate is never the suite's
        values["zeroclaw.partial"] = clean(report.partial)
    for overrun in over:  # read by consumers that show properties; the testcase says it too
        values[f"zeroclaw.overrun.{overrun.figure}"] = clean(overrun.describe())
    properties = _child(suite, "properties")
    for name, value in values.items():
        _child(properties, "property", {"name": name, "value": value})


def _test_case(
    suite: Element, classname: str, name: str, case: CaseReport, over: list[Overrun]
) -> None:
    testcase = _child(suite, "testcase", _attributes(classname, name, case))
    if case.not_run is not None:
        message = clip(f"not run: {one_line(case.not_run)}", MESSAGE_LIMIT)
        _child(testcase, "skipped", {"message": message})
        return
    children: list[Element] = []
    final = _final_result(testcase, case, over)
    if final is not None:
        children.append(final)
    if case.repeat is not None:
        children += _other_runs(testcase, case, case.repeat)
    judged = case.diagnostic_lines() if case.passed else []  # a failure's body has them
    if case.repeat is not None or case.cluster is not None or judged:
        facts = [_facts(case)] if case.repeat is not None or case.cluster is not None else []
        text = "\n".join(facts + [clean_lines(line) for line in judged])
        children.append(_new(testcase, "system-out", text=text))
    # In Surefire's order; the sort is stable, so runs stay in run order.
    testcase.extend(sorted(children, key=lambda element: _ORDER.index(element.tag)))


def _attributes(classname: str, name: str, case: CaseReport) -> dict[str, str]:
    attrs = {"name": name, "classname": classname, "time": _seconds(case.duration_ms)}
    attrs["file"] = clean(case.fixture)
    if case.line is not None:
        attrs["line"] = str(case.line)
    return attrs


def _final_result(testcase: Element, case: CaseReport, over: list[Overrun]) -> Element | None:
    """The case's `<error>` or `<failure>` (a token or cost overrun is a failure, its
    figures in the message); None when it passed."""
    grown = [f"over its gate, failing it: {clean(o.describe())}" for o in over]
    if case.passed and grown and case.error is None:
        message = clip("; ".join(grown), MESSAGE_LIMIT)
        return _new(testcase, "failure", {"type": "budget", "message": message}, "\n".join(grown))
    if case.error is not None:
        message = headline(case.error, MESSAGE_LIMIT) or "run error"
        frames = [f"  {clean(frame.shown())}" for frame in case.error_frames or ()]
        raised = "\n\nraised at (innermost last):\n" + "\n".join(frames) if frames else ""
        return _new(
            testcase,
            "error",
            {"type": "error", "message": message},
            clean_lines(case.error) + raised,
        )
    if case.passed:
        return None
    body = "\n".join(case.failure_lines()) or "the case produced no grades"
    head, more = case.failure_parts()
    stats = case.repeat
    if stats is not None:
        run = _described_run(case, stats)
        where = f"run {run.run}" if run is not None else "the runs"
        head = f"{_verdict(stats)}; {where}: {head}"
        body = f"{where} of {stats.requested}:\n{body}"
    if grown:
        head = f"{head}; and {'; '.join(grown)}"
        body = "\n".join([body, *grown])
    message = brief((head, more), MESSAGE_LIMIT)
    return _new(testcase, "failure", {"type": "failure", "message": message}, clean_lines(body))


def _verdict(stats: RepeatStats) -> str:
    """`17/20 runs passed (needs ≥ 80%)`: how the case's runs came out against its rule."""
    rule = "every run" if stats.min_pass_rate is None else f"≥ {stats.min_pass_rate * 100:g}%"
    return f"{stats.passes}/{stats.completed} runs passed (needs {rule})"


def _described_run(case: CaseReport, stats: RepeatStats) -> RunReceipt | None:
    """The run the case's own `<failure>` or `<error>` stands for: its first run error for
    an errored case, else its first failing run (whose grades the report carries)."""
    if case.error is not None:
        return next((r for r in stats.runs if r.error is not None), None)
    if case.passed:
        return None
    return next((r for r in stats.runs if not r.passed), None)


def _other_runs(testcase: Element, case: CaseReport, stats: RepeatStats) -> list[Element]:
    """A Surefire element for every failing run the case's own result does not stand for:
    `flaky…` when the case passed anyway, `rerun…` when it failed."""
    described = _described_run(case, stats)
    prefix = "flaky" if case.passed else "rerun"
    elements = []
    for run in stats.runs:
        if run.passed or run is described:
            continue
        kind = "Error" if run.error is not None else "Failure"
        where = f"run {run.run} of {stats.requested}"
        if run.error is not None:
            message = f"{where}: run error: {headline(run.error)}"
            trace = clean_lines(run.error)
        else:
            checks = [clean(check) for check in run.failed_checks]
            message = f"{where}: failed {', '.join(checks) or 'without a failing check'}"
            trace = "\n".join(checks) or "the run produced no grades"
        attrs = {"message": clip(message, MESSAGE_LIMIT), "type": kind.lower()}
        element = _new(testcase, prefix + kind, attrs)
        # Surefire requires the stack trace; consumers show it as the run's details.
        _child(element, "stackTrace", text=trace)
        _child(
            element,
            "system-out",
            text=f"{where}: {run.tokens} tokens, {run.model_calls} model call(s), "
            f"{run.duration_ms:.0f} ms",
        )
        elements.append(element)
    return elements


def _facts(case: CaseReport) -> str:
    """A repeated or clustered case's numbers, one `name=value` line each."""
    lines = []
    stats = case.repeat
    if stats is not None:
        lines.append(f"zeroclaw.runs={stats.passes}/{stats.completed}")
        if stats.completed < stats.requested:
            lines.append(f"zeroclaw.runs_requested={stats.requested}")
        if stats.completed:  # no rate rests on no run
            low, high = stats.interval
            lines.append(f"zeroclaw.pass_rate={stats.proportion:.3f}")
            lines.append(f"zeroclaw.interval={low:.3f}-{high:.3f}")
        lines.append(f"zeroclaw.flaky={'true' if stats.flaky else 'false'}")
        if stats.pass_at_k:
            lines.append(f"zeroclaw.pass@1={stats.pass_at_k[0]:.3f}")
        if stats.pass_hat_k:
            lines.append(f"zeroclaw.pass^{len(stats.pass_hat_k)}={stats.pass_hat_k[-1]:.3f}")
        else:
            lines.append("zeroclaw.pass^k=not established (a run errored)")
        if stats.min_pass_rate is not None:
            lines.append(f"zeroclaw.min_pass_rate={stats.min_pass_rate:g}")
        if stats.flips:
            ranked = sorted(stats.flips.items(), key=lambda item: -item[1])  # most first
            flips = ", ".join(f"{clean(check)}={count}" for check, count in ranked)
            lines.append(f"zeroclaw.flips={flips}")
        if stats.note:
            lines.append(f"zeroclaw.note={one_line(stats.note)}")
    if case.cluster is not None:
        lines.append(f"zeroclaw.cluster={clean(case.cluster)}")
    return "\n".join(lines)


class _Spec:
    name, options, stdout_format = GATED["junit"][:3]  # its gate's: said once

    def build(self, output: Output) -> list[Reporter]:
        return documents(output, OPTION, JUNIT_FORMAT, render_junit, FILES, cases=JunitCases)


REPORTER = _Spec()
