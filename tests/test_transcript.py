"""`harness.transcript`: the frozen records made for every request and case (`Exchange`,
`Conversation`, and grading's `Evidence`) are made by `quick_init`'s `__init__`, which must
be the dataclass's own in all but its cost."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from harness.expectations.base import Evidence
from harness.model_boundary import ModelRequest
from harness.run_record import RunRecord
from harness.transcript import Conversation, Exchange, quick_init


def _plain_twin(cls: type) -> type:
    """`cls` as `@dataclass(frozen=True)` alone makes it: same fields, same defaults."""
    fields = [
        (f.name, f.type, f.default if f.default is not dataclasses.MISSING else dataclasses.MISSING)
        for f in dataclasses.fields(cls)
    ]
    spec = [
        (name, kind)
        if default is dataclasses.MISSING
        else (name, kind, dataclasses.field(default=default))
        for name, kind, default in fields
    ]
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=True)


@pytest.mark.parametrize("cls", [Exchange, Conversation, Evidence])
def test_quick_init_takes_what_the_dataclass_s_own_takes(cls: type) -> None:
    twin = _plain_twin(cls)
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))


def test_a_quickly_made_exchange_is_the_dataclass_it_was() -> None:
    request = ModelRequest(messages=())
    exchange = Exchange(1, 2, 3, request)
    assert (exchange.turn, exchange.step, exchange.calls_before) == (1, 2, 3)
    assert exchange.request is request
    assert exchange == Exchange(turn=1, step=2, calls_before=3, request=request)
    assert dataclasses.replace(exchange, step=5) == Exchange(1, 5, 3, request)
    assert pickle.loads(pickle.dumps(exchange)) == exchange
    with pytest.raises(dataclasses.FrozenInstanceError):
        exchange.step = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        Exchange(1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Exchange(1, 2, 3, request, nope=1)  # type: ignore[call-arg]


def test_a_quickly_made_conversation_keeps_its_defaults_and_cached_answers() -> None:
    conversation = Conversation(user_inputs=("hi",), script=((),), exchanges=(), calls=())
    assert (
        conversation.scripted is True and conversation.handoffs == () and conversation.answers == ()
    )
    assert conversation.unapproved == frozenset()  # a cached property: its dict is writable
    evidence = Evidence(RunRecord(), conversation=conversation)
    assert (evidence.workspace, evidence.agent_tools, evidence.judged) == (None, None, None)
    assert evidence.conversation is conversation


def test_quick_init_refuses_a_class_whose_init_does_more() -> None:
    @dataclasses.dataclass(frozen=True)
    class Made:
        items: list[Any] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="does more than set its fields"):
        quick_init(Made)


def test_quick_init_refuses_a_class_its_init_would_not_make_as_the_dataclass_does() -> None:
    # Keyword-only fields would turn positional, and slots have no dict to fill.
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Named:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    for made in (Named, Slotted):
        with pytest.raises(TypeError, match="does more than set its fields"):
            quick_init(made)


def test_agents_asking_at_once_each_have_their_own_answer_recorded() -> None:
    """A model boundary with the transcript as its observer tells each answer with the
    index of the request it answers: two agents whose requests are answered in the other
    order (each in a task of its own) each have their own answer, and the step a replay
    took out of its place for the request just observed is the one recorded for it."""
    import asyncio

    from harness.model_boundary import Message, ModelBoundary, ModelStep
    from harness.tool_registry import ToolRegistry
    from harness.transcript import Transcript

    class Backend:
        """Answers `first` only once `second` has been answered."""

        def __init__(self) -> None:
            self.second_done = asyncio.Event()

        async def respond(self, request: ModelRequest) -> ModelStep:
            agent = request.agent
            if agent == "first":
                await self.second_done.wait()
            else:
                self.second_done.set()
            return ModelStep(text=f"to {agent}")

    async def run() -> Transcript:
        transcript = Transcript(ToolRegistry())
        boundary = ModelBoundary(Backend(), observer=transcript)
        transcript.start_turn(0)
        boundary.start_turn(0)

        def asks(agent: str) -> ModelRequest:
            return ModelRequest(messages=(Message(role="user", content="hi"),), agent=agent)

        await asyncio.gather(boundary.respond(asks("first")), boundary.respond(asks("second")))
        return transcript

    transcript = asyncio.run(run())
    asked = [e.request.agent for e in transcript.exchanges]
    assert asked == ["first", "second"]
    assert [a.text if a else None for a in transcript.answers] == ["to first", "to second"]
    # A step taken out of its place, told as it is taken: the request just observed.
    transcript.observed(ModelRequest(messages=()))
    transcript.answered_by(5)
    assert [e.step for e in transcript.exchanges] == [0, 1, 5]
