"""The default of every setting that more than one entry point needs, stated once."""

from __future__ import annotations

DEFAULT_AGENT = "openai-agents"
DEFAULT_SUITE_DIR = "evals/regression"
# Seconds for starting the agent and for each turn (`case_timeout_secs`, `--timeout`).
DEFAULT_CASE_TIMEOUT = 120.0
# Seconds for a whole case: starting, every turn and grading (`case_wall_clock_secs`,
# `--case-wall-clock`), so no fixture can hold a CI job for hours however many turns it has.
DEFAULT_CASE_WALL_CLOCK = 600.0
# Model calls one turn may make, for every agent (`max_model_calls_per_turn`,
# `--max-model-calls`): a real turn takes a handful, a loop that never stops would take
# hundreds in seconds, each one paid for in live mode.
DEFAULT_MAX_MODEL_CALLS_PER_TURN = 40
# Tool calls one model answer may ask for, for every agent (`max_tool_calls_per_step`,
# `--max-tool-calls`): a real answer asks for a few at once (a provider offers at most 128
# tools); a model asking for thousands would have each one dispatched and sent back, the
# record and every report growing by as many a step.
DEFAULT_MAX_TOOL_CALLS_PER_STEP = 128
# Runs of one live case a fixture (`repeat`) or the command line (`--repeat`) may ask for.
MAX_REPEAT = 50
# More jobs than any machine has cores for: a larger number is a typo (the CLI and the
# configuration refuse it alike).
MAX_JOBS = 1024
# Repeated runs against a baseline: a drop in pass proportion is a confirmed regression at
# p below this (`--regression-level`).
DEFAULT_REGRESSION_LEVEL = 0.05
# Cases (and repetitions) run at once (`jobs`, `--jobs`).
DEFAULT_JOBS = 1
# Tokens of one model call, scripted (a fixture's step) or answered (a provider's usage,
# any backend's step). Far above any model's context, yet bounded: records sum them and
# repeated runs average them, and a count thousands of digits long can be neither printed
# nor made a float.
MAX_STEP_TOKENS = 1_000_000_000
