"""`zeroclaw eval verify`: an untouched report verifies; a changed fixture, an edited report
or another policy does not."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from _judge_server import fair
from _openai_server import Action, OpenAIServer, malformed, text_reply
from conftest import (
    DROPPING_LOOP,
    FAITHFUL_LOOP,
    LIVE_KEY,
    LIVE_KEY_ENV,
    Cli,
    CliResult,
    echo_fixture,
    failing_fixture,
    live_case,
    make_project,
    one_passing_run,
    project,
    red_project,
    restated,
    two_agent_project,
    write_fixture,
    write_module,
)

from harness.fixtures.schema import fixture_hash
from harness.verdict.statistics import curves, mean_sd, wilson


def reported(run_cli: Cli, root: Path) -> Path:
    result = run_cli("eval", "run", "--json-report", "report.json", cwd=root)
    assert result.returncode == 1, result.stderr  # the red project: a failing case and an error
    return root / "report.json"


def edit(path: Path, change: object) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)  # type: ignore[operator]
    path.write_text(json.dumps(document), encoding="utf-8")


def test_an_untouched_report_verifies(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 0, result.stderr
    assert "is for exactly the 3 fixture(s) of" in result.stdout
    assert "regression policy" in result.stdout and "exit 1" in result.stdout


def test_a_changed_added_or_removed_fixture_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)
    suite = root / "evals" / "regression"
    write_fixture(suite, "a_echo.json", echo_fixture("echo-case", "another message"))
    write_fixture(suite, "d_new.json", echo_fixture("newcomer"))
    (suite / "c_under.json").unlink()
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1
    assert "evals/regression/a_echo.json: the fixture changed since the report" in result.stderr
    assert "evals/regression/d_new.json: a fixture of the suite the report has no case" in (
        result.stderr
    )
    assert "evals/regression/c_under.json: the report has a case (under-scripted) for no" in (
        result.stderr
    )


def test_an_edited_report_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)

    def flip(document: dict) -> None:  # type: ignore[type-arg]
        wrong = next(c for c in document["cases"] if c["id"] == "wrong-answer")
        wrong["passed"] = True
        document["exit_code"] = 0

    edit(report, flip)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1
    assert "(wrong-answer): says passed, but its grades say not passed" in result.stderr
    assert "$.exit_code: 0, but its cases under its policy give 1" in result.stderr


def test_another_policy_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)

    def soften(document: dict) -> None:  # type: ignore[type-arg]
        document["receipt"]["policy"]["gates_checks"] = False

    edit(report, soften)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1
    assert "$.receipt.policy:" in result.stderr and "is not the regression policy" in (
        result.stderr
    )


def test_a_report_changed_in_its_hashes_alone_fails(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)
    forged = fixture_hash('{"forged": true}')

    def rehash(document: dict) -> None:  # type: ignore[type-arg]
        document["cases"][0]["fixture_sha256"] = forged

    edit(report, rehash)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1 and "the fixture changed since the report" in result.stderr


def test_what_is_not_a_report_is_refused_clearly(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    (root / "junk.json").write_text("{not json", encoding="utf-8")
    (root / "old.json").write_text('{"schema": "zeroclaw-eval/report/v1"}', encoding="utf-8")
    junk = run_cli("eval", "verify", "junk.json", cwd=root)
    assert junk.returncode == 1 and "junk.json: not JSON" in junk.stderr
    old = run_cli("eval", "verify", "old.json", cwd=root)
    assert old.returncode == 1
    assert "old.json: $.schema: not a zeroclaw-eval/report/v2 report" in old.stderr
    assert "Traceback" not in junk.stderr + old.stderr


def test_a_suite_that_cannot_be_listed_is_refused_naming_it(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    report = reported(run_cli, root)
    result = run_cli("eval", "verify", "--suite", "gone", report, cwd=root)
    assert result.returncode == 1
    assert "gone: suite: suite directory does not exist" in result.stderr
    assert "Traceback" not in result.stderr


# --- a report edited as a forger would: every derived field is derived again -------------


def two_case_project(tmp_path: Path) -> Path:
    """A regression suite of a passing case and one that fails its checks (no run error,
    so turning the failing one green would make the whole gate green)."""
    return project(
        tmp_path, {"a_echo.json": echo_fixture("echo-case"), "b_wrong.json": failing_fixture()}
    )


def test_a_failing_replay_case_given_a_one_run_repeat_block_fails(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = two_case_project(tmp_path)
    report = reported(run_cli, root)

    def forge(document: dict[str, Any]) -> None:
        wrong = document["cases"][1]
        assert wrong["id"] == "wrong-answer" and not wrong["passed"]
        # Its failing grades are left in place: only the verdict and a repeat block change.
        wrong.update(passed=True, line=None, repeat=one_passing_run())
        restated(document)
        assert document["exit_code"] == 0 and document["all_passed"]

    edit(report, forge)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1, result.stdout
    assert "$.cases[1].repeat: a replay runs each case once" in result.stderr
    assert "$.cases[1].repeat.requested: 1 run, but a repeat block is of 2 runs or more" in (
        result.stderr
    )
    assert (
        '$.cases[1].grades: fail response_contains("hi"), exact_tool_calls(2), but they are '
        "run 1's, which failed nothing"
    ) in result.stderr
    assert "Traceback" not in result.stderr


def _document_edits() -> dict[str, tuple[Any, str]]:
    """Each edit of an honest report of `two_case_project`, and the field it is refused at."""

    def set_at(*path: Any, value: Any) -> Any:
        def change(document: dict[str, Any]) -> None:
            node = document
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value

        return change

    return {
        "all_passed": (set_at("all_passed", value=True), "$.all_passed: true"),
        "statistics": (set_at("statistics", "pass_rate", value=1.0), "$.statistics:"),
        "partial": (set_at("partial", value=None), "$.partial:"),
        "a case's score": (set_at("cases", 1, "score", value=1.0), "$.cases[1].score:"),
        "a passing case's line": (set_at("cases", 0, "line", value=3), "$.cases[0].line:"),
        "a case's cluster": (set_at("cases", 1, "cluster", value="solo"), "$.cases[1].cluster:"),
        "a case's id": (set_at("cases", 1, "id", value="echo-case-2"), "$.cases[1].id:"),
        "the agent": (set_at("agent", value="pydantic-ai"), "$.agent:"),
        "the mode": (set_at("mode", value="live"), "$.mode:"),
    }


@pytest.mark.parametrize("what", sorted(_document_edits()))
def test_a_derived_field_that_disagrees_with_what_it_derives_from_fails(
    run_cli: Cli, tmp_path: Path, what: str
) -> None:
    root = two_case_project(tmp_path)
    report = reported(run_cli, root)
    if what == "partial":  # a run of part of the suite, said to be the whole
        run_cli("eval", "run", "-k", "echo or wrong", "--json-report", report, cwd=root)
    change, field = _document_edits()[what]
    edit(report, change)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1, result.stdout
    assert field in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_report_with_a_nul_in_its_suite_is_refused_naming_the_field(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = two_case_project(tmp_path)
    report = reported(run_cli, root)

    def nul(document: dict[str, Any]) -> None:
        document["suite"] = "evals/regression\x00/../elsewhere"

    edit(report, nul)
    result = run_cli("eval", "verify", report, cwd=root)
    assert result.returncode == 1
    assert f"{report}: $.suite: " in result.stderr and "NUL" in result.stderr
    assert "Traceback" not in result.stderr
    named = run_cli("eval", "verify", report, "--suite", "evals/regression", cwd=root)
    assert named.returncode == 1 and "$.suite: " in named.stderr


def test_a_confirmed_regression_dropped_from_the_baseline_block_fails(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(tmp_path, {"a_echo.json": echo_fixture("echo-case")}, suite="evals/capability")
    faithful = f"{write_module(root, FAITHFUL_LOOP)}:factory"
    written = run_cli("eval", "run", "--agent", faithful, "--write-baseline", "b.json", cwd=root)
    assert written.returncode == 0, written.stderr
    dropping = f"{write_module(root, DROPPING_LOOP)}:factory"
    gated = ("--baseline", "b.json", "--fail-on-regression", "--json-report", "r.json")
    result = run_cli("eval", "run", "--agent", dropping, *gated, cwd=root)
    assert result.returncode == 1, result.stderr  # the regression fails the gate
    assert run_cli("eval", "verify", "r.json", "--fail-on-regression", cwd=root).returncode == 0

    def hide(document: dict[str, Any]) -> None:
        assert document["baseline"]["confirmed_regressions"] == ["echo-case"]
        document["baseline"]["confirmed_regressions"] = []
        restated(document)
        assert document["exit_code"] == 0

    edit(root / "r.json", hide)
    result = run_cli("eval", "verify", "r.json", "--fail-on-regression", cwd=root)
    assert result.returncode == 1, result.stdout
    assert "$.baseline.confirmed_regressions: [], but its cases give ['echo-case']" in (
        result.stderr
    )


# --- repeated live cases: the bar is the fixture's ----------------------------------------

SAY = {"response_contains": ["zc-answer-42"]}


class RightEvery:
    """Answers `say: X` with X on every `every`-th request (the first included), otherwise
    with something else: a case repeated `every` times passes exactly one run."""

    def __init__(self, every: int) -> None:
        self._every = every
        self._lock = threading.Lock()
        self._asked = 0

    def __call__(self, body: Any) -> Action:
        last = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        with self._lock:
            right = self._asked % self._every == 0
            self._asked += 1
        return text_reply(str(last["content"]).removeprefix("say: ") if right else "no")


def live_report(
    run_cli: Cli, tmp_path: Path, case: dict[str, Any], *args: str, code: int = 1
) -> Path:
    """The JSON report of the live suite of `case`, run against a provider whose answer
    is right on one request of three (the first): exit `code`."""
    with OpenAIServer(responder=RightEvery(3)) as server:
        root = make_project(tmp_path, server.base_url, {"say.json": case})
        result = run_cli(
            "eval", "run", "--suite", "evals/live", "--json-report", "report.json", *args,
            cwd=root, env={LIVE_KEY_ENV: LIVE_KEY},
        )  # fmt: skip
    assert result.returncode == code, result.stderr
    return root / "report.json"


def verify_live(run_cli: Cli, report: Path) -> CliResult:
    return run_cli("eval", "verify", report, cwd=report.parent)


@pytest.mark.parametrize("rate", [0.0, 0.3])
def test_a_repeated_case_is_judged_by_its_fixture_s_pass_rate_not_the_report_s(
    run_cli: Cli, tmp_path: Path, rate: float
) -> None:
    case = live_case("say", "say: zc-answer-42", expects=SAY, repeat=3)
    report = live_report(run_cli, tmp_path, case)
    honest = verify_live(run_cli, report)
    assert honest.returncode == 0, honest.stderr

    def lower_the_bar(document: dict[str, Any]) -> None:
        [say] = document["cases"]
        assert say["repeat"]["passes"] == 1 and say["repeat"]["min_pass_rate"] is None
        say["repeat"]["min_pass_rate"] = rate
        say.update(passed=True, line=None)
        restated(document)
        assert document["exit_code"] == 0

    edit(report, lower_the_bar)
    result = verify_live(run_cli, report)
    assert result.returncode == 1, result.stdout
    assert f"$.cases[0].repeat.min_pass_rate: {rate}, but the fixture's is none" in (result.stderr)


def test_honest_repeated_and_clustered_live_cases_verify(run_cli: Cli, tmp_path: Path) -> None:
    case = live_case("say", "say: zc-answer-42", expects=SAY, repeat=3, min_pass_rate=0.3)
    passing = live_report(run_cli, tmp_path / "rate", case, code=0)  # 1/3 runs is enough
    assert json.loads(passing.read_text())["cases"][0]["passed"]
    assert verify_live(run_cli, passing).returncode == 0
    once = live_case("say", "say: zc-answer-42", expects=SAY, cluster="family")
    clustered = live_report(run_cli, tmp_path / "cluster", once, "--repeat", "1", code=0)
    assert json.loads(clustered.read_text())["cases"][0]["cluster"] == "family"
    result = verify_live(run_cli, clustered)
    assert result.returncode == 0, result.stderr


def test_a_repeated_case_with_a_run_error_verifies_and_its_error_is_derived(
    run_cli: Cli, tmp_path: Path
) -> None:
    answers = iter([text_reply("zc-answer-42"), malformed(), text_reply("zc-answer-42")])
    lock = threading.Lock()

    def provider(body: Any) -> Action:
        with lock:
            return next(answers)

    case = live_case("say", "say: zc-answer-42", expects=SAY, repeat=3)
    with OpenAIServer(responder=provider) as server:
        root = make_project(tmp_path, server.base_url, {"say.json": case})
        run_cli(
            "eval", "run", "--suite", "evals/live", "--json-report", "report.json", "--jobs", "1",
            cwd=root, env={LIVE_KEY_ENV: LIVE_KEY},
        )  # fmt: skip
    report = root / "report.json"
    [say] = json.loads(report.read_text())["cases"]
    assert say["repeat"]["completed"] == 2 and say["error"].startswith("repeat 2/3 runs")
    honest = verify_live(run_cli, report)
    assert honest.returncode == 0, honest.stderr

    def another_error(document: dict[str, Any]) -> None:
        document["cases"][0]["error"] = "repeat 3/3 runs completed"

    edit(report, another_error)
    result = verify_live(run_cli, report)
    assert result.returncode == 1
    assert '$.cases[0].error: "repeat 3/3 runs completed", but its runs give "repeat 2/3' in (
        result.stderr
    )


def test_a_repeated_case_with_a_run_dropped_fails(run_cli: Cli, tmp_path: Path) -> None:
    case = live_case("say", "say: zc-answer-42", expects=SAY, repeat=3)
    report = live_report(run_cli, tmp_path, case)

    def drop_the_failures(document: dict[str, Any]) -> None:
        [say] = document["cases"]
        kept = [r for r in say["repeat"]["runs"] if r["passed"]]
        say["repeat"] = forged_stats(kept)
        duration = sum(r["duration_ms"] for r in kept)
        say.update(passed=True, line=None, score=1.0, duration_ms=duration)
        for grade in say["grades"]:
            grade["passed"] = True
        restated(document)
        assert document["exit_code"] == 0

    edit(report, drop_the_failures)
    result = verify_live(run_cli, report)
    assert result.returncode == 1, result.stdout
    assert "$.cases[0].repeat.requested: 1 run, but a repeat block is of 2 runs or more" in (
        result.stderr
    )
    assert "$.cases[0].repeat.requested: 1 run, but the fixture asks for 3" in result.stderr
    assert result.stderr.count("zeroclaw eval: verify: ") == 2  # the rest was forged well


def test_a_repeat_block_is_admissible_where_the_run_s_repeat_asked_for_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = live_case("say", "say: zc-answer-42", expects=SAY)
    report = live_report(run_cli, tmp_path, case, "--repeat", "3")
    assert json.loads(report.read_text())["receipt"]["repeat"] == 3
    honest = verify_live(run_cli, report)
    assert honest.returncode == 0, honest.stderr

    def not_asked(document: dict[str, Any]) -> None:
        document["receipt"]["repeat"] = None

    edit(report, not_asked)
    result = verify_live(run_cli, report)
    assert result.returncode == 1
    assert "$.cases[0].repeat.requested: 3 runs, but the fixture asks for 1" in result.stderr


def forged_stats(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A repeat block over `runs` (renumbered), its statistics computed as a run would."""
    n = len(runs)
    passes = sum(r["passed"] for r in runs)
    at_k, hat_k = curves(n, passes)
    for number, run in enumerate(runs, 1):
        run["run"] = number
    means = {
        field: mean_sd([float(r.get(field, 0)) for r in runs])
        for field in ("tokens", "model_calls", "duration_ms")
    }
    return {
        **{f"{field}_mean": mean for field, (mean, _) in means.items()},
        **{f"{field}_sd": sd for field, (_, sd) in means.items()},
        "requested": n,
        "completed": n,
        "passes": passes,
        "proportion": passes / n,
        "interval": list(wilson(passes, n)),
        "pass_at_k": at_k,
        "pass_hat_k": hat_k,
        "min_pass_rate": None,
        "flaky": 0 < passes < n,
        "runs": runs,
    }


