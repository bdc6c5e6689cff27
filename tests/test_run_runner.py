"""`harness.run.runner`: running cases, through the real OpenAI Agents SDK adapter and through
users' own loops: run errors, timeouts, isolation, a fresh workspace per case."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    DROPPING_LOOP,
    FAITHFUL_LOOP,
    WATCHED_ONLY,
    call,
    case_of,
    echo_fixture,
    fixture,
    greeting_fixture,
    text_step,
    tool_step,
    turn,
    write_module,
    write_suite,
)

from harness import Message, ModelRequest, run_cases, run_suite
from harness.agents.protocol import AgentContext
from harness.agents.registry import resolve_agent
from harness.builtin_toolset import builtin_tools
from harness.verdict.reports import CaseReport, SuiteReport

# A loop that behaves faithfully unless the user input asks it to misbehave.
MISBEHAVING_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import os
import time


class Misbehaving(Session):
    async def run_turn(self, user_input):
        if "hang" in user_input:
            await asyncio.sleep(3600)
        if "slow" in user_input:
            await asyncio.sleep(0.4)
        if "block briefly" in user_input:
            time.sleep(2)
        elif "block" in user_input:
            time.sleep(20)
        if "count me" in user_input:
            with open(os.environ["ZEROCLAW_TEST_STARTS"], "a") as starts:
                starts.write("counted\\n")
        if "explode" in user_input:
            raise ValueError("adapter exploded")
        if "upstream" in user_input:
            raise TimeoutError("upstream provider timed out")
        if "number" in user_input:
            return 42
        if "harness error" in user_input:
            from harness import ToolFailure

            raise ToolFailure("a tool failure escaped the loop")
        return await super().run_turn(user_input)


def misbehaving(ctx):
    return Misbehaving(ctx)
"""
)


def run(suite: Path, agent: Any = "openai-agents", **kwargs: Any) -> SuiteReport:
    return run_suite(suite, agent=agent, root=suite.parent, **kwargs)


def by_id(report: SuiteReport) -> dict[str, CaseReport]:
    return {c.id: c for c in report.cases}


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


def user_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, attr: str) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{write_module(tmp_path, source)}:{attr}"


# --- the runner: run errors, isolation, modes -----------------------------------------------------


def test_run_errors_fail_their_case_but_not_the_suite(tmp_path: Path) -> None:
    over = fixture(
        "over-scripted",
        [turn("Say hi", text_step("Hello"), text_step("never requested"))],
        {"response_contains": ["Hello"]},
    )
    under = fixture(
        "under-scripted",
        [
            turn("Echo ping", tool_step(call("call_1", message="ping"))),
            turn("And again", text_step("Hello from turn 1")),
        ],
        {"response_contains": ["Hello"]},
    )
    last_over = fixture(
        "last-turn-over-scripted",
        [
            turn("Say hi", text_step("Hello")),
            turn("Again", text_step("Hello again"), text_step("surplus")),
        ],
        {"response_contains": ["Hello"]},
    )
    suite = write_suite(
        tmp_path / "suite",
        {
            "a_ok.json": greeting_fixture("a-ok"),
            "b_over.json": over,
            "c_under.json": under,
            "d_last.json": last_over,
            "e_ok.json": echo_fixture("e-ok"),
        },
    )
    seen: list[str] = []
    report = run(suite, on_case=lambda c: seen.append(c.id))
    cases = by_id(report)
    assert seen == ["a-ok", "over-scripted", "under-scripted", "last-turn-over-scripted", "e-ok"]
    assert cases["a-ok"].passed
    assert cases["e-ok"].passed

    over_error = cases["over-scripted"].error
    assert over_error is not None
    assert "turn 0 scripted 1 step(s) the agent never requested" in over_error

    under_error = cases["under-scripted"].error
    assert under_error is not None
    assert "turn 0 requested more model responses than the trace scripts" in under_error
    # The SDK's own request is summarised: the user turn, the call, and the fed-back result.
    assert "user:" in under_error
    assert "call echo(" in under_error
    assert "result for call_1:" in under_error
    assert "tool:" in under_error

    last_error = cases["last-turn-over-scripted"].error
    assert last_error is not None
    assert "turn 1 scripted 1 step(s)" in last_error

    for name in ("over-scripted", "under-scripted", "last-turn-over-scripted"):
        assert not cases[name].passed
        assert cases[name].grades == []
    assert cases["under-scripted"].record is not None
    assert cases["under-scripted"].record.calls[0].result == "ping"
    assert report.totals.errors == 3
    assert report.totals.passed == 2
    assert report.exit_code() == 1


