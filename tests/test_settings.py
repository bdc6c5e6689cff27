"""`harness.settings`: the settings declared elsewhere keep their spelling here."""

from __future__ import annotations

import pytest

from harness import settings
from harness.judge import options as judge_options
from harness.reporters import baseline


def test_the_baseline_settings_are_the_baseline_reporters_in_help_order() -> None:
    assert settings.BASELINE is baseline.BASELINE
    assert settings.WRITE_BASELINE is baseline.WRITE_BASELINE
    in_help_order = (
        baseline.WRITE_BASELINE,
        baseline.BASELINE,
        settings.FAIL_ON_REGRESSION,
        settings.REGRESSION_LEVEL,
        *settings.BUDGET_GATES,
    )
    assert tuple(settings.BASELINE_OPTIONS) == in_help_order
    with pytest.raises(AttributeError, match="NO_SUCH_SETTING"):
        settings.NO_SUCH_SETTING  # noqa: B018


def test_the_judges_flags_are_re_exported() -> None:
    assert settings.RECORD_JUDGE is judge_options.RECORD_JUDGE
    assert settings.RECORD_JUDGE in settings.BESIDE_SUITE
    assert settings.STEP_OPTIONS["probe"][0] is settings.RECORD_JUDGE
    assert set(settings.CALIBRATE_STEPS) == set(settings.STEP_OPTIONS)


def test_the_jobs_help_says_where_auto_starts_workers() -> None:
    # `--help` said 200 while `auto` started workers from 500 cases on.
    from harness.run.watchdog import AUTO_WORKERS_FROM

    assert f"(replay: from {AUTO_WORKERS_FROM} cases on)" in settings.JOBS.help
