"""The run's judge from the configuration: where the suite's judge files live, the judge
setup, the calibration read strictly, the bounds, and (to record) the live provider."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from harness.config import EvalConfig, judge_missing, url_problem
from harness.errors import HarnessError
from harness.judge.calibration import SCHEMA, Bounds, CalibrationFile
from harness.judge.service import JudgeService, JudgeSetup, model_family
from harness.judge.store import ReplyStore, read_document
from harness.modes import Mode

if TYPE_CHECKING:
    from harness.live.provider_settings import LiveSettings

CALIBRATION = "calibration.json"
LABELS = "labels.jsonl"
REPLIES = "replies"
MAX_CALIBRATION_BYTES = 4 << 20


class JudgeError(HarnessError):
    """The judge cannot be set up as configured; the message says what to change."""


def judge_dir(config: EvalConfig, root: Path, suite: Path) -> Path:
    """Where a suite's judge files live: `judge_dir`, else the suite directory's `judge/`."""
    if config.judge_dir.strip():
        return root / config.judge_dir
    return (suite.parent if suite.suffix == ".json" else suite) / "judge"


def bounds_of(config: EvalConfig) -> Bounds:
    return Bounds(
        min_agreement_low=config.judge_min_agreement,
        min_kappa=config.judge_min_kappa,
        min_labels_per_verdict=config.judge_min_labels_per_verdict,
        max_false_pass_high=config.judge_max_false_pass,
        max_flip_rate=config.judge_max_flip_rate,
    )


def read_calibration(path: Path) -> CalibrationFile | None:
    """The calibration file at `path`; None: there is none. A file that cannot be read or
    is not a calibration is refused, naming it: a gate is never decided on a guess."""
    return read_document(
        path, MAX_CALIBRATION_BYTES, CalibrationFile, SCHEMA, "a judge calibration file", JudgeError
    )


def setup_of(config: EvalConfig) -> JudgeSetup:
    missing = judge_missing(config)
    if missing:
        raise JudgeError("the judge is not configured; missing: " + "; ".join(missing))
    return JudgeSetup(config.judge_base_url.strip(), config.judge_model.strip())


def live_settings(config: EvalConfig, environ: Mapping[str, str]) -> LiveSettings:
    """The judge's provider, the key read from `judge_api_key_env` (to record: a judge that
    replays makes no call, and imports nothing to make one)."""
    from harness.live.provider_settings import DEFAULT_CALL_TIMEOUT, LiveSettings, ProviderError

    setup = setup_of(config)
    variable = config.judge_api_key_env
    key = environ.get(variable, "").strip()
    if not key:
        raise JudgeError(
            f"--record-judge asks the live judge: set its API key in the environment "
            f"variable {variable} (judge_api_key_env)"
        )
    try:
        return LiveSettings(
            base_url=setup.base_url,
            model=setup.model,
            api_key=key,
            call_timeout=min(DEFAULT_CALL_TIMEOUT, config.case_timeout_secs),
            api_key_env=variable,
            temperature=setup.temperature,
        )
    except ProviderError as exc:
        raise JudgeError(f"judge: {str(exc).replace('live_base_url', 'judge_base_url')}") from None


def judge_from_config(
    config: EvalConfig,
    root: Path,
    suite: Path,
    mode: Mode,
    environ: Mapping[str, str],
    *,
    record: bool = False,
) -> JudgeService:
    """The judge of a run of `suite`: replay only, or recording when `record`."""
    setup = setup_of(config)
    problem = url_problem(setup.base_url, "judge_base_url")  # now, whether or not a call is made
    if problem is not None:
        raise JudgeError(f"judge: {problem}")
    folder = judge_dir(config, root, suite)
    same = None
    if mode == "live" and config.live_model.strip():
        family = model_family(setup.model)
        if model_family(config.live_model) == family:
            same = family
    return JudgeService(
        setup=setup,
        store=ReplyStore(folder / REPLIES),
        settings=live_settings(config, environ) if record else None,
        record=record,
        calibration=read_calibration(folder / CALIBRATION),
        bounds=bounds_of(config),
        same_family=same,
    )
