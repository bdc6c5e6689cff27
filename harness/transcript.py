"""What the agent sent the model, request by request, and what it was answered: the
transcript replay conformance reads, and the one reports show (`TranscriptStep`: each
request's new messages only, so its size grows with the conversation, not its square)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from harness.approvals import Approval, Decision
from harness.model_boundary import GuardrailRun, Handoff, Message, ModelRequest, ModelStep
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


C = TypeVar("C", bound=type)


def quick_init(cls: C) -> C:
    """The frozen dataclass `cls` made by an `__init__` that fills its instance's dict in
    one go, as the dataclass's own would field by field through `object.__setattr__` (a
    third of the cost of a request's exchange): the same signature, defaults and values.
    For classes of a few plain fields made for every request or case; no field may have a
    default factory or a `__post_init__`."""
    fields = dataclasses.fields(cls)
    if (
        hasattr(cls, "__post_init__")
        or "__slots__" in vars(cls)  # no dict to fill
        or any(
            f.default_factory is not dataclasses.MISSING or not f.init or f.kw_only for f in fields
        )
        or not all(f.name.isidentifier() for f in fields)  # field names: nothing else is run
    ):
        raise TypeError(f"{cls.__name__}: its __init__ does more than set its fields")
    defaults = {f"_{f.name}": f.default for f in fields if f.default is not dataclasses.MISSING}
    parameters = ", ".join(
        f.name if f.default is dataclasses.MISSING else f"{f.name}=_{f.name}" for f in fields
    )
    body = ", ".join(f"{f.name!r}: {f.name}" for f in fields)
    namespace: dict[str, Any] = {}
    exec(
        f"def __init__(self, {parameters}):\n    self.__dict__.update({{{body}}})",
        defaults,
        namespace,
    )
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(vars(cls)["__init__"].__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010 (the dataclass's own, replaced)
    return cls


@quick_init
@dataclass(frozen=True)
class Exchange:
    """One model request: in which turn, which scripted step answers it (its index in the
    turn), and how many tool calls had been recorded when it was made."""

    turn: int
    step: int
    calls_before: int
    request: ModelRequest


class Transcript(msgspec.Struct):
    """Filled as the run goes: the model boundary calls `observe` with every request."""

    tools: ToolRegistry
    turn: int = -1
    exchanges: list[Exchange] = msgspec.field(default_factory=list)
    answers: list[ModelStep | None] = msgspec.field(default_factory=list)  # one per exchange
    _step: int = 0

    def start_turn(self, index: int) -> None:
        self.turn, self._step = index, 0

    # The exchange of the request last observed (`observed`): a replay backend takes the
    # step answering it before anything else runs (`answered_by`). None: observed the
    # older way (`observe`), which keeps it per task.
    _taking: int | None = None

    def observe(self, request: ModelRequest) -> None:
        _IN_FLIGHT.set((self, len(self.exchanges)))
        self.exchanges.append(Exchange(self.turn, self._step, len(self.tools.calls), request))
        self.answers.append(None)
        self._step += 1

    def observed(self, request: ModelRequest) -> int:
        """`observe`, for a model boundary that keeps the index it returns and tells the
        answer with it (`answered_at`): no variable of the task set for each request."""
        exchanges = self.exchanges
        at = self._taking = len(exchanges)
        exchanges.append(Exchange(self.turn, self._step, len(self.tools.calls), request))
        self.answers.append(None)
        self._step += 1
        return at

    def answered_at(self, index: int, step: ModelStep) -> None:
        self.answers[index] = step

    def answered_by(self, index: int) -> None:
        """The request in progress is answered by step `index` of the turn's script: not
        the one of its place when steps naming agents were taken out of order."""
        at = self._taking if self._taking is not None else self._in_flight()
        if at is not None and self.exchanges[at].step != index:
            self.exchanges[at] = dataclasses.replace(self.exchanges[at], step=index)

    def answered(self, step: ModelStep) -> None:
        at = self._in_flight()
        if at is not None:
            self.answers[at] = step

    def _in_flight(self) -> int | None:
        """The exchange of the request this task is waiting on: agents asking at the same
        time (each in a task of its own) are answered in any order, the last request made
        not necessarily first."""
        held = _IN_FLIGHT.get()
        if held is not None and held[0] is self:
            return held[1]
        return len(self.exchanges) - 1 if self.exchanges else None

    def steps(self) -> list[TranscriptStep]:
        """The run's requests as reports show them: each with only the messages it added
        (all of them when the agent rewrote its history), and its answer."""
        shown: list[TranscriptStep] = []
        previous: tuple[Message, ...] = ()
        # A loop mostly offers the very same tools request after request: their names are
        # one list for all those steps (reports are read-only).
        tools: object = None
        offered: list[str] = []
        for exchange, answer in zip(self.exchanges, self.answers, strict=True):
            request = exchange.request
            messages = request.messages
            grown = messages[: len(previous)] == previous
            if request.tools is not tools:
                tools, offered = request.tools, [t.name for t in request.tools]
            shown.append(
                TranscriptStep(
                    turn=exchange.turn,
                    step=exchange.step,
                    sent=list(messages[len(previous) :] if grown else messages),
                    tools_offered=offered,
                    answer=answer,
                    agent=request.agent,
                )
            )
            previous = messages
        return shown


T = TypeVar("T")


class cached_property(Generic[T]):
    """`functools.cached_property` without its lock (Python 3.11 takes one on every first
    read): a conversation is graded on one thread, and its properties are pure, so a race
    could only work one out twice. Worked out on the first read, kept in the instance."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self._compute = compute
        self._name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self._name] = self._compute(instance)
        return value


