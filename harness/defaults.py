"""The default of every setting that more than one entry point needs, stated once."""

from __future__ import annotations

DEFAULT_AGENT = "openai-agents"
DEFAULT_SUITE_DIR = "evals/regression"
# Seconds for starting the agent and for each turn (`case_timeout_secs`, `--timeout`).
DEFAULT_CASE_TIMEOUT = 120.0
