"""The settings of `zeroclaw eval`, each declared once (flag, configuration key, help), and
their merge with the configuration into the options of a run."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from harness.defaults import DEFAULT_REGRESSION_LEVEL
from harness.errors import UsageError
from harness.fixtures.selection import Selection, parse_shard
from harness.judge.options import CALIBRATE_STEPS as CALIBRATE_STEPS
from harness.judge.options import PROBE_OPTIONS as PROBE_OPTIONS
from harness.judge.options import RECORD_JUDGE as RECORD_JUDGE
from harness.judge.options import RUBRIC as RUBRIC
from harness.judge.options import STEP_OPTIONS as STEP_OPTIONS
from harness.modes import MODES, SUITE_KINDS, Mode, mode_of_directory
from harness.mutation.options import MIN_SCORE as MIN_SCORE
from harness.mutation.options import MIN_SCRIPT_SCORE as MIN_SCRIPT_SCORE
from harness.mutation.options import MUTATION_REPORT as MUTATION_REPORT
from harness.options import Option, count, jobs_count, repeat_count, seconds, share

if TYPE_CHECKING:
    from harness.config import EvalConfig, LoadedConfig
    from harness.io.atomic import RunInput
    from harness.run.options import RunOptions
    from harness.verdict.comparison import BudgetGates

SUITE = Option(
    "--suite", "suite directory (default: suite_dir)", metavar="DIR", config_key="suite_dir"
)
MODE = Option("--mode", "replay or live (default: mode)", choices=MODES, config_key="mode")
AGENT = Option("--agent", "agent name or module:factory", metavar="SPEC", config_key="agent")
CONTEXT = Option(
    "--context",
    "MODULE:FUNCTION called for each case with its setup.context (a dict), returning the "
    "run context (openai-agents) or deps (pydantic-ai) the agent runs with (default: context)",
    metavar="MODULE:FUNCTION",
    config_key="context",
)
SESSION = Option(
    "--session",
    "openai-agents: keep each case's conversation in an SDK Session instead of feeding the "
    "items back: sqlite (in memory, one per case) or MODULE:FUNCTION making one from the "
    "case id (default: session)",
    metavar="sqlite|MODULE:FUNCTION",
    config_key="session",
)
_SNAPSHOTS_HELP = "a changed request snapshot: auto (fails regression, warns otherwise)"
SNAPSHOTS = Option("--snapshots", _SNAPSHOTS_HELP, choices=("auto", "fail", "warn", "off"))
_UPDATE_HELP = "write every case's request snapshot beside the suite (else never written)"
UPDATE_SNAPSHOTS = Option("--update-snapshots", _UPDATE_HELP, action="store_true")
CONFIG = Option("--config", "TOML file with an [eval] table", metavar="FILE", type=Path)
TIMEOUT = Option(
    "--timeout",
    "timeout for starting the agent and for each turn (default: case_timeout_secs)",
    metavar="SECS",
    type=seconds,
    config_key="case_timeout_secs",
)
WALL_CLOCK = Option(
    "--case-wall-clock",
    "time limit for a whole case: starting the agent, every turn and grading "
    "(default: case_wall_clock_secs)",
    metavar="SECS",
    type=seconds,
    config_key="case_wall_clock_secs",
)


MAX_MODEL_CALLS = Option(
    "--max-model-calls",
    "the most model calls one turn may make, for every agent; the call over it is the "
    "case's run error (default: max_model_calls_per_turn)",
    metavar="N",
    type=count,
    config_key="max_model_calls_per_turn",
)
MAX_TOOL_CALLS = Option(
    "--max-tool-calls",
    "the most tool calls one model answer may ask for, for every agent; an answer asking "
    "for more is the case's run error, none of its calls dispatched "
    "(default: max_tool_calls_per_step)",
    metavar="N",
    type=count,
    config_key="max_tool_calls_per_step",
)
REPEAT = Option(
    "--repeat",
    "live mode: run every case K times (1..50), each run isolated; overrides the fixtures' "
    "repeat (replay is deterministic: refused there)",
    metavar="K",
    type=repeat_count,
)
JOBS = Option(
    "--jobs",
    "run up to N cases (and repetitions) at once: replay in N worker processes, live on "
    "one event loop; auto: one per core (replay: from 500 cases on) (default: jobs)",
    metavar="N|auto",
    type=lambda text: "auto" if text.strip() == "auto" else jobs_count(text),
    config_key="jobs",
)
EXITFIRST = Option(
    "--exitfirst",
    "stop starting cases at the first failing one (as --maxfail 1)",
    action="store_true",
    aliases=("-x",),
)
MAXFAIL = Option(
    "--maxfail",
    "stop starting cases once N have failed; the rest are reported as not run, and the gate fails",
    metavar="N",
    type=count,
)


def significance(text: str) -> float:
    """A significance level: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive): {text}")
    return value


