"""What the agent sent the model, request by request: the transcript replay conformance
reads. Kept beside the run record (never in a report: it can be large)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.model_boundary import ModelRequest, ModelStep
from harness.tool_registry import RecordedCall, ToolRegistry


@dataclass(frozen=True)
class Exchange:
    """One model request: in which turn, which scripted step answers it (its index in the
    turn), and how many tool calls had been recorded when it was made."""

    turn: int
    step: int
    calls_before: int
    request: ModelRequest


@dataclass
class Transcript:
    """Filled as the run goes: the model boundary calls `observe` with every request."""

    tools: ToolRegistry
    turn: int = -1
    exchanges: list[Exchange] = field(default_factory=list)
    _step: int = 0

    def start_turn(self, index: int) -> None:
        self.turn, self._step = index, 0

    def observe(self, request: ModelRequest) -> None:
        self.exchanges.append(Exchange(self.turn, self._step, len(self.tools.calls), request))
        self._step += 1


@dataclass(frozen=True)
class Conversation:
    """A run's conversation: the requests the agent made and, in replay, what the script
    implies it should have held."""

    user_inputs: tuple[str, ...]
    # Replay: the scripted steps of each turn. Live: empty turns (the model answered).
    script: tuple[tuple[ModelStep, ...], ...]
    exchanges: tuple[Exchange, ...]
    calls: tuple[RecordedCall, ...]
    scripted: bool = True

    def final_text(self, turn: int) -> str:
        """The scripted final text of `turn` (its last step, when that is a text)."""
        steps = self.script[turn]
        return steps[-1].text if steps and not steps[-1].tool_calls else ""

    def dispatched_between(self, earlier: Exchange, later: Exchange) -> tuple[RecordedCall, ...]:
        """The calls recorded after `earlier` was requested and before `later` was."""
        return self.calls[earlier.calls_before : later.calls_before]
