"""`harness.judge.calibration`: agreement by its Wilson bound, Cohen's κ, the false-pass
bound and labels per verdict decide whether a rubric's judge grades gate; a calibration
made under another judge setup is stale."""

from __future__ import annotations

import msgspec
import pytest

from harness.expectations.judge import Rubric
from harness.judge.calibration import Bounds, Confusion, calibrated, cohen_kappa, figures, gate
from harness.judge.service import JudgeSetup, model_family

BOUNDS = Bounds()
RUBRIC = {"name": "r", "rubric": "Answers the question.", "threshold": 0.5}


def test_40_agreeing_of_50_is_refused_and_says_how_many_more_labels() -> None:
    c = Confusion(jp_hp=20, jp_hf=5, jf_hp=5, jf_hf=20)
    assert figures(c).agreement == 0.8
    gated, why = gate(calibrated("r", "s", c), "s", BOUNDS)
    assert not gated
    assert "agreement 0.80 has a 95% lower bound of 0.67, under 0.80" in why
    assert (
        "labels needed: never at the observed agreement, 37 more if every new label agreed" in why
    )


def test_48_of_50_with_both_verdicts_well_represented_gates() -> None:
    c = Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24)
    gated, why = gate(calibrated("r", "s", c), "s", BOUNDS)
    assert gated, why
    assert why.startswith("calibrated on 50 labels: agreement 0.96 [0.87, 0.99], κ 0.92")


@pytest.mark.parametrize("human_pass", [40, 45, 48])
def test_an_always_pass_judge_is_refused_by_kappa_and_false_pass_whatever_its_agreement(
    human_pass: int,
) -> None:
    c = Confusion(jp_hp=human_pass, jp_hf=50 - human_pass)  # it passed everything
    kappa, _ = cohen_kappa(c)
    assert kappa == 0.0
    gated, why = gate(calibrated("r", "s", c), "s", Bounds(min_agreement_low=0.0))
    assert not gated
    assert "Cohen's κ 0.00 is under 0.60" in why
    assert "false-pass rate 1.00 has a 95% upper bound of 1.00, over 0.25" in why


def test_too_few_labels_of_a_verdict_is_said_with_how_many_more() -> None:
    c = Confusion(jp_hp=45, jf_hf=5)
    gated, why = gate(calibrated("r", "s", c), "s", BOUNDS)
    assert not gated
    assert "5 human fail label(s), fewer than 10: 5 more needed" in why


def test_kappa_and_its_interval() -> None:
    kappa, (low, high) = cohen_kappa(Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24))
    assert kappa == pytest.approx(0.92)
    assert low == pytest.approx(0.812, abs=1e-3) and high == 1.0


def test_bounds_are_configurable() -> None:
    c = Confusion(jp_hp=20, jp_hf=5, jf_hp=5, jf_hf=20)
    lenient = Bounds(min_agreement_low=0.6, min_kappa=0.5, max_false_pass_high=0.5)
    assert gate(calibrated("r", "s", c), "s", lenient)[0]


def test_no_calibration_is_diagnostic() -> None:
    assert gate(None, "s", BOUNDS) == (
        False,
        "no calibration for this rubric (zeroclaw eval calibrate)",
    )


@pytest.mark.parametrize(
    "change",
    [
        {"rubric": "Answers the question politely."},
        {"threshold": 0.6},
        {"include_transcript": True},
    ],
)
def test_changing_the_rubric_makes_the_calibration_stale(change: dict[str, object]) -> None:
    setup = JudgeSetup("https://judge.example.com/v1", "judge-1")
    before = setup.setup_hash(msgspec.convert(RUBRIC, Rubric))
    after = setup.setup_hash(msgspec.convert({**RUBRIC, **change}, Rubric))
    entry = calibrated("r", before, Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24))
    assert gate(entry, before, BOUNDS)[0]
    gated, why = gate(entry, after, BOUNDS)
    assert not gated and why.startswith("calibration is stale")


@pytest.mark.parametrize(
    "other",
    [
        JudgeSetup("https://judge.example.com/v1", "judge-2"),
        JudgeSetup("https://other.example.com/v1", "judge-1"),
        JudgeSetup("https://judge.example.com/v1", "judge-1", temperature=0.5),
    ],
)
def test_changing_the_judge_model_or_provider_makes_the_calibration_stale(
    other: JudgeSetup,
) -> None:
    rubric = msgspec.convert(RUBRIC, Rubric)
    setup = JudgeSetup("https://judge.example.com/v1", "judge-1").setup_hash(rubric)
    entry = calibrated("r", setup, Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24))
    assert not gate(entry, other.setup_hash(rubric), BOUNDS)[0]


def test_a_judge_of_the_agents_family_gates_only_if_calibrated_on_that_pairing() -> None:
    c = Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24)
    plain = calibrated("r", "s", c)
    gated, why = gate(plain, "s", BOUNDS, same_family="gpt")
    assert not gated and "self-preference" in why
    assert gate(calibrated("r", "s", c, pairing="gpt"), "s", BOUNDS, same_family="gpt")[0]


@pytest.mark.parametrize(
    ("model", "family"),
    [("gpt-4o-mini", "gpt"), ("openai/gpt-4.1", "gpt"), ("claude-3-5-sonnet", "claude")],
)
def test_model_family(model: str, family: str) -> None:
    assert model_family(model) == family


def test_a_flip_rate_over_its_bound_cannot_gate() -> None:
    c = Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24)
    gated, why = gate(calibrated("r", "s", c, flip=(0.2, 10)), "s", BOUNDS)
    assert not gated and "flip rate 0.20 over 0.10" in why