# Which transcript's exchange the current task's model request is; set as it is observed.
_IN_FLIGHT: ContextVar[tuple[Transcript, int] | None] = ContextVar("_IN_FLIGHT", default=None)


def forget_in_flight() -> None:
    """No request in flight in this context: a run over, whose task runs the next case.
    Set only when it is not so already (most runs never set it: `Transcript.observed`)."""
    if _IN_FLIGHT.get() is not None:
        _IN_FLIGHT.set(None)


@quick_init
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
    # Control passed between agents of a graph, in order (the record's `handoffs`).
    handoffs: tuple[Handoff, ...] = ()
    # Every guardrail run (the record's `guardrails`): a tripwire that ended a turn ended
    # its conversation there, and a tool guardrail that rejected a call answered it.
    guardrails: tuple[GuardrailRun, ...] = ()
    # The tool calls held for approval, in order (the record's `approvals`), and the
    # decisions the fixture gives per turn (replay: keyed by call id).
    approvals: tuple[Approval, ...] = ()
    decisions: tuple[Mapping[str, Decision], ...] = ()
    # What answered each request (the model, live; in replay the script says it too).
    answers: tuple[ModelStep | None, ...] = ()

    def answer_to(self, index: int) -> ModelStep | None:
        """The step that answered the request at `index`: the script's, in replay."""
        if self.scripted:
            return self.step_of(self.exchanges[index])
        return self.answers[index] if index < len(self.answers) else None

    @cached_property
    def unapproved(self) -> frozenset[str]:
        """The ids of the calls rejected (or left undecided, so rejected): never run."""
        return frozenset(a.call_id for a in self.approvals if not a.approved)

    def final_text(self, turn: int) -> str:
        """The scripted final text of `turn` (its last step, when that is a text); none for
        a turn a tripwire ended (what the agent would have answered never reached the
        user)."""
        if turn in self.halted_turns:
            return ""
        steps = self.script[turn]
        return steps[-1].text if steps and not steps[-1].tool_calls else ""

    @cached_property
    def halted_turns(self) -> frozenset[int]:
        return frozenset(g.turn for g in self.guardrails if g.halted)

    def rejected(self, kind: str) -> frozenset[str]:
        """The ids of the calls a tool guardrail of `kind` tripped on (`tool_input`: the
        call never ran; `tool_output`: its result was replaced, or the turn ended)."""
        if not self.guardrails:
            return frozenset()
        return frozenset(
            g.call_id for g in self.guardrails if g.kind == kind and g.tripped and g.call_id
        )

    def step_of(self, exchange: Exchange) -> ModelStep | None:
        """The scripted step answering `exchange` (None: the script has none)."""
        steps = self.script[exchange.turn] if 0 <= exchange.turn < len(self.script) else ()
        return steps[exchange.step] if exchange.step < len(steps) else None

    def handoffs_after(self, index: int) -> tuple[Handoff, ...]:
        """The handoffs the answer to the request at `index` made."""
        return self._handoffs_by_exchange[index] if self.handoffs else ()

    @cached_property
    def _handoffs_by_exchange(self) -> tuple[tuple[Handoff, ...], ...]:
        """Per request, the handoffs its answer made. A handoff counts the requests of its
        turn, which is not the scripted step where steps were taken out of order."""
        made: dict[tuple[int, int], list[Handoff]] = {}
        for handoff in self.handoffs:
            made.setdefault((handoff.turn, handoff.step), []).append(handoff)
        asked: Counter[int] = Counter()  # per turn, the requests made so far
        by_exchange: list[tuple[Handoff, ...]] = []
        for exchange in self.exchanges:
            by_exchange.append(tuple(made.get((exchange.turn, asked[exchange.turn]), ())))
            asked[exchange.turn] += 1
        return tuple(by_exchange)

    def answered(self, index: int) -> tuple[RecordedCall, ...]:
        """The calls that answer the request at `index`: those its agent recorded before it
        asked again. Another agent's calls in between (a delegate's, a nested agent's) are
        that agent's; with one agent, every call up to the next request."""
        exchange = self.exchanges[index]
        calls = self.calls[exchange.calls_before : self._calls_end[index]]
        if self._one_agent:
            return calls  # one agent: whatever its loop says of its calls
        return tuple(c for c in calls if c.agent == exchange.request.agent)

    @cached_property
    def _one_agent(self) -> bool:
        return all(e.request.agent is None for e in self.exchanges)

    @cached_property
    def _calls_end(self) -> tuple[int, ...]:
        """Per request, how many calls had been recorded when its agent asked again (all of
        them: it never did)."""
        ends = [len(self.calls)] * len(self.exchanges)
        following: dict[str | None, int] = {}  # agent -> its next request, walking back
        for index in range(len(self.exchanges) - 1, -1, -1):
            agent = self.exchanges[index].request.agent
            if agent in following:
                ends[index] = self.exchanges[following[agent]].calls_before
            following[agent] = index
        return tuple(ends)

    @cached_property
    def threads(self) -> tuple[Thread, ...]:
        """The run's requests split into the conversations the framework holds (see
        `split_threads`); a run of one agent is one. Worked out once: each rule reads it."""
        if self._one_agent and not self.handoffs and self.exchanges:
            # What `split_threads` makes of it, said at once: no agent but the one asked.
            count = len(self.exchanges)
            return (Thread(False, tuple(range(count)), (None,) * count),)
        return tuple(split_threads(self))


