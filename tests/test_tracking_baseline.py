"""Baselines: written without transcripts, compared case by case, refused when bad, and a
confirmed regression failing the gate of any suite kind (`--fail-on-regression`)."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import (
    DROPPING_LOOP,
    EXPLODING_LOOP,
    FAITHFUL_LOOP,
    REPO,
    Cli,
    case_of,
    echo_fixture,
    failing_fixture,
    fixture,
    greeting_fixture,
    passing_report,
    project,
    suite_report,
    text_step,
    turn,
    write_fixture,
    write_module,
)

from harness.errors import ExitCode
from harness.expectations.base import Grade
from harness.fixtures.schema import fixture_hash
from harness.run.repeats import combine
from harness.run_record import RunRecord
from harness.tracking.baseline import (
    SCHEMA,
    BaselineError,
    BaselineRefused,
    baseline_of,
    compare,
    load_baseline,
    summary,
    write_baseline,
)
from harness.verdict.policy import regression_gate
from harness.verdict.reports import CaseReport, SuiteReport
from harness.verdict.statistics import fisher_one_sided

SUITE = "evals/capability"
BASELINE = "evals/baselines/capability.json"
COMMITTED = REPO / BASELINE


# --- the exact test ---------------------------------------------------------------------


def _brute_force(c1: int, n1: int, c2: int, n2: int) -> float:
    """P(the second group holds c2 or fewer successes) over every way of splitting the
    pooled runs into groups of n1 and n2: the permutation test Fisher's test is."""
    pooled = [True] * (c1 + c2) + [False] * (n1 + n2 - c1 - c2)
    splits = list(itertools.combinations(range(n1 + n2), n2))
    low = sum(sum(pooled[i] for i in second) <= c2 for second in splits)
    return low / len(splits)


@pytest.mark.parametrize(
    ("n1", "n2"), [(1, 1), (1, 5), (3, 3), (5, 4), (6, 6), (2, 9), (7, 5)]
)  # fmt: skip
def test_fisher_agrees_with_enumerating_every_split(n1: int, n2: int) -> None:
    for c1 in range(n1 + 1):
        for c2 in range(n2 + 1):
            assert math.isclose(
                fisher_one_sided(c1, n1, c2, n2), _brute_force(c1, n1, c2, n2), rel_tol=1e-12
            ), (c1, n1, c2, n2)


def test_fisher_known_values_and_edges() -> None:
    assert fisher_one_sided(10, 10, 9, 10) == pytest.approx(0.5)  # 10 of 20 splits
    assert fisher_one_sided(10, 10, 2, 10) == pytest.approx(45 / math.comb(20, 8))
    assert fisher_one_sided(3, 10, 8, 10) > 0.99  # a rise is no evidence of a drop
    assert fisher_one_sided(5, 5, 0, 0) == fisher_one_sided(0, 0, 0, 3) == 1.0
    # Exact however many runs: a tiny p-value keeps its digits.
    assert fisher_one_sided(50, 50, 0, 50) == pytest.approx(1 / math.comb(100, 50), rel=1e-12)
    for bad in [(2, 1, 0, 1), (-1, 1, 0, 1), (0, 1, 2, 1), (0, -1, 0, 1)]:
        with pytest.raises(ValueError):
            fisher_one_sided(*bad)


def test_the_gate_fails_only_on_confirmed_regressions_when_asked() -> None:
    assert regression_gate(ExitCode.PASSED, 1, True) == ExitCode.FAILED
    assert regression_gate(ExitCode.PASSED, 1, False) == ExitCode.PASSED
    assert regression_gate(ExitCode.PASSED, 0, True) == ExitCode.PASSED
    assert regression_gate(ExitCode.FAILED, 0, True) == ExitCode.FAILED


# --- a project, written and compared through the command line ---------------------------


