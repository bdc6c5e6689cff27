"""Replay backend: answers model requests from a fixture's scripted steps, turn by turn."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import msgspec

from harness.fixtures.schema import LlmTrace, Response, Step, TextResponse
from harness.model_boundary import Divergence, ModelRequest, ModelStep, ToolCall


class ReplayDivergence(Divergence):
    """The agent and the script parted: it asked for more steps, or left some unused."""


class ReplayBackend:
    """One FIFO queue of scripted steps per turn; a request never borrows from another turn.

    A step naming an agent answers a request of that agent: when the next step names
    another, the request takes the first step of the turn not yet taken that names its
    agent, so agents running at the same time may ask in either order. Steps naming no
    agent are taken in order.

    Its divergence errors name the case and the turn; the model boundary adds the last
    request the agent made. `on_take`, when set, is told the index in the turn of each step
    taken out of order: it answers a request other than the one of its index (the turn's
    requests counted as they come; a step taken in its place is told nothing)."""

    def __init__(self, trace: LlmTrace) -> None:
        self._case = trace.case_id
        # Every turn's scripted steps as the model boundary's steps, made once: the
        # conversation graders read holds the same (`runner.conversation_of`).
        turns = trace.turns
        self.script: tuple[tuple[ModelStep, ...], ...] = tuple(
            [tuple([to_step(step.response) for step in turn.steps or ()]) for turn in turns]
        )
        # A turn naming no agent (most) is taken in order: where its next step is. One
        # naming an agent holds the steps not yet taken: (index in the turn, agent named,
        # step), made once that turn starts.
        self._next = [0] * len(turns)
        self._queues: list[deque[_Scripted] | None] = [None] * len(turns)
        self._named = [_agents(turn.steps) for turn in turns]
        # The turns scripted with no steps: a case may script one only for a guardrail it
        # names to stop the turn before the model is asked; a request in one means it did not.
        self._stopped = {index for index, turn in enumerate(turns) if turn.steps == []}
        self._guardrails = getattr(trace.expects, "guardrails_tripped", None) or []
        self.on_take: Callable[[int], None] | None = None
        self._turn = -1
        self._last: ModelStep | None = None  # the step last answered in this turn
        self._asked = 0  # requests of the turn so far: a step of another index is out of order

    async def respond(self, request: ModelRequest) -> ModelStep:
        turn = self._turn
        asked = self._asked
        self._asked = asked + 1
        if 0 <= turn < len(self.script) and self._queues[turn] is None:
            steps, at = self.script[turn], self._next[turn]
            if at < len(steps):  # the next step, in order: the one of its place
                self._next[turn] = at + 1
                self._last = step = steps[at]
                if at != asked and self.on_take is not None:
                    self.on_take(at)
                return step
        if not 0 <= turn < len(self.script):
            raise ReplayDivergence(
                f"case {self._case!r}: model requested outside any scripted turn",
                show_request=False,
            )
        if not self._left(turn) and turn in self._stopped and self._last is None:
            named = ", ".join(repr(name) for name in self._guardrails) or "none"
            raise ReplayDivergence(
                f"case {self._case!r}: turn {turn} scripts no steps, for a guardrail to "
                f"stop it before the model is asked (guardrails_tripped: {named}), but the "
                "agent asked the model: no guardrail stopped the turn"
            )
        queue = self._queues[turn]
        if queue is None or not queue:
            last = f" after {describe_step(self._last)}" if self._last else ""
            raise ReplayDivergence(
                f"case {self._case!r}: turn {turn} requested more model responses than "
                f"the trace scripts; the script has no step{last}"
            )
        self._last = self._take(queue, request.agent, asked)
        return self._last

    def _left(self, turn: int) -> int:
        """How many steps of `turn` are not yet taken."""
        queue = self._queues[turn]
        return len(self.script[turn]) - self._next[turn] if queue is None else len(queue)

    def _take(self, queue: deque[_Scripted], agent: str | None, asked: int) -> ModelStep:
        """The step answering a request of `agent`: the next one, unless it names another
        agent, then the first of the turn naming `agent`."""
        index, named, head = queue[0]
        if named is None or named == agent:
            queue.popleft()
            return self._taken(index, head, asked)
        for i, (index, other, step) in enumerate(queue):
            if other is not None and other == agent:
                del queue[i]
                return self._taken(index, step, asked)
        asking = f"agent {agent!r}" if agent is not None else "the agent under test"
        raise ReplayDivergence(
            f"case {self._case!r}: turn {self._turn}: {asking} requested a model response, "
            f"but no step of the turn left answers it; the script expected next "
            f"{describe_step(head)} for agent {named!r}"
        )

    def _taken(self, index: int, step: ModelStep, asked: int) -> ModelStep:
        if index != asked and self.on_take is not None:
            self.on_take(index)
        return step

    def start_turn(self, index: int) -> None:
        if index != self._turn + 1 or index >= len(self.script):
            raise ReplayDivergence(
                f"case {self._case!r}: turn {index} started out of order "
                f"(replay cursor at turn {self._turn}, {len(self.script)} turn(s) scripted)",
                show_request=False,
            )
        self._turn, self._last, self._asked = index, None, 0
        named = self._named[index]
        if named is not None and self._queues[index] is None:
            steps = self.script[index]
            self._queues[index] = deque(
                [(i, agent, steps[i]) for i, agent in enumerate(named) if i >= self._next[index]]
            )

    def stop_turn(self, index: int) -> None:
        """The framework ended the turn early (a guardrail's tripwire): the steps it left
        were never asked for, as a real model would never have been."""
        queue = self._queues[index]
        if queue is None:
            self._next[index] = len(self.script[index])
        else:
            queue.clear()

    def end_turn(self, index: int) -> None:
        left = self._left(index)
        if left:
            queue = self._queues[index]
            if queue is None:
                named, step = None, self.script[index][self._next[index]]
            else:
                _, named, step = queue[0]
            by = f" of agent {named!r}" if named is not None else ""
            raise ReplayDivergence(
                f"case {self._case!r}: turn {index} scripted {left} step(s) the agent never "
                "requested (the trace over-specifies this turn); the script expected next "
                f"{describe_step(step)}{by}"
            )


_Scripted = tuple[int, str | None, ModelStep]


def _agents(steps: list[Step] | msgspec.UnsetType | None) -> tuple[str | None, ...] | None:
    """The agent each step names, where one names any; None: none does."""
    if not steps:
        return None
    agents = [step.agent for step in steps]
    return tuple(agents) if agents.count(None) != len(agents) else None


def to_step(response: Response) -> ModelStep:
    if isinstance(response, TextResponse):
        return ModelStep(
            text=response.content,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
        )
    return ModelStep(
        tool_calls=tuple([ToolCall(c.id, c.name, c.arguments) for c in response.tool_calls]),
        input_tokens=response.input_tokens,
        output_tokens=response.output_tokens,
    )


def describe_step(step: ModelStep, width: int = 120) -> str:
    """A scripted step in one line: the tool calls it asks for, or the text it answers,
    each value clipped to `width` characters as the request summary clips them."""
    import json

    def clipped(value: object) -> str:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        return text if len(text) <= width else text[: width - 1] + "…"

    if step.tool_calls:
        calls = ", ".join(f"{c.name}({clipped(c.arguments)})" for c in step.tool_calls)
        return f"a step calling {calls}"
    return f"a step answering {clipped(step.text)}"
