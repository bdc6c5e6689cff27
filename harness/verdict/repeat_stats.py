"""A repeated case's runs: each run's receipt, and what the n runs came to (`RepeatStats`,
built by `harness.run.repeats`), as a case's report carries them."""

from __future__ import annotations

import msgspec


class RunReceipt(msgspec.Struct, kw_only=True, frozen=True):
    """One run of a repeated case, without its transcript."""

    run: int  # 1-based
    passed: bool
    error: str | None = None
    failed_checks: list[str] = []
    # No check decided the run (its only grades were diagnostic judge grades): not passed,
    # with no failed check to show for it.
    undecided: bool = False
    tokens: int = 0
    model_calls: int = 0
    duration_ms: float = 0.0


class RepeatStats(msgspec.Struct, kw_only=True, frozen=True):
    """What the n runs of a repeated case came to (`harness.run.repeats` builds it)."""

    requested: int  # runs asked for
    completed: int  # runs that ended without a run error
    passes: int
    proportion: float  # passes / completed (0.0 when none completed)
    interval: tuple[float, float]  # 95% Wilson interval of the proportion
    pass_at_k: list[float]  # k = 1..completed
    # k = 1..requested; None when a run errored: a truncated set never establishes pass^k.
    pass_hat_k: list[float] | None
    min_pass_rate: float | None  # the case's own bar; None: every run must pass
    flaky: bool  # some completed runs passed and some failed
    flips: dict[str, int] = {}  # check → how often it flipped (min of passes and failures)
    tokens_mean: float = 0.0
    tokens_sd: float = 0.0
    model_calls_mean: float = 0.0
    model_calls_sd: float = 0.0
    duration_ms_mean: float = 0.0
    duration_ms_sd: float = 0.0
    note: str | None = None  # e.g. no run passed: maybe the task, not the agent, is broken
    runs: list[RunReceipt] = []