def _capability(tmp_path: Path, fixtures: dict[str, Any] | None = None) -> Path:
    return project(
        tmp_path,
        fixtures
        if fixtures is not None
        else {"a_echo.json": echo_fixture("echo-case"), "b_hi.json": greeting_fixture("hi-case")},
        suite=SUITE,
    )


def _run(run_cli: Cli, root: Path, *args: str | Path) -> Any:
    return run_cli("eval", "run", *args, cwd=root)


def _loop(root: Path, source: str = FAITHFUL_LOOP) -> str:
    return f"{write_module(root, source)}:factory"


def _written(run_cli: Cli, root: Path, *args: str) -> dict[str, Any]:
    result = _run(run_cli, root, "--write-baseline", BASELINE, *args)
    assert result.returncode == 0, result.stderr
    return dict(json.loads((root / BASELINE).read_text("utf-8")))


def test_a_baseline_is_written_without_transcripts_and_compares_unchanged(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = _capability(tmp_path)
    document = _written(run_cli, root)
    assert document["schema"] == SCHEMA
    assert (document["suite"], document["kind"], document["mode"]) == (
        SUITE,
        "capability",
        "replay",
    )
    assert document["receipt"]["provider"] == "scripted"
    echo, hi = document["cases"]
    assert echo == {
        "id": "echo-case",
        "fixture": f"{SUITE}/a_echo.json",
        "fixture_sha256": fixture_hash((root / SUITE / "a_echo.json").read_text("utf-8")),
        "verdict": "passed",
        "passes": 1,
        "runs": 1,
        "failed_categories": [],
        "tokens": 64,
        "input_tokens": 50,  # 20 + 30 scripted
        "output_tokens": 14,  # 8 + 6
        "tool_surface": ["echo", "fail", "list_files", "read_file", "write_file"],
    }
    assert hi["id"] == "hi-case" and hi["verdict"] == "passed"
    text = (root / BASELINE).read_text("utf-8")
    for private in ("The echo tool said", "Echo hello for me", "transcript", str(tmp_path)):
        assert private not in text
    compared = _run(
        run_cli, root, "--baseline", BASELINE, "--fail-on-regression", "--json-report", "r.json"
    )
    assert compared.returncode == 0, compared.stderr
    assert f"zeroclaw eval: against {BASELINE}: 2 unchanged (tokens +0)" in compared.stderr
    report = json.loads((root / "r.json").read_text("utf-8"))
    assert [(c["id"], c["status"], c["token_delta"]) for c in report["baseline"]["cases"]] == [
        ("echo-case", "unchanged", 0),
        ("hi-case", "unchanged", 0),
    ]
    assert report["baseline"]["counts"]["unchanged"] == 2
    assert report["receipt"]["policy"]["fail_on_regression"] is True
    assert all(c["tool_surface"] is not None for c in report["cases"])


def test_a_broken_case_is_a_regression_gated_only_with_the_flag(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = _capability(tmp_path)
    _written(run_cli, root, "--agent", _loop(root))
    # The same fixtures through a loop that never dispatches a tool: the echo case breaks.
    broken = _loop(root, DROPPING_LOOP)
    tracked = _run(run_cli, root, "--agent", broken, "--baseline", BASELINE)
    assert tracked.returncode == 0, tracked.stderr  # a capability suite: not gated
    line = f"against {BASELINE}: 1 confirmed regression (echo-case: loop, tool), 1 unchanged"
    assert line in tracked.stderr
    gated = _run(
        run_cli, root, "--agent", broken, "--baseline", BASELINE, "--fail-on-regression",
        "--format", "json",
    )  # fmt: skip
    assert gated.returncode == 1
    assert "1 confirmed regression (echo-case: loop, tool)" in gated.stderr
    assert "--fail-on-regression: the gate fails" in gated.stderr
    document = json.loads(gated.stdout)
    assert document["exit_code"] == 1
    regression = document["baseline"]["cases"][0]
    assert (regression["status"], regression["confirmed"], regression["categories"]) == (
        "regression",
        True,
        ["loop", "tool"],
    )
    assert document["baseline"]["confirmed_regressions"] == ["echo-case"]


def test_a_pass_rate_drop_without_a_case_regression_passes_the_gate(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = _capability(tmp_path)
    agent = _loop(root)
    _written(run_cli, root, "--agent", agent)
    write_fixture(root / SUITE, "c_new.json", failing_fixture("new-failing"))
    (root / SUITE / "b_hi.json").unlink()
    result = _run(run_cli, root, "--agent", agent, "--baseline", BASELINE, "--fail-on-regression")
    assert result.returncode == 0, result.stderr
    assert f"against {BASELINE}: 1 new, 1 removed, 1 unchanged (tokens +0)" in result.stderr


def test_a_changed_fixture_is_unverifiable_not_a_regression(run_cli: Cli, tmp_path: Path) -> None:
    root = _capability(tmp_path)
    agent = _loop(root)
    _written(run_cli, root, "--agent", agent)
    changed = echo_fixture("echo-case")
    changed["expects"]["response_contains"] = ["not said"]  # now it fails
    write_fixture(root / SUITE, "a_echo.json", changed)
    result = _run(
        run_cli, root, "--agent", agent, "--baseline", BASELINE, "--fail-on-regression",
        "--json-report", "r.json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "1 unverifiable (echo-case)" in result.stderr
    assert "refresh the baseline" in result.stderr
    case = json.loads((root / "r.json").read_text("utf-8"))["baseline"]["cases"][0]
    assert case["status"] == "unverifiable"
    assert case["why"].startswith("the fixture changed (sha256 ")


def test_a_changed_provider_or_tool_surface_is_unverifiable(run_cli: Cli, tmp_path: Path) -> None:
    root = _capability(tmp_path)
    agent = _loop(root)
    document = _written(run_cli, root, "--agent", agent)
    document["cases"][0]["tool_surface"] = ["echo"]
    document["receipt"]["provider"] = "api.example.test/other-model"
    (root / BASELINE).write_text(json.dumps(document), encoding="utf-8")
    result = _run(
        run_cli, root, "--agent", agent, "--baseline", BASELINE, "--json-report", "r.json"
    )
    assert result.returncode == 0, result.stderr
    echo, hi = json.loads((root / "r.json").read_text("utf-8"))["baseline"]["cases"]
    assert echo["status"] == hi["status"] == "unverifiable"
    assert (
        "the provider changed (api.example.test/other-model in the baseline, scripted now)"
        in (echo["why"])
    )
    assert "the tool surface changed (+fail, +list_files, +read_file, +write_file)" in echo["why"]
    assert "tool surface" not in hi["why"]


def test_a_run_error_now_is_an_error(run_cli: Cli, tmp_path: Path) -> None:
    explode = fixture(
        "boom-case", [turn("explode now", text_step("fine"))], {"response_contains": ["fine"]}
    )
    root = _capability(tmp_path, {"a_boom.json": explode, "b_hi.json": greeting_fixture("hi-case")})
    _written(run_cli, root, "--agent", _loop(root))
    result = _run(
        run_cli, root, "--agent", _loop(root, EXPLODING_LOOP), "--baseline", BASELINE,
        "--json-report", "r.json",
    )  # fmt: skip
    assert result.returncode == 1  # a run error fails every suite kind
    assert "1 run error (boom-case)" in result.stderr
    case = json.loads((root / "r.json").read_text("utf-8"))["baseline"]["cases"][0]
    assert (case["status"], case["why"]) == ("error", "a run error now (baseline: passed)")


def test_writing_is_refused_naming_the_cases_without_a_record(run_cli: Cli, tmp_path: Path) -> None:
    root = _capability(
        tmp_path,
        {
            "a_bad.json": failing_fixture("bad-case"),
            "b_echo.json": echo_fixture("echo-case"),
            "c_hi.json": greeting_fixture("hi-case"),
        },
    )
    result = _run(
        run_cli, root, "--agent", _loop(root), "--maxfail", "1", "--write-baseline", BASELINE,
        "--json-report", "r.json",
    )  # fmt: skip
    assert result.returncode == 1
    assert (
        f"zeroclaw eval: {BASELINE}: cannot write baseline: no run record for case(s) "
        "'echo-case', 'hi-case'"
    ) in result.stderr
    assert not (root / BASELINE).exists()
    assert (root / "r.json").exists()  # the other reports are still written


def test_a_report_without_records_is_refused_by_the_api(tmp_path: Path) -> None:
    report = suite_report(
        "capability", passing_report("ok"), CaseReport.unrun("later", "x.json", "maxfail")
    )
    with pytest.raises(BaselineRefused, match=r"b\.json: cannot write baseline: .* 'later'"):
        write_baseline(report, tmp_path / "b.json")
    assert not (tmp_path / "b.json").exists()
    good = suite_report("capability", passing_report("ok"))
    write_baseline(good, tmp_path / "b.json")
    assert load_baseline(tmp_path / "b.json") == baseline_of(good)


# --- bad baselines ------------------------------------------------------------------------


def _document(**changes: Any) -> dict[str, Any]:
    case = {
        "id": "a", "fixture": "a.json", "fixture_sha256": None, "verdict": "passed",
        "passes": 1, "runs": 1,
    }  # fmt: skip
    document = {
        "schema": SCHEMA, "suite": SUITE, "kind": "capability", "mode": "replay",
        "agent": "openai-agents", "cases": [case],
    }  # fmt: skip
    document.update(changes)
    return document


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", f"{BASELINE}: not a baseline: not JSON"),
        # Deeper than any parser follows: refused as any other unreadable JSON.
        (
            '{"schema": "' + SCHEMA + '", "cases": ' + "[" * 100_000 + "]" * 100_000 + "}",
            f"{BASELINE}: not a baseline: not JSON (JSON nested too deeply to be read)",
        ),
        (
            json.dumps(_document(schema="zeroclaw-eval/baseline/v9")),
            f"{BASELINE}: $.schema: not a {SCHEMA} baseline (found 'zeroclaw-eval/baseline/v9')",
        ),
        (json.dumps([1]), f"{BASELINE}: $.schema: not a {SCHEMA} baseline (found None)"),
        (
            json.dumps(_document(cases=[_document()["cases"][0]] * 2)),
            f"{BASELINE}: $.cases[1].id: duplicate case id 'a', also at $.cases[0].id",
        ),
        (
            json.dumps(_document(cases=[{**_document()["cases"][0], "id": " "}])),
            f"{BASELINE}: $.cases[0].id: empty case id",
        ),
        (
            json.dumps(_document(cases=[{**_document()["cases"][0], "verdict": "great"}])),
            f"{BASELINE}: not a valid baseline: Invalid enum value 'great' - at "
            "`$.cases[0].verdict`",
        ),
        (
            json.dumps(_document(cases=[{**_document()["cases"][0], "passes": 2}])),
            f"{BASELINE}: $.cases[0].passes: 2 of 1 runs: need 0 <= passes <= runs",
        ),
        (
            json.dumps(_document(cases=[{**_document()["cases"][0], "passes": 51, "runs": 51}])),
            f"{BASELINE}: not a valid baseline: Expected `int` <= 50 - at `$.cases[0].passes`",
        ),
        (
            json.dumps(_document(cases=[{**_document()["cases"][0], "tokens": -1}])),
            f"{BASELINE}: not a valid baseline: Expected `int` >= 0 - at `$.cases[0].tokens`",
        ),
        (
            json.dumps(_document(cases=[{**_document()["cases"][0], "tokens": 10**400}])),
            f"{BASELINE}: not a valid baseline: Expected `int` <= {2**63 - 1} - at "
            "`$.cases[0].tokens`",
        ),
        (
            json.dumps(_document(cases=[{**_document()["cases"][0], "checks": {}}])),
            f"{BASELINE}: not a valid baseline: Object contains unknown field `checks` - at "
            "`$.cases[0]`",
        ),
    ],
)
def test_a_bad_baseline_is_refused_before_anything_runs(
    run_cli: Cli, tmp_path: Path, content: str, message: str
) -> None:
    root = _capability(tmp_path)
    (root / "evals" / "baselines").mkdir()
    (root / BASELINE).write_text(content, encoding="utf-8")
    # The agent's module leaves a mark when imported: nothing may get that far.
    agent = _loop(root, "import pathlib\npathlib.Path('imported').touch()\n" + FAITHFUL_LOOP)
    result = _run(
        run_cli, root, "--agent", agent, "--baseline", BASELINE, "--json-report", "r.json"
    )
    assert result.returncode == 1
    assert message in result.stderr
    assert not (root / "imported").exists() and not (root / "r.json").exists()


def test_a_missing_baseline_and_misused_flags_are_refused(run_cli: Cli, tmp_path: Path) -> None:
    root = _capability(tmp_path)
    missing = _run(run_cli, root, "--baseline", "nowhere.json")
    assert missing.returncode == 1
    assert "nowhere.json: cannot read baseline: cannot stat:" in missing.stderr
    assert "(write one with --write-baseline FILE)" in missing.stderr
    alone = _run(run_cli, root, "--fail-on-regression")
    assert alone.returncode == 2
    assert "--fail-on-regression needs --baseline FILE" in alone.stderr
    level = _run(run_cli, root, "--regression-level", "0.1")
    assert level.returncode == 2 and "--regression-level applies to a comparison" in level.stderr
    assert _run(run_cli, root, "--baseline", "x", "--regression-level", "1").returncode == 2
    with pytest.raises(BaselineError, match="not a baseline: not JSON"):
        (tmp_path / "b.json").write_text("", encoding="utf-8")
        load_baseline(tmp_path / "b.json")


# --- repeats --------------------------------------------------------------------------------


def _repeated(case_id: str, passes: int, runs: int) -> SuiteReport:
    good = Grade("c", True, "found", "response")
    bad = Grade("c", False, "missing", "response")
    reports = [
        CaseReport.graded(
            case_id, f"{SUITE}/{case_id}.json", [good if i < passes else bad], RunRecord()
        )
        for i in range(runs)
    ]
    case = combine(case_of(echo_fixture(case_id)), reports)
    return suite_report("capability", case)


def _gated(report: SuiteReport, before: SuiteReport, level: float = 0.05) -> SuiteReport:
    comparison = compare(baseline_of(before), report, level, BASELINE)
    return msgspec.structs.replace(report, baseline=comparison, fail_on_regression=True)


def test_a_small_drop_over_repeats_is_an_unconfirmed_regression() -> None:
    before = _repeated("flaky", 10, 10)
    now = _gated(_repeated("flaky", 9, 10), before)
    assert now.baseline is not None
    (case,) = now.baseline.cases
    assert (case.status, case.confirmed) == ("regression", False)
    assert case.p_value == pytest.approx(0.5)
    assert now.baseline.unconfirmed_drops == ["flaky"] and now.baseline.confirmed_regressions == []
    assert now.exit_code() == ExitCode.PASSED
    assert summary(now.baseline, True) == (
        f"against {BASELINE}: 1 unconfirmed drop (flaky: p = 0.5); over repeated runs a drop "
        "is confirmed at p < 0.05 (one-sided Fisher exact test)"
    )
    # At a level the p-value is under, the same drop is confirmed.
    assert _gated(_repeated("flaky", 9, 10), before, level=0.6).exit_code() == ExitCode.FAILED


def test_a_big_drop_over_repeats_is_a_confirmed_regression() -> None:
    before = _repeated("sliding", 10, 10)
    now = _gated(_repeated("sliding", 2, 10), before)
    assert now.baseline is not None
    (case,) = now.baseline.cases
    assert (case.status, case.confirmed, case.categories) == ("regression", True, ["response"])
    assert case.p_value is not None and case.p_value < 0.05
    assert case.p_value == pytest.approx(fisher_one_sided(10, 10, 2, 10))
    assert "pass proportion 10/10 in the baseline, 2/10 now" in case.why
    assert now.exit_code() == ExitCode.FAILED
    assert baseline_of(before).cases[0].passes == 10 and baseline_of(before).cases[0].runs == 10


def test_a_collapse_of_a_case_already_failing_under_pass_n_is_a_regression() -> None:
    # 19/20 already fails pass^n; falling to 0/20 is still the regression to catch.
    before = _repeated("collapsing", 19, 20)
    now = _gated(_repeated("collapsing", 0, 20), before)
    assert now.baseline is not None
    (case,) = now.baseline.cases
    assert (case.status, case.confirmed) == ("regression", True)
    assert now.exit_code() == ExitCode.FAILED
    steady = _gated(_repeated("collapsing", 19, 20), before)
    assert steady.baseline is not None and steady.baseline.cases[0].status == "unchanged"


# --- the committed capability baseline ------------------------------------------------------


def test_the_committed_baseline_is_the_capability_suite_as_it_is() -> None:
    baseline = load_baseline(COMMITTED)
    assert (baseline.suite, baseline.kind, baseline.mode) == (SUITE, "capability", "replay")
    assert baseline.receipt is not None and baseline.receipt.provider == "scripted"
    on_disk = {
        f"{SUITE}/{p.name}": fixture_hash(p.read_text("utf-8"))
        for p in sorted((REPO / SUITE).glob("*.json"))
    }
    # A fixture edited without refreshing the baseline would make its case unverifiable.
    assert {c.fixture: c.fixture_sha256 for c in baseline.cases} == on_disk
    assert all(c.verdict == "passed" for c in baseline.cases)
    text = COMMITTED.read_text("utf-8")
    assert str(REPO) not in text and '"/' not in text


def _capability_copy(tmp_path: Path) -> Path:
    """The capability suite with its judge (the recorded replies, the calibration and the
    repository's judge settings), as `nox -s eval_capability` runs it."""
    root = tmp_path / "project"
    shutil.copytree(REPO / SUITE, root / SUITE)
    shutil.copytree(REPO / "evals" / "judge", root / "evals" / "judge")
    judge = [
        line
        for line in (REPO / "pyproject.toml").read_text("utf-8").splitlines()
        if line.startswith("judge_")
    ]
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.zeroclaw.eval]\n' + "\n".join(judge) + "\n",
        encoding="utf-8",
    )
    return root