def test_cases_are_isolated(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "suite",
        {"a.json": echo_fixture("first", "one"), "b.json": echo_fixture("second", "two")},
    )
    cases = by_id(run(suite))
    for case_id, message in (("first", "one"), ("second", "two")):
        record = cases[case_id].record
        assert record is not None
        assert [c.result for c in record.calls] == [message]
        assert record.model_calls == 2
        assert cases[case_id].passed


def test_live_mode_without_a_provider_backend_is_refused(tmp_path: Path) -> None:
    live_case = {
        "model_name": "live-a",
        "turns": [{"user_input": "Say hello."}],
        "expects": {"response_contains": ["hello"]},
    }
    suite = write_suite(tmp_path / "suite", {"a.json": live_case})
    with pytest.raises(ValueError, match="live mode needs a backend"):
        run(suite, mode="live")


# --- users' own loops -----------------------------------------------------------------------


def test_user_loop_via_module_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = user_agent(tmp_path, monkeypatch, FAITHFUL_LOOP, "factory")
    data = fixture(
        "user-loop",
        [
            turn(
                "Echo one",
                tool_step(call("c1", message="one"), input_tokens=3),
                text_step("one done"),
            ),
            turn("Fail", tool_step(call("c2", "fail", reason="nope")), text_step("it failed")),
        ],
        {
            "response_contains": ["it failed"],
            "exact_tool_calls": 2,
            "all_tools_succeeded": False,
            "tool_results_contain": [{"tool": "fail", "needle": "nope"}],
        },
    )
    report = run(write_suite(tmp_path / "suite", {"u.json": data}), agent=spec)
    assert report.agent == spec
    (case,) = report.cases
    assert case.passed, (case.error, failing(case))
    assert case.record is not None
    assert case.record.model_calls == 4
    assert case.record.input_tokens == 3
    assert report.exit_code() == 0


def test_hanging_async_agent_times_out_and_the_suite_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    hang = fixture(
        "hangs",
        [turn("Hi", text_step("Hello")), turn("now hang", text_step("never"))],
        {"response_contains": ["never"]},
    )
    suite = write_suite(
        tmp_path / "suite", {"a_hang.json": hang, "b_ok.json": echo_fixture("after")}
    )
    report = run(suite, agent=spec, case_timeout=0.5)
    cases = by_id(report)
    error = cases["hangs"].error
    assert error is not None
    assert "timed out after 0.5s" in error
    assert "turn 1" in error
    assert cases["hangs"].record is not None
    assert cases["hangs"].record.turn_responses == ["Hello"]
    assert cases["after"].passed, (cases["after"].error, failing(cases["after"]))
    assert report.exit_code() == 1


CLOSING_LOOP = (
    FAITHFUL_LOOP
    + """
import asyncio
import os


class Closing(Session):
    async def run_turn(self, user_input):
        if "explode" in user_input:
            raise ValueError("adapter exploded")
        return await super().run_turn(user_input)

    async def aclose(self):
        with open(os.environ["ZEROCLAW_TEST_CLOSED"], "a") as closed:
            closed.write(self.ctx.case_id + "\\n")
        if self.ctx.case_id == "hangs-closing":
            await asyncio.sleep(3600)
        if self.ctx.case_id == "fails-closing":
            raise RuntimeError("could not let go")


def closing(ctx):
    return Closing(ctx)
"""
)


