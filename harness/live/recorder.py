"""Turning one live run into a replay fixture that provably replays green.

The fixture keeps the live case as written (its id, description, turns' user inputs,
setup, tools and expectations) and adds, per turn, every model step the run actually used:
tool calls with their arguments (a handoff's call among them), final texts and token
counts, and, where the request it answered named an agent of a graph, that agent; and the
decisions the run's calls held for approval got, keyed by the recorded call's id. Before
anything is written the fixture must pass replay admission and replay green through the
same agent.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harness.agents.case_context import NO_SETUP, CaseSetup, setup_for
from harness.agents.protocol import AgentAdapter
from harness.agents.registry import agent_surface, resolve_agent
from harness.approvals import Approval
from harness.defaults import (
    DEFAULT_CASE_TIMEOUT,
    DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_CALLS_PER_STEP,
)
from harness.errors import HarnessError
from harness.fixtures.suite import Case, load_case
from harness.io.problems import AdmissionError
from harness.live.chat_completions import SecretMask
from harness.model_boundary import ModelBackend, ModelRequest, ModelStep
from harness.pipeline import RunOptions, run_cases
from harness.run.runner import BackendFactory
from harness.snapshots.store import SnapshotPlan
from harness.verdict.reports import CaseReport

# Per turn, the agent whose request each model step answered (None: no agent was named).
StepAgents = list[list[str | None]]


class RecordError(HarnessError):
    """Nothing was written; the message says why."""


def refuse_existing(out: Path, force: bool) -> None:
    """Refuse an existing `out` before any live run: it would cost a provider run for
    nothing."""
    if out.exists() and not force:
        raise RecordError(f"{out} exists; pass --force to replace it")


def record_live_case(
    live_fixture: Path,
    out: Path,
    options: RunOptions,
    *,
    secret: str,
    force: bool = False,
    progress: TextIO | None = None,
) -> str:
    """Run `live_fixture` live under `options` (its backend the provider) and write it to
    `out` as a replay fixture that replays green; the line saying what was recorded.

    `progress` (default: `sys.stderr` at the time of the call) hears that the run started.
    Raises `RecordError` (nothing written), `AdmissionError`, `AgentError`."""
    refuse_existing(out, force)
    agent = options.agent
    adapter = resolve_agent(agent) if isinstance(agent, str) else agent
    setup = setup_for(adapter, options.context, options.session, options.case_timeout)
    case = load_case(live_fixture, "live", agent_surface(adapter))
    print(f"zeroclaw eval: running {case.id} live ...", file=progress or sys.stderr)
    if options.backend is None:
        raise RecordError("recording needs a live backend for the provider")
    tape = AgentTape(options.backend)
    report = run_cases(
        [case],
        adapter,
        suite=str(live_fixture.parent),
        mode="live",
        backend=tape.backend,
        allowed_tools=options.allowed_tools,
        case_timeout=options.case_timeout,
        root=options.root,
        max_model_calls_per_turn=options.max_model_calls_per_turn,
        max_tool_calls_per_step=options.max_tool_calls_per_step,
        setup=setup,
    )
    try:
        replay = write_recording(
            case,
            report.cases[0],
            adapter,
            out,
            secrets=(secret,),
            force=force,
            agents=tape.agents,
            timeout=options.case_timeout,
            max_model_calls_per_turn=options.max_model_calls_per_turn,
            max_tool_calls_per_step=options.max_tool_calls_per_step,
            setup=setup,
        )
    except RecordError as exc:
        raise RecordError(f"{out}: not written: {exc}") from None
    record = replay.record
    steps = record.model_calls if record else 0
    passed = sum(g.passed for g in replay.grades)
    return (
        f"recorded {case.id}: {steps} model step(s) over {len(case.trace.turns)} turn(s) "
        f"into {out}; it replays green ({passed}/{len(replay.grades)} checks)"
    )


class AgentTape:
    """Wraps the live run's backend factory and keeps, per turn, the agent whose request
    each model step answered: the record keeps the steps in the order they were answered,
    which for agents asking at the same time is no order a replay could keep, so each step
    of the fixture must name its agent to be matched to its request by agent."""

    def __init__(self, factory: BackendFactory) -> None:
        self._factory = factory
        self.agents: StepAgents = []

    def backend(self, case: Case) -> ModelBackend:
        self.agents = []
        return _Taped(self._factory(case), self.agents)


class _Taped:
    """A backend answering as its inner one does, noting each step's agent as the model
    boundary keeps the step (only within a turn)."""

    def __init__(self, inner: ModelBackend, agents: StepAgents) -> None:
        self._inner = inner
        self._agents = agents

    async def respond(self, request: ModelRequest) -> ModelStep:
        step = await self._inner.respond(request)
        # No suspension lies between this and the boundary keeping the step, so the two
        # lists keep one order even while requests are in flight together.
        if self._agents:
            self._agents[-1].append(request.agent)
        return step

    async def ready(self, limit: float) -> None:
        hook = getattr(self._inner, "ready", None)
        if hook is not None:
            await hook(limit)

    def start_turn(self, index: int) -> None:
        self._agents.append([])
        self._forward("start_turn", index)

    def end_turn(self, index: int) -> None:
        self._forward("end_turn", index)

    def stop_turn(self, index: int) -> None:
        self._forward("stop_turn", index)

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()

    def _forward(self, name: str, index: int) -> None:
        hook = getattr(self._inner, name, None)
        if hook is not None:
            hook(index)


def fixture_from_run(
    case: Case,
    steps: list[list[ModelStep]],
    agents: StepAgents | None = None,
    approvals: Sequence[Approval] = (),
) -> dict[str, Any]:
    """The live case's own JSON with each turn's scripted steps filled in from the run,
    each naming the agent it answered where `agents` (per turn, per step) names one, and
    its `approvals` the decisions the run's calls got (`approvals`, the record's), keyed by
    the recorded call's id as replay keys them (the live case keys them by tool)."""
    source: dict[str, Any] = json.loads(case.text)
    if len(steps) != len(source["turns"]):
        raise RecordError(
            f"the run covered {len(steps)} of {len(source['turns'])} turn(s); nothing to record"
        )
    if agents is not None and [len(t) for t in agents] != [len(t) for t in steps]:
        raise RecordError("the run's steps and the agents they answered do not match")
    used: set[str] = set()
    turns = []
    for index, (turn, turn_steps) in enumerate(zip(source["turns"], steps, strict=True)):
        recorded = {key: value for key, value in turn.items() if key not in ("steps", "approvals")}
        named = agents[index] if agents is not None else [None] * len(turn_steps)
        ids: dict[str, str] = {}  # each call's id as the provider made it -> as recorded
        recorded["steps"] = [
            _step(step, agent, used, ids) for step, agent in zip(turn_steps, named, strict=True)
        ]
        decided = {
            ids.get(a.call_id, a.call_id): _decision(a) for a in approvals if a.turn == index
        }
        if decided:
            recorded["approvals"] = decided
        turns.append(recorded)
    fixture = dict(source)
    fixture["turns"] = turns
    return fixture