FAIL_ON_REGRESSION = Option(
    "--fail-on-regression",
    "a confirmed regression against --baseline (a case that passed there, fails now) "
    "fails the gate of any suite kind",
    action="store_true",
)
REGRESSION_LEVEL = Option(
    "--regression-level",
    "repeated runs: a drop in pass proportion is a confirmed regression when a one-sided "
    "Fisher exact test gives p below this (default 0.05)",
    metavar="P",
    type=significance,
)
MAX_TOKEN_GROWTH = Option(
    "--max-token-growth",
    "with --baseline: a case whose tokens grew by more than this share over its baseline "
    "(0.2 or 20%%) fails the gate, with the figures (default: max_token_growth)",
    metavar="SHARE",
    type=share,
    config_key="max_token_growth",
)
MAX_SUITE_TOKEN_GROWTH = Option(
    "--max-suite-token-growth",
    "with --baseline: the same for the tokens of every case compared, summed "
    "(default: max_suite_token_growth)",
    metavar="SHARE",
    type=share,
    config_key="max_suite_token_growth",
)
MAX_COST_GROWTH = Option(
    "--max-cost-growth",
    "with --baseline, live mode: a case whose cost at the price of live_model in prices "
    "grew by more than this share fails the gate (default: max_cost_growth)",
    metavar="SHARE",
    type=share,
    config_key="max_cost_growth",
)
MAX_SUITE_COST_GROWTH = Option(
    "--max-suite-cost-growth",
    "with --baseline, live mode: the same for the cost of every case compared, summed "
    "(default: max_suite_cost_growth)",
    metavar="SHARE",
    type=share,
    config_key="max_suite_cost_growth",
)
BUDGET_GATES = (MAX_TOKEN_GROWTH, MAX_SUITE_TOKEN_GROWTH, MAX_COST_GROWTH, MAX_SUITE_COST_GROWTH)