def test_a_sessions_aclose_is_awaited_after_every_case_bounded_and_never_its_run_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.agents.protocol

    closed = tmp_path / "closed.txt"
    monkeypatch.setenv("ZEROCLAW_TEST_CLOSED", str(closed))
    monkeypatch.setattr(harness.agents.protocol, "SESSION_CLOSE_SECONDS", 0.5)
    spec = user_agent(tmp_path, monkeypatch, CLOSING_LOOP, "closing")
    exploding = fixture(
        "explodes", [turn("explode", text_step("never"))], {"response_contains": ["x"]}
    )
    suite = write_suite(
        tmp_path / "suite",
        {
            "a.json": echo_fixture("ok"),
            "b.json": exploding,
            "c.json": echo_fixture("hangs-closing"),
            "d.json": echo_fixture("fails-closing"),
        },
    )
    began = time.monotonic()
    cases = by_id(run(suite, agent=spec))
    assert time.monotonic() - began < 30
    assert sorted(closed.read_text(encoding="utf-8").split()) == [
        "explodes", "fails-closing", "hangs-closing", "ok"
    ]  # fmt: skip
    # What the session holds is let go after the run error too; a close that hangs or
    # fails leaves the case as its turns made it.
    assert cases["explodes"].error == "ValueError: adapter exploded"
    for case_id in ("ok", "hangs-closing", "fails-closing"):
        assert cases[case_id].passed, (cases[case_id].error, failing(cases[case_id]))


@WATCHED_ONLY
def test_a_replayed_case_keeps_no_timer_on_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watchdog keeps the turns' clocks: a timer pending on the loop would make every
    # turn of the loop look at the timer heap, about a percent of a replayed case.
    import asyncio

    import harness.run.runner

    timers: list[str] = []
    by_grading: list[list[str]] = []  # the timers set while the agent ran
    real_call_at, real_grade = asyncio.BaseEventLoop.call_at, harness.run.runner.grade

    def call_at(
        self: asyncio.BaseEventLoop, when: float, callback: Any, *args: Any, **kwargs: Any
    ) -> Any:
        timers.append(getattr(callback, "__qualname__", repr(callback)))
        return real_call_at(self, when, callback, *args, **kwargs)

    def grade(*args: Any, **kwargs: Any) -> Any:
        by_grading.append(list(timers))
        return real_grade(*args, **kwargs)

    monkeypatch.setattr(asyncio.BaseEventLoop, "call_at", call_at)
    monkeypatch.setattr(harness.run.runner, "grade", grade)
    suite = write_suite(tmp_path / "suite", {"a.json": echo_fixture("one", "hi")})
    (case,) = run(suite, agent="openai-agents").cases
    assert case.passed, (case.error, failing(case))
    assert by_grading == [[]]


def test_an_abandoned_loop_starts_no_more_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The loop whose thread a run blocked carries on once it unblocks; the runs it has not
    # started are run on the fresh thread, so it must not start them too.
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv("ZEROCLAW_TEST_STARTS", str(starts))
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    block = fixture("blocks", [turn("block briefly", text_step("x"))], {"response_contains": ["x"]})
    suite = write_suite(
        tmp_path / "suite", {"a.json": block, "b.json": echo_fixture("counted", "count me")}
    )
    cases = by_id(run(suite, agent=spec, case_timeout=0.3))
    assert "blocked its thread and was abandoned" in (cases["blocks"].error or "")
    assert cases["counted"].passed, (cases["counted"].error, failing(cases["counted"]))
    time.sleep(2.5)  # the blocked thread wakes after 2 s, and its loop goes on
    assert starts.read_text().splitlines() == ["counted"]


def test_thread_blocking_agent_times_out_and_the_suite_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    block = fixture("blocks", [turn("block now", text_step("never"))], {"response_contains": ["x"]})
    suite = write_suite(
        tmp_path / "suite",
        {"a_block.json": block, "b_ok.json": echo_fixture("after-block", "fine")},
    )
    report = run(suite, agent=spec, case_timeout=0.5)
    cases = by_id(report)
    error = cases["blocks"].error
    assert error is not None
    assert "timed out" in error
    assert "turn 0" in error
    assert cases["after-block"].passed, (cases["after-block"].error, failing(cases["after-block"]))


def test_adapter_exception_is_a_run_error_with_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    boom = fixture("explodes", [turn("explode", text_step("x"))], {"response_contains": ["x"]})
    suite = write_suite(tmp_path / "suite", {"a.json": boom, "b.json": echo_fixture("next")})
    report = run(suite, agent=spec)
    cases = by_id(report)
    case = cases["explodes"]
    assert case.error == "ValueError: adapter exploded"
    assert case.traceback is not None
    assert "Traceback" in case.traceback
    assert "adapter exploded" in case.traceback
    assert cases["next"].passed
    assert report.totals.errors == 1


