"""Replay backend: answers model requests from a fixture's scripted steps, turn by turn."""

from __future__ import annotations

from collections import deque

from harness.backend import ModelRequest, ModelStep, ToolCall, summarize_request
from harness.case import LlmTrace, Response, TextResponse


class ReplayDivergence(Exception):
    """The agent and the script parted: it asked for more steps, or left some unused."""


class ReplayBackend:
    """One FIFO queue of scripted steps per turn; a request never borrows from another turn."""

    def __init__(self, trace: LlmTrace) -> None:
        self._case = trace.case_id
        self._queues: list[deque[ModelStep]] = [
            deque(_to_step(step.response) for step in (turn.steps or ())) for turn in trace.turns
        ]
        self._turn = -1
        self._last_request: ModelRequest | None = None

    async def respond(self, request: ModelRequest) -> ModelStep:
        self._last_request = request
        if not 0 <= self._turn < len(self._queues):
            raise ReplayDivergence(
                f"case {self._case!r}: model requested outside any scripted turn"
            )
        queue = self._queues[self._turn]
        if not queue:
            raise ReplayDivergence(
                f"case {self._case!r}: turn {self._turn} requested more model responses than "
                f"the trace scripts; the last request was:\n{summarize_request(request)}"
            )
        return queue.popleft()

    def start_turn(self, index: int) -> None:
        if index != self._turn + 1 or index >= len(self._queues):
            raise ReplayDivergence(
                f"case {self._case!r}: turn {index} started out of order "
                f"(replay cursor at turn {self._turn}, {len(self._queues)} turn(s) scripted)"
            )
        self._turn = index

    def end_turn(self, index: int) -> None:
        left = len(self._queues[index])
        if left:
            raise ReplayDivergence(
                f"case {self._case!r}: turn {index} scripted {left} step(s) the agent never "
                f"requested (the trace over-specifies this turn); the last request was:\n"
                f"{summarize_request(self._last_request)}"
            )


def _to_step(response: Response) -> ModelStep:
    if isinstance(response, TextResponse):
        return ModelStep(
            text=response.content,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
        )
    return ModelStep(
        tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in response.tool_calls),
        input_tokens=response.input_tokens,
        output_tokens=response.output_tokens,
    )
