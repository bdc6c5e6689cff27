"""Repeated live cases end to end: a loopback provider that answers correctly with a seeded
probability p, a case repeated 20 times, and the statistics the reports carry checked
against the formulas (Wilson; pass@k of Chen et al. 2021; pass^k of Yao et al. 2024)."""

from __future__ import annotations

import json
import math
import random
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _openai_server import Action, OpenAIServer, text_reply
from conftest import LIVE_KEY, LIVE_KEY_ENV, Cli, live_case, make_project

from harness.run import repeats
from harness.verdict.reports import CaseReport, RepeatStats


class CoinModel:
    """Answers `say: X` with X with probability p (seeded), else with something else; keeps
    what it did, in order."""

    def __init__(self, p: float, seed: int) -> None:
        self._p = p
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.correct: list[bool] = []

    def __call__(self, body: Any) -> Action:
        last = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        wanted = str(last["content"]).removeprefix("say: ")
        with self._lock:
            right = self._random.random() < self._p
            self.correct.append(right)
        return text_reply(wanted if right else "I would rather not")


def wilson(c: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = c / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def run_live(run_cli: Cli, root: Path, *args: str, code: int | None = None) -> dict[str, Any]:
    result = run_cli(
        "eval",
        "run",
        "--suite",
        "evals/live",
        "--format",
        "json",
        *args,
        cwd=root,
        env={LIVE_KEY_ENV: LIVE_KEY},
    )
    if code is not None:
        assert result.returncode == code, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


SAY = {"response_contains": ["zc-answer-42"]}


@pytest.mark.parametrize(("p", "seed"), [(0.7, 7), (0.5, 11), (0.9, 3)])
def test_twenty_runs_agree_with_the_formulas(
    run_cli: Cli, tmp_path: Path, p: float, seed: int
) -> None:
    model = CoinModel(p, seed)
    with OpenAIServer(responder=model) as server:
        root = make_project(
            tmp_path,
            server.base_url,
            {"coin.json": live_case("coin", "say: zc-answer-42", expects=SAY, repeat=20)},
        )
        document = run_live(run_cli, root)
    [case] = document["cases"]
    n, c = 20, sum(model.correct)
    assert len(model.correct) == n  # one request a run, every run isolated
    stats = case["repeat"]
    assert (stats["requested"], stats["completed"], stats["passes"]) == (n, n, c)
    assert stats["proportion"] == pytest.approx(c / n)
    assert stats["interval"] == pytest.approx(list(wilson(c, n)), abs=1e-12)
    for k in range(1, n + 1):
        assert stats["pass_at_k"][k - 1] == pytest.approx(
            1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12
        )
        assert stats["pass_hat_k"][k - 1] == pytest.approx(
            math.comb(c, k) / math.comb(n, k), abs=1e-12
        )
    assert [r["passed"] for r in stats["runs"]] == model.correct
    assert stats["flaky"] is (0 < c < n)
    # pass^n by default: a behaviour that works most of the time is not certified.
    assert case["passed"] is (c == n)
    assert document["totals"]["flaky"] == int(0 < c < n)
    assert document["exit_code"] == (0 if c == n else 1)
    if 0 < c < n:
        assert stats["flips"] == {'response_contains("zc-answer-42")': min(c, n - c)}


def test_a_case_may_declare_the_share_of_runs_that_must_pass(run_cli: Cli, tmp_path: Path) -> None:
    model = CoinModel(0.7, 7)
    cases = {
        "low.json": live_case(
            "low", "say: zc-answer-42", expects=SAY, repeat=20, min_pass_rate=0.5
        ),
        "high.json": live_case(
            "high", "say: zc-answer-42", expects=SAY, repeat=20, min_pass_rate=0.95
        ),
    }
    with OpenAIServer(responder=model) as server:
        document = run_live(run_cli, make_project(tmp_path, server.base_url, cases))
    high, low = document["cases"]  # fixture order: high.json, then low.json
    assert high["repeat"]["passes"] + low["repeat"]["passes"] == sum(model.correct)
    assert [r["passed"] for r in high["repeat"]["runs"]] == model.correct[:20]
    assert low["passed"] is (low["repeat"]["passes"] >= 10)
    assert high["passed"] is (high["repeat"]["passes"] >= 19)
    assert low["passed"] != high["passed"]  # the seed gives one of each
    assert low["repeat"]["min_pass_rate"] == 0.5


def test_repeat_on_the_command_line_overrides_the_fixtures(run_cli: Cli, tmp_path: Path) -> None:
    model = CoinModel(1.0, 1)
    cases = {"a.json": live_case("a", "say: zc-answer-42", expects=SAY, repeat=2)}
    with OpenAIServer(responder=model) as server:
        document = run_live(
            run_cli, make_project(tmp_path, server.base_url, cases), "--repeat", "5"
        )
    assert document["cases"][0]["repeat"]["requested"] == 5
    assert document["receipt"]["repeat"] == 5  # what makes the block admissible to verify
    assert len(model.correct) == 5
    assert document["exit_code"] == 0


def test_repetitions_run_concurrently_and_stay_in_order(run_cli: Cli, tmp_path: Path) -> None:
    model = CoinModel(1.0, 1)
    cases = {
        f"{i}.json": live_case(f"case-{i}", "say: zc-answer-42", expects=SAY, repeat=3)
        for i in range(4)
    }
    with OpenAIServer(responder=model) as server:
        document = run_live(
            run_cli, make_project(tmp_path, server.base_url, cases), "--jobs", "6", code=0
        )
    assert [c["id"] for c in document["cases"]] == [f"case-{i}" for i in range(4)]
    assert all(c["repeat"]["passes"] == 3 for c in document["cases"])


def test_zero_passes_of_many_runs_carries_the_broken_task_note(
    run_cli: Cli, tmp_path: Path
) -> None:
    model = CoinModel(0.0, 1)
    cases = {"a.json": live_case("a", "say: zc-answer-42", expects=SAY, repeat=5)}
    with OpenAIServer(responder=model) as server:
        document = run_live(run_cli, make_project(tmp_path, server.base_url, cases), code=1)
    note = document["cases"][0]["repeat"]["note"]
    assert note is not None and "broken task" in note


def test_clusters_count_as_one_unit_in_the_suites_interval(run_cli: Cli, tmp_path: Path) -> None:
    model = CoinModel(1.0, 1)
    cases = {
        "a.json": live_case("a", "say: zc-answer-42", expects=SAY, cluster="family"),
        "b.json": live_case("b", "say: zc-answer-42", expects=SAY, cluster="family"),
        "c.json": live_case("c", "say: zc-answer-42", expects=SAY),
    }
    with OpenAIServer(responder=model) as server:
        document = run_live(run_cli, make_project(tmp_path, server.base_url, cases), code=0)
    statistics = document["statistics"]
    assert (statistics["cases"], statistics["units"]) == (3, 2)
    assert statistics["pass_rate"] == 1.0
    assert (statistics["low"], statistics["high"]) == (1.0, 1.0)  # never NaN


def test_one_unit_leaves_the_interval_unavailable(run_cli: Cli, tmp_path: Path) -> None:
    model = CoinModel(1.0, 1)
    cases = {"a.json": live_case("a", "say: zc-answer-42", expects=SAY, repeat=3)}
    with OpenAIServer(responder=model) as server:
        document = run_live(run_cli, make_project(tmp_path, server.base_url, cases), code=0)
    statistics = document["statistics"]
    assert statistics["low"] is None and statistics["high"] is None
    assert "unavailable" in statistics["note"]


def test_a_token_count_no_statistic_can_hold_is_each_run_s_provider_error(
    run_cli: Cli, tmp_path: Path
) -> None:
    # 400 digits: past what a float holds, so means and spreads over the runs overflowed.
    huge = int("1" + "0" * 400)
    answer = text_reply("zc-answer-42", prompt_tokens=huge)
    with OpenAIServer(responder=lambda body: answer) as server:
        cases = {"a.json": live_case("a", "say: zc-answer-42", expects=SAY)}
        root = make_project(tmp_path, server.base_url, cases)
        result = run_cli(
            "eval", "run", "--suite", "evals/live", "--format", "json", "--repeat", "3",
            cwd=root, env={LIVE_KEY_ENV: LIVE_KEY},
        )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    [case] = json.loads(result.stdout)["cases"]
    assert case["error"].startswith("repeat 0/3 runs completed (pass^k not established): ")
    assert "usage.prompt_tokens: an integer of 401 digits is not a token count" in case["error"]
    assert case["repeat"]["tokens_mean"] == 0.0


# --- combining runs, without a provider --------------------------------------------------


def run_report(passed: bool, error: str | None = None) -> CaseReport:
    if error is not None:
        return CaseReport.errored("c", "c.json", error, None)
    from harness.expectations.base import Grade
    from harness.run_record import RunRecord

    grade = Grade("check", passed, "seen" if passed else "missing", "response")
    return CaseReport.graded("c", "c.json", [grade], RunRecord(final_response="x"))


def test_a_run_error_in_one_repetition_establishes_nothing(tmp_path: Path) -> None:
    from conftest import case_of, live_trace

    case = case_of(live_trace(repeat=3))
    combined = repeats.combine(case, [run_report(True), run_report(True, "boom"), run_report(True)])
    assert not combined.passed
    assert combined.error == "repeat 2/3 runs completed (pass^k not established): boom"
    stats = combined.repeat
    assert isinstance(stats, RepeatStats)
    assert stats.pass_hat_k is None  # a truncated set never establishes pass^k
    assert stats.completed == 2 and stats.passes == 2
    assert [r.error for r in stats.runs] == [None, "boom", None]


def test_the_shown_run_is_the_first_failing_one() -> None:
    from conftest import case_of, live_trace

    case = case_of(live_trace(repeat=3))
    runs = [run_report(True), run_report(False), run_report(False)]
    combined = repeats.combine(case, runs)
    assert not combined.passed and combined.grades == runs[1].grades
    assert combined.repeat is not None and combined.repeat.flaky


def test_a_check_graded_only_when_it_fails_flips_too() -> None:
    from conftest import case_of, live_trace

    from harness.expectations.base import Grade
    from harness.run_record import RunRecord

    def run(*grades: Grade) -> CaseReport:
        return CaseReport.graded("c", "c.json", list(grades), RunRecord(final_response="x"))

    steady = Grade("check", True, "seen", "response")
    broken = Grade("loop(tool_result_fed_back)", False, "dropped", "loop")
    case = case_of(live_trace(repeat=3))
    combined = repeats.combine(case, [run(steady), run(steady, broken), run(steady)])
    assert combined.repeat is not None
    # A loop rule is graded only in the run that broke it: one run of three flipped.
    assert combined.repeat.flips == {"loop(tool_result_fed_back)": 1}
    assert repeats.stats_of(combined.repeat.runs, None) == combined.repeat


def test_a_repeated_run_errors_frames_are_those_of_the_run_it_names() -> None:
    from conftest import case_of, live_trace

    from harness.verdict.reports import ErrorFrame

    case = case_of(live_trace(repeat=3))
    frames = [ErrorFrame(file="agent.py", line=3, function="run_turn")]
    boom = msgspec.structs.replace(run_report(True, "boom"), error_frames=frames)
    other = msgspec.structs.replace(run_report(True, "other"), error_frames=[])
    # The first failing run (the one shown) passed no error; the error said is "boom"'s.
    combined = repeats.combine(case, [run_report(False), boom, other])
    assert combined.error is not None and combined.error.endswith(": boom")
    assert combined.error_frames == frames