def test_an_agents_own_timeout_error_is_not_reported_as_the_case_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    data = fixture(
        "upstream", [turn("upstream call", text_step("x"))], {"response_contains": ["x"]}
    )
    (case,) = run(write_suite(tmp_path / "suite", {"a.json": data}), agent=spec).cases
    assert case.error is not None
    assert "upstream provider timed out" in case.error
    assert "timed out after" not in case.error
    assert case.traceback is not None


def test_run_turn_returning_a_non_string_is_a_run_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    data = fixture("number", [turn("number please", text_step("x"))], {"response_contains": ["x"]})
    (case,) = run(write_suite(tmp_path / "suite", {"a.json": data}), agent=spec).cases
    assert case.error is not None
    assert "TypeError" in case.error
    assert "int" in case.error


def test_an_internal_error_is_only_that_cases_run_error(tmp_path: Path) -> None:
    class Flaky:
        name = "flaky"
        starts = 0

        def tools(self):
            self.starts += 1
            if self.starts == 1:
                raise RuntimeError("registry exploded")
            return builtin_tools()

        def start(self, context: AgentContext):
            return resolve_agent("openai-agents").start(context)

    cases = [case_of(greeting_fixture("first")), case_of(greeting_fixture("second"))]
    report = run_cases(cases, Flaky(), suite="s", root=tmp_path)
    first, second = report.cases
    assert first.error is not None
    assert "internal error" in first.error
    assert "registry exploded" in first.error
    assert first.traceback is not None
    assert "RuntimeError" in first.traceback
    assert second.passed, (second.error, failing(second))


def test_an_adapter_registering_a_tool_twice_errors_each_case_not_the_suite(
    tmp_path: Path,
) -> None:
    class Doubled:
        name = "doubled"

        def tools(self):
            return [*builtin_tools(), builtin_tools()[0]]

        def start(self, context: AgentContext):
            raise AssertionError("never started: the registry cannot be built")

    cases = [case_of(greeting_fixture("first")), case_of(greeting_fixture("second"))]
    seen: list[str] = []
    report = run_cases(
        cases, Doubled(), suite="s", root=tmp_path, on_case=lambda c: seen.append(c.id)
    )
    assert seen == ["first", "second"]
    for case in report.cases:
        assert case.error is not None
        assert "registered twice" in case.error
        assert case.traceback is not None
    assert report.exit_code() == 1


class WorkspaceProbe:
    """An adapter recording what each case's workspace looked like while the case ran."""

    name = "workspace-probe"

    def __init__(self) -> None:
        self.seen: list[tuple[Path, bool, list[str]]] = []

    def tools(self):
        return builtin_tools()

    def start(self, context: AgentContext):
        probe = self

        class Session:
            async def run_turn(self, user_input: str) -> str:
                ws = context.workspace
                probe.seen.append((ws, ws.is_dir(), sorted(p.name for p in ws.iterdir())))
                (ws / "left-behind.txt").write_text(user_input, encoding="utf-8")
                request = ModelRequest(messages=(Message(role="user", content=user_input),))
                return (await context.model.respond(request)).text

        return Session()


def test_each_case_gets_a_fresh_workspace_removed_afterwards(tmp_path: Path) -> None:
    probe = WorkspaceProbe()
    cases = [case_of(greeting_fixture(name)) for name in ("one", "two", "three")]
    report = run_cases(cases, probe, suite="s", root=tmp_path)
    assert all(c.passed for c in report.cases), [(c.error, failing(c)) for c in report.cases]
    assert len(probe.seen) == 3
    workspaces = [ws for ws, _, _ in probe.seen]
    assert len(set(workspaces)) == 3
    for ws, existed, contents in probe.seen:
        assert existed
        assert contents == []  # nothing left over from an earlier case
        assert not ws.exists()


def test_workspace_is_removed_after_a_run_error_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = WorkspaceProbe()
    over = fixture("over", [turn("hi", text_step("Hello"), text_step("extra"))], EXPECT_HELLO)
    report = run_cases([case_of(over)], probe, suite="s", root=tmp_path)
    assert report.cases[0].error is not None
    ((ws, existed, _),) = probe.seen
    assert existed
    assert not ws.exists()


EXPECT_HELLO = {"response_contains": ["Hello"]}


