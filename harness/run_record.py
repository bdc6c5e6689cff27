"""What one case's run left at the two boundaries: the run record that grading reads."""

from __future__ import annotations

import operator
from typing import Any

import msgspec

from harness.approvals import Approval
from harness.model_boundary import GuardrailRun, Handoff, ModelStep
from harness.tool_registry import RecordedCall
from harness.transcript import TranscriptStep

_SUCCESS = operator.attrgetter("success")


class RunRecord(msgspec.Struct, kw_only=True, gc=False):
    """Everything observed while running one case; counts accumulate over all turns.

    Untracked by the garbage collector (it holds data only, never a cycle): a run keeps
    one per case, and the collector need not walk them all again and again."""

    final_response: str = ""
    turn_responses: list[str] = []
    calls: list[RecordedCall] = []
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_ms: float = 0.0
    # Live runs only: every model step of every turn, as the provider answered.
    steps: list[list[ModelStep]] | None = None
    # Every model request with its answer, for reports (None: not kept; by default only a
    # failing case keeps it, `CasePlan.keep_transcripts` builds every case's, and a
    # passing case's is dropped once told unless a reporter wants them all).
    transcript: list[TranscriptStep] | None = None
    # A multi-agent graph's handoffs, in order, and the agent that gave the last turn's
    # final answer (None: the agent under test, or a loop that has only one).
    handoffs: list[Handoff] = []
    final_agent: str | None = None
    # Every guardrail run the adapter told (passing ones too, where the framework says so
    # cheaply), in order; a tripped one names itself, its kind, agent and turn.
    guardrails: list[GuardrailRun] = []
    # The run's context (SDK) or deps (pydantic-ai) as JSON after the last turn (None: the
    # run had none), or why it could not be rendered so (`context_json` fails saying it).
    context: Any = None
    context_error: str | None = None
    # Every tool call held for approval, in order, with the decision it got.
    approvals: list[Approval] = []

    @property
    def guardrails_tripped(self) -> list[str]:
        return [g.name for g in self.guardrails if g.tripped]

    @property
    def tools_called(self) -> list[str]:
        # Derived, never stored: the recorded calls are the only dispatch fact.
        return [c.name for c in self.calls]

    @property
    def all_tools_succeeded(self) -> bool:
        return all(map(_SUCCESS, self.calls))
