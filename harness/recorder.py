"""Turning one live run into a replay fixture that provably replays green.

The fixture keeps the live case as written (its id, description, turns' user inputs,
setup, tools and expectations) and adds, per turn, every model step the run actually used:
tool calls with their arguments, final texts and token counts. Before anything is written
the fixture must pass replay admission and replay green through the same agent.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harness.agent import AgentAdapter, agent_surface
from harness.backend import ModelStep
from harness.case import AdmissionError
from harness.report.model import CaseReport
from harness.runner import run_cases
from harness.suite import Case, load_case


class RecordError(Exception):
    """Nothing was written; the message says why."""


def fixture_from_run(case: Case, steps: list[list[ModelStep]]) -> dict[str, Any]:
    """The live case's own JSON with each turn's scripted steps filled in from the run."""
    source: dict[str, Any] = json.loads(case.text)
    if len(steps) != len(source["turns"]):
        raise RecordError(
            f"the run covered {len(steps)} of {len(source['turns'])} turn(s); nothing to record"
        )
    used: set[str] = set()
    turns = []
    for turn, turn_steps in zip(source["turns"], steps, strict=True):
        recorded = {key: value for key, value in turn.items() if key != "steps"}
        recorded["steps"] = [{"response": _response(step, used)} for step in turn_steps]
        turns.append(recorded)
    fixture = dict(source)
    fixture["turns"] = turns
    return fixture


def _response(step: ModelStep, used: set[str]) -> dict[str, Any]:
    tokens = {"input_tokens": step.input_tokens, "output_tokens": step.output_tokens}
    if not step.tool_calls:
        return {"type": "text", "content": step.text, **tokens}
    calls = []
    for call in step.tool_calls:
        calls.append({"id": _unique(call.id, used), "name": call.name, "arguments": call.arguments})
    return {"type": "tool_calls", "tool_calls": calls, **tokens}


def _unique(call_id: str, used: set[str]) -> str:
    # Replay admission refuses empty or repeated ids; providers may reuse ids across turns.
    base = call_id.strip() or "call"
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    used.add(candidate)
    return candidate


def write_recording(
    case: Case,
    live_report: CaseReport,
    adapter: AgentAdapter,
    out: Path,
    *,
    secrets: tuple[str, ...] = (),
    force: bool = False,
    timeout: float = 120.0,
) -> CaseReport:
    """Write the replay fixture of a passing live run to `out`, after proving it replays
    green; returns the replay's report. Raises `RecordError` and writes nothing otherwise."""
    if live_report.error is not None:
        raise RecordError(f"the live run failed: {live_report.error}")
    if not live_report.passed:
        failing = "; ".join(live_report.failure_lines())
        raise RecordError(f"the live run did not pass its checks: {failing}")
    record = live_report.record
    if record is None or record.steps is None:
        raise RecordError("the live run kept no model steps")
    if out.exists() and not force:
        raise RecordError(f"{out} exists; pass --force to replace it")
    text = json.dumps(fixture_from_run(case, record.steps), indent=2, ensure_ascii=False) + "\n"
    for secret in secrets:
        if secret and secret in text:
            raise RecordError("the recording would contain the API key; nothing was written")

    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.stem}.", suffix=".json", dir=out.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            replay_case = load_case(tmp, "replay", agent_surface(adapter))
        except AdmissionError as exc:
            problems = "; ".join(f"{p.field}: {p.message}" for p in exc.problems)
            raise RecordError(f"the recording does not pass replay admission: {problems}") from None
        replay = run_cases(
            [replay_case], adapter, suite=str(out.parent), case_timeout=timeout
        ).cases[0]
        if not replay.passed:
            why = replay.error or "; ".join(replay.failure_lines())
            raise RecordError(f"the recording does not replay green: {why}")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return replay