class Thread(msgspec.Struct, frozen=True):
    """One conversation of a run: the requests (their indices among the exchanges) of the
    agent that holds it, or of the agents it was handed to. `nested`: an agent used as a
    tool or delegated to, which starts a conversation of its own; `handed`: per request,
    the handoff it is the new agent's first request after (None: it is not)."""

    nested: bool
    members: tuple[int, ...]
    handed: tuple[Handoff | None, ...]


class _Open(msgspec.Struct):
    agent: str | None  # the agent holding the conversation now
    nested: bool
    members: list[int] = msgspec.field(default_factory=list)
    handed: list[Handoff | None] = msgspec.field(default_factory=list)
    pending: Handoff | None = None  # made, its target not yet asked

    def closed(self) -> Thread:
        return Thread(self.nested, tuple(self.members), tuple(self.handed))


def split_threads(conversation: Conversation) -> list[Thread]:
    """A request belongs to the open conversation its agent holds (the latest opened,
    when two are); a handoff moves its source's conversation to the target, history and
    all. A request by an agent holding none is an agent used as a tool or a delegate: it
    opens a conversation of its own, closed by its final text or the turn's end. The first
    conversation is the turn's: each turn continues it, at the agent its first request is
    of (the root again, or where the loop left off)."""
    done: list[_Open] = []
    open_: list[_Open] = []
    turn: int | None = None
    for index, exchange in enumerate(conversation.exchanges):
        agent = exchange.request.agent
        if exchange.turn != turn and open_:
            done += open_[1:]
            del open_[1:]
            if open_[0].agent != agent:
                open_[0].agent, open_[0].pending = agent, None
        turn = exchange.turn
        holder = next((t for t in reversed(open_) if t.agent == agent), None)
        if holder is None:
            holder = _Open(agent, nested=bool(open_))
            open_.append(holder)
        holder.members.append(index)
        holder.handed.append(holder.pending)
        holder.pending = None
        for handoff in conversation.handoffs_after(index):
            source = next((t for t in reversed(open_) if t.agent == handoff.source), holder)
            source.agent, source.pending = handoff.target, handoff
        step = conversation.step_of(exchange)
        if holder.nested and holder.agent == agent and step is not None and not step.tool_calls:
            open_.remove(holder)
            done.append(holder)
    return sorted((t.closed() for t in done + open_), key=lambda t: t.members[0])
