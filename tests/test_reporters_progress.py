"""`harness.reporters.progress`: the count of cases done on an interactive stderr, in the
order they finish, with how many failed, were flaky or were not run; only when the table
is not on stdout."""

from __future__ import annotations

import io
import itertools

from conftest import failing_report, passing_report
from test_reporters_github import live_suite, not_run_report, repeated_report

from harness.reporters.base import Output
from harness.reporters.progress import REPORTER, ProgressReporter


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_count_grows_with_what_failed_was_flaky_or_was_not_run() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream)
    cases = [
        passing_report("a"),
        repeated_report("flaky", "PPFPP", min_pass_rate=0.6),
        failing_report("b"),
        not_run_report("later"),
    ]
    reporter.start(len(cases))
    for case in cases:
        reporter.case_done(case)
    reporter.finish(live_suite(*cases))
    shown = stream.getvalue().split("\r")[1:]
    assert shown == [
        "  1/4 cases",
        "  2/4 cases, 1 flaky",
        "  3/4 cases, 1 failed, 1 flaky",
        "  4/4 cases, 1 failed, 1 flaky, 1 not run\n",
    ]
    # Each rewrite is at least as long as the one before: nothing of it is left showing.
    assert all(len(a) <= len(b) for a, b in itertools.pairwise(shown))


def test_only_on_a_terminal_and_never_beside_the_table() -> None:
    assert REPORTER.build(Output({}, "json", io.StringIO(), Tty())) != []
    assert REPORTER.build(Output({}, "json", io.StringIO(), io.StringIO())) == []
    assert REPORTER.build(Output({}, "table", io.StringIO(), Tty())) == []


def test_plain_passes_told_together_count_as_each_told_alone() -> None:
    from harness.verdict.kept import Passes

    alone, together = io.StringIO(), io.StringIO()
    one, batch = ProgressReporter(alone), ProgressReporter(together)
    for reporter in (one, batch):
        reporter.start(4)
        reporter.case_done(failing_report("bad"))
    for n in range(3):
        one.case_done(passing_report(f"ok-{n}"))
    batch.passes_done(Passes((), [(n, f"ok-{n}", 1.0, ()) for n in range(3)]))
    assert together.getvalue() == alone.getvalue()
    assert together.getvalue().endswith("\r  4/4 cases, 1 failed")