def test_a_loop_that_drops_tool_calls_fails_the_gated_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, DROPPING_LOOP, "factory")
    suite = write_suite(tmp_path / "suite", {"echo.json": echo_fixture("dropped", "hello")})
    report = run(suite, agent=spec)
    (case,) = report.cases
    assert case.error is None
    assert not case.passed
    # The scripted final text still mentions the value: only the dispatch boundary tells.
    details = failing(case)
    assert 'response_contains("hello")' not in details
    assert details['tools_used("echo")'] == "not called; tools called: []"
    assert details["exact_tool_calls(1)"] == "0 tool call(s): []"
    assert "never called" in details['tool_arguments_contain("echo", "hello")']
    assert "never called" in details['tool_results_contain("echo", "hello")']
    assert case.record is not None
    assert case.record.calls == []
    assert case.record.model_calls == 2
    assert report.exit_code() == 1


def test_run_cases_reports_fixture_paths_relative_to_root(tmp_path: Path) -> None:
    path = tmp_path / "evals" / "regression" / "a.json"
    report = run_cases(
        [case_of(greeting_fixture("a"), path)],
        resolve_agent("openai-agents"),
        suite="evals/regression",
        root=tmp_path,
    )
    assert report.cases[0].fixture == "evals/regression/a.json"
    outside = run_cases(
        [case_of(greeting_fixture("b"), Path("/elsewhere/b.json"))],
        resolve_agent("openai-agents"),
        suite="x",
        root=tmp_path,
    )
    assert outside.cases[0].fixture == "/elsewhere/b.json"


def test_a_harness_error_the_agent_raises_keeps_its_type_and_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the harness's own failures (divergence, the provider) are shown bare: anything
    # an agent raises, a harness exception class included, is its run error with traceback.
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    data = fixture(
        "escaped", [turn("harness error please", text_step("x"))], {"response_contains": ["x"]}
    )
    (case,) = run(write_suite(tmp_path / "suite", {"a.json": data}), agent=spec).cases
    assert case.error == "ToolFailure: a tool failure escaped the loop"
    assert case.traceback is not None and "ToolFailure" in case.traceback


RAISING_LOOP = """
import asyncio


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        kind = user_input.split()[0]
        raise {
            "exit": SystemExit(2),
            "interrupt": KeyboardInterrupt("pressed by agent code"),
            "generator": GeneratorExit(),
            "cancelled": asyncio.CancelledError("the agent's own"),
        }[kind]


def factory(ctx):
    return Session(ctx)
"""


def test_base_exceptions_from_agent_code_are_that_cases_run_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SystemExit, KeyboardInterrupt, GeneratorExit and CancelledError raised by the agent:
    # each case fails on its own, the next case still runs.
    spec = user_agent(tmp_path, monkeypatch, RAISING_LOOP, "factory")
    fixtures = {
        f"{i}_{kind}.json": fixture(
            kind, [turn(f"{kind} now", text_step("x"))], {"response_contains": ["x"]}
        )
        for i, kind in enumerate(("exit", "interrupt", "generator", "cancelled"))
    }
    report = run(write_suite(tmp_path / "suite", fixtures), agent=spec)
    errors = {c.id: c.error for c in report.cases}
    assert errors == {
        "exit": "SystemExit: 2",
        "interrupt": "KeyboardInterrupt: pressed by agent code",
        "generator": "GeneratorExit: ",
        "cancelled": "CancelledError: the agent's own",
    }
    assert all(c.traceback for c in report.cases)


def test_a_tool_raising_system_exit_or_an_unprintable_result_is_a_failed_call() -> None:
    import asyncio

    from harness.tool_registry import Tool, ToolRegistry

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text for you")

    def cli_tool(arguments: dict[str, Any]) -> str:
        raise SystemExit(2)  # an argparse-wrapping tool given bad arguments

    def odd(arguments: dict[str, Any]) -> Any:
        return Unprintable()

    registry = ToolRegistry.of(
        [Tool("cli", "", {}, cli_tool), Tool("odd", "", {}, odd)]  # type: ignore[arg-type]
    )
    first = asyncio.run(registry.dispatch("cli", {}))
    second = asyncio.run(registry.dispatch("odd", {}))
    assert (first.success, first.result) == (False, "cli raised SystemExit: 2")
    assert second.success is False
    assert "str() raised RuntimeError: no text for you" in second.result
    assert [c.success for c in registry.calls] == [False, False]


