"""`RunOptions`, everything one run of a suite is decided by, and `admit`, the suite admitted
as they say without running anything.

Apart from the pipeline (`harness.pipeline`, which runs what these decide) so that the
commands that only read a suite (`check`, `list`) import no run machinery: no watchdog,
worker pool, reporter or event loop. The pipeline re-exports both names.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harness.agents.registry import surface_within
from harness.defaults import (
    DEFAULT_AGENT,
    DEFAULT_CASE_TIMEOUT,
    DEFAULT_CASE_WALL_CLOCK,
    DEFAULT_JOBS,
    DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    DEFAULT_REGRESSION_LEVEL,
)
from harness.fixtures.selection import Selection
from harness.fixtures.suite import Case, display_path, load_suite
from harness.io.problems import AdmissionError, Problem
from harness.modes import Mode, SuiteKind

if TYPE_CHECKING:
    from harness.agents.protocol import AgentAdapter, AgentSurface
    from harness.config import SnapshotSetting, UnusedSetting
    from harness.expectations.judge import Judge
    from harness.run.runner import BackendFactory, Jobs
    from harness.verdict.comparison import BudgetGates


@dataclass(frozen=True)
class RunOptions:
    """Everything one run of a suite is decided by."""

    suite: Path
    agent: str | AgentAdapter = DEFAULT_AGENT
    mode: Mode = "replay"
    kind: SuiteKind | None = None  # None: the directory's name, else regression
    case_timeout: float = DEFAULT_CASE_TIMEOUT  # starting the agent, and each turn
    root: Path | None = None  # fixture paths in reports are relative to it (default: cwd)
    backend: BackendFactory | None = None  # live mode: a backend per case for the provider
    allowed_tools: frozenset[str] | None = None  # live mode: built-in tools a case may use
    name: str | None = None  # how reports name the suite (default: its path from `root`)
    provider: str | None = None  # live mode: the provider's host and model, for receipts
    case_wall_clock: float = DEFAULT_CASE_WALL_CLOCK  # a whole case, grading included
    max_model_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN  # for every agent
    max_tool_calls_per_step: int = DEFAULT_MAX_TOOL_CALLS_PER_STEP  # for every agent
    jobs: Jobs = DEFAULT_JOBS  # cases (and repetitions) at once; "auto": one per core
    repeat: int | None = None  # live mode: runs of every case, overriding the fixtures'
    maxfail: int | None = None  # stop starting cases once this many failed
    baseline: Path | None = None  # compare the run with this baseline (`harness.tracking.baseline`)
    fail_on_regression: bool = False  # a confirmed regression fails the gate of any kind
    # Repeated runs: a drop is confirmed at p < this.
    regression_level: float = DEFAULT_REGRESSION_LEVEL
    # The token and cost gates against the baseline (`harness.tracking.budget_gate`).
    budget: BudgetGates | None = None
    # The cases picked (-k, --case, --shard); by default all.
    selection: Selection = field(default_factory=Selection)
    # The judge of the cases' rubrics (`expects.judge`, `harness.judge`); None: none.
    judge: Judge | None = None
    # `module:function` building each case's context from its `setup.context`, and the SDK
    # session each case keeps its conversation in (`harness.agents.case_context`).
    context: str | None = None
    session: str | None = None
    # Replay: what a changed request snapshot does, and whether the run writes them.
    snapshots: SnapshotSetting = "auto"
    update_snapshots: bool = False
    # After a run of the whole suite, snapshots no case uses: a warning, or a failure.
    unused_snapshots: UnusedSetting = "warn"

    @property
    def project_root(self) -> Path:
        return (self.root or Path.cwd()).resolve()


class Refusals(Protocol):
    """What admission tells of a refused suite: a reporter's `refused`."""

    def refused(self, problems: list[Problem]) -> None: ...


def admit(options: RunOptions, reporters: Sequence[Refusals] = ()) -> Sequence[Case]:
    """Admission and the vacuity check alone, without importing or running any agent
    framework (`zeroclaw eval check`)."""
    surface = surface_within(options.agent, options.case_timeout)
    return load(options, surface, reporters)


def load(
    options: RunOptions,
    surface: AgentSurface,
    reporters: Sequence[Refusals],
    in_workers: bool = False,
) -> Sequence[Case]:
    """The suite admitted against `surface`; a refusal is told to every reporter, each
    problem naming its fixture from the repository root (as reports name the cases of a run),
    then raised. `in_workers`: the run started workers early, which admit a large suite's
    parts (`run/worker_admission.py`), with the same cases and problems as here."""
    slices = None
    if in_workers:
        from harness.run.runner import jobs_of
        from harness.run.worker_admission import in_workers as admit_in_workers

        slices = functools.partial(admit_in_workers, jobs=jobs_of(options.jobs))
    try:
        return load_suite(options.suite, options.mode, surface, slices)
    except AdmissionError as exc:
        root = options.project_root
        shown = [
            dataclasses.replace(p, file=display_path(Path(p.file), root)) for p in exc.problems
        ]
        for reporter in reporters:
            reporter.refused(shown)
        raise
