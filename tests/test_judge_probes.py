"""`harness.judge.probes`: `zeroclaw eval calibrate probe` against a real HTTP server on
loopback playing the judge: a consistent judge's flip rate and verbosity probe are stored
and it still gates; a judge that changes its verdict when asked again, or that rewards
padding, is refused as a gate; a probe without replies stores nothing; probes replay."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _judge_server import fair, run_data, verdict
from _openai_server import OpenAIServer, Reply
from conftest import Cli, CliResult, fixture, project, text_step, turn

KEY = "sk-probe-SECRET-3"
KEY_ENV = "ZC_PROBE_KEY"
RUBRIC = {"name": "names-capital", "rubric": "The answer names the capital city.", "threshold": 0.5}
SUITE = "evals/regression"
CALIBRATION = f"{SUITE}/judge/calibration.json"


class Switch:
    """The judge the server plays now: swapped between recording and probing, on one
    server (its address is part of the judge setup the calibration is bound to)."""

    def __init__(self) -> None:
        self.judge: Any = fair

    def __call__(self, body: Any) -> Reply:
        return self.judge(body)  # type: ignore[no-any-return]


class Flipper:
    """Every other request, the opposite of the fair verdict."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, body: Any) -> Reply:
        self.count += 1
        if self.count % 2:
            return verdict(0.1 if "Paris" in run_data(body)["final_response"] else 0.9)
        return fair(body)


def verbose_lover(body: Any) -> Reply:
    """Fair, plus a little for a long answer."""
    final = run_data(body)["final_response"]
    base = 0.9 if "Paris" in final else 0.1
    return verdict(base + (0.05 if len(final) > 100 else 0.0))


def calibrated_project(tmp_path: Path, run_cli: Cli, server: OpenAIServer) -> Path:
    """12 right and 12 wrong answers, recorded, labeled honestly and finalized: gating."""
    cases = {
        f"{kind}-{i:02}.json": fixture(
            f"{kind}-{i:02}",
            [turn("Capital of France?", text_step(f"{answer} ({i})"))],
            {"max_tool_calls": 0, "judge": [RUBRIC]},
        )
        for kind, answer in (("right", "Paris."), ("wrong", "Lyon."))
        for i in range(12)
    }
    root = project(tmp_path, cases, SUITE)
    with (root / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(
            f'judge_base_url = "{server.base_url}"\njudge_model = "judge-model"\n'
            f'judge_api_key_env = "{KEY_ENV}"\n'
        )
    run_cli("eval", "run", "--record-judge", cwd=root, env={KEY_ENV: KEY})
    calibrate(run_cli, root, "label", answers="p\n" * 12 + "f\n" * 12)
    assert calibrate(run_cli, root, "finalize").returncode == 0
    return root


def calibrate(run_cli: Cli, root: Path, *args: str, answers: str = "") -> CliResult:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.StringIO(answers))
        return run_cli("eval", "calibrate", *args, cwd=root, env={KEY_ENV: KEY})


def entry(root: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((root / CALIBRATION).read_text("utf-8"))
    return found["rubrics"]["names-capital"]  # type: ignore[no-any-return]


PROBE = ("probe", "--sample", "6", "--k", "3")


def test_a_consistent_judge_is_probed_stored_and_replayed(tmp_path: Path, run_cli: Cli) -> None:
    switch = Switch()
    with OpenAIServer(responder=switch, api_key=KEY) as server:
        root = calibrated_project(tmp_path, run_cli, server)
        asked = len(server.requests)
        probed = calibrate(run_cli, root, *PROBE, "--record-judge")
        assert probed.returncode == 0, probed.stdout + probed.stderr
        # 6 verdicts asked 3 more times each, and each passing one once padded.
        assert len(server.requests) == asked + 6 * 3 + 6
        again = calibrate(run_cli, root, *PROBE)  # replayed: no call
        assert len(server.requests) == asked + 24
    assert "flip rate 0.00: 0 of 6 verdict(s) changed" in probed.stdout
    assert "verbosity probe: padding raised 0 of 6 passing answer(s)' score" in probed.stdout
    assert again.stdout == probed.stdout
    stored = entry(root)
    assert (stored["flip_rate"], stored["flip_samples"], stored["verbosity_rises"]) == (0.0, 6, 0)
    # finalize keeps what the probe measured (the same setup).
    calibrate(run_cli, root, "finalize")
    assert entry(root)["flip_samples"] == 6
    # A run lists no probe reply as stale.
    with OpenAIServer(responder=fair, api_key=KEY):
        rerun = run_cli("eval", "run", "--record-judge", cwd=root, env={KEY_ENV: KEY})
    assert "stale" not in rerun.stderr


@pytest.mark.parametrize("bias", ["flips", "verbosity"])
def test_an_inconsistent_or_padding_biased_judge_is_refused_as_a_gate(
    tmp_path: Path, run_cli: Cli, bias: str
) -> None:
    switch = Switch()
    with OpenAIServer(responder=switch, api_key=KEY) as server:
        root = calibrated_project(tmp_path, run_cli, server)
        switch.judge = Flipper() if bias == "flips" else verbose_lover
        probed = calibrate(run_cli, root, *PROBE, "--record-judge")
    assert probed.returncode == 1
    if bias == "flips":
        assert "flip rate 1.00: 6 of 6 verdict(s) changed" in probed.stdout
        assert "re-asked, the judge changes its verdict too often" in probed.stdout
    else:
        assert "padding raised 6 of 6 passing answer(s)' score" in probed.stdout
    report = root / "r.json"
    run_cli("eval", "run", "--json-report", report, cwd=root)
    grade = json.loads(report.read_text("utf-8"))["cases"][0]["grades"][-1]
    assert grade["category"] == "judge" and not grade["judge"]["gated"]


def test_a_probe_without_its_replies_stores_nothing(tmp_path: Path, run_cli: Cli) -> None:
    with OpenAIServer(responder=Switch(), api_key=KEY) as server:
        root = calibrated_project(tmp_path, run_cli, server)
    probed = calibrate(run_cli, root, *PROBE)
    assert probed.returncode == 1
    assert "18 probe repl(ies) without a verdict, nothing stored" in probed.stdout
    assert "judge reply not recorded: run with --record-judge" in probed.stdout
    assert entry(root)["flip_rate"] is None and entry(root)["verbosity_rises"] is None


def test_an_even_k_is_refused(tmp_path: Path, run_cli: Cli) -> None:
    with OpenAIServer(responder=Switch(), api_key=KEY) as server:
        root = calibrated_project(tmp_path, run_cli, server)
    refused = calibrate(run_cli, root, "probe", "--k", "2")
    assert refused.returncode == 1 and "re-asks must be an odd number" in refused.stderr