# --- the whole case's wall clock ----------------------------------------------------------------


def test_a_case_ends_at_its_wall_clock_however_many_turns_it_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, MISBEHAVING_LOOP, "misbehaving")
    turns = [turn(f"slow {n}", text_step(f"reply {n}")) for n in range(6)]
    slow = fixture("slow", turns, {"response_contains": ["reply 5"]})
    suite = write_suite(
        tmp_path / "suite", {"a_slow.json": slow, "b_ok.json": echo_fixture("after")}
    )
    report = run(suite, agent=spec, case_timeout=5, case_wall_clock=1)
    cases = by_id(report)
    assert cases["slow"].error == "ran past the case's wall clock of 1s in turn 2"
    assert cases["slow"].record is not None
    assert cases["slow"].record.turn_responses == ["reply 0", "reply 1"]
    assert cases["after"].passed, cases["after"].error


def test_grading_is_bounded_by_the_wall_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from harness.run import runner

    grade = runner.grade

    def stuck_grading(*args: Any, **kwargs: Any) -> Any:
        if args[1].final_response == "Hello there!":
            time.sleep(8)
        return grade(*args, **kwargs)

    monkeypatch.setattr(runner, "grade", stuck_grading)
    suite = write_suite(
        tmp_path / "suite",
        {"a_stuck.json": greeting_fixture("stuck"), "b_ok.json": echo_fixture("after")},
    )
    started = time.monotonic()
    report = run(suite, case_timeout=5, case_wall_clock=1)
    assert time.monotonic() - started < 6
    cases = by_id(report)
    assert cases["stuck"].error == (
        "ran past the case's wall clock of 1s while grading; grading blocked its thread "
        "and was abandoned"
    )
    assert cases["after"].passed, cases["after"].error


# Raises from a task the agent spawns (asyncio lets SystemExit and KeyboardInterrupt out of
# the event loop itself), or raises its own BaseException kinds.
TASK_RAISING_LOOP = """
import asyncio

try:
    BaseExceptionGroup
except NameError:  # Python 3.10: the backport, which anyio (httpx's) brings there
    from exceptiongroup import BaseExceptionGroup


class Boom(BaseException):
    pass


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        kind = user_input.split()[0]
        if kind == "own":
            raise Boom("the agent's own kind")
        if kind == "group":
            raise BaseExceptionGroup("several", [KeyboardInterrupt(), ValueError("v")])

        async def tool():
            raise {"exit": SystemExit(0), "interrupt": KeyboardInterrupt("in a task")}[kind]

        await asyncio.gather(asyncio.get_running_loop().create_task(tool()))
        return "unreachable"


def factory(ctx):
    return Session(ctx)
"""


def test_base_exceptions_from_tasks_and_of_any_kind_are_that_cases_run_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = user_agent(tmp_path, monkeypatch, TASK_RAISING_LOOP, "factory")
    kinds = ("exit", "interrupt", "own", "group")
    fixtures = {
        f"{i}_{kind}.json": fixture(
            kind, [turn(f"{kind} now", text_step("x"))], {"response_contains": ["x"]}
        )
        for i, kind in enumerate(kinds)
    }
    fixtures["9_after.json"] = echo_fixture("after")
    report = run(write_suite(tmp_path / "suite", fixtures), agent=spec)
    errors = {c.id: c.error for c in report.cases}
    assert errors["exit"] == "SystemExit: 0"  # not a green exit of the whole run
    assert errors["interrupt"] == "KeyboardInterrupt: in a task"
    assert errors["own"] == "Boom: the agent's own kind"
    assert errors["group"] is not None and errors["group"].startswith("BaseExceptionGroup")
    assert report.exit_code() == 1