def test_a_repeat_block_of_numbers_no_run_has_is_refused_without_a_traceback(
    run_cli: Cli, tmp_path: Path
) -> None:
    case = live_case("say", "say: zc-answer-42", expects=SAY, repeat=3)
    report = live_report(run_cli, tmp_path, case)
    honest = report.read_text(encoding="utf-8")
    edits: dict[str, tuple[Any, str]] = {
        "an endless run": (
            lambda say: say["repeat"]["runs"][0].update(duration_ms=float("inf")),
            "$.cases[0].repeat.runs[0].duration_ms: inf is no run's",
        ),
        "tokens past any run": (
            lambda say: say["repeat"]["runs"][1].update(tokens=10**18),
            "$.cases[0].repeat.runs[1].tokens: 1000000000000000000 is no run's",
        ),
        "thousands of runs": (
            lambda say: say["repeat"].update(runs=say["repeat"]["runs"] * 700),
            "$.cases[0].repeat.runs: 2100 runs, but no case runs more than 50 times",
        ),
        "a proportion past one": (
            lambda say: say["repeat"].update(proportion=5.0),
            "$.statistics: cannot be derived from its cases",
        ),
    }
    for what, (change, said) in edits.items():
        report.write_text(honest, encoding="utf-8")
        edit(report, lambda document, change=change: change(document["cases"][0]))
        result = verify_live(run_cli, report)
        assert result.returncode == 1, what
        assert said in result.stderr, (what, result.stderr)
        assert "Traceback" not in result.stderr, what