def __getattr__(name: str) -> Any:
    """`BASELINE` and `WRITE_BASELINE`, declared beside the baseline reporter, and
    `BASELINE_OPTIONS`, `run`'s settings of a comparison with a baseline in the order `--help`
    lists them: imported on first use (PEP 562), as the reporter's module imports the
    reporters' machinery, which no other command has a use for."""
    if name not in ("BASELINE", "WRITE_BASELINE", "BASELINE_OPTIONS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from harness.reporters.baseline import BASELINE, WRITE_BASELINE

    comparison = (WRITE_BASELINE, BASELINE, FAIL_ON_REGRESSION, REGRESSION_LEVEL, *BUDGET_GATES)
    return {"BASELINE": BASELINE, "WRITE_BASELINE": WRITE_BASELINE}.get(name, comparison)


KEYWORD = Option(
    "--keyword",
    "run only the cases matching EXPR, pytest's -k: substrings of the case id or fixture "
    "file name joined by and/or/not (the run is partial: its gate is not the suite's)",
    metavar="EXPR",
    aliases=("-k",),
)
CASE_IDS = Option(
    "--case",
    "run only the case with this id (repeatable; the run is partial)",
    metavar="ID",
    action="append",
)
SHARD = Option(
    "--shard",
    "run the I-th of N shares of the suite, by a stable hash of each case id (merge the "
    "shards' JSON reports with `zeroclaw eval merge`)",
    metavar="I/N",
    type=parse_shard,
)
# What a run keeps beside the suite: the judge's replies, the request snapshots.
BESIDE_SUITE = (RECORD_JUDGE, SNAPSHOTS, UPDATE_SNAPSHOTS)
SUITE_KIND = Option(
    "--suite-kind",
    "gate rules to apply (default: the suite directory's name, else regression)",
    choices=SUITE_KINDS,
)
CASE = Option("--case", "live fixture", metavar="PATH", type=Path, required=True)
OUT = Option("--out", "replay fixture to write", metavar="PATH", type=Path, required=True)
FORCE = Option("--force", "replace --out if it exists", action="store_true")


# What every command that reads a suite takes, and what `record` takes.
SUITE_OPTIONS = (SUITE, MODE, AGENT, CONFIG)
CALIBRATE_OPTIONS = (*SUITE_OPTIONS, RUBRIC)
AGENT_OPTIONS = (AGENT, CONFIG)
_LIMITS = (TIMEOUT, MAX_MODEL_CALLS, MAX_TOOL_CALLS)
RECORD_OPTIONS = (CASE, OUT, *AGENT_OPTIONS, CONTEXT, SESSION, *_LIMITS, FORCE)
# What `import` shares with `run` (its own options are `harness.tracing.options`).
IMPORT_SHARED = (SUITE, *AGENT_OPTIONS, CONTEXT, SESSION, *_LIMITS)


class Resolved(msgspec.Struct, frozen=True):
    """The merged settings of one command."""

    options: RunOptions
    config: EvalConfig
    secret: str = ""  # the live provider's key, which no output may hold
    config_file: Path | None = None  # where `config` was read from; None: the defaults

    def inputs(self) -> list[RunInput]:
        """The files the run reads, which none of its reports may replace."""
        from harness.io.atomic import RunInput

        suite = self.options.suite
        if suite.is_file():  # one fixture: a selection of its directory's suite
            found = [RunInput(suite, "the fixture run"), RunInput(suite.parent, "", suite=True)]
        else:
            found = [RunInput(suite, "a fixture of the suite", suite=True)]
        if self.config_file is not None:
            found.append(RunInput(self.config_file, "the configuration file"))
        if self.options.baseline is not None:
            # Comparing with a baseline and writing the new one over it is a refresh.
            found.append(
                RunInput(
                    self.options.baseline, "the --baseline file", rewritten_by="write baseline"
                )
            )
        return found


def resolve(
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    *,
    provider: bool = True,
    judge: bool = True,
) -> Resolved:
    """The run options the command line and the configuration say; the live provider is
    configured (or refused, naming what is missing) when the mode is live and `provider`;
    the judge, when one is configured and `judge` (a command that grades nothing has no
    use for it, nor for the HTTP client it imports)."""
    # Imported here: building the parser (and `--help`) needs only the declarations above.
    from harness.config import load_config
    from harness.run.options import RunOptions

    loaded = load_config(getattr(args, CONFIG.dest, None))
    config = loaded.config
    suite = _suite(args, loaded)
    timeout: float = TIMEOUT.value(args, config)
    mode: Mode = getattr(args, MODE.dest, None) or mode_of_directory(suite, config.mode)
    options = RunOptions(
        suite=suite,
        agent=AGENT.value(args, config),
        context=CONTEXT.value(args, config) or None,
        session=SESSION.value(args, config) or None,
        mode=mode,
        kind=getattr(args, SUITE_KIND.dest, None),
        case_timeout=timeout,
        root=repository_root(loaded.root, os.environ if environ is None else environ),
        case_wall_clock=WALL_CLOCK.value(args, config),
        max_model_calls_per_turn=MAX_MODEL_CALLS.value(args, config),
        max_tool_calls_per_step=MAX_TOOL_CALLS.value(args, config),
        jobs=JOBS.value(args, config),
        repeat=_repeat(args, mode),
        maxfail=1 if getattr(args, EXITFIRST.dest, False) else getattr(args, MAXFAIL.dest, None),
        selection=_selection(args),
        snapshots=getattr(args, SNAPSHOTS.dest, None) or config.snapshots_for(suite, loaded.root),
        update_snapshots=bool(getattr(args, UPDATE_SNAPSHOTS.dest, False)),
        unused_snapshots=config.unused_snapshots_for(suite, loaded.root),
        **_comparison(args, config, mode),
    )
    configured = _judge(args, config, loaded.root, suite, mode, environ) if judge else None
    if configured is not None:
        from dataclasses import replace

        options = replace(options, judge=configured)
    resolved = Resolved(options, config, config_file=loaded.file)
    if mode != "live" or not provider:
        return resolved
    return with_provider(resolved, environ)


def with_provider(resolved: Resolved, environ: Mapping[str, str] | None = None) -> Resolved:
    """`resolved` with the live provider its configuration describes."""
    from dataclasses import replace

    from harness.live.backend import provider_from_config
    from harness.verdict.receipts import provider_ref

    config = resolved.config
    provider = provider_from_config(
        config, os.environ if environ is None else environ, resolved.options.case_timeout
    )
    options = replace(
        resolved.options,
        mode="live",
        backend=provider.backend,
        allowed_tools=provider.allowed_tools,
        provider=provider_ref(config.live_base_url, config.live_model),
    )
    return msgspec.structs.replace(resolved, options=options, secret=provider.secret)


def _judge(
    args: argparse.Namespace,
    config: EvalConfig,
    root: Path,
    suite: Path,
    mode: Mode,
    environ: Mapping[str, str] | None,
) -> Any:
    """The run's judge (`harness.judge.service.JudgeService`), or None when none is
    configured and none is asked for."""
    record = bool(getattr(args, RECORD_JUDGE.dest, False))
    if not record and not config.judge_base_url.strip() and not config.judge_model.strip():
        return None
    from harness.judge.settings import judge_from_config

    return judge_from_config(
        config, root, suite, mode, os.environ if environ is None else environ, record=record
    )


def judge_lines(options: RunOptions, partial: bool) -> list[str]:
    """What the run's judge says after the run: the replies it recorded, the stale ones
    (only a recording judge says any: one that replayed needs no module imported here)."""
    if options.judge is None or not getattr(options.judge, "record", False):
        return []
    from harness.judge.service import recording_lines

    return recording_lines(options.judge, partial)


def _suite(args: argparse.Namespace, loaded: LoadedConfig) -> Path:
    given = getattr(args, SUITE.dest, None)
    if given == "":
        # Unlike an empty `--agent`, never taken as "not given": `--suite "$UNSET"` would
        # silently gate CI on the default suite instead of the one meant.
        from harness.config import ConfigError

        raise ConfigError("--suite: empty path: name the suite directory, or leave --suite out")
    if given is not None and "\0" in given:  # no system call takes it (the Python API's argv)
        raise UsageError("--suite: holds a NUL character, which no path can")
    return Path(given) if given is not None else _near(loaded.root / loaded.config.suite_dir)


def _near(path: Path) -> Path:
    """`path` relative to the working directory when it lies below it: messages and
    annotations name fixtures the way the user would type them."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def repository_root(project: Path, environ: Mapping[str, str]) -> Path:
    """Where the paths in reports start, so CI can attach an annotation to its file: the
    checkout (`GITHUB_WORKSPACE` on GitHub Actions) when the project lies in it, else the
    git work tree holding the project, else the project itself. In a monorepo the project
    is a subdirectory, and a path from it would name no file of the repository."""
    project = project.resolve()
    workspace = environ.get("GITHUB_WORKSPACE", "").strip()
    if workspace:
        checkout = Path(workspace).resolve()
        if project == checkout or checkout in project.parents:
            return checkout
    for directory in (project, *project.parents):
        if (directory / ".git").exists():  # a directory, or a file in a worktree
            return directory
    return project


def _comparison(args: argparse.Namespace, config: EvalConfig, mode: Mode) -> dict[str, Any]:
    """The settings of a comparison with a baseline, which only `run` takes
    (`BASELINE_OPTIONS`); the other commands keep `RunOptions`' defaults and import
    nothing for them."""
    if not hasattr(args, REGRESSION_LEVEL.dest):
        return {}
    from harness.reporters.baseline import BASELINE

    level = getattr(args, REGRESSION_LEVEL.dest, None)
    baseline = getattr(args, BASELINE.dest, None)
    if level is not None and baseline is None:
        raise UsageError("--regression-level applies to a comparison: give --baseline FILE")
    return {
        "baseline": baseline,
        "fail_on_regression": bool(getattr(args, FAIL_ON_REGRESSION.dest, False)),
        "regression_level": DEFAULT_REGRESSION_LEVEL if level is None else level,
        "budget": _budget(args, config, mode, baseline),
    }


def _budget(
    args: argparse.Namespace, config: EvalConfig, mode: Mode, baseline: Path | None
) -> BudgetGates | None:
    """The token and cost gates of a run against a baseline: the flags, else the
    configuration's keys (which a run without --baseline leaves alone, as it does a cost
    gate in replay, whose tokens are the script's). A flag given where it cannot apply,
    or a cost gate with no price for the live model, is refused."""
    from harness.verdict.comparison import BudgetGates, Price

    flags = [o.flag for o in BUDGET_GATES if getattr(args, o.dest, None) is not None]
    if baseline is None:
        if flags:
            raise UsageError(f"{flags[0]} applies to a comparison: give --baseline FILE")
        return None
    tokens = [MAX_TOKEN_GROWTH.value(args, config), MAX_SUITE_TOKEN_GROWTH.value(args, config)]
    cost = [MAX_COST_GROWTH.value(args, config), MAX_SUITE_COST_GROWTH.value(args, config)]
    price = None
    if mode != "live":
        cost_flags = [f for f in flags if "cost" in f]
        if cost_flags:
            raise UsageError(
                f"{cost_flags[0]} applies to live mode only: a replay's tokens are its script's"
            )
        cost = [None, None]
    elif cost != [None, None]:
        found = config.prices.get(config.live_model)
        if found is None:
            from harness.config import ConfigError

            raise ConfigError(
                f"a cost gate needs the price of live_model {config.live_model!r}: add it to "
                f'[tool.zeroclaw.eval.prices], e.g. "{config.live_model}" = '
                "{ input = 0.15, output = 0.60 } (per million tokens)"
            )
        price = Price(found.input, found.output)
    gates = BudgetGates(
        max_token_growth=tokens[0],
        max_suite_token_growth=tokens[1],
        max_cost_growth=cost[0],
        max_suite_cost_growth=cost[1],
        price=price,
    )
    return gates if gates.active else None


def _repeat(args: argparse.Namespace, mode: Mode) -> int | None:
    repeat: int | None = getattr(args, REPEAT.dest, None)
    if repeat is not None and mode != "live":
        raise UsageError(
            "--repeat applies to live mode only: a replay is deterministic, so every "
            "repetition would give the same verdict"
        )
    return repeat


def _selection(args: argparse.Namespace) -> Selection:
    ids = getattr(args, CASE_IDS.dest, None)  # `record`'s --case is a path, not a list
    keyword = getattr(args, KEYWORD.dest, None)
    return Selection(
        # An empty -k filters nothing, as pytest's: `-k "$PICK"` with PICK unset in CI.
        keyword=keyword if keyword is not None and keyword.strip() else None,
        case_ids=tuple(ids) if isinstance(ids, list) else (),
        shard=getattr(args, SHARD.dest, None),
    )
