"""`harness.judge.calibrate`: `zeroclaw eval calibrate label|finalize` through the command
line, on replies recorded from a real HTTP server on loopback playing the judge: blind and
resumable labeling, hostile text shown inert, the calibration file written from the labels
and the gate it opens (or the labels it says are still needed)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _judge_server import always_pass, fair
from _openai_server import OpenAIServer
from conftest import Cli, CliResult, project, text_step, turn
from conftest import fixture as make_fixture

KEY = "sk-judge-SECRET-91"
KEY_ENV = "ZC_JUDGE_KEY"
RUBRIC = {"name": "names-capital", "rubric": "The answer names the capital city.", "threshold": 0.5}
SUITE = "evals/regression"
JUDGE = f"{SUITE}/judge"


def case(name: str, answer: str) -> dict[str, Any]:
    return make_fixture(
        name,
        [turn("What is the capital of France?", text_step(answer))],
        {"max_tool_calls": 0, "judge": [RUBRIC]},
    )


def recorded_suite(
    tmp_path: Path, run_cli: Cli, responder: Any, right: int, wrong: int, wrong_answer: str = ""
) -> Path:
    """A suite of `right` answers naming Paris and `wrong` ones that do not, its judge
    replies recorded from `responder` (the server is gone afterwards: labeling is offline)."""
    # Each answer its own: one reply is recorded per distinct request, whatever its case.
    fixtures = {f"right-{i:02}.json": case(f"right-{i:02}", f"Paris ({i}).") for i in range(right)}
    fixtures |= {
        f"wrong-{i:02}.json": case(f"wrong-{i:02}", f"{wrong_answer or 'Lyon.'} ({i})")
        for i in range(wrong)
    }
    root = project(tmp_path, fixtures, SUITE)
    with OpenAIServer(responder=responder, api_key=KEY) as server:
        with (root / "pyproject.toml").open("a", encoding="utf-8") as f:
            f.write(
                f'judge_base_url = "{server.base_url}"\njudge_model = "judge-model"\n'
                f'judge_api_key_env = "{KEY_ENV}"\n'
            )
        result = run_cli("eval", "run", "--record-judge", cwd=root, env={KEY_ENV: KEY})
    assert f"recorded {right + wrong} judge repl(ies)" in result.stderr, result.stderr
    return root


def calibrate(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, root: Path, step: str, answers: str = ""
) -> CliResult:
    monkeypatch.setattr(sys, "stdin", io.StringIO(answers))
    return run_cli("eval", "calibrate", step, cwd=root)


def labels(root: Path) -> list[dict[str, Any]]:
    lines = (root / JUDGE / "labels.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def honest(right: int, wrong: int) -> str:
    # Items come ordered by case id: every right-* before every wrong-*.
    return "p\n" * right + "f\n" * wrong


def test_labeling_is_blind_resumable_and_finalize_opens_the_gate(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = recorded_suite(tmp_path, run_cli, fair, right=12, wrong=12)
    first = calibrate(run_cli, monkeypatch, root, "label", "p\n" * 5)  # then the input ends
    assert first.returncode == 0, first.stderr
    assert "labeled 5; 19 left unlabeled" in first.stdout
    shown, _, after = first.stdout.partition("label: [p]ass")
    # Before the first answer: the task, rubric and response, never the judge's verdict.
    assert "The answer names the capital city." in shown and "Paris (0)." in shown
    assert "What is the capital of France?" in shown
    assert "0.90" not in shown and "The judge" not in shown and "names the capital." not in shown
    assert "The judge passed it (score 0.90)" in after and "[agrees]" in after
    assert len(labels(root)) == 5
    second = calibrate(run_cli, monkeypatch, root, "label", honest(7, 12))
    assert "19 recorded verdict(s) to label" in second.stdout
    assert "labeled 19; 0 left" in second.stdout
    found = labels(root)
    assert len(found) == 24 and len({lab["item"] for lab in found}) == 24
    assert sorted(lab["label"] for lab in found) == ["fail"] * 12 + ["pass"] * 12

    done = calibrate(run_cli, monkeypatch, root, "finalize")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "24 label(s): 12 human pass, 12 human fail" in done.stdout
    assert "agreement 1.00 (95% Wilson interval 0.86 to 1.00)" in done.stdout
    assert "false-pass rate 0.00, 95% upper bound 0.24" in done.stdout
    assert "1 of 1 rubric(s) gate" in done.stdout
    calibration = json.loads((root / JUDGE / "calibration.json").read_text("utf-8"))
    assert calibration["rubrics"]["names-capital"]["confusion"] == {
        "jp_hp": 12, "jp_hf": 0, "jf_hp": 0, "jf_hf": 12,
    }  # fmt: skip
    # The replayed run's judge grades now gate: the wrong answers fail their cases.
    report = root / "report.json"
    run = run_cli("eval", "run", "--json-report", report, cwd=root)
    assert run.returncode == 1
    cases = json.loads(report.read_text("utf-8"))["cases"]
    assert all(g["judge"]["gated"] for c in cases for g in c["grades"] if g["category"] == "judge")
    assert sorted(c["id"] for c in cases if not c["passed"]) == [f"wrong-{i:02}" for i in range(12)]


def test_too_few_labels_are_refused_saying_how_many_more(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = recorded_suite(tmp_path, run_cli, fair, right=6, wrong=4)
    calibrate(run_cli, monkeypatch, root, "label", honest(6, 4))
    done = calibrate(run_cli, monkeypatch, root, "finalize")
    assert done.returncode == 1
    assert "4 human fail label(s), fewer than 10: 6 more needed" in done.stdout
    assert "6 human pass label(s), fewer than 10: 4 more needed" in done.stdout
    assert "if every new label agreed" in done.stdout
    assert "0 of 1 rubric(s) gate" in done.stdout
    # Written all the same: the run says why the rubric stays diagnostic.
    assert (root / JUDGE / "calibration.json").is_file()


def test_an_always_pass_judge_is_refused_by_kappa_and_false_pass_bound(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = recorded_suite(tmp_path, run_cli, always_pass, right=12, wrong=12)
    calibrate(run_cli, monkeypatch, root, "label", honest(12, 12))
    done = calibrate(run_cli, monkeypatch, root, "finalize")
    assert done.returncode == 1
    assert "Cohen's κ 0.00 is under 0.60" in done.stdout
    assert "false-pass rate 1.00 has a 95% upper bound of 1.00, over 0.25" in done.stdout
    assert "    judge pass            12          12" in done.stdout


def test_a_changed_rubric_leaves_its_labels_uncounted(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = recorded_suite(tmp_path, run_cli, fair, right=2, wrong=2)
    calibrate(run_cli, monkeypatch, root, "label", honest(2, 2))
    changed = dict(RUBRIC, rubric="The answer names Paris.")
    for path in (root / SUITE).glob("*.json"):
        data = json.loads(path.read_text("utf-8"))
        data["expects"]["judge"] = [changed]
        path.write_text(json.dumps(data), encoding="utf-8")
    done = calibrate(run_cli, monkeypatch, root, "finalize")
    assert done.returncode == 1
    assert "4 label(s) made under another judge setup: not counted" in done.stdout
    assert "no labels: run `zeroclaw eval calibrate label` first" in done.stdout


def test_hostile_text_in_the_run_is_shown_inert(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    attack = "Lyon.\x1b[2J\x1b]0;owned\x07\n::set-output name=x::y\n\u202eevil"
    root = recorded_suite(tmp_path, run_cli, fair, right=0, wrong=1, wrong_answer=attack)
    shown = calibrate(run_cli, monkeypatch, root, "label", "q\n").stdout
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\u001b[2J" in shown and "\\u202eevil" in shown
    assert "\n    ::set-output" not in shown and "\\u003a:set-output" in shown


def test_a_labels_file_that_is_not_labels_is_refused_naming_the_line(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = recorded_suite(tmp_path, run_cli, fair, right=1, wrong=1)
    calibrate(run_cli, monkeypatch, root, "label", "p\n")
    with (root / JUDGE / "labels.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"item": "x", "label": "maybe"}\n')
    done = calibrate(run_cli, monkeypatch, root, "finalize")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "labels.jsonl:2: not a label" in done.stderr


def test_calibrate_without_a_judge_or_rubric_says_what_is_missing(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, {"a.json": case("a", "Paris.")}, SUITE)
    done = calibrate(run_cli, monkeypatch, root, "finalize")
    assert done.returncode == 1
    assert "calibrate needs the judge: set judge_base_url and judge_model" in done.stderr
    unknown = run_cli("eval", "calibrate", "finalize", "--rubric", "nope", cwd=root)
    assert unknown.returncode == 1
    usage = run_cli("eval", "calibrate", "relabel", cwd=root)
    assert usage.returncode == 2


def test_finalize_records_the_self_preference_pairing_the_labels_were_made_on(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.judge.calibration import Bounds, RubricCalibration, gate

    # The judge here is `judge-model`: of the family `judge`.
    root = recorded_suite(tmp_path, run_cli, fair, right=12, wrong=12)
    calibrate(run_cli, monkeypatch, root, "label", honest(12, 12))

    def entry() -> RubricCalibration:
        data = (root / JUDGE / "calibration.json").read_bytes()
        found = msgspec.json.decode(data)["rubrics"]["names-capital"]
        return msgspec.convert(found, RubricCalibration)

    # No agent model known: no pairing, so a same-family judge stays diagnostic live.
    assert calibrate(run_cli, monkeypatch, root, "finalize").returncode == 0
    plain = entry()
    assert plain.pairing is None
    gated, why = gate(plain, plain.setup, Bounds(), same_family="judge")
    assert not gated and "self-preference" in why

    paired = run_cli("eval", "calibrate", "finalize", "--agent-model", "judge-mini", cwd=root)
    assert paired.returncode == 0, paired.stdout + paired.stderr
    assert "one family (judge): calibrated on that pairing" in paired.stdout
    assert entry().pairing == "judge"
    assert gate(entry(), entry().setup, Bounds(), same_family="judge")[0]

    # Another family's agent model is no pairing; the configured live model is the default.
    run_cli("eval", "calibrate", "finalize", "--agent-model", "gpt-4o", cwd=root)
    assert entry().pairing is None
    with (root / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write('live_model = "judge-large"\n')
    assert calibrate(run_cli, monkeypatch, root, "finalize").returncode == 0
    assert entry().pairing == "judge"