def _step(
    step: ModelStep, agent: str | None, used: set[str], ids: dict[str, str]
) -> dict[str, Any]:
    response = _response(step, used, ids)
    return {"response": response} if agent is None else {"agent": agent, "response": response}


def _response(step: ModelStep, used: set[str], ids: dict[str, str]) -> dict[str, Any]:
    tokens = {"input_tokens": step.input_tokens, "output_tokens": step.output_tokens}
    if not step.tool_calls:
        return {"type": "text", "content": step.text, **tokens}
    calls = []
    for call in step.tool_calls:
        ids[call.id] = unique = unique_id(call.id, used)
        calls.append({"id": unique, "name": call.name, "arguments": call.arguments})
    return {"type": "tool_calls", "tool_calls": calls, **tokens}


def _decision(approval: Approval) -> dict[str, Any]:
    # Only a decided request reaches a recording: an undecided one fails the live run.
    if approval.approved:
        return {"approve": True}
    reason = {} if approval.reason is None else {"reason": approval.reason}
    return {"approve": False, **reason}


def unique_id(call_id: str, used: set[str]) -> str:
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
    agents: Sequence[Sequence[str | None]] | None = None,
    timeout: float = DEFAULT_CASE_TIMEOUT,
    max_model_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    max_tool_calls_per_step: int = DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    setup: CaseSetup = NO_SETUP,
) -> CaseReport:
    """Write the replay fixture of a passing live run to `out`, after proving it replays
    green (under the same limits); returns the replay's report. `agents` (per turn, per
    step: `AgentTape.agents`) names the agent each step answered. Raises `RecordError` and
    writes nothing otherwise. No message and no file holds any of `secrets`, in any
    escaping."""
    masks = [mask for mask in map(SecretMask, secrets) if mask]

    def masked(text: str) -> str:
        # The live backend already masks what the provider said; this also covers what an
        # agent or a tool said about the key in its own words.
        for mask in masks:
            text = mask(text)
        return text

    if live_report.error is not None:
        raise RecordError(f"the live run failed: {masked(live_report.error)}")
    if not live_report.passed:
        failing = "; ".join(live_report.failure_lines())
        raise RecordError(f"the live run did not pass its checks: {masked(failing)}")
    record = live_report.record
    if record is None or record.steps is None:
        raise RecordError("the live run kept no model steps")
    refuse_existing(out, force)
    named = None if agents is None else [list(turn) for turn in agents]
    text = (
        json.dumps(
            fixture_from_run(case, record.steps, named, record.approvals),
            indent=2,
            ensure_ascii=False,
        )
        + "\n"
    )
    if any(mask.found_in(text) for mask in masks):
        raise RecordError("the recording would contain the API key; nothing was written")

    proven = prove(
        text,
        out,
        adapter,
        timeout=timeout,
        max_model_calls_per_turn=max_model_calls_per_turn,
        max_tool_calls_per_step=max_tool_calls_per_step,
        setup=setup,
        masked=masked,
    )
    try:
        if proven.snapshot.holds_any(masks):
            raise RecordError("the request snapshot would contain the API key; nothing was written")
    except BaseException:
        proven.discard()
        raise
    proven.place()
    return proven.replay