def test_a_broken_capability_case_fails_the_gate_against_the_committed_baseline(
    run_cli: Cli, tmp_path: Path
) -> None:
    # `nox -s eval_capability -- --fail-on-regression`, on a copy of the suite, run by a
    # loop that breaks one case's final answer and runs every other case faithfully.
    root = _capability_copy(tmp_path)
    broken = FAITHFUL_LOOP.replace(
        "                return step.text",
        "                if self.ctx.case_id == 'long-chain-eight-echoes':\n"
        "                    return step.text + ' (and more)'\n"
        "                return step.text",
    )
    assert broken != FAITHFUL_LOOP
    command = (
        "--suite", SUITE, "--suite-kind", "capability", "--baseline", COMMITTED,
        "--agent", _loop(root, broken),
    )  # fmt: skip
    gated = _run(run_cli, root, *command, "--fail-on-regression")
    assert gated.returncode == 1, gated.stderr
    assert "1 confirmed regression (long-chain-eight-echoes: response)" in gated.stderr
    assert f"{len(load_baseline(COMMITTED).cases) - 1} unchanged" in gated.stderr
    assert _run(run_cli, root, *command).returncode == 0  # tracked: not gated without it


def test_a_capability_pass_rate_drop_without_a_regression_passes_the_gate(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = _capability_copy(tmp_path)
    write_fixture(root / SUITE, "zz_new_failing.json", failing_fixture("new-failing"))
    result = _run(
        run_cli, root, "--suite", SUITE, "--suite-kind", "capability", "--baseline", COMMITTED,
        "--fail-on-regression",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"1 new, {len(load_baseline(COMMITTED).cases)} unchanged" in result.stderr
    assert "regression" not in result.stderr


# --- judge grades: keyed by the judge setup and its gate -----------------------------------

JUDGE_RUBRIC = {"name": "names-capital", "rubric": "It names the capital.", "threshold": 0.5}


def _judged_project(tmp_path: Path, base_url: str) -> Path:
    """A capability suite of one case decided by its judge rubric alone, its reply recorded
    and its rubric calibrated to gate under `judge-model`."""
    from harness.expectations.judge import Rubric
    from harness.judge.calibration import CalibrationFile, Confusion, calibrated
    from harness.judge.service import JudgeSetup

    root = project(
        tmp_path,
        {"a.json": fixture("paris", [turn("Capital?", text_step("Paris."))],
                           {"judge": [JUDGE_RUBRIC]})},
        SUITE,
    )  # fmt: skip
    with (root / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(f'judge_base_url = "{base_url}"\njudge_model = "judge-model"\n')
    setup = JudgeSetup(base_url, "judge-model").setup_hash(msgspec.convert(JUDGE_RUBRIC, Rubric))
    entry = calibrated("names-capital", setup, Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24))
    folder = root / SUITE / "judge"
    folder.mkdir(parents=True)
    (folder / "calibration.json").write_bytes(
        msgspec.json.encode(CalibrationFile(rubrics={"names-capital": entry}))
    )
    return root


@pytest.mark.parametrize("change", ["calibration", "model"])
def test_a_judge_change_is_unverifiable_never_the_agent_s_regression(
    run_cli: Cli, tmp_path: Path, change: str
) -> None:
    from _judge_server import fair
    from _openai_server import OpenAIServer

    with OpenAIServer(responder=fair) as server:
        root = _judged_project(tmp_path, server.base_url)
        env = {"OPENAI_API_KEY": "sk-judge"}
        recorded = run_cli("eval", "run", "--record-judge", cwd=root, env=env)
        assert recorded.returncode == 0, recorded.stderr
        written = _run(run_cli, root, "--write-baseline", BASELINE)
        assert written.returncode == 0, written.stderr
        baseline = json.loads((root / BASELINE).read_text("utf-8"))
        [key] = baseline["cases"][0]["judge"].values()
        assert key.endswith("/gated")
        if change == "calibration":  # the calibration is gone: the rubric is diagnostic
            (root / SUITE / "judge" / "calibration.json").unlink()
        else:  # another judge model: a new setup, whose reply is recorded anew
            text = (root / "pyproject.toml").read_text("utf-8")
            (root / "pyproject.toml").write_text(text.replace("judge-model", "judge-2"), "utf-8")
            run_cli("eval", "run", "--record-judge", cwd=root, env=env)
    result = _run(
        run_cli, root, "--baseline", BASELINE, "--fail-on-regression", "--json-report", "r.json"
    )
    # The case no longer passes (no check decides it), and that is the judge's doing.
    assert result.returncode == 0, result.stderr
    report = json.loads((root / "r.json").read_text("utf-8"))
    assert not report["cases"][0]["passed"]
    [case] = report["baseline"]["cases"]
    assert case["status"] == "unverifiable", case
    said = "gated then, diagnostic now" if change == "calibration" else "setup "
    assert case["why"].startswith("the judge changed (names-capital: ") and said in case["why"]
    assert report["baseline"]["confirmed_regressions"] == []