@pytest.mark.parametrize("framework", ["openai-agents", "pydantic-ai"])
def test_a_framework_tool_raising_system_exit_does_not_end_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    source = {
        "openai-agents": """
from agents import Agent, function_tool


@function_tool
def echo(message: str) -> str:
    raise SystemExit(0)


def build_agent():
    return Agent(name="exits", tools=[echo])
""",
        "pydantic-ai": """
from pydantic_ai import Agent

agent = Agent()


@agent.tool_plain
def echo(message: str) -> str:
    raise SystemExit(0)


def build_agent():
    return agent
""",
    }[framework]
    module = user_agent(tmp_path, monkeypatch, source, "build_agent")
    suite = write_suite(
        tmp_path / "suite", {"a.json": echo_fixture("exits"), "b.json": greeting_fixture("hi")}
    )
    report = run(suite, agent=f"{framework}:{module}")
    exits, after = report.cases
    assert not exits.passed  # the tool's SystemExit is that case's failure, not a green run
    assert exits.record is not None
    assert [c.success for c in exits.record.calls] == [False]
    assert "SystemExit" in exits.record.calls[0].result
    assert after.passed, after.first_failure()
    assert report.exit_code() == 1


@pytest.mark.parametrize("framework", ["openai-agents", "pydantic-ai"])
def test_a_framework_tool_result_that_cannot_be_shown_is_a_failed_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    unshowable = """
class Unshowable:
    def __str__(self):
        raise RuntimeError("no text for you")

    __repr__ = __str__
"""
    source = (
        unshowable
        + {
            "openai-agents": """
from agents import Agent, function_tool


@function_tool
def echo(message: str):
    return Unshowable()


def build_agent():
    return Agent(name="unshowable", tools=[echo])
""",
            "pydantic-ai": """
from pydantic_ai import Agent

agent = Agent()


@agent.tool_plain
def echo(message: str) -> object:
    return Unshowable()


def build_agent():
    return agent
""",
        }[framework]
    )
    module = user_agent(tmp_path, monkeypatch, source, "build_agent")
    report = run(
        write_suite(tmp_path / "suite", {"a.json": echo_fixture("unshowable")}),
        agent=f"{framework}:{module}",
    )
    [case] = report.cases
    assert case.error is None, case.error  # graded, not a run error of the whole case
    assert case.record is not None
    [call] = case.record.calls
    assert not call.success
    assert call.result.startswith("the tool's result cannot be shown: ")
    assert "RuntimeError: no text for you" in call.result


def test_the_script_graders_read_is_the_steps_the_replay_answered_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.run import runner
    from harness.transcript import Conversation

    spec = user_agent(tmp_path, monkeypatch, FAITHFUL_LOOP, "factory")
    data = fixture(
        "shared-script",
        [
            turn("Echo one", tool_step(call("c1", message="one")), text_step("one done")),
            turn("Again", text_step("done")),
        ],
        {"response_contains": ["done"]},
    )
    seen: list[Conversation] = []
    grade = runner.grade

    def graded(*args: Any) -> Any:
        seen.append(args[4])
        return grade(*args)

    monkeypatch.setattr(runner, "grade", graded)
    report = run(write_suite(tmp_path / "suite", {"s.json": data}), agent=spec)
    assert report.cases[0].passed, failing(report.cases[0])
    (conversation,) = seen
    # Made once, by the backend: what the agent was answered with is the script's own step.
    answered = [(e.turn, e.step) for e in conversation.exchanges]
    assert answered == [(0, 0), (0, 1), (1, 0)]
    for (t, s), answer in zip(answered, conversation.answers, strict=True):
        assert answer is conversation.script[t][s]
    assert [[step.text for step in steps] for steps in conversation.script] == [
        ["", "one done"],
        ["done"],
    ]


@WATCHED_ONLY
def test_a_case_s_start_and_turns_share_one_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One scope a case, its phases moving its due time: not a timeout entered and left
    # for the start and again for every turn (nor for the case: the scope cancels the
    # case's task itself when the watchdog finds a phase ran out).
    import asyncio

    spec = user_agent(tmp_path, monkeypatch, FAITHFUL_LOOP, "factory")
    entered: list[float | None] = []
    real = asyncio.Timeout.__aenter__

    async def aenter(self: asyncio.Timeout) -> asyncio.Timeout:
        entered.append(self.when())
        return await real(self)

    monkeypatch.setattr(asyncio.Timeout, "__aenter__", aenter)
    data = fixture(
        "three-turns",
        [turn("one", text_step("a")), turn("two", text_step("b")), turn("three", text_step("c"))],
        {"response_contains": ["c"]},
    )
    report = run(write_suite(tmp_path / "suite", {"t.json": data}), agent=spec)
    assert report.cases[0].passed, failing(report.cases[0])
    assert entered == []  # and no timer: the watchdog keeps its clock