@dataclass
class Proven:
    """A fixture shown to pass replay admission and replay green, not yet in place: its
    text in a temporary file beside `out`, and the request snapshot its replay wrote (under
    the fixture's name). `place` puts it in place; `discard` leaves everything as it was."""

    out: Path
    tmp: Path
    snapshot: Snapshot
    replay: CaseReport

    def place(self) -> None:
        os.replace(self.tmp, self.out)

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)
        self.snapshot.restore()


def prove(
    text: str,
    out: Path,
    adapter: AgentAdapter,
    *,
    timeout: float = DEFAULT_CASE_TIMEOUT,
    max_model_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    max_tool_calls_per_step: int = DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    setup: CaseSetup = NO_SETUP,
    masked: Callable[[str], str] = str,
    what: str = "the recording",
    require_pass: bool = True,
) -> Proven:
    """The fixture `text`, to be written to `out`, written beside it, admitted for replay
    and replayed through `adapter` (its request snapshot taken under `out`'s name); raises
    `RecordError` (with `masked` applied to what the run said), leaving nothing behind,
    unless it passed (with `require_pass`; else whatever its replay said). Shared by
    `record` and `import`, which places the fixtures of an import once each is proven."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.stem}.", suffix=".json", dir=out.parent)
    tmp = Path(tmp_name)
    taken: Snapshot | None = None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            replay_case = load_case(tmp, "replay", agent_surface(adapter))
        except AdmissionError as exc:
            problems = "; ".join(f"{p.field}: {p.message}" for p in exc.problems)
            raise RecordError(f"{what} does not pass replay admission: {problems}") from None
        # The replay takes the fixture's request snapshot, under the name it will have.
        snapshots = SnapshotPlan(adapter.name, update=True)
        taken = Snapshot(snapshots.path_of(out))
        replay = run_cases(
            [Case(replay_case.trace, out, replay_case.text)],
            adapter,
            suite=str(out.parent),
            case_timeout=timeout,
            max_model_calls_per_turn=max_model_calls_per_turn,
            max_tool_calls_per_step=max_tool_calls_per_step,
            setup=setup,
            snapshots=snapshots,
        ).cases[0]
        if require_pass and not replay.passed:
            why = replay.error or "; ".join(replay.failure_lines())
            raise RecordError(f"{what} does not replay green: {masked(why)}")
    except BaseException:
        tmp.unlink(missing_ok=True)
        if taken is not None:
            taken.restore()
        raise
    return Proven(out, tmp, taken, replay)


class Snapshot:
    """The request snapshot a recording's replay writes, put back as it was (or removed)
    when the recording is not written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.before = path.read_bytes() if path.is_file() else None

    def holds_any(self, masks: Sequence[SecretMask]) -> bool:
        text = self.path.read_text("utf-8") if self.path.is_file() else ""
        return any(mask.found_in(text) for mask in masks)

    def restore(self) -> None:
        if self.before is None:
            self.path.unlink(missing_ok=True)
        else:
            self.path.write_bytes(self.before)
