"""What the agent sent the model, request by request, and what it was answered: the
transcript replay conformance reads, and the one reports show (`TranscriptStep`: each
request's new messages only, so its size grows with the conversation, not its square)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import msgspec

from harness.model_boundary import Message, ModelRequest, ModelStep
from harness.tool_registry import RecordedCall, ToolRegistry


class TranscriptStep(msgspec.Struct, kw_only=True, frozen=True, gc=False):
    """One model request of a run as reports show it (data only: untracked by the garbage
    collector, like the record holding it)."""

    turn: int  # -1: while the agent started
    # Its place in the turn; in replay, the scripted step that answered it, which differs
    # where a step naming its agent was taken out of order.
    step: int
    sent: list[Message]  # the messages it added to the previous request's
    tools_offered: list[str] = []
    answer: ModelStep | None = None  # None: never answered (a divergence, a failure)
    agent: str | None = None  # the agent of a graph that asked (`ModelRequest.agent`)


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
    answers: list[ModelStep | None] = field(default_factory=list)  # one per exchange
    _step: int = 0

    def start_turn(self, index: int) -> None:
        self.turn, self._step = index, 0

    def observe(self, request: ModelRequest) -> None:
        self.exchanges.append(Exchange(self.turn, self._step, len(self.tools.calls), request))
        self.answers.append(None)
        self._step += 1

    def answered_by(self, index: int) -> None:
        """The request in progress is answered by step `index` of the turn's script: not
        the one of its place when steps naming agents were taken out of order."""
        if self.exchanges and self.exchanges[-1].step != index:
            self.exchanges[-1] = dataclasses.replace(self.exchanges[-1], step=index)

    def answered(self, step: ModelStep) -> None:
        if self.answers:
            self.answers[-1] = step

    def steps(self) -> list[TranscriptStep]:
        """The run's requests as reports show them: each with only the messages it added
        (all of them when the agent rewrote its history), and its answer."""
        shown: list[TranscriptStep] = []
        previous: tuple[Message, ...] = ()
        for exchange, answer in zip(self.exchanges, self.answers, strict=True):
            messages = exchange.request.messages
            grown = messages[: len(previous)] == previous
            shown.append(
                TranscriptStep(
                    turn=exchange.turn,
                    step=exchange.step,
                    sent=list(messages[len(previous) :] if grown else messages),
                    tools_offered=[t.name for t in exchange.request.tools],
                    answer=answer,
                    agent=exchange.request.agent,
                )
            )
            previous = messages
        return shown


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