def test_a_report_of_a_two_agent_run_verifies_and_merges(run_cli: Cli, tmp_path: Path) -> None:
    # Its records carry who spoke (each step's and call's agent, the handoffs, the final
    # agent): verify and merge read them back as any other field of the report.
    root, agent = two_agent_project(tmp_path, answer="Nope")
    shard = run_cli(
        "eval", "run", "--agent", agent, "--shard", "1/1", "--json-report", "s.json", cwd=root
    )
    assert shard.returncode == 1, shard.stderr
    (case,) = json.loads((root / "s.json").read_text())["cases"]
    assert case["record"]["handoffs"] == [
        {"turn": 0, "step": 0, "source": "triage", "target": "billing"}
    ]
    assert [step["agent"] for step in case["record"]["transcript"]] == ["triage"] + ["billing"] * 2
    verified = run_cli("eval", "verify", "s.json", cwd=root)
    assert verified.returncode == 0, verified.stderr
    merged = run_cli("eval", "merge", "s.json", "--json-report", "m.json", cwd=root)
    assert merged.returncode == 1, merged.stderr  # the failing case fails the merged gate
    (kept,) = json.loads((root / "m.json").read_text())["cases"]
    assert kept["record"] == case["record"]


def test_a_repeated_case_graded_only_by_diagnostic_judge_grades_verifies(
    run_cli: Cli, tmp_path: Path
) -> None:
    rubric = {"name": "answers", "rubric": "The answer names the code.", "threshold": 0.5}
    case = live_case("say", "say: zc-answer-42", expects={"judge": [rubric]}, repeat=3)
    with OpenAIServer(responder=fair) as judge, OpenAIServer(responder=RightEvery(3)) as live:
        extra = (
            f'judge_base_url = "{judge.base_url}"\njudge_model = "judge-model"\n'
            f'judge_api_key_env = "{LIVE_KEY_ENV}"'
        )
        root = make_project(tmp_path, live.base_url, {"say.json": case}, extra=extra)
        result = run_cli(
            "eval", "run", "--suite", "evals/live", "--json-report", "report.json",
            "--record-judge", cwd=root, env={LIVE_KEY_ENV: LIVE_KEY},
        )  # fmt: skip
    assert "Traceback" not in result.stderr
    document = json.loads((root / "report.json").read_text("utf-8"))
    [say] = document["cases"]
    # No calibration: every run's only grade is diagnostic, so no run is decided.
    assert [r["passed"] for r in say["repeat"]["runs"]] == [False] * 3
    assert all(r["undecided"] and r["failed_checks"] == [] for r in say["repeat"]["runs"])
    honest = verify_live(run_cli, root / "report.json")
    assert honest.returncode == 0, honest.stderr

    def claim_decided(document: dict[str, Any]) -> None:
        document["cases"][0]["repeat"]["runs"][0]["undecided"] = False

    edit(root / "report.json", claim_decided)
    forged = verify_live(run_cli, root / "report.json")
    assert forged.returncode == 1
    assert "$.cases[0].repeat.runs[0].passed: " in forged.stderr
